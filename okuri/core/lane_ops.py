"""The operations that open, close and drop a queue's lanes (okuri/engine/lanes.py), as pure
changes of a manifest: `AddLane` and `DropLane` on the queue's, `CloseLane` on a lane's.

A high-throughput FIFO queue's lanes are its partitions (okuri/engine/partitions.py), named
`p{k}x{id}`: at most one is listed for each partition `k`, whichever nodes open it at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from okuri import limits
from okuri.core import keys
from okuri.core.state import QueueState

_PARTITION = re.compile(r"p(\d{1,2})x[0-9a-f]+")


def partition_lane(k: int, ident: str) -> str:
    """The name of a lane opened for partition `k` (`ident`: hex, new for each opening)."""
    return f"p{k}x{ident}"


def lane_partition(lane: str) -> int | None:
    """The partition a lane was opened for; None for a lane of a standard queue."""
    m = _PARTITION.fullmatch(lane)
    return int(m.group(1)) if m else None


def partition_lanes(lanes: list[str]) -> dict[int, str]:
    """The lane listed for each partition."""
    return {k: lane for lane in lanes if (k := lane_partition(lane)) is not None}


def partition_of_queue(name: str) -> int | None:
    """The partition a queue or lane (by its name, `keys.lane_name`) holds; None for a queue's
    own log or a standard queue's lane."""
    _, sep, lane = name.partition(keys.LANE_SEP)
    return lane_partition(lane) if sep else None


@dataclass(frozen=True, slots=True)
class AddLane:
    """List lane `lane` in a queue's manifest (okuri/engine/lanes.py), when the manifest is
    still of `incarnation`, holds fewer than `limits.lanes_max` and, for a partition's lane,
    lists none for that partition. Result: listed or not."""

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
            k = lane_partition(op.lane)
            if k is not None and k in partition_lanes(st.lanes):
                return False, False  # another node listed this partition's lane first
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
