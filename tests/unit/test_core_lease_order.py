"""A standard queue's leases take the messages waiting longest: a retried or run-out message
rejoins at the tail, behind everything sent before it became visible again."""

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


def test_a_run_out_lease_puts_the_message_behind_those_sent_before_it_showed_again() -> None:
    st = adopt(fresh(), 2, T0)  # slot 0: messages sent at T0
    st, res = lease(st, T0 + 10, 1, vis_ms=1_000)
    assert at(res.granted) == [(0, 0)]
    st = adopt(st, 2, T0 + 500)  # slot 1: sent while (0, 0) was leased
    # (0, 0) showed again at T0 + 1010: behind (0, 1) and slot 1, sent before that.
    st, res = lease(st, T0 + 2_000, 10)
    assert at(res.granted) == [(0, 1), (1, 0), (1, 1), (0, 0)]


def test_a_poison_message_retried_at_once_never_takes_the_front_place() -> None:
    st = adopt(fresh(), 1, T0)
    st = adopt(st, 3, T0 + 1)
    now = T0 + 100
    st, res = lease(st, now, 1)
    poison = res.granted[0]
    assert (poison.seq, poison.idx) == (0, 0)
    for i in range(3):  # it fails each time and is retried now; the others go first
        now += 10
        st = step(st, now, ChangeVisibility(poison.seq, poison.idx, poison.epoch + i, 0))
        st, res = lease(st, now, 1)
        assert at(res.granted) == [(1, i)]
    now += 10
    st, res = lease(st, now, 1)
    assert at(res.granted) == [(0, 0)]


def test_a_retry_at_a_time_waits_behind_what_was_sent_before_that_time() -> None:
    st = adopt(fresh(), 1, T0)
    st, res = lease(st, T0, 1)
    g = res.granted[0]
    st = step(st, T0 + 10, ChangeVisibility(g.seq, g.idx, g.epoch, 5_000))  # visible at T0+5010
    st = adopt(st, 1, T0 + 4_000)
    st = adopt(st, 1, T0 + 6_000)
    st, res = lease(st, T0 + 7_000, 10)
    assert at(res.granted) == [(1, 0), (0, 0), (2, 0)]


def test_a_delayed_message_waits_from_the_end_of_its_delay() -> None:
    st = adopt(fresh(), 1, T0, delays=((0, T0 + 3_000),))
    st = adopt(st, 1, T0 + 1_000)
    st, res = lease(st, T0 + 4_000, 10)
    assert at(res.granted) == [(1, 0), (0, 0)]


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
