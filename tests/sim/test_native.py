"""The native shape in the simulator: which seeds run it, what its runs exercise (enqueue times
near and beyond the longest delay, big leases, retry at a time, extend, dead), the native
oracle on hand-made histories, and its teeth against engines broken on purpose."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest

from okuri import limits
from okuri.core import transitions
from okuri.core.message import Message
from okuri.core.state import QueueState
from okuri.core.transitions import ChangeVisibility, VisibilityResult
from okuri.engine import schedule
from okuri.engine.finishing import Finisher
from okuri.engine.types import Delivery
from okuri.sim.config import NATIVE_SHARE, SimConfig
from okuri.sim.history import Changed, DeadLettered, Delivered, History, Sent
from okuri.sim.native_checks import check_native
from okuri.sim.runner import describe, run_seed

Q, DLQ = "jobs", "jobs-dlq"
# A native seed that runs every native operation; found by listing native seeds below 100 (11
# until lanes retired: its big leases went to lanes, one consumer at a time; 60 until receives
# tried the lanes they lead first).
SEED = 45
# A native seed whose consumers dead-letter a message that no older receipt of it then deletes
# (in seed 11, once the seed above, the first receiver's late delete, with its earlier receipt,
# finishes the messages a broken dead-letter left leased, so the run passes either way).
DEAD_LETTER_SEED = 0


def native_seeds(below: int) -> list[int]:
    return [s for s in range(below) if SimConfig.from_seed(s).native]


# --- which seeds, and what they exercise -----------------------------------------------------


def test_a_share_of_standard_chaos_seeds_runs_the_native_shape() -> None:
    configs = [SimConfig.from_seed(s) for s in range(800)]
    native = [c for c in configs if c.native]
    standard_chaos = [c for c in configs if not c.fifo and not c.steady]
    assert 0.6 * NATIVE_SHARE < len(native) / len(standard_chaos) < 1.4 * NATIVE_SHARE
    assert not any(c.fifo or c.steady for c in native)


def test_a_native_run_schedules_beyond_the_delay_leases_big_retries_and_dead_letters() -> None:
    result = run_seed(SEED)
    assert result.ok, describe(result)
    h = result.history
    far = [s for s in h.sent if s.at_s is not None and s.at_s - s.start > limits.delay_s_max]
    assert far, "no send was scheduled beyond the longest delay"
    delivered = {d.message_id for d in h.delivered if d.queue == Q}
    assert {s.message_id for s in far} <= delivered
    assert any(x.result == "dead" for x in h.dead)
    assert any(c.visibility_s > 0 and c.result == "ok" for c in h.changed)
    per_call: dict[int, int] = {}
    for d in h.delivered:
        per_call[d.receive_id] = per_call.get(d.receive_id, 0) + 1
    assert max(per_call.values()) > limits.receive_messages_max


@pytest.mark.parametrize("seed", native_seeds(120))
def test_native_seeds_keep_every_invariant(seed: int) -> None:
    result = run_seed(seed)
    assert result.ok, describe(result)


# --- the oracle on hand-made histories -------------------------------------------------------


def history() -> History:
    h = History()
    h.sent.append(Sent(Q, "m1", b"a", 1.0, 1.1, at_s=1000.0))
    return h


def test_a_delivery_before_its_enqueue_time_is_a_violation_and_skew_is_allowed() -> None:
    h = history()
    h.delivered.append(Delivered(Q, "m1", b"a", 1, 998.0, 999.5, None))
    assert check_native(h, Q, DLQ, skew_s=1.0) == []
    h.delivered.append(Delivered(Q, "m1", b"a", 2, 990.0, 990.5, None))
    (v,) = check_native(h, Q, DLQ, skew_s=1.0)
    assert v.invariant == "not_before_enqueue_at"


def test_a_delivery_inside_a_changed_lease_is_a_violation_unless_a_later_change_came() -> None:
    h = history()
    h.changed.append(Changed(Q, "m1", 1, 10, "ok", 1000.0, 1000.1))
    h.delivered.append(Delivered(Q, "m1", b"a", 2, 1005.0, 1005.1, None))
    (v,) = check_native(h, Q, DLQ, skew_s=1.0)
    assert v.invariant == "lease_kept"
    h.changed.append(Changed(Q, "m1", 1, 0, "unanswered", 1002.0, 1002.5))
    assert check_native(h, Q, DLQ, skew_s=1.0) == []


def test_dead_means_never_again_from_the_source_and_once_in_the_dead_letter_queue() -> None:
    h = history()
    h.dead.append(DeadLettered(Q, "m1", "", "dead", 1000.0, 1000.1))
    (v,) = check_native(h, Q, DLQ, skew_s=1.0)
    assert v.invariant == "dead_is_final" and "never delivered" in v.detail
    h.delivered.append(Delivered(DLQ, "m1", b"a", 1, 1001.0, 1001.1, Q))
    assert check_native(h, Q, DLQ, skew_s=1.0) == []
    h.delivered.append(Delivered(Q, "m1", b"a", 2, 1002.0, 1002.1, None))
    (v,) = check_native(h, Q, DLQ, skew_s=1.0)
    assert "delivered again" in v.detail


# --- teeth: engines broken on purpose --------------------------------------------------------


def test_a_visibility_change_that_hides_for_less_than_asked_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = transitions._change_visibility

    def shortened(st: QueueState, now_ms: int, op: ChangeVisibility) -> VisibilityResult:
        return original(st, now_ms, dataclasses.replace(op, visibility_ms=op.visibility_ms // 4))

    monkeypatch.setattr(transitions, "_change_visibility", shortened)
    failed = run_seed(SEED)
    assert not failed.ok and "lease_kept" in describe(failed)


def test_scheduled_items_that_show_at_once_fail_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    def at_once(message: Message, now_ms: int) -> Message:
        return dataclasses.replace(message, sent_ms=now_ms, visible_at_ms=now_ms)

    monkeypatch.setattr(schedule, "moved_in", at_once)
    failed = run_seed(SEED)
    assert not failed.ok and "not_before_enqueue_at" in describe(failed)


def test_a_dead_letter_that_leaves_the_message_leased_fails_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert run_seed(DEAD_LETTER_SEED).ok  # the engine as it is passes it
    original = Finisher._move_dead

    async def copy_only(self: Finisher, grants: Sequence[object], *, delivered: bool) -> list[bool]:
        if not delivered:
            return await original(self, grants, delivered=delivered)  # type: ignore[arg-type]
        st = await self.manifest.current()
        found: list[Delivery] = await self.slots.deliveries(st, grants)  # type: ignore[arg-type]
        await self._send_to(
            f"{self.name}-dlq",
            [dataclasses.replace(d.message, dead_letter_source=self.name) for d in found],
        )
        return [True] * len(found)

    monkeypatch.setattr(Finisher, "_move_dead", copy_only)
    failed = run_seed(DEAD_LETTER_SEED)
    assert not failed.ok and "dead_is_final" in describe(failed)
