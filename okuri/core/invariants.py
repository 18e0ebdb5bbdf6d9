"""Named invariants, checked before every manifest write and after every read.

A violation means a bug (or a foreign writer), never a race: races only cost a lost CAS.
"""

from __future__ import annotations

from okuri import limits
from okuri.core.state import QueueState


class InvariantViolation(AssertionError):
    """The manifest broke a rule that every transition must keep."""


def check_state(st: QueueState) -> None:
    _require(st.version >= 1, "version_positive", st)
    _require(st.next_seq >= 0, "cursor_non_negative", st)
    _require(len(st.segments) <= limits.manifest_segments_max, "segments_bounded", st)
    _require(len(st.recent) <= limits.manifest_recent_slots, "recent_bounded", st)
    _require(len(st.commits) <= limits.manifest_recent_commits, "commits_bounded", st)
    _require(0 <= st.load_seq <= st.next_seq, "loaded_below_cursor", st)
    for seq, seg in st.segments.items():
        _require(seq == seg.seq and seq < st.loaded_upto(), "segments_below_cursor", st)
        _require(seg.count > 0 and seg.done < (1 << seg.count), "done_within_segment", st)
        for idx, (receives, _until, _first) in seg.leases.items():
            _require(0 <= idx < seg.count, "lease_within_segment", st)
            _require(not seg.is_done(idx), "finished_messages_hold_no_lease", st)
            _require(receives >= 0, "epoch_non_negative", st)
    for seq, _sid in st.recent:
        _require(seq < st.next_seq, "recent_below_cursor", st)


def check_step(old: QueueState, new: QueueState) -> None:
    """Rules relating a manifest to the one it replaces.

    An epoch never goes back, except by exactly one for a lease handed back unused (a Release:
    visible at once, `until` 0), since no receipt with that epoch ever left its node.
    """
    _require(new.version == old.version + 1, "version_increments", new)
    _require(new.incarnation == old.incarnation, "incarnation_fixed", new)
    _require(new.next_seq >= old.next_seq, "cursor_monotonic", new)
    _require(new.loaded_upto() >= old.loaded_upto(), "loading_monotonic", new)
    _require(new.used_ms >= old.used_ms, "use_monotonic", new)
    _require(not old.gone_ms, "expired_stays_expired", new)
    for seq, seg in new.segments.items():
        prev = old.segments.get(seq)
        if prev is None:
            _require(seq >= old.loaded_upto(), "adopted_once", new)
            continue
        _require(prev.sid == seg.sid, "segment_identity_fixed", new)
        _require(prev.done & ~seg.done == 0, "finished_stays_finished", new)
        for idx, lease in seg.leases.items():
            before = prev.leases.get(idx)
            if before is not None:
                released = lease[0] == before[0] - 1 and lease[1] == 0
                _require(lease[0] >= before[0] or released, "epochs_monotonic", new)
    check_state(new)


def _require(ok: bool, name: str, st: QueueState) -> None:
    if not ok:
        raise InvariantViolation(
            f"manifest invariant {name!r} broken (queue {st.name!r} v{st.version})"
        )
