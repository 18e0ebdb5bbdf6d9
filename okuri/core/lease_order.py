"""Which visible messages of a standard queue a lease takes: those first in line, in rough send
order, as SQS's standard queues answer.

A message's place in line is its send, or the end of its delay for one sent with a delay and
never received. A message received before keeps its send's place when it shows again (a lease
that ran out, a retry at a time, a visibility change): SQS returns such a message ahead of
those sent after it was first received (recorded against SQS), and a message that keeps failing
goes to the dead-letter queue by its receive count, not to the back of the line.

The manifest keeps segments in slot order, and no message's place comes before its segment's
send, so the scan stops at the first segment sent after the latest place it has kept: in a
queue without delays that is one segment past the last one taken, as cheap as taking messages
in slot order. Sending times come from the nodes' clocks, so across nodes whose clocks disagree
the order is approximate, as SQS's best-effort order of standard queues is.
FIFO queues keep slot order within each group: `fifo_group_runs` says what each group offers
(okuri/core/transitions.py leases them, the groups visible longest first).
"""

from __future__ import annotations

import heapq

from okuri.core.state import QueueState

Place = tuple[int, int]  # (slot, index) of a message


def in_line_ms(sent_ms: int, receives: int, until_ms: int) -> int:
    """Where a visible message stands in a standard queue's line: at its send, or, for one sent
    with a delay and never received (a lease of 0 receives until then), at the end of its
    delay. Never before its send, which is what lets `first_in_line` stop early."""
    return until_ms if receives == 0 and until_ms > sent_ms else sent_ms


def first_in_line(
    st: QueueState, now_ms: int, most: int, taken: set[Place]
) -> tuple[list[Place], list[Place]]:
    """Up to `most` visible messages, first in line first (`in_line_ms`), and up to `most` visible
    messages past the queue's maxReceiveCount (due for the dead-letter queue), in slot order."""
    if most <= 0:
        return [], []
    mrc = st.attrs.max_receive_count
    cutoff = st.retention_cutoff(now_ms)
    kept: list[tuple[int, int, int]] = []  # a max-heap of (-in_line_ms, -seq, -idx)
    dead: list[Place] = []
    for seg in st.segments.values():
        if seg.sent_ms <= cutoff:
            continue  # past retention (adopted in this very commit): finished at the next
        if len(kept) >= most:
            last_ms, seq, _idx = (-v for v in kept[0])
            if (seg.sent_ms, seg.seq) > (last_ms, seq):
                break
        for idx in range(seg.count):
            if seg.is_done(idx) or (seg.seq, idx) in taken:
                continue
            receives, until_ms, _first = seg.leases.get(idx, (0, 0, 0))
            if until_ms > now_ms:
                continue
            if mrc is not None and receives >= mrc:
                if len(dead) < most:
                    dead.append((seg.seq, idx))
                continue
            entry = (-in_line_ms(seg.sent_ms, receives, until_ms), -seg.seq, -idx)
            if len(kept) < most:
                heapq.heappush(kept, entry)
            elif entry > kept[0]:
                heapq.heapreplace(kept, entry)
    return [(-seq, -idx) for _s, seq, idx in sorted(kept, reverse=True)], dead


def fifo_group_runs(
    st: QueueState, now_ms: int, taken: set[tuple[int, int]]
) -> tuple[dict[str, list[tuple[int, int]]], dict[str, tuple[int, int, int]]]:
    """Per FIFO group, its visible messages from its first unfinished one up to its first
    hidden one, and (when that head became visible, its slot, its index)."""
    cutoff = st.retention_cutoff(now_ms)
    runs: dict[str, list[tuple[int, int]]] = {}
    since: dict[str, tuple[int, int, int]] = {}
    closed: set[str] = set()
    for seg in st.segments.values():
        if seg.sent_ms <= cutoff:
            continue  # past retention: finished at the next commit
        for idx in range(seg.count):
            if seg.is_done(idx):
                continue
            group = seg.groups[idx] if seg.groups is not None else ""
            if group in closed:
                continue
            _receives, until_ms, _first_ms = seg.leases.get(idx, (0, 0, 0))
            if until_ms > now_ms or (seg.seq, idx) in taken:
                closed.add(group)
                continue
            run = runs.get(group)
            if run is None:
                runs[group] = run = []
                since[group] = (until_ms or seg.sent_ms, seg.seq, idx)
            run.append((seg.seq, idx))
    return runs, since
