"""The pure manifest state machine: every transition, result and read-only view, without I/O.

Each test builds a manifest by hand, applies operations through `apply` exactly as the engine
does (adoption, leasing, acking, ...) and asserts on the state it returns. A seeded fuzz at the
bottom replays random operation sequences and checks the named invariants after every step;
the hypothesis-driven version of the same property lives in test_core_transitions_properties.py.
"""

from __future__ import annotations

import itertools
import random

import pytest

from okuri import limits
from okuri.core.invariants import check_state, check_step
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import (
    Ack,
    Adopt,
    ChangeVisibility,
    Grant,
    Lease,
    LeaseResult,
    Load,
    MarkDead,
    Op,
    Outcome,
    Purge,
    Release,
    SetAttributes,
    apply,
)
from okuri.core.views import (
    Counts,
    counts,
    has_visible,
    next_expiry_ms,
    oldest_visible_sent_ms,
)

T0 = 1_700_000_000_000  # an arbitrary "now" in ms; the core never reads a clock
VIS = 30_000

_tokens = itertools.count(1)


def fresh(**attrs: object) -> QueueState:
    return QueueState("q", "inc-1", T0, QueueAttrs(**attrs), modified_ms=T0)  # type: ignore[arg-type]


def step(st: QueueState, now_ms: int, *ops: Op) -> Outcome:
    """Apply like the engine does, and hold every written manifest to the invariants."""
    out = apply(st, now_ms, ops, f"tok-{next(_tokens)}")
    check_state(out.state)
    if out.changed:
        check_step(st, out.state)
    return out


def adopt(
    st: QueueState, count: int, now_ms: int = T0, delays: tuple[tuple[int, int], ...] = ()
) -> QueueState:
    out = step(st, now_ms, Adopt(st.next_seq, f"sid-{st.next_seq}", count, now_ms, delays))
    assert out.results == [True]
    return out.state


def lease(
    st: QueueState, now_ms: int, n: int = 10, vis: int = VIS
) -> tuple[QueueState, LeaseResult]:
    out = step(st, now_ms, Lease(n, vis))
    res = out.results[0]
    assert isinstance(res, LeaseResult)
    return out.state, res


def at(grants: tuple[Grant, ...]) -> list[tuple[int, int]]:
    return [(g.seq, g.idx) for g in grants]


# --- adopt -----------------------------------------------------------------------------------


def test_adopt_at_cursor_makes_messages_receivable_and_advances_cursor() -> None:
    st = fresh()
    out = step(st, T0, Adopt(0, "sid-0", 3, T0))
    assert out.results == [True]
    assert out.changed
    assert out.state.next_seq == 1
    seg = out.state.segments[0]
    assert (seg.seq, seg.sid, seg.count, seg.sent_ms, seg.done, seg.leases) == (
        0,
        "sid-0",
        3,
        T0,
        0,
        {},
    )
    assert out.state.recent == [(0, "sid-0")]
    assert counts(out.state, T0) == Counts(visible=3)
    # the input manifest is never mutated
    assert st.next_seq == 0 and st.segments == {} and st.version == 1


@pytest.mark.parametrize("seq", [1, 5])
def test_adopt_of_a_slot_past_the_cursor_is_refused(seq: int) -> None:
    st = fresh()
    out = step(st, T0, Adopt(seq, "sid-x", 1, T0))
    assert out.results == [False]
    assert not out.changed
    assert out.state.next_seq == 0 and out.state.segments == {}
    assert out.state.version == st.version


def test_adopting_the_same_slot_twice_is_idempotent() -> None:
    st = adopt(fresh(), 2)
    again = step(st, T0 + 5, Adopt(0, "sid-0", 2, T0))
    assert again.results == [False]
    assert not again.changed
    assert again.state.version == st.version
    assert again.state.segments.keys() == {0}
    assert again.state.next_seq == 1


def test_adopting_two_slots_in_one_commit_needs_them_in_order() -> None:
    st = fresh()
    out = step(st, T0, Adopt(0, "a", 1, T0), Adopt(1, "b", 1, T0))
    assert out.results == [True, True]
    assert out.state.next_seq == 2
    assert out.state.version == st.version + 1  # one write, however many ops
    backwards = step(fresh(), T0, Adopt(1, "b", 1, T0), Adopt(0, "a", 1, T0))
    assert backwards.results == [False, True]
    assert backwards.state.next_seq == 1


def test_recent_ring_remembers_the_latest_adopted_slots_only() -> None:
    st = fresh()
    total = limits.manifest_recent_slots + 6
    for _ in range(total):
        st = adopt(st, 1)
    assert len(st.recent) == limits.manifest_recent_slots
    assert st.recent[0] == (6, "sid-6")
    assert st.recent[-1] == (total - 1, f"sid-{total - 1}")
    assert st.recent_sid(total - 1) == f"sid-{total - 1}"
    # slot 0 left the ring but is still adopted, so its identity is known from the segment table
    assert st.recent_sid(0) == "sid-0"


def test_recent_sid_of_a_freed_slot_that_left_the_ring_is_unknown() -> None:
    st = adopt(fresh(), 1)
    st, res = lease(st, T0)
    st = step(st, T0, Ack(0, 0, res.granted[0].epoch)).state
    assert st.recent_sid(0) == "sid-0"  # freed, but still in the ring
    for _ in range(limits.manifest_recent_slots):
        st = adopt(st, 1)
    assert st.recent_sid(0) is None
    assert st.recent_sid(999) is None


def test_delayed_messages_are_adopted_as_zero_receive_leases() -> None:
    later = T0 + 5_000
    st = adopt(fresh(), 3, delays=((1, later),))
    assert st.segments[0].leases == {1: (0, later, 0)}
    assert counts(st, T0) == Counts(visible=2, delayed=1)

    st, res = lease(st, T0 + 4_999)
    assert at(res.granted) == [(0, 0), (0, 2)]

    st, res = lease(st, later)
    assert at(res.granted) == [(0, 1)]
    assert res.granted[0].epoch == 1
    assert res.granted[0].first_receive_ms == later


def test_adopt_is_refused_when_the_manifest_holds_its_maximum_of_segments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "manifest_segments_max", 2)
    st = adopt(adopt(fresh(), 1), 1)
    out = step(st, T0, Adopt(2, "sid-2", 1, T0))
    assert out.results == [False]
    assert out.state.next_seq == 2
    # once a segment is freed there is room again
    st, res = lease(st, T0, n=1)
    st = step(st, T0, Ack(0, 0, res.granted[0].epoch)).state
    assert step(st, T0, Adopt(2, "sid-2", 1, T0)).results == [True]


# --- lease -----------------------------------------------------------------------------------


def test_lease_grants_in_slot_then_index_order_up_to_max() -> None:
    st = adopt(adopt(fresh(), 3), 2)
    st, res = lease(st, T0, n=4)
    assert at(res.granted) == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert res.dead == ()
    assert all(g.epoch == 1 and g.first_receive_ms == T0 for g in res.granted)
    st, res = lease(st, T0, n=4)
    assert at(res.granted) == [(1, 1)]
    st, res = lease(st, T0, n=4)
    assert res.granted == ()


def test_leased_messages_carry_their_lease_in_the_manifest() -> None:
    st, res = lease(adopt(fresh(), 2), T0, n=1, vis=7_000)
    assert st.segments[0].leases == {0: (1, T0 + 7_000, T0)}
    assert counts(st, T0) == Counts(visible=1, in_flight=1)
    assert res.granted == (Grant(0, 0, 1, T0),)


def test_lease_with_nothing_visible_writes_nothing() -> None:
    st, _ = lease(adopt(fresh(), 1), T0)
    out = step(st, T0 + 1, Lease(10, VIS))
    assert out.results == [LeaseResult((), ())]
    assert not out.changed
    assert out.state.version == st.version
    assert out.state.commits == st.commits


def test_visibility_expiry_re_leases_with_next_epoch_and_keeps_first_receive() -> None:
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    assert first.granted[0].epoch == 1
    st, hidden = lease(st, T0 + 999)
    assert hidden.granted == ()
    st, second = lease(st, T0 + 1_000)  # the lease runs out exactly at until_ms
    assert second.granted == (Grant(0, 0, 2, T0),)
    st, third = lease(st, T0 + 1_000 + VIS)
    assert third.granted == (Grant(0, 0, 3, T0),)
    assert st.segments[0].leases[0] == (3, T0 + 1_000 + 2 * VIS, T0)


def test_lease_skips_finished_messages() -> None:
    st, res = lease(adopt(fresh(), 3), T0, n=3, vis=1_000)
    st = step(st, T0, Ack(0, 1, res.granted[1].epoch)).state
    st, again = lease(st, T0 + 5_000)
    assert at(again.granted) == [(0, 0), (0, 2)]


def test_zero_visibility_lease_is_receivable_again_at_once() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=0)
    assert res.granted[0].epoch == 1
    st, res = lease(st, T0)
    assert res.granted[0].epoch == 2


# --- ack -------------------------------------------------------------------------------------


def test_ack_with_current_epoch_finishes_message_and_frees_its_segment() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    out = step(st, T0 + 1, Ack(g.seq, g.idx, g.epoch))
    assert out.results == ["acked"]
    assert out.changed
    assert out.freed == [0]
    assert out.state.segments == {}
    assert counts(out.state, T0 + 1) == Counts()


def test_a_receipt_from_an_earlier_receive_still_deletes_after_redelivery() -> None:
    """As SQS, moto and LocalStack do: the consumer processed it, so the delete holds."""
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, second = lease(st, T0 + 2_000)
    earlier = first.granted[0]
    assert second.granted[0].epoch == earlier.epoch + 1
    out = step(st, T0 + 2_001, Ack(earlier.seq, earlier.idx, earlier.epoch))
    assert out.results == ["acked"]
    assert out.changed and out.freed == [0]
    # ...and the newer holder's receipt now finds the message gone
    current = second.granted[0]
    assert step(out.state, T0 + 2_002, Ack(current.seq, current.idx, current.epoch)).results == [
        "gone"
    ]


def test_an_earlier_receipt_changes_visibility_but_cannot_release() -> None:
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, _second = lease(st, T0 + 2_000)
    g = first.granted[0]
    out = step(st, T0 + 2_001, ChangeVisibility(g.seq, g.idx, g.epoch, 0))
    assert out.results == ["ok"] and out.state.segments[0].leases[0] == (2, T0 + 2_001, T0)
    out = step(st, T0 + 2_001, Release(g.seq, g.idx, g.epoch))
    assert out.results == [False] and not out.changed


def test_a_receipt_of_a_released_lease_epoch_cannot_ack() -> None:
    """A lease taken ahead and released never left the node; its epoch is not yet earlier."""
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    st = step(st, T0, Release(g.seq, g.idx, g.epoch)).state
    assert step(st, T0, Ack(g.seq, g.idx, g.epoch)).results == ["stale"]
    assert step(st, T0, Ack(g.seq, g.idx, 0)).results == ["stale"]


def test_a_receipt_from_the_future_epoch_is_stale() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    assert step(st, T0, Ack(g.seq, g.idx, g.epoch + 1)).results == ["stale"]


def test_ack_of_an_expired_lease_not_yet_redelivered_still_acks() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=1_000)
    g = res.granted[0]
    assert step(st, T0 + 60_000, Ack(g.seq, g.idx, g.epoch)).results == ["acked"]


def test_ack_of_an_already_finished_message_is_gone() -> None:
    st, res = lease(adopt(fresh(), 2), T0)
    g = res.granted[0]
    st = step(st, T0, Ack(g.seq, g.idx, g.epoch)).state
    assert 0 in st.segments  # the other message keeps the segment alive
    out = step(st, T0, Ack(g.seq, g.idx, g.epoch))
    assert out.results == ["gone"]
    assert not out.changed


def test_ack_in_a_freed_slot_below_the_cursor_is_gone() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    st = step(st, T0, Ack(g.seq, g.idx, g.epoch)).state
    assert st.segments == {} and st.next_seq == 1
    assert step(st, T0, Ack(0, 0, 1)).results == ["gone"]


def test_ack_in_a_slot_not_yet_adopted_is_stale() -> None:
    st = adopt(fresh(), 1)
    out = step(st, T0, Ack(7, 0, 1))
    assert out.results == ["stale"]
    assert not out.changed


def test_ack_of_a_delayed_message_never_received_is_stale() -> None:
    st = adopt(fresh(), 1, delays=((0, T0 + 10_000),))
    assert step(st, T0, Ack(0, 0, 1)).results == ["stale"]


def test_ack_of_a_visible_message_that_was_never_leased_is_stale() -> None:
    st = adopt(fresh(), 1)
    assert step(st, T0, Ack(0, 0, 1)).results == ["stale"]


# --- change visibility ------------------------------------------------------------------------


def test_change_visibility_extends_an_inflight_lease_without_new_epoch() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=1_000)
    g = res.granted[0]
    out = step(st, T0 + 500, ChangeVisibility(g.seq, g.idx, g.epoch, 10_000))
    assert out.results == ["ok"]
    assert out.changed
    assert out.state.segments[0].leases[0] == (1, T0 + 10_500, T0)
    _, hidden = lease(out.state, T0 + 10_499)
    assert hidden.granted == ()


def test_change_visibility_to_zero_makes_the_message_visible_at_once() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    st = step(st, T0 + 10, ChangeVisibility(g.seq, g.idx, g.epoch, 0)).state
    assert counts(st, T0 + 10) == Counts(visible=1)
    _, again = lease(st, T0 + 10)
    assert again.granted == (Grant(0, 0, 2, T0),)


def test_change_visibility_with_an_earlier_receipt_applies_as_on_sqs() -> None:
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, _ = lease(st, T0 + 1_000)
    g = first.granted[0]
    out = step(st, T0 + 1_001, ChangeVisibility(g.seq, g.idx, g.epoch, 0))
    assert out.results == ["ok"]
    assert out.state.segments[0].leases[0] == (2, T0 + 1_001, T0)


def test_change_visibility_with_a_receipt_never_handed_out_is_stale() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=1_000)
    g = res.granted[0]
    out = step(st, T0 + 1, ChangeVisibility(g.seq, g.idx, g.epoch + 1, 0))
    assert out.results == ["stale"]
    assert not out.changed


def test_change_visibility_after_the_lease_ran_out_applies_from_now() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=1_000)
    g = res.granted[0]
    out = step(st, T0 + 1_000, ChangeVisibility(g.seq, g.idx, g.epoch, 5_000))
    assert out.results == ["ok"]
    assert out.state.segments[0].leases[0] == (1, T0 + 6_000, T0)


def test_change_visibility_of_a_finished_message_is_gone() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    st = step(st, T0, Ack(g.seq, g.idx, g.epoch)).state
    assert step(st, T0, ChangeVisibility(g.seq, g.idx, g.epoch, 5)).results == ["gone"]


# --- dead letters ----------------------------------------------------------------------------


def test_message_past_max_receive_count_is_leased_as_dead_not_granted() -> None:
    st = adopt(fresh(max_receive_count=2), 1)
    epochs = []
    now = T0
    for _ in range(2):
        st, res = lease(st, now, vis=1_000)
        assert res.dead == ()
        epochs.append(res.granted[0].epoch)
        now += 1_000
    assert epochs == [1, 2]
    st, res = lease(st, now, vis=1_000)
    assert res.granted == ()
    assert res.dead == (Grant(0, 0, 3, T0),)
    # leased while it is copied to the dead-letter queue, so nobody else takes it
    _, meanwhile = lease(st, now + 999)
    assert meanwhile.granted == () and meanwhile.dead == ()

    out = step(st, now + 10, MarkDead(0, 0, 3))
    assert out.results == [True]
    assert out.freed == [0]
    assert out.state.segments == {}


def test_a_dead_grant_is_held_whatever_visibility_the_receive_asked_for() -> None:
    st = adopt(fresh(max_receive_count=1), 1)
    st, res = lease(st, T0, vis=0)
    assert len(res.granted) == 1
    st, res = lease(st, T0 + 1, vis=0)
    assert res.dead == (Grant(0, 0, 2, T0),)
    # a long poll retrying at once must not lease (and so copy) the same message again
    _, again = lease(st, T0 + 2, vis=0)
    assert again.granted == () and again.dead == ()
    _, later = lease(st, T0 + 1 + limits.dead_letter_hold_ms, vis=0)
    assert later.dead == (Grant(0, 0, 3, T0),)


def test_mark_dead_with_a_stale_epoch_is_refused() -> None:
    st = adopt(fresh(max_receive_count=1), 1)
    st, _ = lease(st, T0, vis=1_000)
    st, res = lease(st, T0 + 1_000, vis=1_000)
    assert res.dead == (Grant(0, 0, 2, T0),)
    retry_at = T0 + 1_000 + limits.dead_letter_hold_ms  # the move did not finish in time
    st, again = lease(st, retry_at, vis=1_000)
    assert again.dead == (Grant(0, 0, 3, T0),)
    out = step(st, retry_at + 1, MarkDead(0, 0, 2))
    assert out.results == [False]
    assert not out.changed
    assert step(st, retry_at + 1, MarkDead(0, 0, 3)).results == [True]


def test_without_max_receive_count_a_message_is_never_dead() -> None:
    st = adopt(fresh(), 1)
    for i in range(50):
        st, res = lease(st, T0 + i * 1_000, vis=1_000)
        assert res.dead == ()
        assert res.granted[0].epoch == i + 1


def test_dead_and_granted_are_each_bounded_by_max_messages() -> None:
    st = adopt(fresh(max_receive_count=1), 6)
    st, res = lease(st, T0, n=3, vis=1_000)
    assert at(res.granted) == [(0, 0), (0, 1), (0, 2)]
    now = T0 + 1_000
    st, res = lease(st, now, n=2, vis=1_000)
    assert at(res.dead) == [(0, 0), (0, 1)]
    assert at(res.granted) == [(0, 3), (0, 4)]
    st, res = lease(st, now, n=2, vis=1_000)
    assert at(res.dead) == [(0, 2)]
    assert at(res.granted) == [(0, 5)]


# --- release ---------------------------------------------------------------------------------


def test_release_steps_the_epoch_back_and_the_next_lease_reuses_it() -> None:
    st, res = lease(adopt(fresh(), 1), T0 + 5)
    g = res.granted[0]
    out = step(st, T0 + 6, Release(g.seq, g.idx, g.epoch))
    assert out.results == [True]
    assert out.state.segments[0].leases[0] == (0, 0, 0)
    assert counts(out.state, T0 + 6) == Counts(visible=1)
    _, again = lease(out.state, T0 + 7)
    assert again.granted == (Grant(0, 0, 1, T0 + 7),)


def test_release_after_a_real_receive_keeps_first_receive_time() -> None:
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, ahead = lease(st, T0 + 1_000)
    g = ahead.granted[0]
    assert g.epoch == 2
    st = step(st, T0 + 1_001, Release(g.seq, g.idx, g.epoch)).state
    assert st.segments[0].leases[0] == (1, 0, T0)
    # the receipt of the first receive is current again: nobody ever saw epoch 2
    f = first.granted[0]
    assert step(st, T0 + 1_002, Ack(f.seq, f.idx, f.epoch)).results == ["acked"]


def test_a_release_leaves_a_lease_changed_since_with_an_earlier_receipt() -> None:
    """Simulator seed 20272: a node whose clock ran fast took a message ahead (epoch 2) while a
    client still held it (epoch 1); that client changed its visibility to 9 s; the node then
    handed its unused lease back. The change stands: the message stays hidden."""
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, ahead = lease(st, T0 + 1_000, vis=3_500)  # the lease ran out on the fast clock
    f, g = first.granted[0], ahead.granted[0]
    assert g.epoch == 2 and g.until_ms == T0 + 4_500
    st = step(st, T0 + 1_010, ChangeVisibility(f.seq, f.idx, f.epoch, 9_000)).state
    out = step(st, T0 + 1_500, Release(g.seq, g.idx, g.epoch, until_ms=g.until_ms))
    assert out.state.segments[0].leases[0] == (2, T0 + 10_010, T0)
    assert counts(out.state, T0 + 9_000) == Counts(in_flight=1)
    # A release from a node that does not send the lease's end hands it back as it always did.
    legacy = step(st, T0 + 1_500, Release(g.seq, g.idx, g.epoch))
    assert legacy.state.segments[0].leases[0] == (1, 0, T0)


def test_release_with_a_stale_epoch_is_refused() -> None:
    st, res = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, _ = lease(st, T0 + 1_000)
    g = res.granted[0]
    out = step(st, T0 + 1_001, Release(g.seq, g.idx, g.epoch))
    assert out.results == [False]
    assert not out.changed


def test_two_leases_of_one_message_handed_back_together_step_back_once() -> None:
    """Simulator seed 400231: a node held two leases of one message taken ahead (the first ran
    out and the next lease took the message again) and released both in one commit; the older
    release stepped the count back a second time, which the invariants refuse."""
    st, first = lease(adopt(fresh(), 1), T0, vis=1_000)
    st, second = lease(st, T0 + 1_000, vis=1_000)
    older, newer = first.granted[0], second.granted[0]
    assert (older.epoch, newer.epoch) == (1, 2)
    ops = [Release(newer.seq, newer.idx, newer.epoch), Release(older.seq, older.idx, older.epoch)]
    out = step(st, T0 + 1_001, *ops)
    assert out.results == [True, False]
    assert out.state.segments[0].leases[0] == (1, 0, T0)
    check_step(st, out.state)


# --- retention -------------------------------------------------------------------------------


def test_messages_past_retention_expire_and_their_segments_are_freed() -> None:
    st = adopt(fresh(retention_s=60), 2, now_ms=T0)
    st = adopt(st, 1, now_ms=T0 + 30_000)
    st, _ = lease(st, T0 + 1, n=1)
    out = step(st, T0 + 60_000, Lease(0, VIS))  # any commit runs retention first
    assert out.expired == 2
    assert out.changed
    assert out.freed == [0]
    assert out.state.segments.keys() == {1}
    assert counts(out.state, T0 + 60_000) == Counts(visible=1)


def test_nothing_expires_one_ms_inside_retention() -> None:
    st = adopt(fresh(retention_s=60), 1, now_ms=T0)
    out = step(st, T0 + 59_999, Lease(0, VIS))
    assert out.expired == 0
    assert not out.changed
    assert counts(st, T0 + 59_999) == Counts(visible=1)
    assert counts(st, T0 + 60_000) == Counts()  # counts already skip it


@pytest.mark.parametrize("fifo", [False, True])
def test_a_slot_adopted_past_retention_is_never_leased(fifo: bool) -> None:
    """Sent 65 s ago on a 60 s queue and read only now: the commit that adopts it leases
    nothing (as SQS returns nothing), and the next commit finishes it."""
    st = fresh(retention_s=60, fifo=fifo)
    now = T0 + 65_000
    ops: list[Op] = [Adopt(0, "sid-0", 2, T0, (), ("g", "g") if fifo else None)]
    if fifo:
        ops.append(Load(0, "sid-0", 2, T0, ("g", "g")))
    out = step(st, now, *ops, Lease(10, VIS))
    res = out.results[-1]
    assert isinstance(res, LeaseResult) and res.granted == () and res.dead == ()
    assert step(out.state, now + 1, Lease(0, VIS)).expired == 2


def test_fifo_a_receipt_whose_lease_ran_out_cannot_delete() -> None:
    st = fresh(fifo=True)
    st = step(st, T0, Adopt(0, "sid-0", 1, T0, (), ("g",)), Load(0, "sid-0", 1, T0, ("g",))).state
    st, res = lease(st, T0, vis=1_000)
    g = res.granted[0]
    assert step(st, T0 + 1_000, Ack(g.seq, g.idx, g.epoch)).results == ["expired"]
    st, again = lease(st, T0 + 1_000, vis=1_000)
    assert step(st, T0 + 1_500, Ack(g.seq, g.idx, g.epoch)).results == ["expired"]
    newest = again.granted[0]
    assert step(st, T0 + 1_500, Ack(newest.seq, newest.idx, newest.epoch)).results == ["acked"]


def test_expired_message_is_gone_for_its_receipt() -> None:
    st, res = lease(adopt(fresh(retention_s=60), 1, now_ms=T0), T0)
    g = res.granted[0]
    out = step(st, T0 + 61_000, Ack(g.seq, g.idx, g.epoch))
    assert out.results == ["gone"]
    assert out.expired == 1


# --- purge -----------------------------------------------------------------------------------


def test_purge_drops_every_message_and_moves_the_cursor_to_the_head() -> None:
    st = adopt(adopt(fresh(), 2), 3)
    st, _ = lease(st, T0, n=1)
    out = step(st, T0 + 50, Purge(head_seq=5))
    assert out.results == [True]
    assert out.changed
    assert out.state.segments == {}
    assert out.state.next_seq == 5
    assert out.state.purged_ms == T0 + 50
    assert counts(out.state, T0 + 50) == Counts()
    assert not has_visible(out.state, T0 + 50)
    # slots below the new head can no longer be adopted; the head can
    assert step(out.state, T0, Adopt(2, "x", 1, T0)).results == [False]
    assert step(out.state, T0, Adopt(5, "y", 1, T0)).results == [True]


def test_purge_never_moves_the_cursor_back() -> None:
    st = adopt(adopt(adopt(fresh(), 1), 1), 1)
    out = step(st, T0, Purge(head_seq=1))
    assert out.state.next_seq == 3
    assert out.state.segments == {}


def test_purge_frees_every_segment_it_drops() -> None:
    """The engine deletes `freed` slots' objects; a purged segment is as dead as an acked one."""
    st = adopt(adopt(fresh(), 2), 3)
    out = step(st, T0, Purge(head_seq=2))
    assert sorted(out.freed) == [0, 1]


def test_purged_receipts_are_gone() -> None:
    st, res = lease(adopt(fresh(), 1), T0)
    g = res.granted[0]
    st = step(st, T0, Purge(head_seq=1)).state
    assert step(st, T0, Ack(g.seq, g.idx, g.epoch)).results == ["gone"]
    assert step(st, T0, ChangeVisibility(g.seq, g.idx, g.epoch, 0)).results == ["gone"]


# --- freeing, versions, commit tokens ----------------------------------------------------------


def test_fully_done_segments_are_freed_and_partly_done_ones_kept() -> None:
    st = adopt(adopt(fresh(), 2), 1)
    st, res = lease(st, T0)
    by_pos = {(g.seq, g.idx): g for g in res.granted}
    out = step(st, T0, Ack(0, 0, by_pos[0, 0].epoch), Ack(1, 0, by_pos[1, 0].epoch))
    assert out.freed == [1]
    assert out.state.segments.keys() == {0}
    assert out.state.segments[0].done == 0b01
    assert out.state.segments[0].remaining() == 1
    out = step(out.state, T0, Ack(0, 1, by_pos[0, 1].epoch))
    assert out.freed == [0]
    assert out.state.segments == {}


def test_version_grows_by_one_per_write_however_many_ops() -> None:
    st = fresh()
    out = step(st, T0, Adopt(0, "a", 3, T0), Lease(2, VIS), Lease(1, VIS))
    assert out.state.version == st.version + 1
    assert out.state.commits == [out.state.commits[-1]]


@pytest.mark.parametrize(
    "op",
    [
        Adopt(3, "x", 1, T0),
        Lease(10, VIS),
        Ack(0, 0, 9),
        ChangeVisibility(0, 0, 9, 0),
        MarkDead(0, 0, 9),
        Release(0, 0, 9),
    ],
    ids=["adopt-refused", "lease-empty", "ack-stale", "vis-stale", "dead-stale", "release-stale"],
)
def test_an_operation_that_changes_nothing_leaves_version_and_commits_alone(op: Op) -> None:
    st, _ = lease(adopt(fresh(), 1), T0)
    out = apply(st, T0 + 1, [op], "unused-token")
    assert not out.changed
    assert out.state.version == st.version
    assert "unused-token" not in out.state.commits
    assert out.state == st


def test_set_attributes_always_writes_and_records_the_time() -> None:
    st = fresh()
    attrs = QueueAttrs(visibility_timeout_s=5, max_receive_count=3, extra={"tag": "x"})
    out = step(st, T0 + 9, SetAttributes(attrs))
    assert out.results == [True]
    assert out.state.attrs == attrs
    assert out.state.modified_ms == T0 + 9
    assert out.state.version == st.version + 1


def test_commit_token_ring_keeps_only_the_latest_commits() -> None:
    st = fresh()
    total = limits.manifest_recent_commits + 5
    for i in range(total):
        out = apply(st, T0, [SetAttributes(QueueAttrs(delay_s=i % 2))], f"t{i}")
        check_step(st, out.state)
        st = out.state
    assert len(st.commits) == limits.manifest_recent_commits
    assert st.commits[0] == "t5"
    assert st.commits[-1] == f"t{total - 1}"
    assert st.version == 1 + total


def test_successive_manifests_never_repeat_even_when_content_returns() -> None:
    """ABA guard: lease then release restores the leases, but the version still moves on."""
    st = adopt(fresh(), 1)
    st2, res = lease(st, T0)
    g = res.granted[0]
    st3 = step(st2, T0, Release(g.seq, g.idx, g.epoch)).state
    assert st3.segments[0].leases == {0: (0, 0, 0)}
    assert len({st.version, st2.version, st3.version}) == 3


# --- read-only views -------------------------------------------------------------------------


def test_counts_split_visible_inflight_and_delayed() -> None:
    st = adopt(fresh(), 4, delays=((3, T0 + 10_000),))
    st, res = lease(st, T0, n=2, vis=5_000)
    assert counts(st, T0) == Counts(visible=1, in_flight=2, delayed=1)
    assert counts(st, T0 + 5_000) == Counts(visible=3, in_flight=0, delayed=1)
    assert counts(st, T0 + 10_000) == Counts(visible=4)
    g = res.granted[0]
    st = step(st, T0 + 1, Ack(g.seq, g.idx, g.epoch)).state
    assert counts(st, T0 + 1) == Counts(visible=1, in_flight=1, delayed=1)


def test_oldest_visible_skips_leased_delayed_and_finished_segments() -> None:
    st = adopt(fresh(), 1, now_ms=T0)  # segment 0: one message, leased below
    st = adopt(st, 1, now_ms=T0 + 100, delays=((0, T0 + 10_000),))  # segment 1: delayed
    st = adopt(st, 2, now_ms=T0 + 200)  # segment 2: visible
    assert oldest_visible_sent_ms(st, T0 + 300) == T0
    st, res = lease(st, T0 + 300, n=1, vis=5_000)
    assert at(res.granted) == [(0, 0)]
    assert oldest_visible_sent_ms(st, T0 + 300) == T0 + 200
    assert oldest_visible_sent_ms(st, T0 + 10_000) == T0  # lease and delay both ran out
    g = res.granted[0]
    st = step(st, T0 + 400, Ack(g.seq, g.idx, g.epoch)).state
    assert oldest_visible_sent_ms(st, T0 + 10_000) == T0 + 100
    assert oldest_visible_sent_ms(fresh(), T0) is None


def test_counts_add_up() -> None:
    assert Counts(1, 2, 3) + Counts(10, 20, 30) == Counts(11, 22, 33)
    assert Counts() + Counts() == Counts(0, 0, 0)


def test_next_expiry_is_the_soonest_hidden_lease_or_delay() -> None:
    st = adopt(fresh(), 3, delays=((2, T0 + 8_000),))
    assert next_expiry_ms(st, T0) == T0 + 8_000
    st, _ = lease(st, T0, n=1, vis=3_000)
    assert next_expiry_ms(st, T0) == T0 + 3_000
    assert next_expiry_ms(st, T0 + 3_000) == T0 + 8_000  # a lease that ran out hides nothing
    assert next_expiry_ms(st, T0 + 8_000) is None
    assert next_expiry_ms(fresh(), T0) is None


def test_has_visible_only_when_some_message_is_not_hidden() -> None:
    assert not has_visible(fresh(), T0)
    st = adopt(fresh(), 2, delays=((1, T0 + 1_000),))
    assert has_visible(st, T0)
    st, _ = lease(st, T0, n=1, vis=500)
    assert not has_visible(st, T0)
    assert has_visible(st, T0 + 500)
    assert has_visible(st, T0 + 1_000)


# --- seeded fuzz: random operation sequences keep every invariant --------------------------------


def _random_ops(
    rng: random.Random, st: QueueState, held: list[Grant], sid: itertools.count[int]
) -> list[Op]:
    ops: list[Op] = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(
            ["adopt", "adopt", "lease", "lease", "ack", "vis", "dead", "release", "purge", "attrs"]
        )
        g = (
            rng.choice(held)
            if held and rng.random() < 0.9
            else Grant(rng.randint(0, 8), rng.randint(0, 4), rng.randint(1, 4), 0)
        )
        if kind == "adopt":
            seq = st.next_seq if rng.random() < 0.85 else rng.randint(0, st.next_seq + 2)
            n = rng.randint(1, 5)
            delays = tuple((i, T0 + rng.randint(0, 20_000)) for i in range(n) if rng.random() < 0.2)
            ops.append(Adopt(seq, f"s{next(sid)}", n, T0 + rng.randint(0, 10_000), delays))
        elif kind == "lease":
            ops.append(Lease(rng.randint(1, 6), rng.choice([0, 500, 2_000, VIS])))
        elif kind == "ack":
            ops.append(Ack(g.seq, g.idx, g.epoch))
        elif kind == "vis":
            ops.append(ChangeVisibility(g.seq, g.idx, g.epoch, rng.choice([0, 1_000, VIS])))
        elif kind == "dead":
            ops.append(MarkDead(g.seq, g.idx, g.epoch))
        elif kind == "release":
            ops.append(Release(g.seq, g.idx, g.epoch))
        elif kind == "purge" and rng.random() < 0.15:
            ops.append(Purge(st.next_seq + rng.randint(0, 2)))
        elif kind == "attrs":
            ops.append(
                SetAttributes(
                    QueueAttrs(
                        max_receive_count=rng.choice([None, 1, 2, 3]),
                        retention_s=rng.choice([60, limits.retention_s_default]),
                    )
                )
            )
    return ops


def _live(st: QueueState) -> set[tuple[int, int]]:
    return {
        (seq, idx)
        for seq, seg in st.segments.items()
        for idx in range(seg.count)
        if not seg.is_done(idx)
    }


@pytest.mark.parametrize("seed", range(25))
def test_seeded_random_op_sequences_keep_invariants_and_never_regrant_finished(seed: int) -> None:
    rng = random.Random(seed)
    sid = itertools.count()
    st = fresh()
    now = T0
    held: list[Grant] = []
    adopted: set[tuple[int, int]] = set()
    acked: set[tuple[int, int]] = set()
    for n in range(80):
        now += rng.choice([0, 0, 10, 700, 2_500, 40_000])
        ops = _random_ops(rng, st, held, sid)
        finished_before = adopted - _live(st)
        out = apply(st, now, ops, f"seed{seed}.{n}")
        check_state(out.state)
        if out.changed:
            check_step(st, out.state)
        else:
            assert out.state == st
        for op, res in zip(ops, out.results, strict=True):
            if isinstance(op, Lease):
                assert isinstance(res, LeaseResult)
                for g in res.granted + res.dead:
                    assert (g.seq, g.idx) not in finished_before
                    assert (g.seq, g.idx) not in acked
                    held.append(g)
            elif isinstance(op, Ack) and res == "acked":
                acked.add((op.seq, op.idx))
            elif isinstance(op, Release) and res is True:
                held = [g for g in held if (g.seq, g.idx, g.epoch) != (op.seq, op.idx, op.epoch)]
        adopted |= {
            (seq, idx)
            for seq, seg in out.state.segments.items()
            if seq not in st.segments
            for idx in range(seg.count)
        }
        assert not (acked & _live(out.state))
        st = out.state
