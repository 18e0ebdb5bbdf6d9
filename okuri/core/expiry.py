"""Queue expiry's pure rules: when a use must be written down, and when a queue has expired.

A queue with `expires_s` (RabbitMQ's x-expires) that nobody uses for that long is deleted with
its items. "Use" is a lease (also one that waits on an empty queue), a get_queue, a
create_queue that finds the queue, or an attribute update; producing is not. The manifest
records the last use in `used_ms`, but only once the recorded one is older than a quarter of
`expires_s` (`limits.expiry_touch_fraction`): a queue used all the time costs at most four
extra manifest writes per expiry period, and usually none, since its leases commit anyway.

The recorded use therefore lags the real one by less than a quarter of `expires_s`: a queue is
judged expired between 3/4 and 1 times `expires_s` after its last use, and deleted when some
node next looks (okuri/engine/expiry.py). Nothing here reads a clock: `now_ms` is the caller's.
"""

from __future__ import annotations

from okuri import limits
from okuri.core.state import QueueState
from okuri.errors import InvalidArgument


def validate_expires_s(value: object, field: str = "expires_s") -> int | None:
    """`value` as an expiry in seconds (None: never), or InvalidArgument naming `field`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"{field} must be a whole number of seconds or null", field)
    if not limits.expires_s_min <= value <= limits.expires_s_max:
        raise InvalidArgument(
            f"{field} must be {limits.expires_s_min} to {limits.expires_s_max} seconds", field
        )
    return value


def last_used_ms(st: QueueState) -> int:
    """The last use the manifest records (its creation if none)."""
    return max(st.used_ms, st.created_ms)


def expires_at_ms(st: QueueState) -> int | None:
    """When the queue expires unless it is used before (None: never)."""
    if st.attrs.expires_s is None:
        return None
    return last_used_ms(st) + st.attrs.expires_s * 1000


def is_expired(st: QueueState, now_ms: int) -> bool:
    at = expires_at_ms(st)
    return at is not None and now_ms >= at


def touch_interval_ms(expires_s: int) -> int:
    """How old the recorded use may grow before a use writes it again."""
    return max(1, expires_s * 1000 // limits.expiry_touch_fraction)


def touch_due(st: QueueState, now_ms: int) -> bool:
    """Must a use at `now_ms` be written to the manifest? Only for a queue that expires, and
    only once the recorded use is a quarter of its expiry old."""
    if st.attrs.expires_s is None:
        return False
    return now_ms - last_used_ms(st) >= touch_interval_ms(st.attrs.expires_s)


def touched(st: QueueState, now_ms: int) -> None:
    """Record a use at `now_ms` in `st` (in place). Never moves back: a node whose clock is
    behind cannot make the queue look less recently used than another node recorded it."""
    st.used_ms = max(st.used_ms, now_ms)


def tombstone(st: QueueState, now_ms: int) -> QueueState:
    """The manifest that marks `st` expired: written by compare-and-swap over `st` (so a use
    recorded since makes it fail), read by every node as "no such queue", then deleted."""
    gone = st.copy()
    gone.version += 1
    gone.gone_ms = max(now_ms, 1)
    gone.segments.clear()
    gone.lead = None
    return gone
