"""The engine over the in-memory store: one or several nodes sharing one bucket.

Real time (SystemClock) on the ordinary asyncio loop with a small linger, so every test stays
well under two seconds; the few that need a lease or a delay to run out use one second and say so.
Tests assert on what clients see (sends, receives, acks) and on the bucket's objects, never on
mock call lists.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.message import Message, Segment, encode_segment
from okuri.core.receipts import Receipt
from okuri.core.state import QueueAttrs
from okuri.core.views import Counts
from okuri.engine import Delivery, Engine, SendRequest, SendResult
from okuri.engine.cas import NEVER
from okuri.errors import (
    Conflict,
    InvalidArgument,
    MessageTooLong,
    NotFound,
    QueueAlreadyExists,
    QueueDoesNotExist,
    ReceiptHandleInvalid,
    Unavailable,
)
from okuri.store.counting import CountingStore
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob, ObjectStore

LINGER_MS = 5
Q = "jobs"

MakeNode = Callable[..., Engine]


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
async def make_node(store: MemoryStore) -> AsyncIterator[MakeNode]:
    """Start engines ("nodes") on the shared store; every one is closed after the test."""
    nodes: list[Engine] = []

    def make(linger_ms: int = LINGER_MS, on: ObjectStore | None = None) -> Engine:
        node = Engine(on if on is not None else store, SystemClock(), linger_ms=linger_ms)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        await asyncio.wait_for(node.close(), 5)


@pytest.fixture
def node(make_node: MakeNode) -> Engine:
    return make_node()


def now_s() -> float:
    return asyncio.get_running_loop().time()


def bodies(deliveries: list[Delivery]) -> list[bytes]:
    return sorted(d.message.body for d in deliveries)


async def receive_until(
    node: Engine, queue: str, want: int, deadline_s: float = 1.5, **kw: int
) -> list[Delivery]:
    """Short-poll until `want` deliveries arrived or the deadline passed (bounded)."""
    got: list[Delivery] = []
    end = now_s() + deadline_s
    while len(got) < want and now_s() < end:
        try:
            batch = await node.receive(queue, max_messages=10, wait_s=0, **kw)
        except QueueDoesNotExist:
            batch = []
        got.extend(batch)
        if not batch:
            await asyncio.sleep(0.01)
    return got


async def wait_until(pred: Callable[[], Awaitable[bool]], deadline_s: float = 1.5) -> bool:
    end = now_s() + deadline_s
    while now_s() < end:
        if await pred():
            return True
        await asyncio.sleep(0.01)
    return await pred()


def segment_keys(store: MemoryStore, queue: str) -> list[str]:
    return sorted(k for k in store.objects if k.startswith(keys.segments_of_queue(queue)))


async def send_bodies(node: Engine, queue: str, *payloads: bytes) -> list[SendResult]:
    results = await node.send(queue, [SendRequest(p) for p in payloads])
    out: list[SendResult] = []
    for r in results:
        assert isinstance(r, SendResult), r
        out.append(r)
    return out


# --- queues --------------------------------------------------------------------------------------


async def test_create_queue_is_idempotent_with_the_same_attributes(node: Engine) -> None:
    attrs = QueueAttrs(visibility_timeout_s=5, delay_s=1, extra={"tag": "a"})
    await node.create_queue(Q, attrs)
    first = await node.read_manifest(Q)
    again = await node.create_queue(Q, attrs)
    assert again.attrs == attrs
    assert (await node.read_manifest(Q)).incarnation == first.incarnation
    assert again.created_ms == first.created_ms
    assert await node.list_queues() == [Q]


async def test_create_queue_with_different_attributes_is_refused(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q, QueueAttrs(visibility_timeout_s=5))
    with pytest.raises(QueueAlreadyExists):
        await b.create_queue(Q, QueueAttrs(visibility_timeout_s=6))
    with pytest.raises(QueueAlreadyExists):
        await a.create_queue(Q)  # defaults differ from what it was created with
    assert (await b.read_manifest(Q)).attrs.visibility_timeout_s == 5


@pytest.mark.parametrize("name", ["", "has space", "dot.ted", "x" * 81, "slash/ed", "ünï"])
async def test_create_queue_rejects_bad_names(node: Engine, name: str) -> None:
    with pytest.raises(InvalidArgument):
        await node.create_queue(name)


async def test_get_queue_returns_what_it_was_created_with(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    attrs = QueueAttrs(retention_s=120, max_receive_count=3, dead_letter_queue="graveyard")
    await a.create_queue(Q, attrs)
    created = await a.read_manifest(Q)
    seen = await b.read_manifest(Q)
    assert seen.attrs == attrs
    assert seen.incarnation == created.incarnation
    assert seen.name == Q


async def test_list_queues_filters_by_prefix_and_limit(node: Engine) -> None:
    for name in ["beta", "alpha", "alpine", "al", "gamma"]:
        await node.create_queue(name)
    assert await node.list_queues() == ["al", "alpha", "alpine", "beta", "gamma"]
    assert await node.list_queues("alp") == ["alpha", "alpine"]
    assert await node.list_queues("al") == ["al", "alpha", "alpine"]
    assert await node.list_queues("zzz") == []
    assert await node.list_queues(limit=2) == ["al", "alpha"]


async def test_deleted_queue_refuses_send_receive_and_get(node: Engine) -> None:
    await node.create_queue(Q)
    await node.create_queue("other")
    await send_bodies(node, Q, b"x")
    await node.delete_queue(Q)
    assert await node.list_queues() == ["other"]
    with pytest.raises(QueueDoesNotExist):
        await node.read_manifest(Q)
    with pytest.raises(QueueDoesNotExist):
        await node.send_one(Q, SendRequest(b"y"))
    with pytest.raises(QueueDoesNotExist):
        await node.receive(Q)
    with pytest.raises(QueueDoesNotExist):
        await node.delete_queue(Q)


async def test_queue_deleted_through_another_node_refuses_its_sends(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(b, Q, b"b knows the queue")
    await a.delete_queue(Q)
    results = await b.send(Q, [SendRequest(b"too late")])
    assert len(results) == 1
    assert isinstance(results[0], QueueDoesNotExist)


async def test_corrupt_manifest_makes_the_queue_unavailable(
    node: Engine, store: MemoryStore
) -> None:
    await store.put_if_absent(keys.manifest("broken"), b"{not a manifest")
    with pytest.raises(Unavailable):
        await node.read_manifest("broken")
    with pytest.raises(Unavailable):
        await node.receive("broken")


async def test_queue_recreated_through_another_node_receives_this_nodes_sends(
    make_node: MakeNode,
) -> None:
    a, b, c = make_node(), make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(b, Q, b"b knows the first incarnation")
    await a.delete_queue(Q)
    await a.create_queue(Q)
    sent = await send_bodies(b, Q, b"into the new incarnation")
    got = await receive_until(c, Q, 1, deadline_s=0.5)
    assert [d.message.id for d in got] == [sent[0].message_id]


async def test_node_that_reads_a_recreated_queue_forgets_the_old_one(make_node: MakeNode) -> None:
    a, b, c = make_node(), make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(b, Q, b"old")
    await a.delete_queue(Q)
    await a.create_queue(Q)
    new_inc = (await a.read_manifest(Q)).incarnation
    assert (await b.read_manifest(Q)).incarnation == new_inc
    sent = await send_bodies(b, Q, b"new")
    got = await receive_until(c, Q, 1, deadline_s=0.5)
    assert [d.message.id for d in got] == [sent[0].message_id]


async def test_missing_queue_raises_on_every_operation(node: Engine) -> None:
    with pytest.raises(QueueDoesNotExist):
        await node.receive("nope")
    with pytest.raises(QueueDoesNotExist):
        await node.send_one("nope", SendRequest(b"x"))
    with pytest.raises(QueueDoesNotExist):
        await node.counts("nope")
    with pytest.raises(QueueDoesNotExist):
        await node.purge("nope")


async def test_set_attributes_changes_the_defaults_for_later_sends(node: Engine) -> None:
    await node.create_queue(Q)
    await node.set_attributes(Q, QueueAttrs(delay_s=60))
    assert (await node.read_manifest(Q)).attrs.delay_s == 60
    await send_bodies(node, Q, b"delayed by the queue")
    assert await node.receive(Q) == []
    assert await node.counts(Q) == Counts(delayed=1)


# --- sending and receiving -----------------------------------------------------------------------


async def test_send_on_one_node_is_received_and_acked_on_another(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    sent = await send_bodies(a, Q, b"m1", b"m2")
    got = await receive_until(b, Q, 2)
    assert bodies(got) == [b"m1", b"m2"]
    assert {d.message.id for d in got} == {s.message_id for s in sent}
    assert all(d.receive_count == 1 for d in got)
    # a receipt works on any node
    assert await b.ack(Q, [got[0].receipt_handle]) == ["acked"]
    assert await a.ack(Q, [got[1].receipt_handle]) == ["acked"]
    assert await a.receive(Q) == []
    assert await b.receive(Q) == []
    assert await a.counts(Q) == Counts()


async def test_node_that_wrote_a_later_slot_still_finds_an_earlier_slot_of_another_node(
    make_node: MakeNode,
) -> None:
    """Two nodes that both send and receive: b's own write must not hide a's earlier slot."""
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"from a")  # slot 0
    await send_bodies(b, Q, b"from b")  # slot 0 is taken: slot 1
    got = await receive_until(b, Q, 2, deadline_s=0.5)
    assert bodies(got) == [b"from a", b"from b"]


async def test_message_content_survives_the_round_trip(node: Engine) -> None:
    await node.create_queue(Q)
    body = bytes(range(256)) * 4
    req = SendRequest(
        body,
        attributes={"kind": {"DataType": "String", "StringValue": "x"}},
        system_attributes={"AWSTraceHeader": "Root=1-2-3"},
        group_id="g1",
    )
    sent = await node.send_one(Q, req)
    (d,) = await node.receive(Q)
    assert d.message.id == sent.message_id
    assert d.message.body == body
    assert d.message.attributes == req.attributes
    assert d.message.system_attributes == req.system_attributes
    assert d.message.group_id == "g1"
    assert d.message.sent_ms == sent.sent_ms
    assert d.receive_count == 1
    assert d.first_receive_ms >= sent.sent_ms


async def test_empty_body_is_a_message_too(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"")
    (d,) = await node.receive(Q)
    assert d.message.body == b""


async def test_long_poll_wakes_quickly_for_a_send_on_the_same_node(node: Engine) -> None:
    await node.create_queue(Q)
    waiter = asyncio.create_task(node.receive(Q, wait_s=5))
    await asyncio.sleep(0.1)
    start = now_s()
    await send_bodies(node, Q, b"hello")
    got = await asyncio.wait_for(waiter, 3)
    assert bodies(got) == [b"hello"]
    assert now_s() - start < 0.5


async def test_long_poll_wakes_quickly_for_a_send_on_another_node(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await b.read_manifest(Q)
    waiter = asyncio.create_task(b.receive(Q, wait_s=5))
    await asyncio.sleep(0.2)
    start = now_s()
    await send_bodies(a, Q, b"from a")
    got = await asyncio.wait_for(waiter, 5)
    assert bodies(got) == [b"from a"]
    assert now_s() - start < 1.5


async def test_long_poll_returns_nothing_at_its_deadline(node: Engine) -> None:
    await node.create_queue(Q)
    start = now_s()
    assert await node.receive(Q, wait_s=1) == []
    assert 0.9 <= now_s() - start < 1.6


async def test_stop_waiting_answers_long_polls_now_and_later_ones_at_once(node: Engine) -> None:
    await node.create_queue(Q)
    waiter = asyncio.create_task(node.receive(Q, wait_s=10))
    await asyncio.sleep(0.1)
    start = now_s()
    node.stop_waiting()
    assert await asyncio.wait_for(waiter, 2) == []
    assert await node.receive(Q, wait_s=10) == []  # a receive that comes in while stopping
    await node.create_queue("other")  # and one on a queue first seen while stopping
    assert await node.receive("other", wait_s=10) == []
    assert now_s() - start < 1.0
    await send_bodies(node, Q, b"still served")
    assert bodies(await node.receive(Q, wait_s=10)) == [b"still served"]


async def test_queue_receive_wait_attribute_is_the_default_long_poll(node: Engine) -> None:
    await node.create_queue(Q, QueueAttrs(receive_wait_s=5))
    waiter = asyncio.create_task(node.receive(Q))
    await asyncio.sleep(0.1)
    assert not waiter.done()
    await send_bodies(node, Q, b"x")
    assert bodies(await asyncio.wait_for(waiter, 3)) == [b"x"]


# --- delays --------------------------------------------------------------------------------------


async def test_per_message_delay_hides_the_message_until_due(node: Engine) -> None:
    await node.create_queue(Q)
    start = now_s()
    await node.send_one(Q, SendRequest(b"later", delay_s=1))
    await send_bodies(node, Q, b"now")
    assert bodies(await node.receive(Q, max_messages=10)) == [b"now"]
    assert (await node.counts(Q)).delayed == 1
    got = await node.receive(Q, wait_s=2)
    assert bodies(got) == [b"later"]
    assert 0.9 <= now_s() - start < 1.8


async def test_queue_default_delay_applies_unless_the_message_overrides_it(node: Engine) -> None:
    await node.create_queue(Q, QueueAttrs(delay_s=1))
    start = now_s()
    await send_bodies(node, Q, b"default delay")
    await node.send_one(Q, SendRequest(b"no delay", delay_s=0))
    assert bodies(await node.receive(Q, max_messages=10)) == [b"no delay"]
    c = await node.counts(Q)
    assert c.delayed == 1
    got = await node.receive(Q, wait_s=2)
    assert bodies(got) == [b"default delay"]
    assert 0.9 <= now_s() - start < 1.8


async def test_delayed_message_is_counted_as_delayed_before_any_node_adopts_it(
    make_node: MakeNode,
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await a.send_one(Q, SendRequest(b"x", delay_s=60))
    assert await b.counts(Q) == Counts(visible=0, in_flight=0, delayed=1)


# --- visibility, receipts ------------------------------------------------------------------------


async def test_receive_visibility_override_redelivers_after_it_runs_out(node: Engine) -> None:
    await node.create_queue(Q)  # the queue default is 30 s
    await send_bodies(node, Q, b"x")
    (first,) = await node.receive(Q, visibility_s=1)
    assert await node.receive(Q) == []
    start = now_s()
    (second,) = await node.receive(Q, wait_s=2)
    assert now_s() - start < 1.5
    assert second.message.id == first.message.id
    assert second.receive_count == 2
    assert second.first_receive_ms == first.first_receive_ms
    assert await node.change_visibility(Q, [(first.receipt_handle, 5)]) == ["ok"]  # as SQS
    assert await node.ack(Q, [second.receipt_handle]) == ["acked"]


async def test_change_visibility_extends_and_zero_makes_visible_at_once(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"x")
    (d,) = await node.receive(Q, visibility_s=1)
    assert await node.change_visibility(Q, [(d.receipt_handle, 3)]) == ["ok"]
    await asyncio.sleep(1.1)  # past the original one-second lease
    assert await node.receive(Q) == []
    assert await node.counts(Q) == Counts(in_flight=1)
    assert await node.change_visibility(Q, [(d.receipt_handle, 0)]) == ["ok"]
    (again,) = await node.receive(Q)
    assert again.message.id == d.message.id
    assert again.receive_count == 2
    # An earlier receipt still sets the visibility, as on SQS.
    assert await node.change_visibility(Q, [(d.receipt_handle, 10)]) == ["ok"]


async def test_change_visibility_after_the_lease_ran_out_hides_the_message_again(
    node: Engine,
) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"x")
    (d,) = await node.receive(Q, visibility_s=1)
    await asyncio.sleep(1.05)
    assert await node.change_visibility(Q, [(d.receipt_handle, 30)]) == ["ok"]
    assert await node.receive(Q) == []


async def test_a_receipt_from_an_earlier_receive_deletes_after_redelivery(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"x")
    (first,) = await node.receive(Q)
    assert await node.change_visibility(Q, [(first.receipt_handle, 0)]) == ["ok"]
    (second,) = await node.receive(Q)
    assert second.receive_count == 2
    assert await node.change_visibility(Q, [(first.receipt_handle, 0)]) == ["ok"]
    assert await node.ack(Q, [first.receipt_handle]) == ["acked"]
    assert await node.counts(Q) == Counts()
    assert await node.ack(Q, [second.receipt_handle]) == ["gone"]
    assert await node.receive(Q, wait_s=0) == []


async def test_ack_of_an_already_acked_message_is_gone(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"a", b"b")
    got = await node.receive(Q, max_messages=10)
    assert len(got) == 2
    assert await node.ack(Q, [got[0].receipt_handle]) == ["acked"]
    assert await node.ack(Q, [got[0].receipt_handle]) == ["gone"]  # segment still alive
    assert await node.ack(Q, [got[1].receipt_handle]) == ["acked"]
    assert await node.ack(Q, [got[1].receipt_handle]) == ["gone"]  # segment freed
    assert await node.change_visibility(Q, [(got[1].receipt_handle, 5)]) == ["gone"]


async def test_receipt_of_another_queue_or_garbage_is_invalid(node: Engine) -> None:
    await node.create_queue(Q)
    await node.create_queue("other")
    await send_bodies(node, Q, b"mine")
    await send_bodies(node, "other", b"theirs")
    (mine,) = await node.receive(Q)
    (theirs,) = await node.receive("other")
    res = await node.ack(Q, [mine.receipt_handle, theirs.receipt_handle, "garbage"])
    assert res[0] == "acked"
    assert isinstance(res[1], ReceiptHandleInvalid)
    assert isinstance(res[2], ReceiptHandleInvalid)
    vis = await node.change_visibility(Q, [(theirs.receipt_handle, 0)])
    assert len(vis) == 1 and isinstance(vis[0], ReceiptHandleInvalid)
    # the other queue's message was not touched
    assert await node.ack("other", [theirs.receipt_handle]) == ["acked"]


async def test_receipt_from_a_deleted_incarnation_never_acks_the_new_queues_message(
    make_node: MakeNode,
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"old")
    (old,) = await a.receive(Q)
    await a.delete_queue(Q)
    await b.create_queue(Q)
    await send_bodies(b, Q, b"new")
    (new,) = await b.receive(Q)
    r_old, r_new = Receipt.decode(old.receipt_handle), Receipt.decode(new.receipt_handle)
    assert r_old.incarnation != r_new.incarnation
    assert (r_old.seq, r_old.idx, r_old.epoch) == (r_new.seq, r_new.idx, r_new.epoch)

    await a.read_manifest(Q)  # node a is up to date with the new incarnation
    (res,) = await a.ack(Q, [old.receipt_handle])
    assert res != "acked"
    assert await b.ack(Q, [new.receipt_handle]) == ["acked"], (
        "the old incarnation's receipt finished the new queue's message"
    )


async def test_receipt_from_a_deleted_incarnation_never_changes_the_new_queues_visibility(
    make_node: MakeNode,
) -> None:
    a, b, c = make_node(), make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"old")
    (old,) = await a.receive(Q)
    await a.delete_queue(Q)
    await b.create_queue(Q)
    await send_bodies(b, Q, b"new")
    (new,) = await b.receive(Q)

    await a.read_manifest(Q)  # node a is up to date with the new incarnation
    (res,) = await a.change_visibility(Q, [(old.receipt_handle, 0)])
    assert res != "ok"
    assert await c.receive(Q) == [], "the new queue's in-flight message became visible"
    assert await b.ack(Q, [new.receipt_handle]) == ["acked"]


# --- purge ---------------------------------------------------------------------------------------


async def test_purge_drops_messages_sent_before_and_delivers_those_sent_after(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"old-1", b"old-2")
    (held,) = await node.receive(Q)  # one adopted and in flight, one adopted and visible
    await send_bodies(node, Q, b"old-3")  # one never adopted
    await node.purge(Q)
    assert await node.counts(Q) == Counts()
    assert await node.receive(Q, max_messages=10) == []
    assert await node.ack(Q, [held.receipt_handle]) == ["gone"]
    await send_bodies(node, Q, b"new")
    got = await receive_until(node, Q, 1)
    assert bodies(got) == [b"new"]
    assert await node.receive(Q, max_messages=10) == []


async def test_purge_through_another_node_drops_what_that_node_had_seen(
    make_node: MakeNode,
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"old-1")
    await send_bodies(a, Q, b"old-2")
    assert await b.counts(Q) == Counts(visible=2)  # b has read both slots
    await a.purge(Q)
    assert await b.receive(Q, max_messages=10) == []
    assert await a.receive(Q, max_messages=10) == []
    await send_bodies(b, Q, b"new")
    got = await receive_until(a, Q, 1)
    assert bodies(got) == [b"new"]


async def test_purge_deletes_the_objects_of_purged_and_skipped_slots(
    node: Engine, store: MemoryStore, short_keep: float
) -> None:
    await node.create_queue(Q)
    st = await node.read_manifest(Q)
    for p in (b"a", b"b", b"c"):
        await send_bodies(node, Q, p)  # three windows, three slots
    assert len(await node.receive(Q, max_messages=10)) == 3  # adopts slots 0..2
    await send_bodies(node, Q, b"d")  # slot 3, never adopted
    assert len(segment_keys(store, Q)) == 4
    await node.purge(Q)
    await asyncio.sleep(short_keep / 3)
    assert len(segment_keys(store, Q)) == 4  # kept a while: a stale producer finds them taken

    async def swept() -> bool:
        return segment_keys(store, Q) == []

    assert await wait_until(swept, 1.0 + short_keep), segment_keys(store, Q)
    await send_bodies(node, Q, b"e")
    assert segment_keys(store, Q) == [keys.segment(Q, st.incarnation, 4)]


# --- dead letters --------------------------------------------------------------------------------


async def test_message_past_max_receive_count_moves_to_the_dlq_and_redrive_brings_it_back(
    node: Engine,
) -> None:
    await node.create_queue(Q, QueueAttrs(max_receive_count=2))
    sent = await node.send_one(Q, SendRequest(b"poison", attributes={"k": "v"}))
    for expected in (1, 2):
        (d,) = await node.receive(Q)
        assert d.receive_count == expected
        assert await node.change_visibility(Q, [(d.receipt_handle, 0)]) == ["ok"]
    assert await node.receive(Q) == []  # the third receive moves it instead

    # Receivable there at once (the move lands before that receive answers), its count going
    # on from the source's two receives, as on SQS.
    (dead,) = await node.receive(f"{Q}-dlq", wait_s=0)
    assert dead.message.id == sent.message_id
    assert dead.message.body == b"poison"
    assert dead.message.attributes == {"k": "v"}
    assert dead.message.dead_letter_source == Q
    assert dead.receive_count == 3

    async def source_empty() -> bool:
        return await node.counts(Q) == Counts()

    assert await wait_until(source_empty, 1.0)
    assert node.stats["dead_lettered"] == 1

    assert await node.change_visibility(f"{Q}-dlq", [(dead.receipt_handle, 0)]) == ["ok"]
    assert await node.redrive(f"{Q}-dlq") == 1
    (back,) = await receive_until(node, Q, 1)
    assert back.message.id == sent.message_id
    assert back.message.body == b"poison"
    assert back.receive_count == 1
    assert back.message.dead_letter_source is None
    assert await node.counts(f"{Q}-dlq") == Counts()


async def test_custom_dead_letter_queue_attribute_is_honoured(node: Engine) -> None:
    await node.create_queue("graveyard", QueueAttrs(visibility_timeout_s=10))
    await node.create_queue(Q, QueueAttrs(max_receive_count=1, dead_letter_queue="graveyard"))
    sent = await node.send_one(Q, SendRequest(b"poison"))
    (d,) = await node.receive(Q)
    assert await node.change_visibility(Q, [(d.receipt_handle, 0)]) == ["ok"]
    assert await node.receive(Q) == []

    (dead,) = await receive_until(node, "graveyard", 1)
    assert dead.message.id == sent.message_id
    assert dead.message.dead_letter_source == Q
    # retention still counts from the original send, as SQS does for standard queues, and the
    # receive count goes on from the source's (AWS shows 2 after one receive there)
    assert dead.message.sent_ms == d.message.sent_ms
    assert dead.receive_count == 2
    assert f"{Q}-dlq" not in await node.list_queues()

    assert await node.change_visibility("graveyard", [(dead.receipt_handle, 0)]) == ["ok"]
    assert await node.redrive("graveyard") == 1
    (back,) = await receive_until(node, Q, 1)
    assert back.message.id == sent.message_id


async def test_redrive_to_an_explicit_target(node: Engine) -> None:
    await node.create_queue("parking")
    await node.create_queue("elsewhere")
    await send_bodies(node, "parking", b"p1", b"p2")
    assert await node.redrive("parking", target="elsewhere") == 2
    got = await receive_until(node, "elsewhere", 2)
    assert bodies(got) == [b"p1", b"p2"]
    assert await node.counts("parking") == Counts()


# --- dedup, validation ---------------------------------------------------------------------------


async def test_dedup_id_within_the_window_returns_the_same_id_and_delivers_once(
    node: Engine,
) -> None:
    await node.create_queue(Q)
    r1 = await node.send_one(Q, SendRequest(b"x", dedup_id="d1"))
    r2 = await node.send_one(Q, SendRequest(b"x", dedup_id="d1"))
    assert r2.message_id == r1.message_id
    assert not r1.duplicate and r2.duplicate
    r3, r4 = await asyncio.gather(  # duplicates inside one linger window
        node.send_one(Q, SendRequest(b"y", dedup_id="d2")),
        node.send_one(Q, SendRequest(b"y", dedup_id="d2")),
    )
    assert r3.message_id == r4.message_id
    r5 = await node.send_one(Q, SendRequest(b"x", dedup_id="d3"))
    assert r5.message_id not in {r1.message_id, r3.message_id}

    got = await receive_until(node, Q, 3)
    assert sorted(d.message.id for d in got) == sorted(
        [r1.message_id, r3.message_id, r5.message_id]
    )
    assert await node.receive(Q, max_messages=10) == []


async def test_dedup_id_after_the_window_is_a_new_message(
    node: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "dedup_window_s", 0)
    await node.create_queue(Q)
    r1 = await node.send_one(Q, SendRequest(b"x", dedup_id="d"))
    await asyncio.sleep(0.005)
    r2 = await node.send_one(Q, SendRequest(b"x", dedup_id="d"))
    assert r2.message_id != r1.message_id
    assert not r2.duplicate
    assert len(await receive_until(node, Q, 2)) == 2


async def test_dedup_memory_is_bounded_and_forgets_the_oldest(
    node: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "dedup_entries_max", 2)
    await node.create_queue(Q)
    first = {d: await node.send_one(Q, SendRequest(b"x", dedup_id=d)) for d in ("a", "b", "c")}
    again_c = await node.send_one(Q, SendRequest(b"x", dedup_id="c"))
    assert again_c.message_id == first["c"].message_id and again_c.duplicate
    again_a = await node.send_one(Q, SendRequest(b"x", dedup_id="a"))
    assert again_a.message_id != first["a"].message_id


async def test_message_over_the_queues_max_bytes_is_too_long(node: Engine) -> None:
    await node.create_queue(Q, QueueAttrs(max_message_bytes=16))
    with pytest.raises(MessageTooLong) as info:
        await node.send_one(Q, SendRequest(b"x" * 17))
    assert isinstance(info.value, InvalidArgument)
    assert info.value.field == "MessageBody"
    results = await node.send(Q, [SendRequest(b"y" * 16), SendRequest(b"z" * 17), SendRequest(b"")])
    assert isinstance(results[0], SendResult)
    assert isinstance(results[1], MessageTooLong)
    assert isinstance(results[2], SendResult)
    got = await receive_until(node, Q, 2)
    assert bodies(got) == [b"", b"y" * 16]


async def test_send_of_nothing_is_nothing(node: Engine) -> None:
    await node.create_queue(Q)
    assert await node.send(Q, []) == []


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda e: e.send_one(Q, SendRequest(b"x", delay_s=-1)), "DelaySeconds"),
        (
            lambda e: e.send_one(Q, SendRequest(b"x", delay_s=limits.delay_s_max + 1)),
            "DelaySeconds",
        ),
        (lambda e: e.receive(Q, max_messages=0), "MaxNumberOfMessages"),
        (
            lambda e: e.receive(Q, max_messages=limits.lease_messages_max + 1),
            "MaxNumberOfMessages",
        ),
        (lambda e: e.receive(Q, wait_s=-1), "WaitTimeSeconds"),
        (lambda e: e.receive(Q, wait_s=21), "WaitTimeSeconds"),
        (lambda e: e.receive(Q, visibility_s=-1), "VisibilityTimeout"),
        (lambda e: e.receive(Q, visibility_s=limits.visibility_s_max + 1), "VisibilityTimeout"),
        (lambda e: e.change_visibility(Q, [("okr1x", -1)]), "VisibilityTimeout"),
        (
            lambda e: e.change_visibility(Q, [("okr1x", limits.visibility_s_max + 1)]),
            "VisibilityTimeout",
        ),
    ],
    ids=[
        "delay-negative",
        "delay-too-long",
        "max-messages-zero",
        "max-messages-past-a-lease",
        "wait-negative",
        "wait-too-long",
        "visibility-negative",
        "visibility-too-long",
        "change-visibility-negative",
        "change-visibility-too-long",
    ],
)
async def test_out_of_range_arguments_are_invalid(
    node: Engine, call: Callable[[Engine], Awaitable[object]], field: str
) -> None:
    await node.create_queue(Q)
    with pytest.raises(InvalidArgument) as info:
        await call(node)
    assert info.value.field == field
    assert await node.counts(Q) == Counts()


# --- counts --------------------------------------------------------------------------------------


async def test_counts_add_up_across_visible_inflight_and_delayed(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"a", b"b", b"c")
    await a.send_one(Q, SendRequest(b"later", delay_s=60))
    assert await a.counts(Q) == Counts(visible=3, in_flight=0, delayed=1)
    got = await a.receive(Q, max_messages=10)
    assert len(got) == 3
    assert await a.counts(Q) == Counts(visible=0, in_flight=3, delayed=1)
    assert await a.ack(Q, [got[0].receipt_handle]) == ["acked"]
    assert await a.change_visibility(Q, [(got[1].receipt_handle, 0)]) == ["ok"]
    c = await a.counts(Q)
    assert c == Counts(visible=1, in_flight=1, delayed=1)
    assert c.visible + c.in_flight + c.delayed == 3
    assert await b.counts(Q) == c


# --- sweeping ------------------------------------------------------------------------------------


async def test_sweep_deletes_orphaned_segments_and_never_live_ones(
    node: Engine, store: MemoryStore, short_keep: float
) -> None:
    await node.create_queue(Q)
    inc = (await node.read_manifest(Q)).incarnation
    await node.create_queue("other")
    await send_bodies(node, "other", b"not mine")
    other_keys = segment_keys(store, "other")

    await send_bodies(node, Q, b"done")  # slot 0: acked, freed, deleted
    (d,) = await node.receive(Q)
    assert await node.ack(Q, [d.receipt_handle]) == ["acked"]
    slot0 = keys.segment(Q, inc, 0)

    async def slot0_gone() -> bool:
        return slot0 not in store.objects

    assert await node.receive(Q, wait_s=0) == []
    assert not await slot0_gone()  # kept: a stale producer's write finds it taken
    assert await wait_until(slot0_gone, 1.0 + short_keep)
    await send_bodies(node, Q, b"in flight")  # slot 1: adopted, leased
    (live,) = await node.receive(Q)
    now = node.clock.now_ms()
    pending = Segment("sid-pending", (Message("m-pending", b"pending", now, now),))
    await store.put_if_absent(keys.segment(Q, inc, 2), encode_segment(pending))  # not adopted yet

    leftover = Segment("sid-leftover", (Message("m-left", b"left", now, now),))
    await store.put_if_absent(slot0, encode_segment(leftover))  # below the cursor, unreferenced
    await store.put_if_absent(keys.segment(Q, "old-incarnation", 0), b"old")
    await store.put_if_absent(keys.segment(Q, "old-incarnation", 9), b"old")
    foreign = keys.segments_of_queue(Q) + "README"  # not a slot key: not ours to delete
    await store.put_if_absent(foreign, b"hands off")

    assert await node.sweep(Q) == 3
    # The old incarnation's go at once; the orphan below the cursor stays for the keep.
    assert segment_keys(store, Q) == sorted(
        [slot0, keys.segment(Q, inc, 1), keys.segment(Q, inc, 2), foreign]
    )

    async def orphan_gone() -> bool:
        return slot0 not in store.objects

    assert await wait_until(orphan_gone, 1.0 + short_keep)
    assert segment_keys(store, Q) == sorted(
        [keys.segment(Q, inc, 1), keys.segment(Q, inc, 2), foreign]
    )
    assert segment_keys(store, "other") == other_keys
    assert await node.sweep(Q) == 0

    assert await node.ack(Q, [live.receipt_handle]) == ["acked"]
    got = await receive_until(node, Q, 1)
    assert bodies(got) == [b"pending"]


async def test_deleting_a_queue_sweeps_its_segments_and_only_its_own(
    node: Engine, store: MemoryStore
) -> None:
    await node.create_queue(Q)
    await node.create_queue(f"{Q}-dlq")
    await node.create_queue(f"{Q}2")
    await send_bodies(node, Q, b"a")
    await send_bodies(node, Q, b"b")
    await send_bodies(node, f"{Q}-dlq", b"c")
    await send_bodies(node, f"{Q}2", b"d")
    kept = segment_keys(store, f"{Q}-dlq") + segment_keys(store, f"{Q}2")
    await node.delete_queue(Q)

    async def swept() -> bool:
        return segment_keys(store, Q) == []

    assert await wait_until(swept, 1.0)
    assert segment_keys(store, f"{Q}-dlq") + segment_keys(store, f"{Q}2") == kept
    assert await node.sweep(Q) == 0


class GatedListStore(ForwardingStore):
    """Delegates to a store, but holds segment LISTs at a gate while the test needs them held."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.gate: asyncio.Event | None = None
        self.held = asyncio.Event()

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        if self.gate is not None and prefix.startswith(keys.SEGMENTS):
            self.held.set()
            await self.gate.wait()
        return await self.inner.list(prefix, start_after, limit)


async def test_sweep_racing_a_recreate_never_deletes_the_new_queues_segments(
    make_node: MakeNode, store: MemoryStore
) -> None:
    """delete_queue sweeps in the background; the queue may be recreated and written meanwhile."""
    gated = GatedListStore(store)
    a = make_node(on=gated)
    b, c = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"before delete")
    gated.gate = asyncio.Event()
    await a.delete_queue(Q)
    await asyncio.wait_for(gated.held.wait(), 1)  # the sweep read "no queue" and now lists

    await b.create_queue(Q)
    inc = (await b.read_manifest(Q)).incarnation
    await send_bodies(b, Q, b"after recreate")
    new_slot = keys.segment(Q, inc, 0)
    assert new_slot in store.objects
    gated.gate.set()
    await a.close()  # waits for the background sweep

    assert new_slot in store.objects, "the sweep deleted a live segment of the new incarnation"
    got = await receive_until(c, Q, 1, deadline_s=0.5)
    assert bodies(got) == [b"after recreate"]


# --- lifecycle and producers ---------------------------------------------------------------------


async def test_close_flushes_pending_sends(make_node: MakeNode) -> None:
    node = make_node(linger_ms=300)
    await node.create_queue(Q)
    await send_bodies(node, Q, b"warm-up")  # the next window now waits for the linger
    tasks = [asyncio.create_task(node.send_one(Q, SendRequest(b"m%d" % i))) for i in range(20)]
    await asyncio.sleep(0.01)
    assert node.runtime(Q).slots.producer.pending == 20
    start = now_s()
    await node.close()
    assert now_s() - start < 0.25  # flushed at once, not after the linger
    results = await asyncio.wait_for(asyncio.gather(*tasks), 2)
    assert len({r.message_id for r in results}) == 20

    fresh = make_node()
    got = await receive_until(fresh, Q, 21)
    assert len(got) == 21
    assert {d.message.id for d in got} >= {r.message_id for r in results}


@pytest.mark.usefixtures("freed_at_once")
@pytest.mark.parametrize("freed_slots", [5, limits.manifest_recent_slots + 6])
async def test_producer_with_a_stale_head_whose_slot_was_freed_still_delivers(
    make_node: MakeNode, store: MemoryStore, freed_slots: int
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    inc = (await a.read_manifest(Q)).incarnation
    await send_bodies(a, Q, b"first")  # slot 0
    rt = a.runtime(Q)
    assert rt.state is not None
    stale_state, stale_etag = rt.state.copy(), rt.manifest.cell.etag

    got = await receive_until(b, Q, 1)  # b adopts slot 0 before writing its own
    for i in range(freed_slots):  # b fills slots 1.., one window each
        await send_bodies(b, Q, b"b%d" % i)
    got += await receive_until(b, Q, freed_slots, deadline_s=3)
    assert len(got) == freed_slots + 1
    for i in range(0, len(got), 10):
        results = await b.ack(Q, [d.receipt_handle for d in got[i : i + 10]])
        assert results == ["acked"] * len(results)

    async def all_freed() -> bool:
        return segment_keys(store, Q) == []

    assert await wait_until(all_freed, 1.0)

    # node a wakes up believing the head is still slot 0
    rt.manifest.cell.state, rt.manifest.cell.etag = stale_state, stale_etag
    if freed_slots > limits.manifest_recent_slots:
        # Further behind than the manifest remembers: a node whose cache is that far behind was
        # last shown it long ago, and reads the manifest before it picks a slot (a slot check
        # could not tell its write apart from a segment read and deleted since).
        rt.manifest.cell.confirmed = NEVER
    rt.slots.head_hint = 0
    rt.slots.known.clear()
    late = await a.send_one(Q, SendRequest(b"late"))

    got = await receive_until(b, Q, 1)
    assert [d.message.id for d in got] == [late.message_id]
    assert await b.ack(Q, [got[0].receipt_handle]) == ["acked"]
    assert await receive_until(b, Q, 1, deadline_s=0.2) == []
    # the copy a wrote into the freed slot is an orphan the sweeper removes
    if keys.segment(Q, inc, 0) in store.objects:
        assert await b.sweep(Q) >= 1

    async def orphan_gone() -> bool:
        return keys.segment(Q, inc, 0) not in store.objects

    assert await wait_until(orphan_gone, 1.0)


async def test_recreated_queue_delivers_messages_sent_through_the_same_node(
    make_node: MakeNode,
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"before")
    await send_bodies(a, Q, b"before, again")
    await a.delete_queue(Q)
    await a.create_queue(Q)
    sent = await send_bodies(a, Q, b"after")
    got = await receive_until(b, Q, 1, deadline_s=0.5)
    assert [d.message.id for d in got] == [sent[0].message_id], (
        "a message sent to the recreated queue is not receivable"
    )


async def test_lease_taken_ahead_does_not_hide_a_message_from_other_nodes(
    make_node: MakeNode,
) -> None:
    """A node leases ahead for its own next receive; unused, it must hand the lease back."""
    a, c = make_node(), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"one", b"two")
    (first,) = await a.receive(Q, max_messages=1)
    await asyncio.sleep(0.7)  # longer than the lease-ahead hold
    other = await c.receive(Q, max_messages=1)
    assert [d.message.body for d in other] == [b"two" if first.message.body == b"one" else b"one"]


async def test_unused_lease_ahead_is_released_on_this_nodes_next_receive(node: Engine) -> None:
    await node.create_queue(Q)
    await send_bodies(node, Q, b"one", b"two")
    (first,) = await node.receive(Q, max_messages=1)
    await asyncio.sleep(0.6)  # past the hold: the next receive hands the lease back first
    got = await receive_until(node, Q, 1, deadline_s=0.5, visibility_s=5)
    assert len(got) == 1
    assert got[0].message.id != first.message.id
    assert got[0].receive_count == 1  # the unused lease did not count as a receive


async def test_crash_abandons_pending_sends_and_other_nodes_carry_on(make_node: MakeNode) -> None:
    a, b = make_node(linger_ms=300), make_node()
    await a.create_queue(Q)
    await send_bodies(a, Q, b"flushed before the crash")
    pending = [asyncio.create_task(a.send_one(Q, SendRequest(b"lost %d" % i))) for i in range(3)]
    await asyncio.sleep(0.01)
    a.crash()
    done = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 2)
    assert all(isinstance(r, asyncio.CancelledError) for r in done)
    got = await receive_until(b, Q, 1)
    assert bodies(got) == [b"flushed before the crash"]
    await send_bodies(b, Q, b"after")
    assert bodies(await receive_until(b, Q, 1)) == [b"after"]


async def test_foreign_object_in_a_slot_does_not_block_the_queue(
    node: Engine, store: MemoryStore
) -> None:
    await node.create_queue(Q)
    inc = (await node.read_manifest(Q)).incarnation
    await store.put_if_absent(keys.segment(Q, inc, 0), b"not an okuri segment")
    sent = await send_bodies(node, Q, b"after the junk")
    got = await receive_until(node, Q, 1, deadline_s=0.5)
    assert [d.message.id for d in got] == [sent[0].message_id]


async def test_a_busy_window_costs_one_segment_put_and_one_cas() -> None:
    counting = CountingStore(MemoryStore())
    node = Engine(counting, SystemClock(), linger_ms=50)
    try:
        await node.create_queue(Q)
        before = counting.counts.snapshot()
        results = await asyncio.gather(
            *(node.send_one(Q, SendRequest(b"m%d" % i)) for i in range(50))
        )
        after = counting.counts.snapshot()
        assert len({r.message_id for r in results}) == 50
        assert after["put"] - before["put"] <= 2
        assert after["cas"] - before["cas"] == 0  # producers never touch the manifest

        got: list[Delivery] = []
        for _ in range(20):
            if len(got) >= 50:
                break
            got.extend(await node.receive(Q, max_messages=10))
        assert len(got) == 50
        before = counting.counts.snapshot()
        acks = await asyncio.gather(*(node.ack(Q, [d.receipt_handle]) for d in got))
        after = counting.counts.snapshot()
        assert acks == [["acked"]] * 50
        assert after["cas"] - before["cas"] <= 2
        assert after["put"] - before["put"] == 0
    finally:
        await node.close()


class LaggingCreateStore(ForwardingStore):
    """The first segment write lands but answers 409, and a read right after it does not see
    it yet: an unclear create, then a retry that finds the slot taken (by that same write)."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.unclear: str | None = None
        self.hidden_reads = 0

    async def put_if_absent(self, key: str, data: bytes) -> str:
        if self.unclear is None and key.startswith(keys.SEGMENTS):
            self.unclear = key
            await self.inner.put_if_absent(key, data)
            self.hidden_reads = 1
            raise Conflict("409 ConditionalRequestConflict")
        return await self.inner.put_if_absent(key, data)

    async def get(self, key: str) -> Blob:
        if key == self.unclear and self.hidden_reads:
            self.hidden_reads -= 1
            raise NotFound(key)
        return await self.inner.get(key)


async def test_an_unclear_create_that_landed_is_not_written_twice(
    make_node: MakeNode, store: MemoryStore
) -> None:
    lagging = LaggingCreateStore(store)
    node = make_node(on=lagging)
    await node.create_queue(Q)
    (sent,) = await send_bodies(node, Q, b"once")
    assert lagging.unclear is not None and lagging.hidden_reads == 0
    assert len(segment_keys(store, Q)) == 1, "the segment was written a second time"
    other = make_node()
    got = await receive_until(other, Q, 1)
    assert [d.message.id for d in got] == [sent.message_id]
    assert await other.ack(Q, [got[0].receipt_handle]) == ["acked"]
    assert await receive_until(other, Q, 1, deadline_s=0.3) == []


async def test_a_lease_of_a_hundred_is_one_receive_and_one_cas() -> None:
    counting = CountingStore(MemoryStore())
    node = Engine(counting, SystemClock(), linger_ms=20)
    try:
        await node.create_queue(Q)
        for i in range(12):
            await node.send(Q, [SendRequest(b"m%d-%d" % (i, j)) for j in range(10)])
        before = counting.counts.snapshot()
        got = await node.receive(Q, max_messages=100, wait_s=0, lease_ahead=False)
        after = counting.counts.snapshot()
        assert len(got) == 100
        assert len({d.message.id for d in got}) == 100
        assert after["cas"] - before["cas"] == 1
    finally:
        await node.close()


async def test_a_queue_asked_for_again_soon_is_answered_from_the_cached_manifest(
    make_node: MakeNode,
) -> None:
    counting = CountingStore(MemoryStore())
    a, b = make_node(on=counting), make_node(on=counting)
    await a.create_queue(Q)
    await a.read_manifest(Q)
    before = counting.counts.snapshot()["get"]
    for _ in range(5):
        await a.read_manifest(Q, trust_cached_s=5.0)
    assert counting.counts.snapshot()["get"] == before  # shown current a moment ago
    await a.read_manifest(Q)
    assert counting.counts.snapshot()["get"] == before + 1  # no trust: read fresh
    await a.delete_queue(Q)
    with pytest.raises(QueueDoesNotExist):  # deleted through this node: forgotten at once
        await a.read_manifest(Q, trust_cached_s=5.0)
    with pytest.raises(QueueDoesNotExist):
        await b.read_manifest(Q, trust_cached_s=5.0)  # never seen here: read
