"""Read-only views of a manifest: counts as SQS reports them, a message's lease, the next
moment a hidden message shows. Pure, like the transitions that change the manifest."""

from __future__ import annotations

from dataclasses import dataclass

from okuri import limits
from okuri.core.lease_order import fifo_group_runs
from okuri.core.state import Lease as LeaseTuple
from okuri.core.state import QueueAttrs, QueueState


@dataclass(frozen=True, slots=True)
class QueueView:
    """What a surface may know of a queue: its attributes and when it was made and last
    changed. The manifest itself (segments, leases, commit tokens) stays in the engine, so
    a surface cannot come to depend on how the engine keeps its state."""

    name: str
    attrs: QueueAttrs
    created_ms: int
    modified_ms: int  # LastModifiedTimestamp: the creation time until attributes change

    @classmethod
    def of(cls, st: QueueState) -> QueueView:
        return cls(st.name, st.attrs, st.created_ms, st.modified_ms or st.created_ms)


@dataclass(frozen=True, slots=True)
class Counts:
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(
            self.visible + other.visible,
            self.in_flight + other.in_flight,
            self.delayed + other.delayed,
        )


def current_lease(st: QueueState, seq: int, idx: int) -> LeaseTuple | None:
    """The lease of an unfinished message (receives, until_ms, first_receive_ms), if any."""
    seg = st.segments.get(seq)
    if seg is None or idx >= seg.count or seg.is_done(idx):
        return None
    return seg.leases.get(idx)


def counts(st: QueueState, now_ms: int) -> Counts:
    """Approximate counts over adopted slots, as SQS reports them."""
    cutoff = st.retention_cutoff(now_ms)
    visible = in_flight = delayed = 0
    for seg in st.segments.values():
        if seg.sent_ms <= cutoff:
            continue
        remaining = seg.remaining()
        for receives, until_ms, _ in seg.leases.values():
            if until_ms > now_ms:
                remaining -= 1
                if receives:
                    in_flight += 1
                else:
                    delayed += 1
        visible += remaining
    return Counts(visible, in_flight, delayed)


def oldest_visible_sent_ms(st: QueueState, now_ms: int) -> int | None:
    """When the oldest visible message was sent (None: none is visible), to the resolution of a
    segment: its messages share one send time, within a linger. As SQS's
    ApproximateAgeOfOldestMessage, a message received and visible again counts from its send."""
    cutoff = st.retention_cutoff(now_ms)
    oldest: int | None = None
    for seg in st.segments.values():
        if seg.sent_ms <= cutoff or (oldest is not None and seg.sent_ms >= oldest):
            continue
        hidden = sum(1 for _, until_ms, _ in seg.leases.values() if until_ms > now_ms)
        if seg.remaining() > hidden:
            oldest = seg.sent_ms
    return oldest


def next_expiry_ms(st: QueueState, now_ms: int) -> int | None:
    """When the earliest lease or delay that hides a message runs out, if any does."""
    soonest: int | None = None
    for seg in st.segments.values():
        for _, until_ms, _ in seg.leases.values():
            if until_ms > now_ms and (soonest is None or until_ms < soonest):
                soonest = until_ms
    return soonest


def has_visible(st: QueueState, now_ms: int) -> bool:
    for seg in st.segments.values():
        if seg.remaining() > sum(1 for lease in seg.leases.values() if lease[1] > now_ms):
            return True
    return False


def has_leasable(st: QueueState, now_ms: int) -> bool:
    """Would a lease find a message now? On a FIFO queue, only in a group none of whose
    messages is hidden: a visible message behind one in flight waits."""
    if not st.attrs.fifo:
        return has_visible(st, now_ms)
    return bool(fifo_group_runs(st, now_ms, set())[0])


def adoption_room(st: QueueState) -> int:
    """How many slots one commit may adopt: what the manifest has room for, at most a probe's
    worth."""
    return min(limits.manifest_segments_max - len(st.segments), limits.probe_segments_max)
