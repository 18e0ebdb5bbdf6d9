"""Named invariants, checked before every manifest write and after every read.

A violation means a bug (or a foreign writer), never a race: races only cost a lost CAS.
Each check is written as a plain condition that names its invariant only when it fails: they
run on every commit over every lease in the manifest, so a call per rule would cost more than
the rules.
"""

from __future__ import annotations

from typing import NoReturn

from okuri import limits
from okuri.core.lane_ops import lane_partition
from okuri.core.state import QueueState


class InvariantViolation(AssertionError):
    """The manifest broke a rule that every transition must keep."""


def check_state(st: QueueState) -> None:
    if st.version < 1:
        _broken("version_positive", st)
    if st.next_seq < 0:
        _broken("cursor_non_negative", st)
    if len(st.segments) > limits.manifest_segments_max:
        _broken("segments_bounded", st)
    if len(st.recent) > limits.manifest_recent_slots:
        _broken("recent_bounded", st)
    if len(st.commits) > limits.manifest_recent_commits:
        _broken("commits_bounded", st)
    if not 0 <= st.load_seq <= st.next_seq:
        _broken("loaded_below_cursor", st)
    loaded = st.loaded_upto()
    for seq, seg in st.segments.items():
        if seq != seg.seq or seq >= loaded:
            _broken("segments_below_cursor", st)
        count, done = seg.count, seg.done
        if count <= 0 or done >= 1 << count:
            _broken("done_within_segment", st)
        for idx, (receives, _until, _first) in seg.leases.items():
            if not 0 <= idx < count:
                _broken("lease_within_segment", st)
            if done >> idx & 1:
                _broken("finished_messages_hold_no_lease", st)
            if receives < 0:
                _broken("epoch_non_negative", st)
    if len(st.lanes) > limits.lanes_max or len(set(st.lanes)) != len(st.lanes):
        _broken("lanes_bounded", st)
    partitions = [k for lane in st.lanes if (k := lane_partition(lane)) is not None]
    if len(set(partitions)) != len(partitions):
        _broken("one_lane_a_partition", st)
    cursor = st.next_seq
    for seq, _sid in st.recent:
        if seq >= cursor:
            _broken("recent_below_cursor", st)


def check_step(old: QueueState, new: QueueState) -> None:
    """Rules relating a manifest to the one it replaces.

    An epoch never goes back, except by exactly one for a lease handed back unused (a Release:
    visible at once, `until` 0), since no receipt with that epoch ever left its node.
    """
    if new.version != old.version + 1:
        _broken("version_increments", new)
    if new.incarnation != old.incarnation:
        _broken("incarnation_fixed", new)
    if new.next_seq < old.next_seq:
        _broken("cursor_monotonic", new)
    old_loaded = old.loaded_upto()
    if new.loaded_upto() < old_loaded:
        _broken("loading_monotonic", new)
    if new.used_ms < old.used_ms:
        _broken("use_monotonic", new)
    if old.gone_ms:
        _broken("expired_stays_expired", new)
    if old.closed_ms and new.closed_ms != old.closed_ms:
        _broken("closed_stays_closed", new)  # a retiring lane takes no sends again
    if old.lanes and new.lanes != old.lanes:
        for lane in old.lanes:
            if lane not in new.lanes and lane_partition(lane) is not None:
                _broken("partitions_stay", new)  # its groups' order lives in it
    for seq, seg in new.segments.items():
        prev = old.segments.get(seq)
        if prev is None:
            if seq < old_loaded:
                _broken("adopted_once", new)
            continue
        if prev.sid != seg.sid:
            _broken("segment_identity_fixed", new)
        if prev.done & ~seg.done:
            _broken("finished_stays_finished", new)
        before_leases = prev.leases
        for idx, lease in seg.leases.items():
            before = before_leases.get(idx)
            if before is not None and lease[0] < before[0]:
                released = lease[0] == before[0] - 1 and lease[1] == 0
                if not released:
                    _broken("epochs_monotonic", new)
    check_state(new)


def _broken(name: str, st: QueueState) -> NoReturn:
    raise InvariantViolation(
        f"manifest invariant {name!r} broken (queue {st.name!r} v{st.version})"
    )
