"""Admission (okuri.engine.admission): the node's in-flight bounds, and how each surface answers
a refusal. Pure bookkeeping, driven directly; tests/surface/test_overload.py drives a real
server past its bounds."""

from __future__ import annotations

import pytest

from okuri import limits
from okuri.engine import Admission, Bounds, Refused, Ticket
from okuri.engine.admission import BOUNDS
from okuri.errors import Overloaded
from okuri.native.errors import from_okuri as native_answer
from okuri.server.health import admission_lines
from okuri.sqs.errors import from_okuri as sqs_answer

BODY = limits.request_bytes_max


def small(requests: int = 4, long_polls: int = 2, body_bytes: int = 100) -> Admission:
    return Admission(Bounds(requests, body_bytes * 3, long_polls, body_bytes), retry_after_s=2)


def admitted(got: Ticket | Refused) -> Ticket:
    assert isinstance(got, Ticket), got
    return got


def refused(got: Ticket | Refused) -> Refused:
    assert isinstance(got, Refused), got
    return got


def test_requests_past_the_bound_are_refused_until_one_finishes() -> None:
    admission = small()
    gate = admission.gate("sqs")
    held = [admitted(gate.try_enter("request", 0)) for _ in range(4)]
    no = refused(gate.try_enter("request", 0))
    assert (no.surface, no.kind, no.bound, no.retry_after_s) == ("sqs", "request", "requests", 2)
    held.pop().release()
    admitted(gate.try_enter("request", 0))
    assert admission.snapshot().in_flight["requests"] == 4


def test_body_bytes_count_as_declared_and_a_body_of_unknown_length_as_the_largest() -> None:
    admission = small(requests=10)  # bytes: three bodies of 100
    gate = admission.gate("native")
    first, second, _ = (admitted(gate.try_enter("request", 90)) for _ in range(3))
    assert refused(gate.try_enter("request", 40)).bound == "bytes"
    admitted(gate.try_enter("request", 30))  # exactly at the bound still fits
    first.release()
    assert refused(gate.try_enter("request", None)).bound == "bytes"  # counts a whole body
    second.release()
    admitted(gate.try_enter("request", None))
    assert admission.snapshot().in_flight["bytes"] == 90 + 30 + 100


def test_a_body_over_the_largest_request_counts_as_the_largest_so_it_is_never_throttled() -> None:
    """Its surface answers it "too large"; a throttle would have clients retry it forever."""
    admission = small(requests=10)
    gate = admission.gate("sqs")
    for _ in range(3):
        admitted(gate.try_enter("request", 10 * BODY))
    assert admission.snapshot().in_flight["bytes"] == 300
    admission = small(requests=10)
    admitted(admission.gate("sqs").try_enter("request", 10 * BODY))


def test_long_polls_have_their_own_bound_hold_no_bytes_and_leave_requests_alone() -> None:
    admission = small(requests=4, long_polls=2)
    gate = admission.gate("sqs")
    polls = [admitted(gate.try_enter("long_poll")) for _ in range(2)]
    no = refused(gate.try_enter("long_poll"))
    assert (no.kind, no.bound) == ("long_poll", "long_polls")
    assert admission.snapshot().in_flight == {
        "requests": 0,
        "bytes": 0,
        "long_polls": 2,
        "unverified_bytes": 0,
        "sender_bytes": 0,
    }
    admitted(gate.try_enter("request", 10))
    polls[0].release()
    admitted(gate.try_enter("long_poll"))


def test_a_ticket_gives_back_once_however_often_it_is_released() -> None:
    admission = small()
    gate = admission.gate("sqs")
    with admitted(gate.try_enter("request", 40)) as ticket:
        assert admission.snapshot().in_flight["bytes"] == 40
    ticket.release()
    ticket.release()
    assert set(admission.snapshot().in_flight.values()) == {0}


def test_enter_raises_a_retryable_overloaded_naming_the_bound_and_when_to_retry() -> None:
    gate = small(long_polls=1).gate("native")
    gate.enter("long_poll")
    with pytest.raises(Overloaded) as caught:
        gate.enter("long_poll")
    err = caught.value
    assert err.retryable
    assert (err.bound, err.retry_after_s) == ("long_polls", 2)
    assert "long polls" in str(err)


def test_refusals_are_counted_by_surface_and_bound_from_zero() -> None:
    admission = small(requests=2, long_polls=1)
    sqs, native = admission.gate("sqs"), admission.gate("native")
    assert set(admission.snapshot().shed.values()) == {0}
    assert len(admission.snapshot().shed) == 2 * len(BOUNDS)
    sqs.try_enter("long_poll")
    native.try_enter("long_poll")
    native.try_enter("long_poll")
    sqs.try_enter("request", 0)
    sqs.try_enter("request", 0)
    native.try_enter("request", 0)
    shed = admission.snapshot().shed
    assert shed[("native", "long_polls")] == 2
    assert shed[("native", "requests")] == 1
    assert shed[("sqs", "long_polls")] == 0
    assert shed[("sqs", "requests")] == 0


@pytest.mark.parametrize(
    ("requests", "bytes_max", "long_polls", "complaint"),
    [
        (1, BODY, 1, "at least 2"),
        (4, BODY, 4, "below the request bound"),
        (4, BODY, 0, "from 1"),
        (4, BODY - 1, 2, "at least one body"),
    ],
)
def test_bounds_that_cannot_work_are_refused(
    requests: int, bytes_max: int, long_polls: int, complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        Bounds(requests, bytes_max, long_polls)


def test_the_defaults_leave_room_for_the_largest_benchmark_many_times_over() -> None:
    """`python -m bench sqs` at its largest on one node: 256 producers and 256 consumers, one
    request each at a time (so 512 requests, 256 of them long polls)."""
    b = Bounds()
    assert b.requests_max >= 4 * 512
    assert b.long_polls_max >= 4 * 256
    assert b.bytes_max >= 64 * limits.request_bytes_max


def test_sqs_answers_a_refusal_as_a_throttle_that_sdks_retry() -> None:
    err = sqs_answer(Overloaded("at its bound", "requests", 1))
    assert (err.code, err.status, err.sender_fault) == ("RequestThrottled", 429, True)
    assert err.query_error == "RequestThrottled;Sender"
    assert err.body()["__type"] == "com.amazonaws.sqs#RequestThrottled"


def test_native_answers_a_refusal_429_with_retry_after() -> None:
    err = native_answer(Overloaded("at its bound", "long_polls", 3))
    assert (err.status, err.code) == (429, "overloaded")
    assert err.headers() == {"Retry-After": "3"}
    assert err.body()["error"]["code"] == "overloaded"


def test_metrics_show_what_is_held_the_bounds_and_what_was_shed() -> None:
    admission = small(requests=3, long_polls=1)
    gate = admission.gate("sqs")
    gate.try_enter("request", 7)
    gate.try_enter("long_poll")
    gate.try_enter("long_poll")
    lines = admission_lines(admission)
    assert 'okuri_inflight{kind="requests"} 1' in lines
    assert 'okuri_inflight{kind="bytes"} 7' in lines
    assert 'okuri_inflight{kind="long_polls"} 1' in lines
    assert 'okuri_inflight_max{kind="requests"} 3' in lines
    assert 'okuri_shed_requests_total{surface="sqs",kind="long_polls"} 1' in lines
    assert 'okuri_shed_requests_total{surface="sqs",kind="bytes"} 0' in lines
    assert "# TYPE okuri_shed_requests_total counter" in lines
