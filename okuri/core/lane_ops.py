"""The operations that open, close and drop a queue's lanes (okuri/engine/lanes.py), as pure
changes of a manifest: `AddLane` and `DropLane` on the queue's, `CloseLane` on a lane's."""

from __future__ import annotations

from dataclasses import dataclass

from okuri import limits
from okuri.core.state import QueueState


@dataclass(frozen=True, slots=True)
class AddLane:
    """List lane `lane` in a queue's manifest (okuri/engine/lanes.py), when the manifest is
    still of `incarnation` and holds fewer than `limits.lanes_max`. Result: listed or not."""

    lane: str
    incarnation: str


@dataclass(frozen=True, slots=True)
class DropLane:
    """Unlist lane `lane`, retired (okuri/engine/lanes.py). Result: it was listed."""

    lane: str


@dataclass(frozen=True, slots=True)
class CloseLane:
    """Close a lane to new sends, when it still holds nothing (its cursor at `end`, no message
    unfinished): the first step of retiring it. Result: closed (now or before)."""

    end: int


def apply_lane_op(
    st: QueueState, now_ms: int, op: AddLane | DropLane | CloseLane
) -> tuple[bool, bool]:
    """Apply one lane operation to `st`: (its result, whether `st` changed)."""
    match op:
        case AddLane():
            if op.lane in st.lanes:
                return True, False
            if op.incarnation != st.incarnation or len(st.lanes) >= limits.lanes_max:
                return False, False
            st.lanes.append(op.lane)
            return True, True
        case DropLane():
            if op.lane not in st.lanes:
                return False, False
            st.lanes.remove(op.lane)
            return True, True
        case CloseLane():
            if st.closed_ms:
                return True, False
            if st.segments or st.next_seq != op.end or st.lanes:
                return False, False  # something came, or this is no lane
            st.closed_ms = now_ms
            return True, True
