"""A producer's check that its slot was read never writes again what was read and deleted.

After writing a segment, a producer reads the manifest to learn whether its slot was read, or
was a stale slot, freed before the write landed, that no one will read (then it writes the
segment again, at the head). The manifest remembers which segment each slot held only for its
latest `manifest_recent_slots` slots. Issue 28: a check that took long enough for the segment
to be read, deleted through another node and pushed out of that memory found the slot
forgotten, wrote the same messages again, and they were delivered after their delete had been
answered. Such a send now fails (unclear, as after a lost reply), and a producer whose cursor
may be far behind reads the manifest before it picks a slot, so the check rarely gets there.
"""

from __future__ import annotations

import asyncio

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.engine import Engine, SendRequest
from okuri.engine.cursor_pace import CursorPace
from okuri.errors import Unavailable
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import MemoryStore
from tests.unit.test_engine_expiry import JumpClock

Q = "jobs"


class HeldCheck(ForwardingStore):
    """Holds the first manifest read after the next segment write until `release` is set."""

    def __init__(self, inner: MemoryStore) -> None:
        super().__init__(inner)
        self.armed = False
        self._wrote = False
        self.holding = asyncio.Event()
        self.release = asyncio.Event()
        self.segment_writes = 0

    async def put_if_absent(self, key: str, data: bytes) -> str:
        etag = await self.inner.put_if_absent(key, data)
        if key.startswith(keys.segments_of_queue(Q)):
            self.segment_writes += 1
            self._wrote = self.armed
        return etag

    async def get(self, key: str):  # type: ignore[no-untyped-def]
        if self._wrote and key == keys.manifest(Q):
            self._wrote = self.armed = False
            self.holding.set()
            await self.release.wait()
        return await self.inner.get(key)


async def consume_everything(engine: Engine, rounds: int = 2) -> list[bytes]:
    """Receive and delete until `rounds` short polls in a row find nothing (a poll, so that
    slots written through the other engine are found)."""
    bodies: list[bytes] = []
    empty = 0
    while empty < rounds:
        got = await engine.receive(Q, 10, wait_s=0.2)
        empty = 0 if got else empty + 1
        bodies += [d.message.body for d in got]
        if got:
            await engine.ack(Q, [d.receipt_handle for d in got])
    return bodies


async def pass_slots(engine: Engine, n: int) -> None:
    """Send and consume `n` one-message segments through `engine`: the cursor moves n slots,
    and each slot is freed (its segment deleted) behind it."""
    for i in range(n):
        await engine.send_one(Q, SendRequest(f"filler {i}".encode()))
        for d in await engine.receive(Q, 10, wait_s=0):
            await engine.ack(Q, [d.receipt_handle])


@pytest.mark.usefixtures("freed_at_once")
async def test_a_send_read_and_forgotten_while_its_slot_was_checked_is_not_written_again() -> None:
    store = MemoryStore()
    held = HeldCheck(store)
    a = Engine(held, SystemClock(), linger_ms=0)
    b = Engine(store, SystemClock(), linger_ms=0)
    await b.create_queue(Q)
    await a.receive(Q, 1, wait_s=0)  # A knows the queue
    held.armed = True
    sending = asyncio.create_task(a.send_one(Q, SendRequest(b"victim")))
    await asyncio.wait_for(held.holding.wait(), 5)

    got = await b.receive(Q, 10, wait_s=1)
    assert [d.message.body for d in got] == [b"victim"]
    await b.ack(Q, [d.receipt_handle for d in got])  # the delete is answered
    await pass_slots(b, limits.manifest_recent_slots + 6)
    held.release.set()

    with pytest.raises(Unavailable, match="may or may not have been stored"):
        await asyncio.wait_for(sending, 5)
    assert held.segment_writes == 1
    assert await consume_everything(b) == []  # not delivered after its delete
    assert a.stats["slot_checks_unsure"] == 1
    await a.close()
    await b.close()


@pytest.mark.usefixtures("freed_at_once")
async def test_a_stale_slot_freed_before_the_write_is_written_again_at_the_head() -> None:
    store = MemoryStore()
    counting = HeldCheck(store)
    a = Engine(counting, SystemClock(), linger_ms=0)
    b = Engine(store, SystemClock(), linger_ms=0)
    await b.create_queue(Q)
    await a.send_one(Q, SendRequest(b"first"))
    assert await consume_everything(b) == [b"first"]
    await pass_slots(b, 5)  # A's idea of the head is 5 slots behind, each slot freed

    await a.send_one(Q, SendRequest(b"second"))
    assert counting.segment_writes == 3  # the first, then a freed slot, then the head
    assert await consume_everything(b) == [b"second"]
    assert a.stats["slot_checks_unsure"] == 0
    await a.close()
    await b.close()


async def test_a_producer_whose_cursor_is_old_reads_the_manifest_before_it_picks() -> None:
    store = MemoryStore()
    counting = HeldCheck(store)
    clock = JumpClock()
    a = Engine(counting, clock, linger_ms=0)
    b = Engine(store, SystemClock(), linger_ms=0)
    await b.create_queue(Q)
    await a.send_one(Q, SendRequest(b"first"))
    assert await consume_everything(b) == [b"first"]
    await pass_slots(b, limits.manifest_recent_slots + 6)  # far past what the manifest keeps
    clock.jump(limits.slot_pick_fresh_s + 0.1)

    await a.send_one(Q, SendRequest(b"second"))  # written once, at the head: no unclear check
    assert counting.segment_writes == 2
    assert await consume_everything(b) == [b"second"]
    await a.close()
    await b.close()


def test_the_pace_rises_at_once_and_falls_by_halves() -> None:
    pace = CursorPace()
    pace.saw(10.0, 100)
    assert pace.behind(1.0) == 0.0
    pace.saw(10.01, 150)  # too close in time to measure: ignored
    pace.saw(11.0, 300)
    assert pace.behind(0.5) == pytest.approx(100.0)
    pace.saw(12.0, 300)  # a lull
    assert pace.behind(1.0) == pytest.approx(100.0)
    pace.saw(11.5, 0)  # a new incarnation's cursor starts again
    pace.saw(12.5, 10)
    assert pace.behind(1.0) == pytest.approx(55.0)


# --- under the keep: freed slots' objects stay a while (okuri/engine/freed_slots.py) -----------


class Timeline(ForwardingStore):
    """Records when manifest reads and segment writes begin and end, in order."""

    def __init__(self, inner: MemoryStore) -> None:
        super().__init__(inner)
        self.events: list[str] = []
        self.segment_writes = 0

    async def put_if_absent(self, key: str, data: bytes) -> str:
        segment = key.startswith(keys.segments_of_queue(Q))
        if segment:
            self.events.append("put")
        try:
            return await self.inner.put_if_absent(key, data)
        finally:
            if segment:
                self.segment_writes += 1
                self.events.append("put answered")

    async def get(self, key: str):  # type: ignore[no-untyped-def]
        if key == keys.manifest(Q):
            self.events.append("read")
        return await self.inner.get(key)


async def test_under_the_keep_a_stale_producer_finds_its_freed_slot_taken() -> None:
    store = MemoryStore()
    timeline = Timeline(store)
    a = Engine(timeline, SystemClock(), linger_ms=0)
    b = Engine(store, SystemClock(), linger_ms=0)
    await b.create_queue(Q)
    await a.send_one(Q, SendRequest(b"first"))
    assert await consume_everything(b) == [b"first"]
    await pass_slots(b, 5)  # A's idea of the head is 5 slots behind; the slots were freed

    timeline.events.clear()
    skipped = a.stats["slot_checks_skipped"]
    await a.send_one(Q, SendRequest(b"second"))
    # The freed slot's object is still there: the write found it taken and went to the head,
    # and no read of the manifest followed the write that landed.
    assert await consume_everything(b) == [b"second"]
    assert timeline.events[-1] == "put answered"
    assert a.stats["slot_checks_skipped"] == skipped + 1
    assert a.stats["slot_checks_unsure"] == 0
    await a.close()
    await b.close()


async def test_a_lone_send_reads_the_manifest_beside_its_write_not_after() -> None:
    store = MemoryStore()
    timeline = Timeline(store)
    node = Engine(timeline, SystemClock(), linger_ms=0)
    await node.create_queue(Q)
    await node.receive(Q, 1, wait_s=0)  # the cache was shown current before the send began
    timeline.events.clear()
    await node.send_one(Q, SendRequest(b"one"))
    # One read, sent before the write was answered (the queue outlived the send's start),
    # and none after: a send waits for one store round trip, its write.
    assert timeline.events.count("read") == 1
    assert timeline.events.index("read") < timeline.events.index("put answered")
    assert timeline.events[-1] == "put answered"
    assert node.stats["slot_checks_beside"] == 1
    assert await consume_everything(node) == [b"one"]
    await node.close()
