"""The pure rules of move-task records and the rate limiter: no loop, no store, times given."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from okuri import limits
from okuri.core import move_records as rec
from okuri.core.move_records import MoveTask, Pacer
from okuri.core.state import QueueAttrs

T0 = 1_700_000_000_000


def task(i: int = 0, status: str = rec.RUNNING, beat: int = T0, node: str = "a") -> MoveTask:
    return MoveTask(f"t{i}", "dlq", None, None, status, 0, 10, T0, beat, node)


def test_records_round_trip_through_the_attributes_and_keep_other_extras() -> None:
    attrs = QueueAttrs(extra={"tag:team": "x"})
    tasks = [task(i) for i in range(12)]
    tasks[3] = replace(tasks[3], destination="back", rate=7, failure="why", status=rec.FAILED)
    stored = rec.encode_tasks(attrs, tasks)
    assert stored.extra["tag:team"] == "x"
    assert rec.decode_tasks(stored) == tasks[: limits.move_tasks_kept]
    assert rec.MOVE_TASKS_KEY not in rec.encode_tasks(stored, []).extra


WEIRD_STATUS = rec.encode_tasks(QueueAttrs(), [replace(task(), status="WEIRD")]).extra[
    rec.MOVE_TASKS_KEY
]


@pytest.mark.parametrize("raw", ["", "not json", "{}", "[1]", '[{"id": "x"}]', WEIRD_STATUS])
def test_an_unreadable_record_list_reads_as_no_tasks(raw: str) -> None:
    assert rec.decode_tasks(QueueAttrs(extra={rec.MOVE_TASKS_KEY: raw})) == []


def test_a_silent_node_is_reported_failed_or_cancelled_after_the_stale_bound() -> None:
    stale = T0 + limits.move_stale_ms + 1
    assert rec.as_seen(task(), T0 + limits.move_stale_ms) == task()
    failed = rec.as_seen(task(), stale)
    assert (failed.status, failed.failure) == (rec.FAILED, rec.FAILURE_NODE_LOST)
    assert rec.as_seen(task(status=rec.CANCELLING), stale).status == rec.CANCELLED
    done = task(status=rec.COMPLETED)
    assert rec.as_seen(done, stale + 10**9) == done


def test_a_new_task_waits_for_the_active_one_or_its_staleness() -> None:
    with pytest.raises(rec.MoveTaskActive):
        rec.add_task([task(0)], task(1), T0 + 1)
    with pytest.raises(rec.MoveTaskActive):
        rec.add_task([task(0, rec.CANCELLING)], task(1), T0 + 1)
    later = T0 + limits.move_stale_ms + 1
    out = rec.add_task([task(0)], task(1, beat=later), later)
    assert [t.id for t in out] == ["t1", "t0"]
    assert out[1].status == rec.FAILED  # settled in the record
    many = rec.add_task([task(i, rec.COMPLETED) for i in range(10)], task(99), T0)
    assert len(many) == limits.move_tasks_kept and many[0].id == "t99"


def test_only_a_running_task_can_be_cancelled() -> None:
    out, cancelled = rec.request_cancel([task(0, rec.COMPLETED), task(1)], "t1", T0)
    assert cancelled.status == rec.CANCELLING and out[1] == cancelled
    for status in (rec.COMPLETED, rec.CANCELLING, rec.CANCELLED, rec.FAILED):
        with pytest.raises(rec.MoveTaskNotFound, match=status):
            rec.request_cancel([task(0, status)], "t0", T0)
    with pytest.raises(rec.MoveTaskNotFound, match="does not exist"):
        rec.request_cancel([task(0)], "nope", T0)
    with pytest.raises(rec.MoveTaskNotFound):
        rec.request_cancel([task(0)], "t0", T0 + limits.move_stale_ms + 1)  # its node is gone


def test_only_the_running_node_reports_and_only_while_the_task_is_its() -> None:
    tasks = [task(0, status=rec.CANCELLING)]
    out, before = rec.report(tasks, "t0", "a", 4, T0 + 10)
    assert before == tasks[0]  # the runner learns of the cancel from this
    assert (out[0].status, out[0].moved, out[0].heartbeat_ms) == (rec.CANCELLING, 4, T0 + 10)
    out, _ = rec.report(out, "t0", "a", 3, T0 + 20, rec.CANCELLED, failure="ignored")
    assert (out[0].status, out[0].moved, out[0].failure) == (rec.CANCELLED, 4, None)
    out, _ = rec.report([task(0)], "t0", "a", 1, T0, rec.FAILED, "boom")
    assert out[0].failure == "boom"
    assert rec.report([task(0)], "t0", "b", 1, T0)[1] is None  # another node's task
    assert rec.report([task(0)], "t9", "a", 1, T0)[1] is None  # gone
    assert rec.report([task(0, rec.FAILED)], "t0", "a", 1, T0)[1] is None  # settled
    assert rec.report([task(0)], "t0", "a", 1, T0 + limits.move_stale_ms + 1)[1] is None


def test_dead_letter_target_is_the_policy_or_the_convention() -> None:
    assert rec.dead_letter_target("q", QueueAttrs()) is None
    assert rec.dead_letter_target("q", QueueAttrs(max_receive_count=3)) == "q-dlq"
    named = QueueAttrs(max_receive_count=3, dead_letter_queue="graveyard")
    assert rec.dead_letter_target("q", named) == "graveyard"


@pytest.mark.parametrize("rate", [1, 3, 10, 500])
def test_the_pacer_never_lets_more_than_burst_plus_rate_times_t(rate: int) -> None:
    rng = random.Random(rate)
    pacer = Pacer(rate, 100, 0.0)
    now, taken, log = 0.0, 0, []
    while now < 20.0:
        want = rng.randint(1, pacer.burst)
        wait = pacer.wait_s(want, now)
        now += wait + rng.choice([0.0, 0.0, 0.01, 0.3])  # a step takes a while, or not
        pacer.take(want, now)
        got = rng.randint(0, want)  # the queue may have had fewer
        pacer.give_back(want - got)
        taken += got
        log.append((now, taken))
    for t, n in log:
        assert n <= pacer.burst + rate * t + 1e-6
    assert pacer.burst == min(100, rate)


def test_the_pacer_starts_with_a_burst_then_spaces_messages_out() -> None:
    pacer = Pacer(2, 100, 0.0)
    assert pacer.burst == 2
    assert pacer.wait_s(2, 0.0) == 0.0
    pacer.take(2, 0.0)
    assert pacer.wait_s(1, 0.0) == pytest.approx(0.5)
    assert pacer.wait_s(2, 0.25) == pytest.approx(0.75)
    unlimited = Pacer(None, 100, 0.0)
    unlimited.take(100, 0.0)
    unlimited.give_back(5)
    assert unlimited.wait_s(100, 0.0) == 0.0 and unlimited.burst == 100
