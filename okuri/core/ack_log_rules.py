"""Ack logs in the manifest, the pure part (okuri/engine/ack_logs.py has the objects): which
open logs a committer must close before their messages can be leased again, and which a
commit may forget.

A log is listed in `QueueState.logs` with the messages a follower leased under it; the
transitions treat those messages as taken while it is listed (`apply`).
"""

from __future__ import annotations

from okuri.core.state import QueueState


def prune_logs(st: QueueState) -> None:
    """Forget finished messages in open ack logs, and logs left with none (nothing they could
    still hold would change anything)."""
    for log in list(st.logs):
        places = st.logs[log]
        for seq, idx in list(places):
            seg = st.segments.get(seq)
            if seg is None or seg.is_done(idx):
                places.discard((seq, idx))
        if not places:
            del st.logs[log]


def due_logs(st: QueueState, now_ms: int) -> list[str]:
    """Open ack logs holding a message whose lease ran out (or was handed back): closing them
    is what lets it be leased again."""
    due: list[str] = []
    for log, places in st.logs.items():
        for seq, idx in places:
            seg = st.segments.get(seq)
            if seg is None or seg.is_done(idx):
                continue
            if seg.leases.get(idx, (0, 0, 0))[1] <= now_ms:
                due.append(log)
                break
    return due
