"""Browsing a queue without leasing it: a page of its messages, oldest first, each with how it
stands (visible, in flight until T, delayed until T).

A page reads the manifest fresh and the segment objects through the slot log's reader (and
its cache), and commits nothing: no lease, no receive count, no expiry "last used" mark moves.
It shows adopted messages from the manifest, then messages in slots not adopted yet (sent
and never leased), as `Queue.counts` does. Each page reads at most `browse_segments_max` slots,
so paging through a long run of finished slots costs bounded work per call. Not shown:
items scheduled beyond the longest delay (they wait beside the queue, okuri/engine/schedule.py).
"""

from __future__ import annotations

from itertools import count

from okuri import limits
from okuri.core.browse import BrowsePage, MessageView, parse_position, position, view
from okuri.core.message import Segment
from okuri.core.state import QueueState
from okuri.engine.queue import Queue


async def browse(rt: Queue, start: tuple[int, int], limit: int) -> BrowsePage:
    """Up to `limit` messages of queue `rt` from slot and index `start` on."""
    st = await rt.refresh()
    now_ms = rt.clock.now_ms()
    page = _Page(st, now_ms, start, limit, rt.receiver.held_places(st, now_ms))
    page.partition = rt.slots.partition
    read = 0
    for seq in sorted(s for s in st.segments if s >= start[0]):
        meta = st.segments[seq]
        if meta.remaining() == 0:
            continue
        if read == limits.browse_segments_max:
            return page.stop(seq, 0)
        read += 1
        seg = await rt.slots.segment_for(st, seq)
        if seg is not None and (stop := page.add(seq, seg, adopted=True)) is not None:
            return stop
    for seq in count(max(st.loaded_upto(), start[0])):
        if read == limits.browse_segments_max:
            return page.stop(seq, 0)
        read += 1
        seg = await rt.slots.read_slot(st.incarnation, seq)
        if seg is None:
            if seq < st.next_seq:
                continue  # adopted and since freed (a purge, a FIFO window sliding on)
            return page.stop(None, 0)
        if (stop := page.add(seq, seg, adopted=False)) is not None:
            return stop
    raise AssertionError("unreachable")  # pragma: no cover


class _Page:
    """The messages gathered so far, and the rules for which to show."""

    def __init__(
        self,
        st: QueueState,
        now_ms: int,
        start: tuple[int, int],
        limit: int,
        held: set[tuple[int, int]],
    ) -> None:
        self.st = st
        self.now_ms = now_ms
        self.start = start
        self.limit = limit
        self.held = held  # leased ahead by this node for its next receives: no consumer has them
        self.cutoff = st.retention_cutoff(now_ms)
        self.views: list[MessageView] = []
        self.partition: int | None = None  # the lane's, in a partitioned FIFO queue

    def stop(self, seq: int | None, idx: int) -> BrowsePage:
        return BrowsePage(tuple(self.views), None if seq is None else position(seq, idx))

    def add(self, seq: int, seg: Segment, adopted: bool) -> BrowsePage | None:
        """Add the messages of slot `seq` to show; the page when it is full."""
        meta = self.st.segments.get(seq) if adopted else None
        dups = self.st.dups.get(seq, 0) if seq < self.st.next_seq else 0
        first = self.start[1] if seq == self.start[0] else 0
        for idx in range(first, len(seg.messages)):
            m = seg.messages[idx]
            if m.sent_ms <= self.cutoff or dups >> idx & 1:
                continue
            lease = None
            if meta is not None:
                if idx >= meta.count or meta.is_done(idx):
                    continue
                lease = meta.leases.get(idx)
                if lease is not None and (seq, idx) in self.held:
                    receives, _, first_ms = lease
                    lease = (receives - 1, 0, first_ms if receives > 1 else 0)
            if len(self.views) == self.limit:
                return self.stop(seq, idx)
            self.views.append(
                view(m, seq, idx, lease, self.now_ms, self.st.attrs.fifo, self.partition)
            )
        return None


def start_of(after: str | None) -> tuple[int, int]:
    """Where a page begins: the cursor `after` (a previous page's `next`), else the oldest."""
    return (0, 0) if after is None else parse_position(after)
