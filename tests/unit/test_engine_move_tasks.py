"""Message move tasks and dead-letter sources in the engine, on virtual time.

Every scenario runs on the simulator's virtual-time loop (`run_virtual`) with `LoopClock`s over
one in-memory bucket, so rates, heartbeats and a dead node's staleness are measured on the loop's
clock: a minute passes in no real time and the same run replays exactly. Tests look at what
clients see (list, cancel, the messages in each queue) and at the bucket, never at mock calls.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from okuri import limits
from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core import move_records as rec
from okuri.core.message import Message
from okuri.core.move_records import MoveTask
from okuri.core.state import QueueAttrs
from okuri.engine import Engine, SendRequest, move_tasks
from okuri.engine.queue import Queue
from okuri.errors import QueueDoesNotExist, Unavailable
from okuri.sim.loop import run_virtual
from okuri.store.memory import Faults, MemoryStore

EPOCH_MS = 1_700_000_000_000
LINGER_MS = 5
DLQ = "jobs-dlq"
SRC = "jobs"


def run(scenario: Callable[[MemoryStore], Coroutine[Any, Any, None]]) -> None:
    run_virtual(scenario(MemoryStore()))


def node(store: MemoryStore, name: str, seed: int = 1) -> Engine:
    return Engine(store, LoopClock(EPOCH_MS, random.Random(seed)), LINGER_MS, name)


def now_s() -> float:
    return asyncio.get_running_loop().time()


async def dead_letters(e: Engine, dlq: str, sources: dict[str, int]) -> set[bytes]:
    """Put messages in `dlq` as the engine's dead-letter move leaves them; their bodies."""
    now = e.clock.now_ms()
    messages = [
        Message(e.clock.new_id(), f"{src}-{i}".encode(), now, now, dead_letter_source=src)
        for src, n in sources.items()
        for i in range(n)
    ]
    await e.send_raw(dlq, messages)
    return {m.body for m in messages}


async def drain(e: Engine, queue: str) -> list[bytes]:
    """Every message of `queue`, received and acked; done when a 1 s long poll finds none."""
    out: list[bytes] = []
    for _ in range(1_000):
        got = await e.receive(queue, 10, 30, 0) or await e.receive(queue, 10, 30, 1)
        if not got:
            return out
        out.extend(d.message.body for d in got)
        await e.ack(queue, [d.receipt_handle for d in got])
    raise AssertionError("queue did not drain")


async def setup(e: Engine, *sources: str, dlq: str = DLQ) -> None:
    await e.create_queue(dlq)
    for src in sources or (SRC,):
        await e.create_queue(src, QueueAttrs(max_receive_count=3, dead_letter_queue=dlq))


async def settled(e: Engine, source: str, within_s: float = 120.0) -> MoveTask:
    """Poll the newest task until it is over (bounded in virtual time)."""
    end = now_s() + within_s
    while now_s() < end:
        (task,) = await e.list_move_tasks(source)
        if task.status not in rec.ACTIVE:
            return task
        await asyncio.sleep(0.25)
    raise AssertionError(f"task still {task.status} after {within_s} s")


async def until(pred: Callable[[], Awaitable[bool]], within_s: float = 30.0) -> None:
    end = now_s() + within_s
    while now_s() < end:
        if await pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


# --- moving ---------------------------------------------------------------------------------


def test_each_message_goes_back_to_the_queue_it_was_dead_lettered_from() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e, "jobs", "mail")
        sent = await dead_letters(e, DLQ, {"jobs": 7, "mail": 5})
        task = await e.start_move_task(DLQ)
        assert (task.status, task.to_move, task.destination, task.rate) == (
            rec.RUNNING,
            12,
            None,
            None,
        )
        done = await settled(e, DLQ)
        assert (done.status, done.moved, done.to_move) == (rec.COMPLETED, 12, 12)
        jobs, mail = await drain(e, "jobs"), await drain(e, "mail")
        assert {b.split(b"-")[0] for b in jobs} == {b"jobs"} and len(jobs) == 7
        assert set(jobs) | set(mail) == sent
        assert await drain(e, DLQ) == []
        assert e.stats["moved_by_tasks"] == 12
        await e.close()

    run(scenario)


def test_a_really_dead_lettered_message_is_moved_back_with_its_id() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await e.create_queue(DLQ)
        await e.create_queue(SRC, QueueAttrs(max_receive_count=1, dead_letter_queue=DLQ))
        sent = await e.send_one(SRC, SendRequest(b"poison"))
        (d,) = await e.receive(SRC, 1, 0, 0)  # visibility 0: it comes straight back
        assert await e.receive(SRC, 1, 30, 0) == []  # past the limit: dead-lettered instead
        await until(lambda: _visible(e, DLQ, 1))
        await e.start_move_task(DLQ)
        assert (await settled(e, DLQ)).moved == 1
        (back,) = await e.receive(SRC, 1, 30, 0)
        assert back.message.id == sent.message_id == d.message.id
        assert back.message.body == b"poison"
        assert back.message.dead_letter_source is None
        assert back.receive_count == 1
        await e.close()

    run(scenario)


async def _visible(e: Engine, queue: str, n: int) -> bool:
    return (await e.counts(queue)).visible >= n


def test_a_destination_receives_every_message() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await e.create_queue("retry")
        sent = await dead_letters(e, DLQ, {SRC: 25})
        task = await e.start_move_task(DLQ, "retry")
        assert task.destination == "retry"
        assert (await settled(e, DLQ)).moved == 25
        assert set(await drain(e, "retry")) == sent
        assert await drain(e, SRC) == []
        await e.close()

    run(scenario)


def test_the_rate_limit_holds_on_the_loop_clock() -> None:
    """10 messages a second: the count moved by time t never exceeds 10 + 10 t."""

    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 60})
        start = now_s()
        task = await e.start_move_task(DLQ, rate=10)
        samples: list[tuple[float, int]] = []
        while True:
            (seen,) = await e.list_move_tasks(DLQ)
            samples.append((now_s() - start, seen.moved))
            if seen.status not in rec.ACTIVE:
                break
            await asyncio.sleep(0.1)
        assert seen.status == rec.COMPLETED and seen.moved == 60 and seen.rate == 10
        for t, moved in samples:
            assert moved <= 10 + 10 * t + 1e-9, (t, moved)
        took = samples[-1][0]
        assert 5.0 <= took <= 7.0, took  # (60 - 10 at once) / 10 per second, plus steps
        assert task.id == seen.id
        await e.close()

    run(scenario)


def test_without_a_rate_a_step_moves_up_to_a_hundred() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 250})
        start = now_s()
        await e.start_move_task(DLQ)
        assert (await settled(e, DLQ, 30)).moved == 250
        assert now_s() - start < 2.0
        assert len(await drain(e, SRC)) == 250
        await e.close()

    run(scenario)


def test_a_task_moves_as_many_as_were_visible_when_it_started() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 5})
        await e.start_move_task(DLQ, rate=1)
        await dead_letters(e, DLQ, {SRC: 5})
        done = await settled(e, DLQ)
        assert (done.status, done.moved, done.to_move) == (rec.COMPLETED, 5, 5)
        assert len(await drain(e, DLQ)) == 5
        assert len(await drain(e, SRC)) == 5
        await e.close()

    run(scenario)


def test_an_empty_dead_letter_queue_completes_at_once() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        task = await e.start_move_task(DLQ)
        assert task.to_move == 0
        done = await settled(e, DLQ, 5)
        assert (done.status, done.moved) == (rec.COMPLETED, 0)
        await e.close()

    run(scenario)


# --- refusals -------------------------------------------------------------------------------


def test_only_a_dead_letter_queue_with_an_existing_destination_can_be_a_source() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await e.create_queue("plain")
        with pytest.raises(rec.NotADeadLetterQueue):
            await e.start_move_task("plain")
        with pytest.raises(rec.NotADeadLetterQueue):
            await e.start_move_task(SRC)  # a source, not a dead-letter queue
        with pytest.raises(QueueDoesNotExist):
            await e.start_move_task("nowhere")
        with pytest.raises(rec.DestinationDoesNotExist):
            await e.start_move_task(DLQ, "nowhere")
        with pytest.raises(ValueError):
            await e.start_move_task(DLQ, rate=0)
        assert await e.list_move_tasks(DLQ) == []
        await e.close()

    run(scenario)


def test_the_dlq_naming_convention_makes_a_dead_letter_queue() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await e.create_queue("orders", QueueAttrs(max_receive_count=2))  # -> orders-dlq
        await e.create_queue("orders-dlq")
        await e.create_queue("other-dlq")  # "other" does not exist
        assert await e.moves.is_dead_letter_queue("orders-dlq")
        assert not await e.moves.is_dead_letter_queue("other-dlq")
        assert await e.dead_letter_sources("orders-dlq", 10) == (["orders"], None)
        await e.close()

    run(scenario)


def test_only_one_active_task_per_queue() -> None:
    async def scenario(store: MemoryStore) -> None:
        a, b = node(store, "a"), node(store, "b", 2)
        await setup(a)
        await dead_letters(a, DLQ, {SRC: 20})
        await a.start_move_task(DLQ, rate=1)
        for e in (a, b):
            with pytest.raises(rec.MoveTaskActive):
                await e.start_move_task(DLQ)
        await a.close()
        await b.close()

    run(scenario)


# --- cancel ---------------------------------------------------------------------------------


def test_cancel_stops_the_task_and_loses_nothing() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        sent = await dead_letters(e, DLQ, {SRC: 20})
        task = await e.start_move_task(DLQ, rate=2)
        await asyncio.sleep(3.0)
        cancelled = await e.cancel_move_task(DLQ, task.id)
        assert cancelled.status == rec.CANCELLING
        assert 6 <= cancelled.moved <= 10  # 2 at once, then 2 a second
        done = await settled(e, DLQ, 5)
        assert done.status == rec.CANCELLED
        moved, left = await drain(e, SRC), await drain(e, DLQ)
        assert len(moved) == done.moved and set(moved) | set(left) == sent
        assert left
        with pytest.raises(rec.MoveTaskNotFound):
            await e.cancel_move_task(DLQ, task.id)  # no longer running
        with pytest.raises(rec.MoveTaskNotFound):
            await e.cancel_move_task(DLQ, "no-such-task")
        await e.close()

    run(scenario)


def test_cancel_through_another_node_is_seen_at_the_runners_next_report() -> None:
    async def scenario(store: MemoryStore) -> None:
        a, b = node(store, "a"), node(store, "b", 2)
        await setup(a)
        await dead_letters(a, DLQ, {SRC: 100})
        task = await a.start_move_task(DLQ, rate=5)
        await asyncio.sleep(1.0)
        assert (await b.cancel_move_task(DLQ, task.id)).status == rec.CANCELLING
        (seen,) = await b.list_move_tasks(DLQ)
        assert seen.status == rec.CANCELLING and seen.id == task.id
        done = await settled(b, DLQ, limits.move_heartbeat_ms / 1000 + 5)
        assert done.status == rec.CANCELLED
        assert done.moved < 100
        assert len(await drain(b, SRC)) == done.moved
        await a.close()
        await b.close()

    run(scenario)


# --- nodes dying and stopping ---------------------------------------------------------------


def test_a_task_whose_node_died_is_reported_failed_and_can_be_restarted() -> None:
    async def scenario(store: MemoryStore) -> None:
        a, b = node(store, "a"), node(store, "b", 2)
        await setup(a)
        sent = await dead_letters(a, DLQ, {SRC: 30})
        first = await a.start_move_task(DLQ, rate=2)
        await asyncio.sleep(limits.move_heartbeat_ms / 1000 + 2)  # one report made
        a.crash()  # dies mid-task, mid-step perhaps: some messages leased, maybe sent

        (seen,) = await b.list_move_tasks(DLQ)
        assert seen.status == rec.RUNNING  # nobody can tell yet
        with pytest.raises(rec.MoveTaskActive):
            await b.start_move_task(DLQ)
        await asyncio.sleep(limits.move_stale_ms / 1000)
        (seen,) = await b.list_move_tasks(DLQ)
        assert seen.status == rec.FAILED
        assert seen.failure == rec.FAILURE_NODE_LOST
        assert 0 < seen.moved < 30
        with pytest.raises(rec.MoveTaskNotFound):
            await b.cancel_move_task(DLQ, first.id)

        # The leases the dead node held ran out (60 s); a new task moves everything left.
        second = await b.start_move_task(DLQ)
        done = await settled(b, DLQ)
        assert done.id == second.id and done.status == rec.COMPLETED
        history = await b.list_move_tasks(DLQ, 10)
        assert [t.id for t in history] == [second.id, first.id]
        assert history[1].status == rec.FAILED  # settled in the record by the new start
        back = await drain(b, SRC)
        assert set(back) == sent  # at least once: nothing lost, a duplicate allowed
        assert len(back) - len(sent) <= limits.move_batch_messages_max
        assert await drain(b, DLQ) == []
        await b.close()

    run(scenario)


def test_shutdown_stops_running_tasks_and_says_so() -> None:
    async def scenario(store: MemoryStore) -> None:
        a, b = node(store, "a"), node(store, "b", 2)
        await setup(a)
        sent = await dead_letters(a, DLQ, {SRC: 30})
        await a.start_move_task(DLQ, rate=3)
        await asyncio.sleep(2.0)
        await a.close()
        (seen,) = await b.list_move_tasks(DLQ)
        assert seen.status == rec.FAILED and seen.failure == rec.FAILURE_SHUTDOWN
        await asyncio.sleep(limits.move_visibility_s)
        moved, left = await drain(b, SRC), await drain(b, DLQ)
        assert len(moved) == seen.moved
        assert set(moved) | set(left) == sent
        await b.close()

    run(scenario)


def test_a_node_that_cannot_report_stops_its_task(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 500})
        task = await e.start_move_task(DLQ, rate=5)

        async def unavailable(*args: Any, **kw: Any) -> None:
            raise Unavailable("store down")

        monkeypatch.setattr(e.moves, "_report", unavailable)
        await asyncio.sleep(limits.move_stale_ms / 2000 + 2)
        assert task.id not in e.moves._jobs  # stopped by itself before others judge it
        await asyncio.sleep(limits.move_stale_ms / 2000)
        monkeypatch.undo()
        (seen,) = await e.list_move_tasks(DLQ)
        assert seen.status == rec.FAILED  # its record went stale; readers say so
        await e.close()

    run(scenario)


# --- failures while moving ------------------------------------------------------------------


def test_a_message_sent_straight_to_the_dlq_goes_to_its_only_source() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await e.send_one(DLQ, SendRequest(b"sent-directly"))
        await e.start_move_task(DLQ)
        assert (await settled(e, DLQ, 10)).status == rec.COMPLETED
        assert await drain(e, SRC) == [b"sent-directly"]
        await e.close()

    run(scenario)


def test_a_message_without_a_source_fails_the_task_when_sources_are_many() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e, "jobs", "mail")
        await e.send_one(DLQ, SendRequest(b"sent-directly"))
        await e.start_move_task(DLQ)
        done = await settled(e, DLQ, 10)
        assert done.status == rec.FAILED and done.failure == rec.FAILURE_NO_SOURCE
        assert await drain(e, DLQ) == [b"sent-directly"]  # visible again at once
        await e.close()

    run(scenario)


def test_a_destination_deleted_mid_task_fails_it_without_losing_messages() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await e.create_queue("retry")
        await dead_letters(e, DLQ, {SRC: 20})
        await e.start_move_task(DLQ, "retry", rate=4)
        await asyncio.sleep(1.5)
        await e.delete_queue("retry")  # what reached it goes with it, by the caller's choice
        done = await settled(e, DLQ, 10)
        assert done.status == rec.FAILED and done.failure == rec.FAILURE_NO_QUEUE
        assert 0 < done.moved < 20
        assert len(await drain(e, DLQ)) == 20 - done.moved  # the rest stayed, visible
        await e.close()

    run(scenario)


def test_a_deleted_source_ends_the_task() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 20})
        task = await e.start_move_task(DLQ, rate=2)
        await asyncio.sleep(1.0)
        await e.delete_queue(DLQ)
        await asyncio.sleep(limits.move_heartbeat_ms / 1000 + 2)
        assert task.id not in e.moves._jobs
        with pytest.raises(QueueDoesNotExist):
            await e.list_move_tasks(DLQ)
        await e.close()

    run(scenario)


# --- records and attributes -----------------------------------------------------------------


def test_a_queue_keeps_its_ten_latest_tasks() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        ids = []
        for _ in range(12):
            ids.append((await e.start_move_task(DLQ)).id)
            await settled(e, DLQ, 5)
        listed = await e.list_move_tasks(DLQ, 10)
        assert [t.id for t in listed] == ids[::-1][:10]
        assert [t.id for t in await e.list_move_tasks(DLQ)] == [ids[-1]]
        await e.close()

    run(scenario)


def test_concurrent_attribute_updates_through_two_nodes_never_undo_each_other() -> None:
    async def scenario(store: MemoryStore) -> None:
        a, b = node(store, "a"), node(store, "b", 2)
        await a.create_queue("q")

        async def add(e: Engine, key: str) -> None:
            await e.update_attributes(
                "q",
                lambda attrs: QueueAttrs(**{**_fields(attrs), "extra": {**attrs.extra, key: "1"}}),
            )

        await asyncio.gather(*(add(a if i % 2 else b, f"k{i}") for i in range(20)))
        st = await a.read_manifest("q")
        assert set(st.attrs.extra) == {f"k{i}" for i in range(20)}
        assert st.modified_ms == st.created_ms  # no touch: LastModifiedTimestamp unchanged
        before = st.version
        await a.update_attributes("q", lambda attrs: attrs)
        assert (await a.cached_manifest("q")).version == before  # nothing to write
        await a.update_attributes("q", lambda attrs: attrs, touch=True)
        assert (await a.cached_manifest("q")).version == before + 1
        with pytest.raises(QueueDoesNotExist):
            await a.update_attributes("gone", lambda attrs: attrs)
        await a.close()
        await b.close()

    run(scenario)


def _fields(attrs: QueueAttrs) -> dict[str, Any]:
    return {f: getattr(attrs, f) for f in QueueAttrs.__dataclass_fields__ if f != "extra"}


def test_dead_letter_sources_page_in_name_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "sources_scan_page", 4)

    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await e.create_queue("dead")
        for i in range(10):
            dlq = "dead" if i % 2 == 0 else "elsewhere"
            await e.create_queue(f"s{i}", QueueAttrs(max_receive_count=1, dead_letter_queue=dlq))
        await e.create_queue("t", QueueAttrs(max_receive_count=1))  # -> t-dlq
        assert await e.dead_letter_sources("dead", 100) == (["s0", "s2", "s4", "s6", "s8"], None)
        page, after = await e.dead_letter_sources("dead", 2)
        assert (page, after) == (["s0", "s2"], "s2")
        assert await e.dead_letter_sources("dead", 2, "s2") == (["s4", "s6"], "s6")
        assert await e.dead_letter_sources("dead", 2, "s6") == (["s8"], None)
        assert await e.dead_letter_sources("t-dlq", 5) == (["t"], None)
        assert await e.dead_letter_sources("nobody", 5) == ([], None)
        monkeypatch.setattr(limits, "sources_scan_queues_max", 4)
        page, after = await e.dead_letter_sources("dead", 100)
        assert (page, after) == (["s0", "s2"], "s2")  # bounded: read 4 queues ("dead", s0..s2)
        assert await e.moves.is_dead_letter_queue("dead")
        await e.close()

    run(scenario)


def test_an_unreadable_manifest_is_not_a_dead_letter_source() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await e.create_queue("dead")
        await e.create_queue("s", QueueAttrs(max_receive_count=1, dead_letter_queue="dead"))
        await store.put_if_absent(keys.manifest("broken"), b"not json")
        assert await e.dead_letter_sources("dead", 10) == (["s"], None)
        await e.close()

    run(scenario)


def test_concurrent_updates_over_a_faulty_slow_store_all_land() -> None:
    """Conflicting CASes, 409s, transient errors and ambiguous replies: every update lands once."""

    async def scenario(_: MemoryStore) -> None:
        clock = LoopClock(EPOCH_MS, random.Random(7))
        faults = Faults(latency_ms_median=4, p_transient=0.1, p_conflict=0.1, p_ambiguous=0.15)
        store = MemoryStore(clock, random.Random(8), faults)
        a, b = node(store, "a"), node(store, "b", 2)
        await a.create_queue("q")
        faults.enabled = True

        async def add(e: Engine, key: str) -> None:
            def change(attrs: QueueAttrs) -> QueueAttrs:
                return QueueAttrs(**{**_fields(attrs), "extra": {**attrs.extra, key: "1"}})

            await e.update_attributes("q", change)

        await asyncio.gather(*(add(a if i % 2 else b, f"k{i}") for i in range(8)))
        faults.enabled = False
        st = await b.read_manifest("q")
        assert set(st.attrs.extra) == {f"k{i}" for i in range(8)}
        await a.close()
        await b.close()

    run(scenario)


def test_a_store_failure_while_moving_fails_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        sent = await dead_letters(e, DLQ, {SRC: 5})

        async def down(self: Queue, *args: Any, **kw: Any) -> Any:
            raise Unavailable("store down")

        monkeypatch.setattr(Queue, "receive", down)
        await e.start_move_task(DLQ)
        await asyncio.sleep(1.0)
        monkeypatch.undo()
        done = await settled(e, DLQ, 5)
        assert done.status == rec.FAILED and done.failure == rec.FAILURE_UNAVAILABLE
        assert set(await drain(e, DLQ)) == sent
        await e.close()

    run(scenario)


def test_a_bug_while_moving_fails_the_task_rather_than_leaving_it_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 5})

        async def broken(*args: Any, **kw: Any) -> None:
            raise RuntimeError("a bug")

        monkeypatch.setattr(move_tasks, "move_messages", broken)
        await e.start_move_task(DLQ)
        done = await settled(e, DLQ, 5)
        assert done.status == rec.FAILED and done.failure == "Internal error."
        await e.close()

    run(scenario)


def test_shutdown_abandons_a_step_stuck_on_a_slow_store() -> None:
    async def scenario(_: MemoryStore) -> None:
        clock = LoopClock(EPOCH_MS, random.Random(3))
        faults = Faults(latency_ms_median=20_000, latency_sigma=0.01, latency_ms_max=20_000)
        store = MemoryStore(clock, random.Random(4), faults)
        a = node(store, "a")
        await setup(a)
        sent = await dead_letters(a, DLQ, {SRC: 5})
        await a.start_move_task(DLQ, rate=1)  # steps at 0 s, 1 s, 2 s, ...
        await asyncio.sleep(1.95)
        faults.enabled = True  # every request now takes 20 s
        await asyncio.sleep(0.1)  # the step at 2 s is stuck in its first request
        start = now_s()
        await a.close()
        assert now_s() - start < 5 * 20 + limits.move_stop_s  # bounded, not stuck
        faults.enabled = False
        b = node(store, "b", 2)
        (seen,) = await b.list_move_tasks(DLQ)
        assert seen.status == rec.FAILED and seen.failure == rec.FAILURE_SHUTDOWN
        await asyncio.sleep(limits.move_visibility_s)
        assert set(await drain(b, DLQ)) | set(await drain(b, SRC)) == sent
        await b.close()

    run(scenario)


def test_a_task_taken_over_by_a_node_that_judged_it_stale_stops_on_its_old_node() -> None:
    """Clock skew past the stale bound: b thinks a died and starts anew; a steps aside."""

    async def scenario(store: MemoryStore) -> None:
        a = node(store, "a")
        b = Engine(store, LoopClock(EPOCH_MS, random.Random(2), skew_ms=limits.move_stale_ms + 1))
        await setup(a)
        sent = await dead_letters(a, DLQ, {SRC: 40})
        first = await a.start_move_task(DLQ, rate=2)
        second = await b.start_move_task(DLQ, rate=2)
        await asyncio.sleep(limits.move_heartbeat_ms / 1000 + 1)
        assert first.id not in a.moves._jobs  # its report found the task no longer its own
        assert second.id in b.moves._jobs
        history = await b.list_move_tasks(DLQ, 10)
        assert [(t.id, t.status) for t in history] == [
            (second.id, rec.RUNNING),
            (first.id, rec.FAILED),
        ]
        await b.cancel_move_task(DLQ, second.id)
        await asyncio.sleep(limits.move_visibility_s)
        assert set(await drain(a, SRC)) | set(await drain(a, DLQ)) == sent
        await a.close()
        await b.close()

    run(scenario)


def test_a_task_completes_early_when_others_took_the_messages() -> None:
    async def scenario(store: MemoryStore) -> None:
        e = node(store, "a")
        await setup(e)
        await dead_letters(e, DLQ, {SRC: 10})
        task = await e.start_move_task(DLQ, rate=1)
        await asyncio.sleep(0.5)
        taken = await drain(e, DLQ)  # a consumer of the dead-letter queue empties it
        done = await settled(e, DLQ, 10)
        assert (done.status, done.to_move) == (rec.COMPLETED, 10)
        assert done.moved + len(taken) == 10 and done.id == task.id
        await e.close()

    run(scenario)
