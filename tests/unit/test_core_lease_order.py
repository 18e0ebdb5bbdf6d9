"""A standard queue's leases take messages in rough send order, as SQS answers: a message whose
lease ran out, or that was given back, keeps its send's place ahead of later sends; a delayed
message never received stands in line from the end of its delay."""

from __future__ import annotations

from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import Adopt, ChangeVisibility, Grant, Lease, LeaseResult, Op, apply
from okuri.core.views import counts

T0 = 1_700_000_000_000


def fresh(**attrs: object) -> QueueState:
    return QueueState("q", "inc-1", T0, QueueAttrs(**attrs), modified_ms=T0)  # type: ignore[arg-type]


def step(st: QueueState, now_ms: int, *ops: Op) -> QueueState:
    return apply(st, now_ms, ops, "tok").state


def adopt(
    st: QueueState, count: int, now_ms: int, delays: tuple[tuple[int, int], ...] = ()
) -> QueueState:
    return step(st, now_ms, Adopt(st.next_seq, f"sid-{st.next_seq}", count, now_ms, delays))


def lease(
    st: QueueState, now_ms: int, n: int, vis_ms: int = 30_000
) -> tuple[QueueState, LeaseResult]:
    out = apply(st, now_ms, [Lease(n, vis_ms)], "tok")
    res = out.results[0]
    assert isinstance(res, LeaseResult)
    return out.state, res


def at(grants: tuple[Grant, ...]) -> list[tuple[int, int]]:
    return [(g.seq, g.idx) for g in grants]


def test_a_run_out_lease_keeps_the_messages_place_ahead_of_later_sends() -> None:
    """Recorded against SQS: send A, receive it for 1 s, send B; once A shows again a receive
    of one message returns A."""
    st = adopt(fresh(), 1, T0)  # slot 0: A
    st, res = lease(st, T0 + 10, 1, vis_ms=1_000)
    assert at(res.granted) == [(0, 0)]
    st = adopt(st, 1, T0 + 500)  # slot 1: B, sent while A was leased
    st, res = lease(st, T0 + 2_000, 1)
    assert at(res.granted) == [(0, 0)]
    st, res = lease(st, T0 + 2_000, 1)
    assert at(res.granted) == [(1, 0)]


def test_messages_shown_again_go_back_to_send_order_among_the_rest() -> None:
    st = adopt(fresh(), 2, T0)  # slot 0: messages sent at T0
    st, res = lease(st, T0 + 10, 2, vis_ms=1_000)
    assert at(res.granted) == [(0, 0), (0, 1)]
    st = adopt(st, 2, T0 + 500)  # slot 1: sent while slot 0 was leased
    st, res = lease(st, T0 + 600, 1, vis_ms=100)  # (1, 0) leased and run out too
    assert at(res.granted) == [(1, 0)]
    st, res = lease(st, T0 + 2_000, 10)
    assert at(res.granted) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_a_message_given_back_at_once_goes_out_again_first() -> None:
    """A consumer that gives a message back (visibility 0) gets it again before later sends; a
    message that keeps failing leaves by its receive count (maxReceiveCount), not by going to
    the back of the line."""
    st = adopt(fresh(), 1, T0)
    st = adopt(st, 3, T0 + 1)
    now = T0 + 100
    st, res = lease(st, now, 1)
    first = res.granted[0]
    assert (first.seq, first.idx) == (0, 0)
    for i in range(3):
        now += 10
        st = step(st, now, ChangeVisibility(first.seq, first.idx, first.epoch + i, 0))
        st, res = lease(st, now, 1)
        assert at(res.granted) == [(0, 0)]
        assert res.granted[0].epoch == first.epoch + i + 1


def test_a_message_past_its_receive_count_is_due_for_the_dead_letter_queue_not_leased() -> None:
    st = adopt(fresh(max_receive_count=2), 1, T0)
    st = adopt(st, 1, T0 + 1)
    now = T0 + 100
    for epoch in (1, 2):
        st, res = lease(st, now, 1)
        assert at(res.granted) == [(0, 0)] and res.granted[0].epoch == epoch
        st = step(st, now, ChangeVisibility(0, 0, epoch, 0))
    st, res = lease(st, now, 1)
    assert at(res.dead) == [(0, 0)]
    assert at(res.granted) == [(1, 0)]


def test_a_retry_at_a_time_goes_out_by_its_send_once_due() -> None:
    st = adopt(fresh(), 1, T0)
    st, res = lease(st, T0, 1)
    g = res.granted[0]
    st = step(st, T0 + 10, ChangeVisibility(g.seq, g.idx, g.epoch, 5_000))  # visible at T0+5010
    st = adopt(st, 1, T0 + 4_000)
    st, res = lease(st, T0 + 4_500, 10)  # not yet due: only the later send
    assert at(res.granted) == [(1, 0)]
    st = adopt(st, 1, T0 + 6_000)
    st, res = lease(st, T0 + 7_000, 10)
    assert at(res.granted) == [(0, 0), (2, 0)]


def test_a_delayed_message_waits_from_the_end_of_its_delay() -> None:
    st = adopt(fresh(), 1, T0, delays=((0, T0 + 3_000),))
    st = adopt(st, 1, T0 + 1_000)
    st, res = lease(st, T0 + 4_000, 10)
    assert at(res.granted) == [(1, 0), (0, 0)]


def test_a_delayed_message_received_and_run_out_goes_back_to_its_send() -> None:
    st = adopt(fresh(), 1, T0, delays=((0, T0 + 3_000),))
    st, res = lease(st, T0 + 3_000, 1, vis_ms=1_000)
    assert at(res.granted) == [(0, 0)]
    st = adopt(st, 1, T0 + 3_500)
    st, res = lease(st, T0 + 5_000, 10)
    assert at(res.granted) == [(0, 0), (1, 0)]


def test_a_run_out_message_deep_in_the_line_is_found_behind_many_in_flight() -> None:
    """The scan keeps walking past segments in flight (nothing visible to keep) and stops one
    segment past the last one it took."""
    st = fresh()
    for i in range(20):
        st = adopt(st, 10, T0 + i)
    st, res = lease(st, T0 + 100, 100, vis_ms=1_000)
    assert len(res.granted) == 100
    st, res = lease(st, T0 + 200, 50, vis_ms=60_000)  # slots 10..14, held long
    assert at(res.granted)[0] == (10, 0)
    st = adopt(st, 10, T0 + 300)  # slot 20
    st, res = lease(st, T0 + 2_000, 15)
    assert at(res.granted) == [(0, i) for i in range(10)] + [(1, i) for i in range(5)]


def test_without_retries_leases_take_slot_order_and_stop_scanning_early() -> None:
    st = fresh()
    for i in range(50):
        st = adopt(st, 10, T0 + i)
    st, res = lease(st, T0 + 100, 15)
    assert at(res.granted) == [(0, i) for i in range(10)] + [(1, i) for i in range(5)]
    st, res = lease(st, T0 + 100, 10)
    assert at(res.granted) == [(1, i) for i in range(5, 10)] + [(2, i) for i in range(5)]
    assert counts(st, T0 + 100).in_flight == 25


def test_a_lease_takes_up_to_a_hundred_in_one_step() -> None:
    st = fresh()
    for i in range(12):
        st = adopt(st, 10, T0 + i)
    st, res = lease(st, T0 + 100, 100)
    assert len(res.granted) == 100
    assert at(res.granted)[-1] == (9, 9)
