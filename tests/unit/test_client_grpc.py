"""okuri.client's gRPC transports, held to the HTTP transport: every operation's request is the
message the server's gRPC surface reads as the document HTTP would send (through the server's
own okuri/native/grpc_shapes.py), every answer message is read as the document HTTP would
answer, every refusal is the error HTTP's answer would raise, and grpc's own failures are
retried as HTTP's are. Calls go to a scripted channel (answers and errors recorded, never
slept); the same clients against a real server are tests/surface/test_native_client.py."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from google.protobuf.message import Message

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.client import (
    OPERATIONS,
    AsyncGrpcTransport,
    AuthError,
    BadRequestError,
    Client,
    GrpcTransport,
    Item,
    NotFoundError,
    OkuriClientError,
    OverloadedError,
    RetryableError,
    RetryPolicy,
    ServerError,
    TooLargeError,
    TransportError,
    UnavailableError,
)
from okuri.client import grpc_shapes as wire
from okuri.client import operations as ops
from okuri.client.grpc import error_of, target
from okuri.client.http import from_http, to_http
from okuri.client.operations import UNSET
from okuri.client.transport import Doc, Request
from okuri.clock import SystemClock
from okuri.engine import Engine
from okuri.native import grpc_shapes as served
from okuri.native.errors import NativeError
from okuri.native.grpc_service import QueueService, status_of, trailers
from okuri.store.memory import MemoryStore
from tests.clients import KINDS, open_client

ROOT = Path(__file__).resolve().parents[2]
KEY = "test-key-0123456789"
T0 = "2026-12-01T10:00:00.000Z"
AT = datetime(2026, 12, 1, 10, 5, tzinfo=UTC)
TOKYO_EVENING = datetime(2026, 12, 1, 19, 0, tzinfo=timezone(timedelta(hours=9)))
Code = grpc.StatusCode
QUEUE_DOC: Doc = {
    "name": "emails",
    "fifo": False,
    "attributes": {
        "lease_timeout_s": 60,
        "max_attempts": 5,
        "dead_letter_queue": "emails-dlq",
        "retention_s": 345600,
        "delay_s": 0,
        "expires_s": None,
    },
    "stats": {"visible": 1, "leased": 2, "delayed": 3, "dead_lettered": 4},
    "created_at": T0,
}


# --- requests: the message the server reads as HTTP's document --------------------------------


REQUESTS: list[ops.Call[Any]] = [
    ops.create_queue("emails", ops.attributes(60, None, "emails-dlq", UNSET, UNSET)),
    ops.create_queue("plain", {}),
    ops.create_queue("orders.fifo", ops.attributes(UNSET, UNSET, UNSET, UNSET, 0, True)),
    ops.get_queue("emails"),
    ops.update_queue("emails", ops.attributes(90, None, None, UNSET, 0)),
    ops.update_queue("emails", ops.attributes(UNSET, 3, UNSET, UNSET, UNSET)),
    ops.update_queue("emails", {}),
    ops.update_queue("orders.fifo", ops.attributes(UNSET, UNSET, UNSET, UNSET, UNSET, False)),
    ops.list_queues("em", 2, "a"),
    ops.list_queues(),
    ops.delete_queue("emails"),
    ops.purge_queue("emails"),
    ops.produce(
        "emails",
        [
            bytes(range(256)),
            "héllo ✓",
            Item("x", headers={"to": "ada"}, dedup_id="d-1", enqueue_at=TOKYO_EVENING),
            Item(b"utf-8 bytes"),
            "",
        ],
    ),
    ops.produce(
        "orders.fifo",
        [Item("paid", group="order-7", dedup_id="order-7-paid"), Item(b"\x00", group="o-8")],
    ),
    ops.lease("emails", 10, 30, 5),
    ops.lease("emails"),
    ops.complete("emails", ["h-1", "h-2"]),
    ops.retry("emails", ["h-1"], at=AT),
    ops.retry("emails", ["h-1", "h-2"], dead=True),
    ops.retry("emails", "h-1"),
    ops.extend("emails", ["h-1"], 90),
    ops.redrive("emails-dlq", "emails", 7),
    ops.redrive("emails-dlq"),
]


def read_by_server(operation: str, m: Any) -> tuple[str, Doc]:
    """The queue and the document the server's gRPC surface hands the operation for `m`
    (okuri/native/grpc_service.py)."""
    doc = served.request_doc(m)
    if operation == "list_queues":  # a GET: HTTP carries it as a query string, values as text
        doc = {k: str(v) for k, v in doc.items()}
    queue = "" if operation in ("create_queue", "list_queues") else m.queue
    return queue, doc


def sent_over_http(request: Request) -> Doc:
    """The document the HTTP transport sends: the query of a GET, else the JSON body."""
    r = to_http(request, 10)
    return r.params if r.method == "GET" else json.loads(r.body) if r.body else {}


def meaning(operation: str, doc: Any) -> Any:
    """`doc` where two spellings mean one thing to the server: a time in any offset, a payload
    as text or base64, and on create a null attribute, which is the default."""
    if isinstance(doc, list):
        return [meaning(operation, v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out = {k: meaning(operation, v) for k, v in doc.items()}
    for name in ("enqueue_at", "retry_at"):
        if name in out:
            out[name] = datetime.fromisoformat(out[name])
    if "body" in out:
        out["payload"] = out.pop("body").encode()
    if "body_base64" in out:
        out["payload"] = base64.b64decode(out.pop("body_base64"))
    if operation == "create_queue" and isinstance(out.get("attributes"), dict):
        out["attributes"] = {k: v for k, v in out["attributes"].items() if v is not None}
    return out


@pytest.mark.parametrize("call", REQUESTS, ids=lambda c: c.request.operation)
def test_every_request_is_the_message_the_server_reads_as_the_http_document(
    call: ops.Call[Any],
) -> None:
    request = call.request
    message = wire.to_message(request)
    rpc = wire.RPC[request.operation]
    assert isinstance(message, rpc.request)
    on_the_wire = rpc.request.FromString(message.SerializeToString())
    queue, doc = read_by_server(request.operation, on_the_wire)
    http = sent_over_http(request)
    assert queue == request.queue
    assert meaning(request.operation, doc) == meaning(request.operation, http)


def test_only_spelling_differs_between_the_wires() -> None:
    """What `meaning` forgives is spelling: the same instant, the same bytes, the default."""
    produce = next(c for c in REQUESTS if c.request.operation == "produce")
    _, doc = read_by_server("produce", wire.to_message(produce.request))
    assert doc["items"][0] == {"body_base64": base64.b64encode(bytes(range(256))).decode()}
    assert doc["items"][2]["enqueue_at"] == "2026-12-01T10:00:00.000Z"  # 19:00 in Tokyo
    assert doc["items"][3] == {"body": "utf-8 bytes"}  # the same bytes, as the server sees them
    update = ops.update_queue("q", ops.attributes(UNSET, None, None, UNSET, UNSET)).request
    message = wire.to_message(update)
    assert isinstance(message, pb.UpdateQueueRequest)
    assert list(message.reset_attributes) == ["max_attempts", "dead_letter_queue"]
    assert message.HasField("attributes")  # named, though empty: the update is not missing it


def test_a_value_protobuf_cannot_carry_is_refused_before_anything_is_sent() -> None:
    fake = FakeChannel(lambda path: pb.LeaseResponse())
    with client("sync", fake) as c, pytest.raises(BadRequestError) as caught:
        c.lease("emails", lease_s=2**40)
    assert (caught.value.status, caught.value.code) == (400, "out_of_range")
    assert "lease_s" in caught.value.message
    assert fake.seen == []


# --- answers: the document HTTP would answer --------------------------------------------------


def leased(**fields: Any) -> Doc:
    return {
        "id": "id-1",
        "handle": "h-1",
        "attempts": 1,
        "lease_deadline": "2026-12-01T10:00:30.123Z",
        "enqueued_at": T0,
        **fields,
    }


def written(shape: str) -> Callable[[Doc], Message]:
    """The server's writer of answer message `shape`."""
    return lambda doc: served.answer(shape, doc)


def results(cls: Callable[..., Message]) -> Callable[[Doc], Message]:
    return lambda doc: cls(results=doc["results"])


FIFO_QUEUE_DOC = {
    **QUEUE_DOC,
    "name": "orders.fifo",
    "fifo": True,
    "attributes": {**QUEUE_DOC["attributes"], "content_based_dedup": True},
}
NO_LIMITS = {
    **QUEUE_DOC,
    "attributes": {**QUEUE_DOC["attributes"], "max_attempts": None, "dead_letter_queue": None},
}
EXPIRING = {**QUEUE_DOC, "attributes": {**QUEUE_DOC["attributes"], "expires_s": 3600}}
ANSWERS: list[tuple[str, Doc, Callable[[Doc], Message]]] = [
    ("queue", QUEUE_DOC, written("Queue")),
    ("queue that expires", EXPIRING, written("Queue")),
    ("queue without limits", NO_LIMITS, written("Queue")),
    ("fifo queue", FIFO_QUEUE_DOC, written("Queue")),
    ("a page", {"queues": ["a", "b"], "next": "b"}, written("ListQueuesResponse")),
    ("the last page", {"queues": [], "next": None}, written("ListQueuesResponse")),
    ("deleted", {}, lambda doc: pb.DeleteQueueResponse()),
    ("purged", {}, lambda doc: pb.PurgeQueueResponse()),
    ("produced", {"ids": ["id-0", "id-1"]}, written("ProduceResponse")),
    (
        "partly produced",
        {"ids": ["id-0", None], "errors": [{"index": 1, "code": "internal", "message": "no"}]},
        written("ProduceResponse"),
    ),
    (
        "leased",
        {
            "items": [
                leased(body="héllo", headers={"k": "v"}, attempts=2),
                leased(id="id-2", handle="h-2", body_base64="AAH/"),
                leased(id="id-3", handle="h-3", body=""),
            ]
        },
        written("LeaseResponse"),
    ),
    (
        "fifo produced",
        {
            "ids": ["id-0", "id-1", "id-0"],
            "sequence_numbers": [
                "10000000000000065536",
                "10000000000000065537",
                "10000000000000065536",
            ],
            "duplicates": [2],
        },
        written("ProduceResponse"),
    ),
    (
        "fifo produced without duplicates",
        {"ids": ["id-0"], "sequence_numbers": ["10000000000000065536"], "duplicates": []},
        written("ProduceResponse"),
    ),
    (
        "fifo leased",
        {"items": [leased(body="paid", group="order-7", sequence_number="10000000000000065536")]},
        written("LeaseResponse"),
    ),
    ("leased none", {"items": []}, written("LeaseResponse")),
    ("completed", {"results": ["completed", "stale"]}, results(pb.CompleteResponse)),
    ("retried", {"results": ["retried", "dead", "gone"]}, results(pb.RetryResponse)),
    ("extended", {"results": ["extended", "invalid"]}, results(pb.ExtendResponse)),
    ("redriven", {"moved": 3}, lambda doc: pb.RedriveResponse(moved=doc["moved"])),
    (
        "exchange",
        {
            "name": "events",
            "type": "topic",
            "bindings": [{"queue": "emails", "routing_key": "email.#"}],
            "created_at": T0,
        },
        written("Exchange"),
    ),
    ("exchange page", {"exchanges": ["events"], "next": None}, written("ListExchangesResponse")),
]


@pytest.mark.parametrize(("what", "doc", "build"), ANSWERS, ids=[a[0] for a in ANSWERS])
def test_every_answer_is_read_as_the_document_the_http_answer_would_be(
    what: str, doc: Doc, build: Callable[[Doc], Message]
) -> None:
    message = build(doc)  # as the server's gRPC surface answers what its HTTP surface would
    on_the_wire = type(message).FromString(message.SerializeToString())
    assert wire.from_message(on_the_wire) == doc


def test_the_rpc_table_is_the_services_and_each_rpc_runs_the_same_operation() -> None:
    service = QueueService(Engine(MemoryStore(), SystemClock()), SystemClock(), None)
    assert set(wire.RPCS) == set(OPERATIONS)
    assert set(wire.RPCS.values()) == set(service.rpcs)
    for operation, name in wire.RPCS.items():
        assert service.rpcs[name].__name__ == operation


# --- errors: what HTTP's answer would raise ---------------------------------------------------


REFUSALS = [
    NativeError(400, "out_of_range", "'max_items' must be from 1 to 100."),
    NativeError(400, "bad_protobuf", "The request is not a valid okuri.api.v1.LeaseRequest."),
    NativeError(401, "bad_key", "The key is not known."),
    NativeError(403, "forbidden", "Not allowed."),
    NativeError(403, "quota_exceeded", "Creating queue 'q' would exceed the maximum: 10."),
    NativeError(404, "queue_not_found", "The queue does not exist."),
    NativeError(405, "method_not_allowed", "No."),
    NativeError(409, "queue_exists", "The queue exists with other attributes."),
    NativeError(413, "too_large", "items[0] is 1048577 bytes."),
    NativeError(429, "overloaded", "This server is at its bound; retry after 1 s.", 1),
    NativeError(500, "internal", "The request could not be processed."),
    NativeError(503, "unavailable", "Try again: the bucket is slow."),
]


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda e: f"{e.status}-{e.code}")
def test_each_refusal_is_the_error_its_http_answer_raises(refusal: NativeError) -> None:
    over_grpc = error_of(status_of(refusal), refusal.message, trailers(refusal))
    body = json.dumps(refusal.body()).encode()
    with pytest.raises(OkuriClientError) as caught:
        from_http(refusal.status, httpx.Headers(refusal.headers()).get("retry-after"), body)
    over_http = caught.value
    assert type(over_grpc) is type(over_http)
    assert (over_grpc.status, over_grpc.code, over_grpc.message) == (
        over_http.status,
        over_http.code,
        over_http.message,
    )
    if isinstance(over_http, RetryableError):
        assert isinstance(over_grpc, RetryableError)
        assert over_grpc.retry_after_s == over_http.retry_after_s


CONNECT_FAILED = (
    "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:9: "
    "Failed to connect to remote host: Connection refused"
)


@pytest.mark.parametrize(
    ("code", "details", "kind", "sent"),
    [
        (Code.UNAVAILABLE, CONNECT_FAILED, TransportError, False),
        (Code.UNAVAILABLE, "errors resolving nowhere.invalid:80: Domain name not found",
         TransportError, False),
        (Code.UNAVAILABLE, "DNS resolution failed for nowhere.invalid", TransportError, False),
        (Code.UNAVAILABLE, "Stream removed (Socket closed)", TransportError, True),
        (Code.UNAVAILABLE, "Socket closed", TransportError, True),
        (Code.DEADLINE_EXCEEDED, "Deadline Exceeded", TransportError, True),
        (Code.CANCELLED, "Channel closed!", TransportError, True),
        (Code.RESOURCE_EXHAUSTED, "Received message larger than max (5000000 vs. 4194304)",
         TooLargeError, None),
        (Code.UNIMPLEMENTED, "Method not found!", NotFoundError, None),
        (Code.UNAUTHENTICATED, "a proxy wants a password", AuthError, None),
        (Code.UNKNOWN, "Exception calling application", ServerError, None),
        (Code.INTERNAL, "Exception deserializing response!", ServerError, None),
    ],
)  # fmt: skip
def test_grpcs_own_failures_without_the_servers_code_are_their_http_kin(
    code: grpc.StatusCode, details: str, kind: type[OkuriClientError], sent: bool | None
) -> None:
    err = error_of(code, details, ())
    assert type(err) is kind
    assert details in err.message
    if sent is not None:
        assert isinstance(err, TransportError) and err.sent is sent and err.status is None
        assert err.code == ("timeout" if code == Code.DEADLINE_EXCEEDED else "connection_failed")


# --- the transports, over a scripted channel ---------------------------------------------------


@dataclass
class Seen:
    path: str
    request: Message
    timeout: float | None
    metadata: Any


Answer = Message | Exception | Callable[[str], Message]


class FakeChannel:
    """A grpc channel (blocking, or asyncio with `aio`) answering each call from a script (one
    answer per call, the last repeated; an exception is raised as grpc would), recording the
    request as the server would read it."""

    def __init__(self, *answers: Answer, aio: bool = False) -> None:
        self.answers = list(answers)
        self.aio = aio
        self.seen: list[Seen] = []
        self.closed = False

    def unary_unary(
        self,
        path: str,
        request_serializer: Callable[[Message], bytes],
        response_deserializer: Callable[[bytes], Message],
    ) -> Callable[..., Any]:
        rpc = next(r for r in wire.RPC.values() if r.path == path)

        def call(message: Message, timeout: float | None = None, metadata: Any = None) -> Message:
            request = rpc.request.FromString(request_serializer(message))
            self.seen.append(Seen(path, request, timeout, metadata))
            answer = self.answers[min(len(self.seen), len(self.answers)) - 1]
            if isinstance(answer, Exception):
                raise answer
            if not isinstance(answer, Message):
                answer = answer(path)
            return response_deserializer(answer.SerializeToString())

        async def acall(message: Message, **options: Any) -> Message:
            return call(message, **options)

        return acall if self.aio else call

    def close(self) -> None:
        self.closed = True


def canned(path: str) -> Message:
    """A well-formed answer to whatever RPC `path` names."""
    name = path.rsplit("/", 1)[-1]
    if name in ("CreateQueue", "GetQueue", "UpdateQueue"):
        return served.answer("Queue", QUEUE_DOC)
    return {
        "ListQueues": pb.ListQueuesResponse(queues=["emails"]),
        "DeleteQueue": pb.DeleteQueueResponse(),
        "PurgeQueue": pb.PurgeQueueResponse(),
        "Produce": pb.ProduceResponse(ids=["id-1"]),
        "Lease": served.answer("LeaseResponse", {"items": [leased(body="hi")]}),
        "Complete": pb.CompleteResponse(results=["completed"]),
        "Retry": pb.RetryResponse(results=["retried"]),
        "Extend": pb.ExtendResponse(results=["extended"]),
        "Redrive": pb.RedriveResponse(moved=3),
    }[name]


def refused(code: grpc.StatusCode, details: str, *trailing: tuple[str, str]) -> grpc.RpcError:
    """A failed call as grpc raises it (the asyncio flavour serves both: same questions)."""
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailing), details)


def overloaded(pushback_ms: int) -> grpc.RpcError:
    return refused(
        Code.RESOURCE_EXHAUSTED,
        "This server is at its bound of requests in flight; retry after 1 s.",
        ("okuri-error-code", "overloaded"),
        ("grpc-retry-pushback-ms", str(pushback_ms)),
    )


def client(kind: str, fake: FakeChannel, *, timeout_s: float = 10.0, **options: Any) -> Any:
    """A client of `kind` over a gRPC transport on `fake`."""
    fake.aio = kind == "async"
    transport: Any = (GrpcTransport if kind == "sync" else AsyncGrpcTransport)(
        "", KEY, timeout_s=timeout_s, channel=fake
    )
    return open_client(kind, "", transport=transport, **options)


@pytest.mark.parametrize("kind", KINDS)
def test_every_method_calls_its_rpc_with_the_key_and_a_deadline_covering_a_long_poll(
    kind: str,
) -> None:
    fake = FakeChannel(canned)
    with client(kind, fake, timeout_s=3) as c:
        assert c.create_queue("emails").name == "emails"
        assert c.get_queue("emails").stats.leased == 2
        c.update_queue("emails", max_attempts=None)
        assert c.list_queues("em").queues == ("emails",)
        c.delete_queue("emails")
        c.purge_queue("emails")
        assert c.produce("emails", "hi") == ["id-1"]
        [item] = c.lease("emails", 10, request_timeout_s=20)
        assert item.text == "hi" and item.lease_deadline.microsecond == 123000
        assert c.complete("emails", item) == ["completed"]
        assert c.retry("emails", item, at=AT) == ["retried"]
        assert c.extend("emails", item, 60) == ["extended"]
        assert c.redrive("emails-dlq") == 3
    paths = [s.path.rsplit("/", 1)[-1] for s in fake.seen]
    assert paths == [
        "CreateQueue", "GetQueue", "UpdateQueue", "ListQueues", "DeleteQueue", "PurgeQueue",
        "Produce", "Lease", "Complete", "Retry", "Extend", "Redrive",
    ]  # fmt: skip
    assert all(s.path.startswith("/okuri.api.v1.QueueService/") for s in fake.seen)
    assert {tuple(s.metadata) for s in fake.seen} == {(("authorization", f"Bearer {KEY}"),)}
    assert [s.timeout for s in fake.seen] == [3] * 7 + [23] + [3] * 4
    assert fake.seen[7].request == pb.LeaseRequest(
        queue="emails", max_items=10, request_timeout_s=20
    )
    assert not fake.closed  # a channel given is the caller's to close


@pytest.mark.parametrize("kind", KINDS)
def test_an_overloaded_call_waits_out_the_servers_pushback_then_gets_its_answer(
    kind: str,
) -> None:
    fake = FakeChannel(overloaded(2000), overloaded(1000), pb.ProduceResponse(ids=["id-1"]))
    slept: list[float] = []
    with client(kind, fake, slept=slept, retries=RetryPolicy(backoff_s_base=0.1)) as c:
        assert c.produce("emails", ["x"]) == ["id-1"]  # produce too: nothing was done
    assert len(fake.seen) == 3
    assert 2 <= slept[0] < 2.1 and 1 <= slept[1] < 1.1


@pytest.mark.parametrize("kind", KINDS)
def test_an_overload_outlasting_the_tries_is_an_overloaded_error(kind: str) -> None:
    fake = FakeChannel(overloaded(1000))
    c = client(kind, fake, slept=[], retries=RetryPolicy(attempts_max=3))
    with c, pytest.raises(OverloadedError) as caught:
        c.lease("emails", request_timeout_s=5)
    assert (caught.value.status, caught.value.code, caught.value.retry_after_s) == (
        429,
        "overloaded",
        1.0,
    )
    assert len(fake.seen) == 3


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "failure",
    [
        refused(Code.UNAVAILABLE, "Stream removed (Socket closed)"),
        refused(Code.DEADLINE_EXCEEDED, "Deadline Exceeded"),
        refused(Code.UNAVAILABLE, "Try again", ("okuri-error-code", "unavailable")),
    ],
    ids=["cut-off", "deadline", "server-unavailable"],
)
def test_produce_is_not_retried_after_a_call_that_may_have_reached_the_server(
    kind: str, failure: grpc.RpcError
) -> None:
    fake = FakeChannel(failure, pb.ProduceResponse(ids=["id-1"]))
    with client(kind, fake, slept=[]) as c, pytest.raises((UnavailableError, TransportError)):
        c.produce("emails", ["x"])
    assert len(fake.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_produce_is_retried_when_no_connection_could_be_made(kind: str) -> None:
    fake = FakeChannel(refused(Code.UNAVAILABLE, CONNECT_FAILED), pb.ProduceResponse(ids=["i"]))
    with client(kind, fake, slept=[]) as c:
        assert c.produce("emails", ["x"]) == ["i"]
    assert len(fake.seen) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_other_operations_are_retried_through_deadlines_and_cut_off_calls(kind: str) -> None:
    fake = FakeChannel(
        refused(Code.DEADLINE_EXCEEDED, "Deadline Exceeded"),
        refused(Code.UNAVAILABLE, "Socket closed"),
        canned,
    )
    with client(kind, fake, slept=[]) as c:
        assert c.complete("emails", ["h-1"]) == ["completed"]
    assert len(fake.seen) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_mistakes_are_not_retried_and_keep_the_servers_code_and_words(kind: str) -> None:
    fake = FakeChannel(
        refused(Code.INVALID_ARGUMENT, "'max_items' must be from 1 to 100.",
                ("okuri-error-code", "out_of_range")),
        canned,
    )  # fmt: skip
    with client(kind, fake, slept=[]) as c, pytest.raises(BadRequestError) as caught:
        c.lease("emails", 1000)
    assert (caught.value.status, caught.value.code) == (400, "out_of_range")
    assert caught.value.message == "'max_items' must be from 1 to 100."
    assert isinstance(caught.value.__cause__, grpc.RpcError)
    assert len(fake.seen) == 1


# --- addresses -----------------------------------------------------------------------------


def test_a_grpc_url_names_a_host_and_port_and_grpcs_is_tls() -> None:
    assert target("grpc://localhost:8080") == ("localhost:8080", False)
    assert target("grpc://localhost") == ("localhost:80", False)
    assert target("grpcs://okuri.example.com") == ("okuri.example.com:443", True)
    assert target("grpc://[::1]:8080/") == ("[::1]:8080", False)
    for bad in ("http://localhost:8080", "grpc://", "grpc://host:1/v1", "grpc://u@host:1"):
        with pytest.raises(ValueError, match="grpc"):
            target(bad)


def test_the_clients_pick_grpc_by_the_urls_scheme_and_refuse_an_http_client_for_it() -> None:
    with pytest.raises(ValueError, match="grpc://"):
        Client("grpc:/nohost", KEY)
    with pytest.raises(ValueError, match="http="), httpx.Client() as http:
        Client("grpc://localhost:8080", KEY, http=http)
    with Client("grpc://localhost:8080", KEY, timeout_s=5) as c:
        assert isinstance(c._transport, GrpcTransport) and c._transport.timeout_s == 5


def test_importing_the_client_loads_grpc_only_when_a_grpc_transport_is_asked_for() -> None:
    script = (
        "import sys, okuri.client\n"
        "assert 'grpc' not in sys.modules and 'google.protobuf' not in sys.modules\n"
        "okuri.client.GrpcTransport\n"
        "assert 'grpc' in sys.modules\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
