"""The segments a leader sends back with a lease another node forwarded, and how that node
takes them.

A lease forwarded to a lane's leader (okuri/engine/peering.py) takes messages of segments the
leader, the lane's producer, wrote and holds in memory, where the asking node has most often
never read them: sent with the answer, they spare it a GET per receive from another node's lane.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from okuri import limits
from okuri.core.message import SegmentCorrupt, decode_segment, encode_segment
from okuri.core.state import QueueState
from okuri.engine.slot_log import SlotLog

log = logging.getLogger("okuri.engine")


def segments_of(slots: SlotLog, st: QueueState, seqs: Sequence[int]) -> list[tuple[int, bytes]]:
    """Those of slots `seqs` held here as `st` adopted them, encoded, up to
    `limits.peer_segments_bytes_max` in all."""
    out: list[tuple[int, bytes]] = []
    room = limits.peer_segments_bytes_max
    for seq in seqs:
        meta = st.segments.get(seq)
        seg = slots.cache.get((slots.name, st.incarnation, seq))
        if meta is None or seg is None or seg.sid != meta.sid:
            continue
        data = encode_segment(seg)
        if len(data) > room:
            break
        room -= len(data)
        out.append((seq, data))
    return out


def take_from_leader(slots: SlotLog, st: QueueState, segments: Sequence[tuple[int, bytes]]) -> None:
    """The leader's segments as if read here: `SlotLog.segment_for` checks each against the
    manifest before any of its messages goes out, and reads again one that differs."""
    for seq, data in segments:
        try:
            slots.cache.put((slots.name, st.incarnation, seq), decode_segment(data))
        except SegmentCorrupt:
            log.warning("slot %d of %s: a peer's segment does not decode", seq, slots.name)
