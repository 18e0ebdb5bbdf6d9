"""The pure rules of queue expiry (okuri/core/expiry.py) and how `apply` records a use."""

from __future__ import annotations

import pytest

from okuri import limits
from okuri.core.expiry import (
    expires_at_ms,
    is_expired,
    tombstone,
    touch_due,
    validate_expires_s,
)
from okuri.core.invariants import InvariantViolation, check_step
from okuri.core.state import QueueAttrs, QueueState, decode_state, encode_state
from okuri.core.transitions import Ack, Lease, SetAttributes, Touch, apply
from okuri.errors import InvalidArgument

T0 = 1_000_000


def queue(expires_s: int | None = 60) -> QueueState:
    return QueueState("q", "inc", T0, QueueAttrs(expires_s=expires_s), modified_ms=T0)


def test_a_queue_without_expiry_never_expires_and_never_records_use() -> None:
    st = queue(None)
    assert expires_at_ms(st) is None
    assert not is_expired(st, T0 + 10**12)
    assert not touch_due(st, T0 + 10**12)
    assert not apply(st, T0 + 10**9, [Lease(1, 1000)], "t").changed


def test_expiry_counts_from_creation_then_from_the_recorded_use() -> None:
    st = queue(60)
    assert not is_expired(st, T0 + 59_999)
    assert is_expired(st, T0 + 60_000)
    st.used_ms = T0 + 30_000
    assert not is_expired(st, T0 + 89_999)
    assert is_expired(st, T0 + 90_000)


def test_a_use_is_due_only_once_the_recorded_one_is_a_quarter_of_the_expiry_old() -> None:
    st = queue(60)
    assert not touch_due(st, T0 + 14_999)
    assert touch_due(st, T0 + 15_000)


def test_a_lease_on_an_empty_queue_writes_its_use_only_when_due() -> None:
    st = queue(60)
    assert not apply(st, T0 + 10_000, [Lease(1, 1000)], "t").changed
    out = apply(st, T0 + 20_000, [Lease(1, 1000)], "t")
    assert out.changed and out.state.used_ms == T0 + 20_000
    assert out.state.version == st.version + 1


def test_touch_records_a_use_but_other_operations_do_not() -> None:
    st = queue(60)
    assert apply(st, T0 + 20_000, [Touch()], "t").state.used_ms == T0 + 20_000
    assert not apply(st, T0 + 20_000, [Ack(0, 0, 1)], "t").changed


def test_a_use_never_moves_back_on_a_slow_clock() -> None:
    st = queue(60)
    st.used_ms = T0 + 50_000
    out = apply(st, T0 + 70_000, [SetAttributes(QueueAttrs(expires_s=60))], "t")
    assert out.state.used_ms == T0 + 70_000
    slow = apply(out.state, T0 + 1, [SetAttributes(QueueAttrs(expires_s=60))], "t")
    assert slow.state.used_ms == T0 + 70_000


def test_setting_an_expiry_on_an_old_queue_counts_from_then() -> None:
    st = queue(None)
    out = apply(st, T0 + 10**9, [SetAttributes(QueueAttrs(expires_s=60))], "t")
    assert not is_expired(out.state, T0 + 10**9 + 59_000)


def test_expiry_use_and_tombstone_survive_the_manifest_codec() -> None:
    st = queue(3600)
    st.used_ms = T0 + 5
    back = decode_state(encode_state(st))
    assert (back.attrs.expires_s, back.used_ms, back.gone_ms) == (3600, T0 + 5, 0)
    gone = decode_state(encode_state(tombstone(st, T0 + 9)))
    assert gone.gone_ms == T0 + 9 and gone.version == st.version + 1
    assert decode_state(encode_state(queue(None))).attrs.expires_s is None


def test_nothing_follows_a_tombstone_and_use_never_goes_back() -> None:
    st = queue(60)
    gone = tombstone(st, T0 + 61_000)
    after = gone.copy()
    after.version += 1
    with pytest.raises(InvariantViolation, match="expired_stays_expired"):
        check_step(gone, after)
    st.used_ms = T0 + 10
    back = st.copy()
    back.version += 1
    back.used_ms = T0
    with pytest.raises(InvariantViolation, match="use_monotonic"):
        check_step(st, back)


@pytest.mark.parametrize("bad", [0, -1, limits.expires_s_max + 1, True, "60", 1.5])
def test_an_expiry_out_of_range_or_of_the_wrong_type_is_refused(bad: object) -> None:
    with pytest.raises(InvalidArgument):
        validate_expires_s(bad)


def test_the_bounds_themselves_are_accepted() -> None:
    assert validate_expires_s(1) == 1
    assert validate_expires_s(limits.expires_s_max) == limits.expires_s_max
    assert validate_expires_s(None) is None
