"""The gRPC surface (okuri.api.v1.QueueService) against a real `okuri serve`, on the same port as
SQS and the HTTP/JSON API: every RPC, interop with SQS and HTTP both ways and interleaved,
bearer keys with roles and namespaces, reflection with a client built only from it, health,
and a SIGTERM that answers waiting calls and ends health watches. The bad-input table with
its gRPC rows lives beside the HTTP one in test_native_http.py."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from okuri import limits
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.principals.local import DEV_ADMIN_KEY
from tests.grpc_calls import RPCS
from tests.servers import Launch, RoleKeys, ServerProcess, keyed_server, role_keys

ADMIN = "grpc-test-admin-key-0123456789"
SERVICE = "okuri.api.v1.QueueService"


Keys = RoleKeys  # a key per role, each limited to namespace "ns-"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return role_keys(tmp_path_factory.mktemp("keys"), "ns-")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("native-grpc"), ADMIN, keys.file)
    yield proc
    proc.terminate()


def target(server: ServerProcess) -> str:
    return server.url.removeprefix("http://")


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(target(server)) as ch:
        yield ch


@pytest.fixture(scope="module")
def stub(channel: grpc.Channel) -> pb_grpc.QueueServiceStub:
    return pb_grpc.QueueServiceStub(channel)


def auth(key: str | None = ADMIN) -> tuple[tuple[str, str], ...]:
    return () if key is None else (("authorization", f"Bearer {key}"),)


class Refusal(NamedTuple):
    code: grpc.StatusCode
    message: str
    error_code: str


def refusal(call: Callable[[], Any]) -> Refusal:
    """The status of a call that must fail, with its okuri-error-code trailer."""
    try:
        answer = call()
    except grpc.RpcError as err:
        trailers = dict(err.trailing_metadata() or ())
        return Refusal(err.code(), err.details(), trailers.get("okuri-error-code", ""))
    pytest.fail(f"the call succeeded: {answer}")


def fresh(prefix: str = "ns-g") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def at(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime.now(UTC) + timedelta(seconds=seconds))
    return ts


def lease_all(
    stub: pb_grpc.QueueServiceStub, queue: str, want: int, key: str = ADMIN
) -> list[pb.LeasedItem]:
    got: list[pb.LeasedItem] = []
    for _ in range(5):  # bounded: messages just written may take a moment to be adopted
        req = pb.LeaseRequest(queue=queue, max_items=100, lease_s=60, request_timeout_s=1)
        got += stub.Lease(req, metadata=auth(key)).items
        if len(got) >= want:
            break
    return got


# --- queues ----------------------------------------------------------------------------------


def test_queue_lifecycle_create_get_update_list_purge_delete(
    stub: pb_grpc.QueueServiceStub,
) -> None:
    name, dlq = fresh(), fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=dlq), metadata=auth())
    attrs = pb.QueueAttributes(lease_timeout_s=45, max_attempts=3, dead_letter_queue=dlq, delay_s=0)
    created = stub.CreateQueue(pb.CreateQueueRequest(name=name, attributes=attrs), metadata=auth())
    assert created.name == name and not created.fifo
    assert created.attributes == pb.QueueAttributes(
        lease_timeout_s=45,
        max_attempts=3,
        dead_letter_queue=dlq,
        delay_s=0,
        retention_s=limits.retention_s_default,
    )
    assert abs(created.created_at.ToDatetime(UTC) - datetime.now(UTC)) < timedelta(minutes=1)
    # The same attributes again: fine; others: ALREADY_EXISTS.
    stub.CreateQueue(pb.CreateQueueRequest(name=name, attributes=attrs), metadata=auth())
    other = pb.QueueAttributes(lease_timeout_s=46)
    conflict = refusal(
        lambda: stub.CreateQueue(
            pb.CreateQueueRequest(name=name, attributes=other), metadata=auth()
        )
    )
    assert conflict[::2] == (grpc.StatusCode.ALREADY_EXISTS, "queue_exists")

    items = [pb.ProduceItem(payload=b"a")] * 3
    stub.Produce(pb.ProduceRequest(queue=name, items=items), metadata=auth())
    got = stub.GetQueue(pb.GetQueueRequest(queue=name), metadata=auth())
    assert got.stats == pb.QueueStats(visible=3, leased=0, delayed=0)

    updated = stub.UpdateQueue(
        pb.UpdateQueueRequest(
            queue=name,
            attributes=pb.QueueAttributes(lease_timeout_s=90),
            reset_attributes=["max_attempts"],
        ),
        metadata=auth(),
    )
    assert updated.attributes.lease_timeout_s == 90
    assert not updated.attributes.HasField("max_attempts")  # reset: no limit
    assert updated.attributes.dead_letter_queue == dlq  # untouched

    stub.PurgeQueue(pb.PurgeQueueRequest(queue=name), metadata=auth())
    got = stub.GetQueue(pb.GetQueueRequest(queue=name), metadata=auth())
    assert got.stats == pb.QueueStats()

    stub.DeleteQueue(pb.DeleteQueueRequest(queue=name), metadata=auth())
    gone = refusal(lambda: stub.GetQueue(pb.GetQueueRequest(queue=name), metadata=auth()))
    assert gone[::2] == (grpc.StatusCode.NOT_FOUND, "queue_not_found")


def test_list_is_paged_and_filtered_by_prefix(stub: pb_grpc.QueueServiceStub) -> None:
    prefix = fresh("ns-glist")
    names = sorted(f"{prefix}-{i}" for i in range(5))
    for n in names:
        stub.CreateQueue(pb.CreateQueueRequest(name=n), metadata=auth())
    seen: list[str] = []
    after = ""
    for _ in range(5):
        page = stub.ListQueues(
            pb.ListQueuesRequest(prefix=prefix, limit=2, after=after), metadata=auth()
        )
        seen += page.queues
        if not page.HasField("next"):
            break
        after = page.next
    assert seen == names


# --- messages --------------------------------------------------------------------------------


def test_produce_lease_complete_with_text_binary_headers_and_dedup(
    stub: pb_grpc.QueueServiceStub,
) -> None:
    name = fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
    binary = bytes(range(256))
    items = [
        pb.ProduceItem(payload="héllo ✓".encode(), headers={"kind": "greeting"}),
        pb.ProduceItem(payload=binary),
        pb.ProduceItem(payload=b"once", dedup_id="d-1"),
        pb.ProduceItem(payload=b"once", dedup_id="d-1"),
    ]
    produced = stub.Produce(pb.ProduceRequest(queue=name, items=items), metadata=auth())
    ids = list(produced.ids)
    assert not produced.errors and ids[2] == ids[3] and len(set(ids)) == 3
    leased = lease_all(stub, name, 3)
    by_id = {item.id: item for item in leased}
    assert set(by_id) == set(ids)
    text, blob, once = by_id[ids[0]], by_id[ids[1]], by_id[ids[2]]
    assert text.payload == "héllo ✓".encode() and dict(text.headers) == {"kind": "greeting"}
    assert blob.payload == binary and once.payload == b"once"
    assert text.attempts == 1
    left = text.lease_deadline.ToDatetime(UTC) - datetime.now(UTC)
    assert timedelta(seconds=50) < left <= timedelta(seconds=61)
    handles = [text.handle, blob.handle, once.handle, "not-a-handle"]
    done = stub.Complete(pb.CompleteRequest(queue=name, handles=handles), metadata=auth())
    assert list(done.results) == ["completed", "completed", "completed", "invalid"]
    again = stub.Complete(pb.CompleteRequest(queue=name, handles=handles[:1]), metadata=auth())
    assert list(again.results) == ["gone"]


def test_retry_now_later_and_dead_then_redrive_and_extend(
    stub: pb_grpc.QueueServiceStub,
) -> None:
    name, dlq = fresh(), fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=dlq), metadata=auth())
    attrs = pb.QueueAttributes(max_attempts=5, dead_letter_queue=dlq)
    stub.CreateQueue(pb.CreateQueueRequest(name=name, attributes=attrs), metadata=auth())
    bodies = [b"now", b"later", b"dead", b"kept"]
    items = [pb.ProduceItem(payload=b) for b in bodies]
    stub.Produce(pb.ProduceRequest(queue=name, items=items), metadata=auth())
    h = {i.payload: i.handle for i in lease_all(stub, name, 4)}
    assert set(h) == set(bodies)
    retried = stub.Retry(
        pb.RetryRequest(
            queue=name,
            items=[
                pb.RetryItem(handle=h[b"now"]),
                pb.RetryItem(handle=h[b"later"], retry_at=at(3600)),
                pb.RetryItem(handle=h[b"dead"], dead=True),
            ],
        ),
        metadata=auth(),
    )
    assert list(retried.results) == ["retried", "retried", "dead"]
    extended = stub.Extend(
        pb.ExtendRequest(queue=name, handles=[h[b"kept"]], lease_s=120), metadata=auth()
    )
    assert list(extended.results) == ["extended"]
    again = lease_all(stub, name, 1)
    assert [(i.payload, i.attempts) for i in again] == [(b"now", 2)]
    stats = stub.GetQueue(pb.GetQueueRequest(queue=name), metadata=auth()).stats
    assert stats == pb.QueueStats(visible=0, leased=3, delayed=0, dead_lettered=1)  # "later" hides
    assert stub.GetQueue(pb.GetQueueRequest(queue=dlq), metadata=auth()).stats.visible == 1

    moved = stub.Redrive(pb.RedriveRequest(queue=dlq, target=name), metadata=auth())
    assert moved.moved == 1
    assert [i.payload for i in lease_all(stub, name, 1)] == [b"dead"]


def test_megabyte_payloads_cross_the_listener_intact_both_ways(
    stub: pb_grpc.QueueServiceStub,
) -> None:
    """Three 1 MiB items in one request and one answer: many full write buffers on the way."""
    name = fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
    payloads = [bytes([i]) * limits.message_bytes_max for i in range(3)]
    items = [pb.ProduceItem(payload=p) for p in payloads]
    stub.Produce(pb.ProduceRequest(queue=name, items=items), metadata=auth())
    got = lease_all(stub, name, 3)
    assert sorted(i.payload for i in got) == payloads


# --- one port, three surfaces ------------------------------------------------------------------


def http(server: ServerProcess, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    answer = server.request(method, path, data, headers)
    assert answer.status == 200, answer.text[:1000]
    return json.loads(answer.body)


def test_grpc_to_sqs_and_sqs_to_grpc_with_the_same_body(
    server: ServerProcess, stub: pb_grpc.QueueServiceStub
) -> None:
    name = fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
    text = 'gRPC → SQS: "quoted", <xml-ish> & ünïcode'
    item = pb.ProduceItem(payload=text.encode(), headers={"trace": "t-1"})
    (grpc_id,) = stub.Produce(pb.ProduceRequest(queue=name, items=[item]), metadata=auth()).ids
    sqs = server.sqs_client()
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    got = sqs.receive_message(
        QueueUrl=url, WaitTimeSeconds=2, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )
    (message,) = got["Messages"]
    assert (message["MessageId"], message["Body"]) == (grpc_id, text)
    assert message["MessageAttributes"]["trace"]["StringValue"] == "t-1"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    back = "SQS → gRPC: ✓"
    sent = sqs.send_message(
        QueueUrl=url,
        MessageBody=back,
        MessageAttributes={"origin": {"DataType": "String", "StringValue": "sqs"}},
    )
    (leased,) = lease_all(stub, name, 1)
    assert (leased.id, leased.payload) == (sent["MessageId"], back.encode())
    assert dict(leased.headers) == {"origin": "sqs"}
    done = stub.Complete(pb.CompleteRequest(queue=name, handles=[leased.handle]), metadata=auth())
    assert list(done.results) == ["completed"]


def test_http_sqs_and_grpc_interleave_on_the_same_port(
    server: ServerProcess, stub: pb_grpc.QueueServiceStub
) -> None:
    """Each surface produces, the next one leases and finishes, round after round, while
    all three are busy at once from their own threads."""
    sqs = server.sqs_client()
    errors: list[BaseException] = []

    def round_trip(lane: int) -> None:
        name = fresh(f"ns-mix{lane}")
        stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        for i in range(4):
            body = f"lane {lane} round {i}"
            # gRPC -> HTTP
            stub.Produce(
                pb.ProduceRequest(queue=name, items=[pb.ProduceItem(payload=body.encode())]),
                metadata=auth(),
            )
            lease = {"max_items": 10, "lease_s": 60, "request_timeout_s": 2}
            (item,) = http(server, "POST", f"/v1/queues/{name}/lease", lease)["items"]
            assert item["body"] == body
            http(server, "POST", f"/v1/queues/{name}/complete", {"handles": [item["handle"]]})
            # HTTP -> SQS
            http(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": body}]})
            (msg,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
            assert msg["Body"] == body
            sqs.delete_message(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"])
            # SQS -> gRPC
            sqs.send_message(QueueUrl=url, MessageBody=body)
            (leased,) = lease_all(stub, name, 1)
            assert leased.payload == body.encode()
            req = pb.CompleteRequest(queue=name, handles=[leased.handle])
            assert list(stub.Complete(req, metadata=auth()).results) == ["completed"]

    def lane(n: int) -> None:
        try:
            round_trip(n)
        except BaseException as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=lane, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a lane did not finish in 60 s"
    assert not errors, errors
    assert server.request("GET", "/").status == 200


# --- keys, roles, namespaces -------------------------------------------------------------------

# Every RPC with a request that would be valid for queue {q}.
READS = {"get_queue"}


@pytest.mark.parametrize("rpc", RPCS, ids=[r[0] for r in RPCS])
def test_every_rpc_denies_a_wrong_role_and_a_queue_outside_the_namespace(
    stub: pb_grpc.QueueServiceStub, keys: Keys, rpc: tuple[str, str, Callable[[str], Any]]
) -> None:
    operation, method, request = rpc
    call = getattr(stub, method)
    q, outside = fresh("ns-gdeny"), fresh("other")
    for name in (q, outside):
        stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
    if operation not in READS:
        denied = refusal(lambda: call(request(q), metadata=auth(keys.by_role["readonly"])))
        assert denied.code == grpc.StatusCode.PERMISSION_DENIED
        assert denied.error_code == "forbidden" and "readonly" in denied.message
    denied = refusal(lambda: call(request(outside), metadata=auth(keys.by_role["admin"])))
    assert denied.code == grpc.StatusCode.PERMISSION_DENIED
    assert denied.error_code == "forbidden" and "namespace" in denied.message
    assert stub.GetQueue(pb.GetQueueRequest(queue=q), metadata=auth()).name == q


def test_roles_allow_their_own_operations_inside_the_namespace(
    stub: pb_grpc.QueueServiceStub, keys: Keys
) -> None:
    q = fresh("ns-groles")
    admin, producer, consumer = (keys.by_role[r] for r in ("admin", "producer", "consumer"))
    stub.CreateQueue(pb.CreateQueueRequest(name=q), metadata=auth(admin))
    item = pb.ProduceItem(payload=b"r")
    stub.Produce(pb.ProduceRequest(queue=q, items=[item]), metadata=auth(producer))
    (leased,) = lease_all(stub, q, 1, key=consumer)
    done = stub.Complete(
        pb.CompleteRequest(queue=q, handles=[leased.handle]), metadata=auth(consumer)
    )
    assert list(done.results) == ["completed"]
    listed = stub.ListQueues(pb.ListQueuesRequest(), metadata=auth(keys.by_role["readonly"]))
    assert q in listed.queues and all(n.startswith("ns-") for n in listed.queues)


@pytest.mark.parametrize(
    ("metadata", "error_code", "message"),
    [
        ((), "missing_key", "Send a bearer key: 'Authorization: Bearer <key>'."),
        ((("authorization", "Bearer not-a-key"),), "bad_key", "The bearer key is not valid."),
        ((("authorization", f"Basic {ADMIN}"),), "bad_key",
         "The Authorization header must be 'Bearer <key>'."),
        ((("authorization", "Bearer"),), "bad_key",
         "The Authorization header must be 'Bearer <key>'."),
    ],
    ids=["no key", "unknown key", "not bearer", "empty key"],
)  # fmt: skip
def test_a_missing_or_bad_key_is_unauthenticated_with_the_http_words(
    stub: pb_grpc.QueueServiceStub,
    metadata: tuple[tuple[str, str], ...],
    error_code: str,
    message: str,
) -> None:
    refused = refusal(lambda: stub.ListQueues(pb.ListQueuesRequest(), metadata=metadata))
    assert refused == (grpc.StatusCode.UNAUTHENTICATED, message, error_code)


def test_without_bearer_keys_grpc_is_closed_and_auth_off_opens_it(
    launch: Launch, tmp_path: Path
) -> None:
    """A keys file of no bearer key: closed to every key, the development key too (a server
    with nothing configured takes that one: tests/surface/test_dev_key.py)."""
    empty = tmp_path / "keys.json"
    empty.write_text('{"keys": []}')
    closed = launch({"OKURI_API_KEYS_FILE": str(empty)})
    closed.wait_for("/readyz")
    with grpc.insecure_channel(target(closed)) as ch:
        stub = pb_grpc.QueueServiceStub(ch)
        dev = refusal(lambda: stub.ListQueues(pb.ListQueuesRequest(), metadata=auth(DEV_ADMIN_KEY)))
        assert dev.error_code == "no_keys_configured"
        refused = refusal(lambda: stub.ListQueues(pb.ListQueuesRequest()))
    assert (refused.code, refused.error_code) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "no_keys_configured",
    )
    assert "OKURI_ADMIN_KEY" in refused.message
    assert closed.terminate() == 0

    opened = launch({"OKURI_AUTH": "off"})
    opened.wait_for("/readyz")
    with grpc.insecure_channel(target(opened)) as ch:
        made = pb_grpc.QueueServiceStub(ch).CreateQueue(pb.CreateQueueRequest(name="open-q"))
    assert made.name == "open-q"
    assert opened.terminate() == 0


# --- reflection and health ---------------------------------------------------------------------


def test_reflection_lists_the_services(channel: grpc.Channel) -> None:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    (answer,) = stub.ServerReflectionInfo(iter([request]))
    names = {s.name for s in answer.list_services_response.service}
    assert names == {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}


def test_a_client_built_only_from_reflection_produces_and_leases(
    channel: grpc.Channel, stub: pb_grpc.QueueServiceStub
) -> None:
    """As grpcurl does: descriptors from the server, messages made from them, no .proto."""
    name = fresh()
    stub.CreateQueue(pb.CreateQueueRequest(name=name), metadata=auth())
    pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    service = pool.FindServiceByName(SERVICE)

    def call(method_name: str, body: dict[str, Any]) -> dict[str, Any]:
        method = service.methods_by_name[method_name]
        request_class = message_factory.GetMessageClass(method.input_type)
        response_class = message_factory.GetMessageClass(method.output_type)
        rpc = channel.unary_unary(
            f"/{SERVICE}/{method_name}",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=response_class.FromString,
        )
        answer = rpc(json_format.ParseDict(body, request_class()), metadata=auth())
        return json_format.MessageToDict(answer, preserving_proto_field_name=True)

    payload = "aGVsbG8gZnJvbSByZWZsZWN0aW9u"  # JSON bytes are base64: "hello from reflection"
    produced = call("Produce", {"queue": name, "items": [{"payload": payload}]})
    leased = call("Lease", {"queue": name, "max_items": 1, "request_timeout_s": 2})
    (item,) = leased["items"]
    assert (item["id"], item["payload"]) == (produced["ids"][0], payload)


def test_health_check_answers_serving_and_not_found_for_another_service(
    channel: grpc.Channel,
) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    for service in ("", SERVICE):
        answer = health.Check(health_pb2.HealthCheckRequest(service=service))
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
    unknown = refusal(lambda: health.Check(health_pb2.HealthCheckRequest(service="nope")))
    assert unknown.code == grpc.StatusCode.NOT_FOUND


def test_sigterm_answers_a_waiting_lease_and_ends_health_watches_then_exits_zero(
    launch: Launch,
) -> None:
    server = launch({"OKURI_ADMIN_KEY": ADMIN})
    server.wait_for("/readyz")
    with grpc.insecure_channel(target(server)) as ch:
        stub = pb_grpc.QueueServiceStub(ch)
        stub.CreateQueue(pb.CreateQueueRequest(name="idle"), metadata=auth())
        watch = health_pb2_grpc.HealthStub(ch).Watch(health_pb2.HealthCheckRequest())
        seen = [next(watch).status]
        waiting = stub.Lease.future(
            pb.LeaseRequest(queue="idle", request_timeout_s=20), metadata=auth()
        )
        time.sleep(1.0)  # the lease is waiting in the server
        started_s = time.monotonic()
        assert server.terminate(timeout_s=15) == 0
        assert time.monotonic() - started_s < 5
        assert list(waiting.result(timeout=5).items) == []  # answered, empty, not cut off
        seen += [answer.status for answer in watch]  # the stream ends by itself
    assert seen == [
        health_pb2.HealthCheckResponse.SERVING,
        health_pb2.HealthCheckResponse.NOT_SERVING,
    ]
    assert "Traceback" not in server.log


def test_fifo_over_grpc_groups_sequence_numbers_and_duplicates(
    stub: pb_grpc.QueueServiceStub,
) -> None:
    name = fresh() + ".fifo"
    made = stub.CreateQueue(pb.CreateQueueRequest(name=name, fifo=True), metadata=auth())
    assert made.fifo
    items = [
        pb.ProduceItem(payload=b"a1", group="a", dedup_id="d1"),
        pb.ProduceItem(payload=b"a2", group="a", dedup_id="d2"),
        pb.ProduceItem(payload=b"a1 again", group="a", dedup_id="d1"),
    ]
    produced = stub.Produce(pb.ProduceRequest(queue=name, items=items), metadata=auth())
    assert produced.ids[2] == produced.ids[0] and list(produced.duplicates) == [2]
    assert len(produced.sequence_numbers) == 3
    assert int(produced.sequence_numbers[0]) < int(produced.sequence_numbers[1])
    got = lease_all(stub, name, 2)
    assert [(i.payload, i.group) for i in got] == [(b"a1", "a"), (b"a2", "a")]
    assert [i.sequence_number for i in got] == list(produced.sequence_numbers[:2])
    refused = refusal(
        lambda: stub.Produce(
            pb.ProduceRequest(queue=name, items=[pb.ProduceItem(payload=b"x", dedup_id="d9")]),
            metadata=auth(),
        )
    )
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and "group" in refused.message
