"""FIFO queues in the engine, over the in-memory store: group order, the in-flight rule, and
deduplication that holds across nodes and a node's crash.

Real time with a small linger, like tests/unit/test_engine.py; assertions are on what clients
see (sends, receives, acks) and on the bucket's objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.state import QueueAttrs
from okuri.engine import Engine, SendRequest, SendResult
from okuri.errors import InvalidArgument
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import MemoryStore

LINGER_MS = 5
Q = "jobs.fifo"
FIFO = QueueAttrs(fifo=True)

MakeNode = Callable[[], Engine]


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
async def make_node(store: MemoryStore) -> AsyncIterator[MakeNode]:
    nodes: list[Engine] = []

    def make() -> Engine:
        node = Engine(store, SystemClock(), linger_ms=LINGER_MS)
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        await node.close()


def req(body: str, group: str = "g", dedup: str | None = None) -> SendRequest:
    return SendRequest(body=body.encode(), group_id=group, dedup_id=dedup or body)


async def bodies(node: Engine, n: int = 10, visibility_s: int = 30) -> list[str]:
    got = await node.receive(Q, n, visibility_s, 0)
    return [d.message.body.decode() for d in got]


async def test_one_group_is_delivered_in_send_order_and_held_while_in_flight(
    make_node: MakeNode,
) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    for i in range(5):
        await node.send_one(Q, req(f"m{i}"))
    first = await node.receive(Q, 2, 30, 0)
    assert [d.message.body for d in first] == [b"m0", b"m1"]
    assert await bodies(node) == []  # the group is held while m0 and m1 are in flight
    await node.ack(Q, [first[0].receipt_handle])
    assert await bodies(node) == []  # m1 still in flight
    await node.ack(Q, [first[1].receipt_handle])
    assert await bodies(node) == ["m2", "m3", "m4"]


async def test_groups_proceed_independently(make_node: MakeNode) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    await node.send(Q, [req("a1", "a"), req("b1", "b"), req("a2", "a"), req("b2", "b")])
    first = await node.receive(Q, 1, 30, 0)
    assert [d.message.body for d in first] == [b"a1"]
    assert await bodies(node, 1) == ["b1"]  # group a is held, b is not
    assert await bodies(node) == []


async def test_an_expired_lease_returns_the_group_head_first(make_node: MakeNode) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    await node.send(Q, [req("m0"), req("m1")])
    first = await node.receive(Q, 1, 30, 0)
    await node.change_visibility(Q, [(first[0].receipt_handle, 0)])
    again = await node.receive(Q, 10, 30, 0)
    assert [d.message.body for d in again] == [b"m0", b"m1"]
    assert again[0].receive_count == 2


async def test_sequence_numbers_grow_with_send_order(make_node: MakeNode) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    sent = [await node.send_one(Q, req(f"m{i}")) for i in range(3)]
    numbers = [int(s.sequence_number or "0") for s in sent]
    assert numbers == sorted(numbers) and len(set(numbers)) == 3
    assert all(len(s.sequence_number or "") == 20 for s in sent)
    got = await node.receive(Q, 10, 30, 0)
    assert [d.sequence_number for d in got] == [s.sequence_number for s in sent]


async def test_a_duplicate_is_answered_with_the_original_and_not_enqueued(
    make_node: MakeNode,
) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    first = await node.send_one(Q, req("hello", dedup="d1"))
    again = await node.send_one(Q, req("hello again", dedup="d1"))
    assert isinstance(again, SendResult)
    assert again.duplicate and again.message_id == first.message_id
    assert again.sequence_number == first.sequence_number
    got = await node.receive(Q, 10, 30, 0)
    assert [d.message.body for d in got] == [b"hello"]
    await node.ack(Q, [got[0].receipt_handle])
    # Still a duplicate after the original was deleted: the window is five minutes.
    third = await node.send_one(Q, req("third", dedup="d1"))
    assert third.duplicate and third.message_id == first.message_id
    assert await bodies(node) == []


async def test_duplicates_within_one_batch(make_node: MakeNode) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    out = await node.send(Q, [req("x", dedup="k"), req("y", dedup="k"), req("z", dedup="j")])
    assert all(isinstance(r, SendResult) for r in out)
    results = [r for r in out if isinstance(r, SendResult)]
    assert [r.duplicate for r in results] == [False, True, False]
    assert results[1].message_id == results[0].message_id
    assert await bodies(node) == ["x", "z"]


async def test_deduplication_holds_across_nodes_and_a_crash(
    make_node: MakeNode, store: MemoryStore
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    first = await a.send_one(Q, req("once", dedup="d"))
    a.crash()  # the node that saw the send is gone; its memory with it
    dup = await b.send_one(Q, req("twice", dedup="d"))
    assert dup.duplicate and dup.message_id == first.message_id
    c = make_node()
    dup2 = await c.send_one(Q, req("thrice", dedup="d"))
    assert dup2.duplicate and dup2.message_id == first.message_id
    got = await c.receive(Q, 10, 30, 0)
    assert [d.message.body for d in got] == [b"once"]
    await c.ack(Q, [got[0].receipt_handle])
    # Finished, but kept in the bucket while its id can still be matched.
    st = await c.cached_manifest(Q)
    assert await store.list(keys.segments_of_queue(Q)) != []
    assert st.window and st.window_start() <= st.next_seq


class GatedManifestStore(ForwardingStore):
    """Holds every manifest write at a gate while the test needs them held."""

    gate: asyncio.Event | None = None

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if self.gate is not None and key.startswith(keys.MANIFESTS):
            await self.gate.wait()
        return await self.inner.put_if_match(key, data, etag)


async def test_a_new_deduplication_id_is_answered_before_its_slot_is_adopted(
    store: MemoryStore,
) -> None:
    """Its segment is durable and no earlier message has its id: adoption can only agree."""
    gated = GatedManifestStore(store)
    node = Engine(gated, SystemClock(), linger_ms=LINGER_MS)
    try:
        await node.create_queue(Q, FIFO)
        gated.gate = asyncio.Event()
        sent = [await asyncio.wait_for(node.send_one(Q, req(f"m{i}")), 2) for i in range(3)]
        assert not any(r.duplicate for r in sent)
        numbers = [int(r.sequence_number or "") for r in sent]
        assert numbers == sorted(numbers) and len(set(numbers)) == 3
        # A resend of m1 cannot be judged here: it waits for the manifest's verdict.
        retry = asyncio.ensure_future(node.send_one(Q, req("again", dedup="m1")))
        await asyncio.sleep(0.1)
        assert not retry.done()
        assert (await node.cached_manifest(Q)).next_seq == 0  # nothing adopted meanwhile
        gated.gate.set()
        dup = await asyncio.wait_for(retry, 2)
        assert dup.duplicate and dup.message_id == sent[1].message_id
        assert dup.sequence_number == sent[1].sequence_number
        got = await node.receive(Q, 10, 30, 0)
        assert [d.message.body for d in got] == [b"m0", b"m1", b"m2"]
        assert [d.sequence_number for d in got] == [r.sequence_number for r in sent]
    finally:
        if gated.gate is not None:
            gated.gate.set()
        await node.close()


async def test_a_send_answered_before_adoption_is_adopted_in_the_background(
    make_node: MakeNode,
) -> None:
    """So it is counted, and a receive through another node finds it without reading the log."""
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    await b.cached_manifest(Q)
    await a.send_one(Q, req("m0"))
    for _ in range(100):
        if (await a.cached_manifest(Q)).next_seq == 1:
            break
        await asyncio.sleep(0.01)
    assert (await a.cached_manifest(Q)).next_seq == 1
    assert await bodies(b) == ["m0"]


async def test_order_holds_across_nodes(make_node: MakeNode) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    for i in range(6):
        await (a if i % 2 else b).send_one(Q, req(f"m{i}"))
    seen: list[str] = []
    for _ in range(20):
        got = await (b if len(seen) % 2 else a).receive(Q, 2, 30, 0)
        seen.extend(d.message.body.decode() for d in got)
        await (a if len(seen) % 2 else b).ack(Q, [d.receipt_handle for d in got])
        if len(seen) == 6:
            break
    assert seen == [f"m{i}" for i in range(6)]


async def test_fifo_sends_need_a_group_and_a_deduplication_id_and_no_delay(
    make_node: MakeNode,
) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    out = await node.send(
        Q,
        [
            SendRequest(body=b"x", dedup_id="d"),
            SendRequest(body=b"x", group_id="g"),
            SendRequest(body=b"x", group_id="g", dedup_id="d", delay_s=5),
        ],
    )
    assert all(isinstance(r, InvalidArgument) for r in out)
    assert await bodies(node) == []


async def test_a_deep_backlog_stays_in_its_segments_and_drains_in_order(
    make_node: MakeNode,
) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    n = 3 * limits.adopt_margin_messages
    for i in range(0, n, 10):  # a slot per send
        await node.send(Q, [req(f"m{i + k:04}", group=f"g{(i + k) % 3}") for k in range(10)])
    for _ in range(100):  # a send answers before its slot is adopted, in the background
        st = await node.cached_manifest(Q)
        if st.next_seq == n // 10:
            break
        await asyncio.sleep(0.01)
    assert st.next_seq == n // 10
    assert len(st.segments) == 0 and st.load_seq == 0  # adopted in order, none loaded yet
    seen: dict[str, list[str]] = {"g0": [], "g1": [], "g2": []}
    for _ in range(n):
        got = await node.receive(Q, 10, 30, 0)
        for d in got:
            seen[d.message.group_id or ""].append(d.message.body.decode())
        await node.ack(Q, [d.receipt_handle for d in got])
        if sum(map(len, seen.values())) == n:
            break
        st = await node.cached_manifest(Q)
        # The working set follows what consumers take (and lease ahead), not the backlog.
        taken = limits.adopt_margin_messages + 10 + limits.lease_ahead_messages_max
        assert len(st.segments) <= taken // 10 + 1
    for g, bodies_ in seen.items():
        assert bodies_ == sorted(bodies_) and len(bodies_) == n // 3, g


async def test_purge_drops_adopted_slots_not_yet_loaded(make_node: MakeNode) -> None:
    node = make_node()
    await node.create_queue(Q, FIFO)
    for i in range(5):
        await node.send_one(Q, req(f"m{i}"))
    await node.purge(Q)
    assert await bodies(node) == []
    # A purge clears the deduplication window, as SQS's does (recorded): the id counts anew.
    again = await node.send_one(Q, req("m0-again", dedup="m0"))
    assert not again.duplicate
    await node.send_one(Q, req("after"))
    assert await bodies(node) == ["m0-again", "after"]
    third = await node.send_one(Q, req("m0-third", dedup="m0"))  # the window counts on
    assert third.duplicate and third.message_id == again.message_id


async def test_a_send_whose_slot_a_purge_stepped_over_answers_its_own_id(
    make_node: MakeNode,
) -> None:
    """A resend that landed in a slot a purge stepped over before any node adopted it: the
    purge cleared the window, so nothing is left for it to duplicate (and the purge took it)."""
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    first = await a.send_one(Q, req("m0"))
    rt = b.runtime(Q)
    resend = rt.sender._fifo_message(FIFO, req("m0-again", dedup="m0"), first.sent_ms + 1)
    seq, idx = await rt.slots.append(resend)  # written, not yet adopted
    await a.purge(Q)  # steps over that slot
    st = await rt.sender._adopted(seq)
    assert seq < st.next_seq and seq not in st.segments
    answer = rt.sender._fifo_result(st, resend, seq, idx)
    assert not answer.duplicate and answer.message_id == resend.id
    assert await bodies(a) == []


async def test_dead_letters_redriven_and_dead_lettered_again_are_never_taken_for_duplicates(
    make_node: MakeNode,
) -> None:
    node = make_node()
    dlq = "graveyard.fifo"
    await node.create_queue(dlq, FIFO)
    await node.create_queue(Q, QueueAttrs(fifo=True, max_receive_count=1, dead_letter_queue=dlq))
    sent = await node.send_one(Q, req("poison"))
    for _round in range(2):  # dead-lettered, redriven, dead-lettered again: all within minutes
        (first,) = await node.receive(Q, 1, 30, 0)
        await node.change_visibility(Q, [(first.receipt_handle, 0)])
        assert await node.receive(Q, 1, 30, 0) == []  # this receive moves it
        (dead,) = await node.receive(dlq, 1, 0, 0)
        assert dead.message.id == sent.message_id
        assert await node.redrive(dlq) == 1
    (back,) = await node.receive(Q, 1, 30, 0)
    assert back.message.id == sent.message_id and back.message.body == b"poison"


async def test_a_receive_attempt_is_answered_again_on_another_node_while_in_flight(
    make_node: MakeNode, store: MemoryStore
) -> None:
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    for i in range(3):
        await a.send_one(Q, req(f"m{i}"))
    got = await a.receive(Q, 3, 30, 0)
    await a.remember_receive(Q, "try-1", got, 30)
    again = await b.recall_receive(Q, "try-1")
    assert again is not None
    assert [d.receipt_handle for d in again] == [d.receipt_handle for d in got]
    assert [d.message.body for d in again] == [b"m0", b"m1", b"m2"]
    assert [d.sequence_number for d in again] == [d.sequence_number for d in got]
    assert await b.recall_receive(Q, "try-2") is None  # another attempt id
    await b.ack(Q, [got[0].receipt_handle])
    rest = await a.recall_receive(Q, "try-1")
    assert rest is not None and [d.message.body for d in rest] == [b"m1", b"m2"]
    await a.change_visibility(Q, [(d.receipt_handle, 0) for d in got[1:]])
    assert await b.recall_receive(Q, "try-1") is None  # nothing left in flight under it
    # The record runs out with the deduplication window at most, and the sweep takes it.
    records = await store.list(keys.receive_attempts_of_queue(Q))
    assert len(records) == 1
    await a.remember_receive(Q, "short", got[1:], 0)  # keeps nothing for no time
    assert await store.list(keys.receive_attempts_of_queue(Q)) == records
    await a.delete_queue(Q)
    await a.sweep(Q)
    assert await store.list(keys.receive_attempts_of_queue(Q)) == []


async def test_a_retried_receive_starts_the_visibility_timeout_over(make_node: MakeNode) -> None:
    """As SQS does; one second of visibility, so this test takes about 1.3 s."""
    a, b = make_node(), make_node()
    await a.create_queue(Q, FIFO)
    await a.send_one(Q, req("m0"))
    got = await a.receive(Q, 1, 1, 0)
    await a.remember_receive(Q, "try", got, 1)
    await asyncio.sleep(0.65)
    again = await b.recall_receive(Q, "try")
    assert again is not None and again[0].receipt_handle == got[0].receipt_handle
    await asyncio.sleep(0.65)  # past the first receive's second, within the retry's
    assert await b.receive(Q, 1, 30, 0) == []
    await asyncio.sleep(0.5)
    assert [d.message.body for d in await b.receive(Q, 1, 30, 0)] == [b"m0"]


async def test_the_queues_delay_holds_each_message_then_the_group_goes_in_order(
    make_node: MakeNode,
) -> None:
    """A FIFO queue's DelaySeconds applies to every message (SQS's only delay on FIFO)."""
    node = make_node()
    await node.create_queue(Q, QueueAttrs(fifo=True, delay_s=1))
    await node.send(Q, [req("m0"), req("m1"), req("dup", dedup="m0")])
    assert await bodies(node) == []
    c = await node.counts(Q)
    assert (c.visible, c.delayed) == (0, 2)
    await asyncio.sleep(1.1)
    assert await bodies(node) == ["m0", "m1"]
