"""Items scheduled beyond the longest delay (okuri/engine/schedule.py): they wait outside the
manifest, move in as delayed messages when due, once, whichever nodes look, and a purge or a
deleted queue takes them.

Real time on the in-memory store; the clock's jump moves both its wall clock and its
monotonic clock forward, so an hour passes without waiting for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.schedule import Claim
from okuri.engine import Engine, QueueAttrs, SendRequest, SendResult
from okuri.errors import InvalidArgument
from okuri.store.memory import MemoryStore

Q = "later"
HOUR_MS = 3_600_000


class JumpClock(SystemClock):
    """Real time, plus however far a test has jumped it."""

    def __init__(self) -> None:
        super().__init__()
        self.jumped_s = 0.0

    def jump(self, seconds: float) -> None:
        self.jumped_s += seconds

    def now_ms(self) -> int:
        return super().now_ms() + int(self.jumped_s * 1000)

    def monotonic_s(self) -> float:
        return super().monotonic_s() + self.jumped_s


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def clock() -> JumpClock:
    return JumpClock()


@pytest.fixture
async def nodes(store: MemoryStore, clock: JumpClock) -> AsyncIterator[tuple[Engine, Engine]]:
    a = Engine(store, clock, linger_ms=5, node_id="node-a")
    b = Engine(store, clock, linger_ms=5, node_id="node-b")
    yield a, b
    await a.close()
    await b.close()


async def scheduled_keys(store: MemoryStore) -> list[str]:
    found: list[str] = []
    while page := await store.list(keys.SCHEDULED, found[-1] if found else ""):
        found += page
    return found


async def send_at(node: Engine, at_ms: int, body: bytes = b"x", n: int = 1) -> list[str]:
    results = await node.send(
        Q, [SendRequest(body + b"%d" % i, enqueue_at_ms=at_ms) for i in range(n)]
    )
    assert all(isinstance(r, SendResult) for r in results), results
    return [r.message_id for r in results if isinstance(r, SendResult)]


async def move_in(node: Engine) -> int:
    return await node.runtime(Q).scheduler.move_due()


async def test_an_item_an_hour_ahead_waits_outside_the_queue_and_arrives_when_due(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, b = nodes
    await a.create_queue(Q)
    at_ms = clock.now_ms() + HOUR_MS
    (mid,) = await send_at(a, at_ms, b"report")
    assert (await a.read_manifest(Q)).segments == {}
    assert len(await scheduled_keys(store)) == 1
    assert await b.receive(Q, 10) == []
    assert await move_in(b) == 0  # not due: its minute is more than 15 minutes away

    clock.jump(50 * 60)  # ten minutes before it is due
    assert await move_in(b) == 1
    assert await scheduled_keys(store) == []
    counts = await a.counts(Q)
    assert (counts.visible, counts.delayed) == (0, 1)
    assert await a.receive(Q, 10) == []

    clock.jump(10 * 60 + 1)
    (got,) = await b.receive(Q, 10, wait_s=2)
    assert got.message.id == mid
    assert got.message.body == b"report0"
    assert got.message.visible_at_ms == at_ms


async def test_two_nodes_looking_at_once_move_each_item_in_once(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, b = nodes
    await a.create_queue(Q)
    start = clock.now_ms() + HOUR_MS
    ids: list[str] = []
    for minute in range(20):  # twenty batches, one per minute
        ids += await send_at(a, start + minute * 60_000, b"m", n=5)
    clock.jump(2 * 3600)
    moved = await asyncio.gather(move_in(a), move_in(b), move_in(a), move_in(b))
    assert sum(moved) == 100
    assert await scheduled_keys(store) == []
    got: list[str] = []
    for _ in range(20):
        got += [d.message.id for d in await a.receive(Q, 10)]
    assert sorted(got) == sorted(ids)


async def test_a_claim_left_by_a_node_that_died_is_taken_over_once_it_runs_out(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, b = nodes
    await a.create_queue(Q)
    (mid,) = await send_at(a, clock.now_ms() + HOUR_MS)
    (batch,) = await scheduled_keys(store)
    clock.jump(3600)
    held = Claim("node-dead", clock.now_ms() + limits.schedule_claim_ms)
    await store.put_if_absent(keys.claim(batch), held.encode())
    assert await move_in(b) == 0
    clock.jump(limits.schedule_claim_ms / 1000 + 1)
    assert await move_in(b) == 1
    assert await scheduled_keys(store) == []
    (got,) = await a.receive(Q, 10)
    assert got.message.id == mid


async def test_a_purge_drops_scheduled_items_and_a_deleted_queue_sweeps_them_away(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, b = nodes
    await a.create_queue(Q)
    await send_at(a, clock.now_ms() + HOUR_MS, n=3)
    await a.purge(Q)
    await a.runtime(Q).tasks.wait()  # the sweep a purge starts
    clock.jump(1)
    kept = await send_at(a, clock.now_ms() + HOUR_MS, b"after")
    assert len(await scheduled_keys(store)) == 1
    clock.jump(3600)
    assert await move_in(b) == 1
    (got,) = await a.receive(Q, 10)
    assert got.message.id == kept[0]

    await send_at(a, clock.now_ms() + 2 * HOUR_MS)
    await a.delete_queue(Q)
    await a.runtime(Q).tasks.wait()  # the sweep a delete starts
    assert await scheduled_keys(store) == []


async def test_a_week_of_scheduled_items_never_enters_the_manifest(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, b = nodes
    await a.create_queue(Q)
    now = clock.now_ms()
    week_ms = 7 * 24 * HOUR_MS
    for i in range(40):  # 4,000 items spread over the coming week
        at = now + HOUR_MS + i * (week_ms // 40)
        await a.send(Q, [SendRequest(b"later", enqueue_at_ms=at + j * 60_000) for j in range(100)])
    assert len(await scheduled_keys(store)) == 4_000
    await a.send(Q, [SendRequest(b"now%d" % i) for i in range(10)])
    got = await b.receive(Q, 10, wait_s=2)
    assert sorted(d.message.body for d in got) == sorted(b"now%d" % i for i in range(10))
    st = await a.read_manifest(Q)
    assert sum(seg.count for seg in st.segments.values()) == 10
    assert await move_in(b) == 0  # one LIST page: the first key is not due, so it stops there


async def test_enqueue_times_past_a_year_and_on_fifo_queues_are_refused(
    nodes: tuple[Engine, Engine], clock: JumpClock
) -> None:
    a, _ = nodes
    await a.create_queue(Q)
    far = clock.now_ms() + (limits.schedule_s_max + 60) * 1000
    (res,) = await a.send(Q, [SendRequest(b"x", enqueue_at_ms=far)])
    assert isinstance(res, InvalidArgument)
    await a.create_queue("ordered.fifo", QueueAttrs(fifo=True))
    (res,) = await a.send(
        "ordered.fifo",
        [SendRequest(b"x", group_id="g", dedup_id="d", enqueue_at_ms=clock.now_ms() + HOUR_MS)],
    )
    assert isinstance(res, InvalidArgument)


async def test_an_enqueue_time_within_fifteen_minutes_is_a_delay_to_the_millisecond(
    nodes: tuple[Engine, Engine], store: MemoryStore, clock: JumpClock
) -> None:
    a, _ = nodes
    await a.create_queue(Q)
    at_ms = clock.now_ms() + 10 * 60_000 + 7
    await send_at(a, at_ms)
    assert await scheduled_keys(store) == []
    assert (await a.counts(Q)).delayed == 1
    clock.jump(10 * 60 + 1)
    (got,) = await a.receive(Q, 10, wait_s=2)
    assert got.message.visible_at_ms == at_ms


async def test_far_scheduling_needs_a_queue_that_keeps_items_past_the_move_in(
    nodes: tuple[Engine, Engine], clock: JumpClock
) -> None:
    a, _ = nodes
    await a.create_queue(Q, QueueAttrs(retention_s=60))
    (res,) = await a.send(Q, [SendRequest(b"x", enqueue_at_ms=clock.now_ms() + HOUR_MS)])
    assert isinstance(res, InvalidArgument)
    assert "keeps them 60 s" in str(res)
    near = await a.send(Q, [SendRequest(b"x", enqueue_at_ms=clock.now_ms() + 60_000)])
    assert isinstance(near[0], SendResult)
