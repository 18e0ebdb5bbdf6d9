"""okuri.client against a real `okuri serve`: every method of `Client` and of `AsyncClient`
(each scenario runs with both, over HTTP/JSON and over gRPC, through tests/clients.py),
long-poll leases, retry now, later and dead, redrive, binary payloads, and the server's
refusals as typed errors: the same answers and the same errors on either wire."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.launch import free_port
from okuri.client import (
    NO_RETRIES,
    AsyncClient,
    AuthError,
    BadRequestError,
    Client,
    ConflictError,
    ForbiddenError,
    Item,
    LeasedItem,
    NotFoundError,
    RetryPolicy,
    TooLargeError,
    TransportError,
)
from tests.clients import CLIENTS, open_client, over
from tests.servers import RoleKeys, ServerProcess, keyed_server, role_keys, start_server

ADMIN = "client-test-admin-key-0123456789"
NS = "nc-"  # the namespace of the role keys


Keys = RoleKeys


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return role_keys(tmp_path_factory.mktemp("keys"), NS, ("producer", "consumer", "readonly"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("client"), ADMIN, keys.file)
    yield proc
    proc.terminate()


@pytest.fixture(params=CLIENTS)
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def okuri(server: ServerProcess, kind: str) -> Iterator[Any]:
    """An admin client of the server: a `Client`, or an `AsyncClient` driven call by call, over
    HTTP or gRPC."""
    with open_client(kind, server.url, ADMIN) as client:
        yield client


def fresh(prefix: str = NS + "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def lease_all(okuri: Any, queue: str, count: int, **options: Any) -> list[LeasedItem]:
    """Lease until `count` items came (bounded: items just produced may take a moment to be
    adopted by the node that leases them)."""
    got: list[LeasedItem] = []
    for _ in range(5):
        got += okuri.lease(queue, count - len(got), request_timeout_s=2, **options)
        if len(got) >= count:
            break
    return got


# --- queues ----------------------------------------------------------------------------------


def test_create_get_update_list_purge_and_delete_a_queue(okuri: Any) -> None:
    prefix = fresh()
    name, dlq = f"{prefix}-main", f"{prefix}-dlq"
    okuri.create_queue(dlq)
    queue = okuri.create_queue(
        name, lease_timeout_s=45, max_attempts=3, dead_letter_queue=dlq, delay_s=0
    )
    assert queue.name == name and queue.fifo is False
    assert (queue.attributes.lease_timeout_s, queue.attributes.max_attempts) == (45, 3)
    assert queue.attributes.dead_letter_queue == dlq
    assert queue.created_at <= datetime.now(UTC)
    assert okuri.create_queue(name, lease_timeout_s=45, max_attempts=3, dead_letter_queue=dlq)
    with pytest.raises(ConflictError) as caught:
        okuri.create_queue(name, lease_timeout_s=46)
    assert (caught.value.status, caught.value.code) == (409, "queue_exists")

    updated = okuri.update_queue(name, lease_timeout_s=90, max_attempts=None)
    assert updated.attributes.lease_timeout_s == 90 and updated.attributes.max_attempts is None
    assert updated.attributes.dead_letter_queue == dlq  # untouched

    okuri.produce(name, ["a", "b", "c"])
    assert okuri.get_queue(name).stats.visible == 3
    page = okuri.list_queues(prefix, limit=1)
    assert page.queues == (dlq,) and page.next == dlq
    assert okuri.list_queues(prefix, limit=1, after=page.next).queues == (name,)
    assert list(okuri.iter_queues(prefix, page_size=1)) == [dlq, name]

    okuri.purge_queue(name)
    stats = okuri.get_queue(name).stats
    assert (stats.visible, stats.leased, stats.delayed) == (0, 0, 0)
    okuri.delete_queue(name)
    with pytest.raises(NotFoundError) as missing:
        okuri.get_queue(name)
    assert missing.value.code == "queue_not_found"


# --- messages --------------------------------------------------------------------------------


def test_text_binary_headers_and_dedup_round_trip_through_produce_and_lease(okuri: Any) -> None:
    name = fresh()
    okuri.create_queue(name)
    binary = bytes(range(256))
    ids = okuri.produce(
        name,
        [
            Item("héllo ✓", headers={"kind": "greeting"}),
            binary,
            Item("once", dedup_id="d-1"),
            Item("once", dedup_id="d-1"),
        ],
    )
    assert len(set(ids[:3])) == 3 and ids[3] == ids[2]
    leased = lease_all(okuri, name, 3, lease_s=30)
    by_id = {item.id: item for item in leased}
    assert set(by_id) == set(ids)
    text, blob, once = by_id[ids[0]], by_id[ids[1]], by_id[ids[2]]
    assert text.text == "héllo ✓" and text.headers == {"kind": "greeting"}
    assert blob.body == binary and blob.headers == {}
    assert once.body == b"once" and once.attempts == 1
    assert timedelta(seconds=20) < text.lease_deadline - datetime.now(UTC) <= timedelta(seconds=31)
    assert text.enqueued_at <= datetime.now(UTC)

    results = okuri.complete(name, [text, blob.handle, once, "okr1bm90aGluZw"])
    assert results == ["completed", "completed", "completed", "invalid"]
    assert okuri.complete(name, text) == ["gone"]


def test_a_fifo_queue_takes_groups_and_leases_them_in_order(okuri: Any) -> None:
    name = fresh() + ".fifo"
    queue = okuri.create_queue(name, content_based_dedup=True)
    assert queue.fifo is True and queue.attributes.content_based_dedup is True
    ids = okuri.produce(
        name,
        [
            Item("a1", group="a", dedup_id="a1"),
            Item("b1", group="b"),  # deduplicated by its content
            Item("a2", group="a", dedup_id="a2"),
            Item("b1", group="b"),  # the same content: a duplicate
        ],
    )
    assert ids[3] == ids[1] and len(set(ids)) == 3
    leased = lease_all(okuri, name, 3)
    # One lease takes a group whole, then the next, as SQS's receive does.
    assert [(i.text, i.group) for i in leased] == [("a1", "a"), ("a2", "a"), ("b1", "b")]
    numbers = [int(i.sequence_number or 0) for i in leased]
    assert numbers[0] < numbers[2] < numbers[1] and 0 not in numbers
    assert okuri.complete(name, leased) == ["completed"] * 3
    standard = okuri.create_queue(fresh())
    assert standard.attributes.content_based_dedup is None  # a FIFO queue's attribute only


def test_an_item_scheduled_ahead_waits_as_delayed(okuri: Any) -> None:
    name = fresh()
    okuri.create_queue(name)
    okuri.produce(name, Item("later", enqueue_at=datetime.now(UTC) + timedelta(minutes=10)))
    assert okuri.get_queue(name).stats.delayed == 1
    assert okuri.lease(name) == []


def test_a_long_poll_longer_than_the_clients_timeout_waits_instead_of_failing(
    server: ServerProcess, kind: str
) -> None:
    with open_client(kind, server.url, ADMIN, timeout_s=1) as okuri:
        name = fresh()
        okuri.create_queue(name)
        assert okuri.lease(name, request_timeout_s=2) == []


@pytest.mark.parametrize("wire", ["http", "grpc"])
def test_a_waiting_lease_takes_an_item_produced_meanwhile_sync(
    server: ServerProcess, wire: str
) -> None:
    with Client(over(wire, server.url), ADMIN) as okuri:
        name = fresh()
        okuri.create_queue(name)
        got: list[LeasedItem] = []
        waiter = threading.Thread(
            target=lambda: got.extend(okuri.lease(name, request_timeout_s=20))
        )
        waiter.start()
        okuri.produce(name, "wake up")
        waiter.join(timeout=30)
    assert not waiter.is_alive()
    assert [i.text for i in got] == ["wake up"]


@pytest.mark.parametrize("wire", ["http", "grpc"])
def test_a_waiting_lease_takes_an_item_produced_meanwhile_async(
    server: ServerProcess, wire: str
) -> None:
    async def scenario() -> list[LeasedItem]:
        async with AsyncClient(over(wire, server.url), ADMIN) as okuri:
            name = fresh()
            await okuri.create_queue(name)
            waiting = asyncio.create_task(okuri.lease(name, request_timeout_s=20))
            await okuri.produce(name, "wake up")
            return await asyncio.wait_for(waiting, 30)

    got = asyncio.run(scenario())
    assert [i.text for i in got] == ["wake up"]


def test_extend_then_retry_now_and_at_a_time(okuri: Any) -> None:
    name = fresh()
    okuri.create_queue(name)
    okuri.produce(name, ["now", "later"])
    leased = {i.text: i for i in lease_all(okuri, name, 2, lease_s=60)}
    assert okuri.extend(name, list(leased.values()), 120) == ["extended", "extended"]
    assert okuri.retry(name, leased["now"]) == ["retried"]
    in_an_hour = datetime.now(UTC) + timedelta(hours=1)
    assert okuri.retry(name, leased["later"], at=in_an_hour) == ["retried"]
    again = lease_all(okuri, name, 1, lease_s=60)
    assert [(i.text, i.attempts) for i in again] == [("now", 2)]
    assert okuri.lease(name) == []  # "later" is hidden for an hour


def test_retry_dead_sends_an_item_to_the_dead_letter_queue_and_redrive_brings_it_back(
    okuri: Any,
) -> None:
    name, dlq = fresh(), fresh()
    okuri.create_queue(dlq)
    okuri.create_queue(name, max_attempts=5, dead_letter_queue=dlq)
    poison = b"\x00poison\xff"
    okuri.produce(name, poison)
    [item] = lease_all(okuri, name, 1, lease_s=60)
    assert okuri.retry(name, item, dead=True) == ["dead"]
    assert okuri.get_queue(dlq).stats.visible == 1
    assert okuri.redrive(dlq, target=name) == 1
    [back] = lease_all(okuri, name, 1)
    assert back.id == item.id and back.body == poison


# --- exchanges -------------------------------------------------------------------------------


def test_exchanges_declare_bind_publish_unbind_and_delete(
    okuri: Any, server: ServerProcess
) -> None:
    """A topic exchange routes by pattern to each queue once; a fanout one to every queue; what
    was published through an exchange is an ordinary item, read back over SQS too."""
    prefix = fresh(NS + "x")
    topic, fanout = f"{prefix}-topic", f"{prefix}-fan"
    mail, every = f"{prefix}-mail", f"{prefix}-every"
    for queue in (mail, every):
        okuri.create_queue(queue)
    declared = okuri.create_exchange(topic, "topic")
    assert (declared.name, declared.type, declared.bindings) == (topic, "topic", ())
    assert okuri.create_exchange(topic, "topic").created_at == declared.created_at
    with pytest.raises(ConflictError) as caught:
        okuri.create_exchange(topic, "fanout")
    assert caught.value.code == "exchange_exists"
    okuri.bind(topic, mail, "mail.#")
    okuri.bind(topic, every, "#")
    bound = okuri.bind(topic, every, "mail.*")  # a second binding of one queue
    assert {(b.queue, b.routing_key) for b in bound.bindings} == {
        (mail, "mail.#"), (every, "#"), (every, "mail.*")
    }  # fmt: skip

    routed = okuri.publish(topic, "mail.sent", [Item("hello")])
    assert set(routed) == {mail, every} and all(len(ids) == 1 for ids in routed.values())
    assert list(okuri.publish(topic, "sms", [Item("not mail")])) == [every]
    (mail_item,) = lease_all(okuri, mail, 1)
    assert (mail_item.id, mail_item.body) == (routed[mail][0], b"hello")

    okuri.create_exchange(fanout, "fanout")
    okuri.bind(fanout, every)
    (fanned,) = okuri.publish(fanout, "any key at all", [Item("to all")])[every]
    sqs = server.sqs_client()
    url = sqs.get_queue_url(QueueName=every)["QueueUrl"]
    bodies: dict[str, str] = {}
    for _ in range(5):
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies |= {m["MessageId"]: m["Body"] for m in got.get("Messages", [])}
        if fanned in bodies:
            break
    assert bodies[fanned] == "to all" and bodies[routed[every][0]] == "hello"

    assert okuri.unbind(topic, every, "#").bindings == (
        *[b for b in bound.bindings if (b.queue, b.routing_key) != (every, "#")],
    )
    assert okuri.publish(topic, "sms", [Item("nobody")]) == {}
    assert set(okuri.list_exchanges(prefix).exchanges) == {topic, fanout}
    okuri.delete_exchange(topic)
    with pytest.raises(NotFoundError):
        okuri.get_exchange(topic)
    with pytest.raises(NotFoundError):
        okuri.publish(topic, "mail.sent", [Item("gone")])
    assert okuri.get_queue(mail).name == mail  # the queues stay


# --- refusals --------------------------------------------------------------------------------


def test_a_bad_key_or_none_is_an_auth_error(server: ServerProcess, kind: str) -> None:
    for key, code in (("not-a-key-of-this-server", "bad_key"), (None, "missing_key")):
        stranger = open_client(kind, server.url, key)
        with stranger, pytest.raises(AuthError) as caught:
            stranger.list_queues()
        assert (caught.value.status, caught.value.code) == (401, code)


def test_a_key_of_the_wrong_role_or_namespace_is_forbidden(
    server: ServerProcess, kind: str, okuri: Any, keys: Keys
) -> None:
    name = fresh()
    okuri.create_queue(name)
    outside = okuri.create_queue(fresh("other")).name
    with (
        open_client(kind, server.url, keys.by_role["producer"]) as producer,
        open_client(kind, server.url, keys.by_role["consumer"]) as consumer,
        open_client(kind, server.url, keys.by_role["readonly"]) as reader,
    ):
        producer.produce(name, "job")
        [job] = lease_all(consumer, name, 1)
        assert consumer.complete(name, job) == ["completed"]
        assert reader.get_queue(name).name == name
        refused = [
            lambda: producer.lease(name),
            lambda: consumer.produce(name, "x"),
            lambda: reader.purge_queue(name),
            lambda: consumer.create_queue(fresh()),
            lambda: producer.produce(outside, "x"),
        ]
        for attempt in refused:
            with pytest.raises(ForbiddenError) as caught:
                attempt()
            assert (caught.value.status, caught.value.code) == (403, "forbidden")


def test_bad_input_and_oversized_items_are_refused_as_typed_errors(okuri: Any) -> None:
    name = fresh()
    okuri.create_queue(name)
    with pytest.raises(BadRequestError) as caught:
        okuri.lease(name, lease_s=0)
    assert caught.value.code == "out_of_range" and "lease_s" in caught.value.message
    with pytest.raises(BadRequestError) as caught:
        okuri.produce(name, Item("x", enqueue_at=datetime.now(UTC) + timedelta(days=400)))
    assert caught.value.code == "out_of_range"
    with pytest.raises(BadRequestError) as caught:
        okuri.create_queue("no/slashes")
    assert (caught.value.status, caught.value.code) == (400, "invalid_queue_name")
    with pytest.raises(TooLargeError):
        okuri.produce(name, b"x" * (1024 * 1024 + 1))
    with pytest.raises(NotFoundError):
        okuri.produce(fresh(), "nowhere")


def test_a_server_that_is_not_there_is_a_transport_error_after_bounded_tries(kind: str) -> None:
    retries = RetryPolicy(attempts_max=2, backoff_s_base=0.01, backoff_s_max=0.01)
    c = open_client(kind, f"http://127.0.0.1:{free_port()}", ADMIN, retries=retries)
    with c, pytest.raises(TransportError) as caught:
        c.get_queue("anything")
    assert caught.value.sent is False and caught.value.code == "connection_failed"


def test_a_call_cut_off_mid_request_may_have_been_sent(tmp_path: Path, kind: str) -> None:
    """The server dies under a waiting lease: the call certainly left, so `sent` (produce is
    not retried after such a failure); both wires tell it from a connection never opened."""
    env = {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": ADMIN}
    proc = start_server(tmp_path, env)
    try:
        with (
            open_client(kind, proc.url, ADMIN, retries=NO_RETRIES) as okuri,
            ThreadPoolExecutor(max_workers=1) as pool,
        ):
            okuri.create_queue("cut-off")
            waiting = pool.submit(okuri.lease, "cut-off", request_timeout_s=20)
            deadline = time.monotonic() + 20
            while 'okuri_inflight{kind="long_polls"} 1' not in proc.get("/metrics").text:
                assert time.monotonic() < deadline, "the lease never started waiting"
                assert not waiting.done(), waiting.result()
                time.sleep(0.02)
            proc.kill()
            with pytest.raises(TransportError) as caught:
                waiting.result(timeout=30)
    finally:
        proc.kill()
    assert caught.value.sent is True and caught.value.code == "connection_failed"


def test_expires_s_is_set_read_cleared_and_checked(okuri: Any) -> None:
    name = fresh()
    assert okuri.create_queue(name, expires_s=600).attributes.expires_s == 600
    assert okuri.get_queue(name).attributes.expires_s == 600
    assert okuri.update_queue(name, expires_s=None).attributes.expires_s is None
    assert okuri.create_queue(fresh()).attributes.expires_s is None
    for bad in (0, -1, 366 * 86400 + 1):
        with pytest.raises(BadRequestError) as caught:
            okuri.create_queue(fresh(), expires_s=bad)
        assert caught.value.code == "out_of_range" and "expires_s" in caught.value.message
