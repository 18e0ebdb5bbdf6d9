"""Every change to a queue's manifest, as a pure function of (state, now_ms, ops).

A node collects the operations its clients asked for during one linger window and applies them
all to the manifest it last read; if the compare-and-swap loses, it re-reads and applies the same
operations again to the new state. Results therefore always describe the state that was actually
written. Nothing here reads a clock, touches I/O or knows about HTTP.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from okuri import limits
from okuri.core.ack_log_rules import prune_logs
from okuri.core.expiry import touch_due, touched
from okuri.core.fifo import keep_dedup_scope
from okuri.core.lane_ops import AddLane, CloseLane, DropLane, apply_lane_op
from okuri.core.lease_order import fifo_group_runs, first_in_line
from okuri.core.state import QueueAttrs, QueueState, SegmentState

# --- operations ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Adopt:
    """Read slot `seq` into the manifest: its messages become receivable."""

    seq: int
    sid: str
    count: int
    sent_ms: int
    delays: tuple[tuple[int, int], ...] = ()
    # FIFO: each message's group, and which messages duplicate one already in the window (the
    # adopting node's verdict; they are finished at once and never delivered).
    groups: tuple[str, ...] | None = None
    dups: int = 0


@dataclass(frozen=True, slots=True)
class Load:
    """FIFO: bring adopted slot `seq` (the first not loaded) into the working set, so its
    messages can be leased; its duplicates, judged at adoption, come in finished."""

    seq: int
    sid: str
    count: int
    sent_ms: int
    groups: tuple[str, ...]
    # (index, visible_at_ms) of messages sent with a delay (the queue's, on a FIFO queue).
    delays: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Reach:
    """Have slot `seq` adopted in this commit (a FIFO send waits for its verdict); changes
    nothing by itself: the node adds the Adopt operations. Result: whether it was reached."""

    seq: int


@dataclass(frozen=True, slots=True)
class Lease:
    """Lease up to `max_messages` visible messages for `visibility_ms`; with `log`, under that
    ack log (the messages it grants are leased again only once the log is closed)."""

    max_messages: int
    visibility_ms: int
    log: str = ""


@dataclass(frozen=True, slots=True)
class CloseLog:
    """Close an ack log whose acks this commit carries before it: its messages may be leased
    again. Result: True."""

    log: str


@dataclass(frozen=True, slots=True)
class Ack:
    """Finish a message, given a receipt from any receive of it so far (as SQS does in practice).

    A consumer deletes only what it has processed, so an earlier receipt is as good as the
    newest for at-least-once delivery; a node that died holding leases taken ahead must not turn
    a processed message's delete into a redelivery. Dead-lettering and releases keep the
    exact-epoch fence.
    """

    seq: int
    idx: int
    epoch: int
    incarnation: str = ""


@dataclass(frozen=True, slots=True)
class ChangeVisibility:
    """Set a message's visibility from now, given a receipt from any receive of it so far."""

    seq: int
    idx: int
    epoch: int
    visibility_ms: int
    incarnation: str = ""


@dataclass(frozen=True, slots=True)
class MarkDead:
    """Finish a message whose copy already landed in the dead-letter queue."""

    seq: int
    idx: int
    epoch: int
    incarnation: str = ""


@dataclass(frozen=True, slots=True)
class Release:
    """Hand back a lease that no client ever saw (a node's lease-ahead buffer went unused).

    The receive count steps back, so the next receive reuses the epoch: safe because no receipt
    carrying it ever left the node. `until_ms` is when the lease would have run out (0: not
    known, from a node that predates it): a lease changed since (a visibility change with an
    earlier receipt) is left as the change made it.
    """

    seq: int
    idx: int
    epoch: int
    incarnation: str = ""
    until_ms: int = 0


@dataclass(frozen=True, slots=True)
class Purge:
    """Drop every message in slots below `head_seq` (the first slot found empty)."""

    head_seq: int


@dataclass(frozen=True, slots=True)
class SetAttributes:
    """Replace the queue's attributes; a FIFO queue keeps deduplicating with the scope it had
    (okuri/core/fifo.py, `keep_dedup_scope`)."""

    attrs: QueueAttrs


@dataclass(frozen=True, slots=True)
class Touch:
    """A use of the queue other than a lease (get_queue, a create that finds it): recorded
    only when due (okuri/core/expiry.py), as a lease's is. Result: True."""


Op = (
    Adopt
    | Load
    | Reach
    | Lease
    | Ack
    | ChangeVisibility
    | MarkDead
    | Release
    | Purge
    | SetAttributes
    | Touch
    | CloseLog
    | AddLane
    | DropLane
    | CloseLane
)

# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Grant:
    seq: int
    idx: int
    epoch: int
    first_receive_ms: int
    # When this lease runs out as the manifest records it (0: not known); what a release of
    # it compares, not part of which grant it is.
    until_ms: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class LeaseResult:
    granted: tuple[Grant, ...]
    # Messages past maxReceiveCount, leased so nobody else takes them while they are copied to
    # the dead-letter queue; MarkDead with the same epoch then finishes them.
    dead: tuple[Grant, ...]


# "logged": durable in an ack log (okuri/engine/ack_logs.py), answered before the commit that
# finishes the message (or finds it finished already) is made.
AckResult = Literal["acked", "logged", "stale", "gone", "expired"]
VisibilityResult = Literal["ok", "stale", "gone"]
# A dead-letter move asked for by a consumer (okuri/engine/finishing.py); not a commit result.
DeadLetterResult = Literal["dead", "stale", "gone"]
Result = LeaseResult | AckResult | VisibilityResult | bool


@dataclass(slots=True)
class Outcome:
    state: QueueState
    results: list[Result]
    changed: bool
    freed: list[int] = field(default_factory=list)
    expired: int = 0


# --- the transition --------------------------------------------------------------------------


def apply(state: QueueState, now_ms: int, ops: Sequence[Op], token: str) -> Outcome:
    """Apply `ops` in order to a copy of `state`; `token` marks the commit for ambiguity checks."""
    st = state.copy()
    out = Outcome(state=st, results=[], changed=False)
    granted: set[tuple[int, int]] = set()
    # Messages under an open ack log are taken already, as far as leases here go.
    blocked: set[tuple[int, int]] = set().union(*st.logs.values())
    out.expired = _expire(st, now_ms)
    out.changed = out.expired > 0
    for op in ops:
        result, changed = _apply_one(st, now_ms, op, out.freed, granted, blocked)
        out.results.append(result)
        out.changed = out.changed or changed
    for seq in [s for s, seg in st.segments.items() if seg.all_done()]:
        del st.segments[seq]
        out.freed.append(seq)
        out.changed = True
    if st.attrs.fifo or st.window:
        out.changed = _slide_window(st, now_ms, out.freed) or out.changed
    if any(isinstance(op, Lease | Touch) for op in ops) and touch_due(st, now_ms):
        touched(st, now_ms)  # a use, written at most every quarter of expires_s
        out.changed = True
    if out.changed:
        prune_logs(st)
        st.version += 1
        st.commits.append(token)
        del st.commits[: -limits.manifest_recent_commits]
    return out


def _apply_one(
    st: QueueState,
    now_ms: int,
    op: Op,
    freed: list[int],
    granted: set[tuple[int, int]],
    blocked: set[tuple[int, int]],
) -> tuple[Result, bool]:
    match op:
        case Adopt():
            return _adopt(st, op, now_ms)
        case Load():
            return _load(st, op)
        case Reach():
            return op.seq < st.next_seq, False
        case Lease():
            taken = granted | blocked
            res = _lease(st, now_ms, op, taken)
            granted.update(taken - blocked)
            return res, bool(res.granted or res.dead)
        case Ack():
            ack = _ack(st, now_ms, op)
            return ack, ack == "acked"
        case ChangeVisibility():
            vis = _change_visibility(st, now_ms, op)
            return vis, vis == "ok"
        case MarkDead():
            dead = _mark_dead(st, op)
            return dead, dead
        case Release():
            released = _release(st, op)
            return released, released
        case Purge():
            # Kept for their deduplication ids only: a purge clears the window, as on SQS.
            window_kept = range(st.window_start(), st.loaded_upto())
            freed.extend(s for s in window_kept if s not in st.segments)
            st.window.clear()
            st.dups.clear()
            freed.extend(st.segments)
            freed.extend(range(st.loaded_upto(), st.next_seq))  # adopted, never loaded
            st.segments.clear()
            st.next_seq = max(st.next_seq, op.head_seq)
            st.load_seq = st.next_seq
            st.purged_ms = now_ms
            return True, True
        case SetAttributes():
            if op.attrs.expires_s is not None:
                touched(st, now_ms)  # changing a queue's attributes is a use of it
            attrs = op.attrs
            if attrs.fifo:
                attrs = replace(attrs, extra=keep_dedup_scope(st.attrs.extra, attrs.extra))
            st.attrs = attrs
            st.modified_ms = now_ms
            return True, True
        case Touch():
            return True, False
        case AddLane() | DropLane() | CloseLane():
            return apply_lane_op(st, now_ms, op)
        case CloseLog():
            places = st.logs.pop(op.log, None)
            if places is None:
                return True, False
            blocked.difference_update(places)
            return True, True


def _expire(st: QueueState, now_ms: int) -> int:
    """Finish every message older than the retention period; returns how many."""
    cutoff = st.retention_cutoff(now_ms)
    expired = 0
    for seg in st.segments.values():
        if seg.sent_ms <= cutoff and not seg.all_done():
            expired += seg.remaining()
            seg.done = (1 << seg.count) - 1
            seg.leases.clear()
    return expired


def _adopt(st: QueueState, op: Adopt, now_ms: int) -> tuple[bool, bool]:
    """Give slot `seq` its place after the cursor. A standard queue loads it at once; a FIFO
    queue records its duplicates and leaves loading to `Load`, as consumers need it."""
    if op.seq != st.next_seq:
        return False, False
    if st.attrs.fifo:
        if not st.window or now_ms - st.window[-1][1] >= 1000:
            st.window.append((op.seq, now_ms))
        if op.dups and op.count:
            st.dups[op.seq] = op.dups & ((1 << op.count) - 1)
        if op.count == 0 and st.load_seq == op.seq:
            st.load_seq = op.seq + 1  # nothing to load: step over it
    elif len(st.segments) >= limits.manifest_segments_max:
        return False, False
    elif op.count:
        st.segments[op.seq] = SegmentState(
            op.seq,
            op.sid,
            op.count,
            op.sent_ms,
            0,
            {i: (0, at, 0) for i, at in op.delays},
        )
    st.next_seq = op.seq + 1
    if not st.attrs.fifo:
        st.load_seq = st.next_seq
    st.recent.append((op.seq, op.sid))
    del st.recent[: -limits.manifest_recent_slots]
    return True, True


def _load(st: QueueState, op: Load) -> tuple[bool, bool]:
    if not st.attrs.fifo or op.seq != st.load_seq or op.seq >= st.next_seq:
        return False, False
    if op.count and len(st.segments) >= limits.manifest_segments_max:
        return False, False
    st.load_seq = op.seq + 1
    if op.count:
        dups = st.dups.get(op.seq, 0) & ((1 << op.count) - 1)
        delayed = {i: (0, at, 0) for i, at in op.delays if not dups >> i & 1}
        st.segments[op.seq] = SegmentState(
            op.seq, op.sid, op.count, op.sent_ms, dups, delayed, op.groups
        )
    return True, True


def _slide_window(st: QueueState, now_ms: int, freed: list[int]) -> bool:
    """Age the FIFO deduplication window; a slot is deleted only once it has left it.

    A checkpoint is dropped once the next one is older than the window (plus a margin for
    clocks), so every slot from the first checkpoint up may hold an id a new send must match.
    """
    cutoff = now_ms - (limits.dedup_window_s + limits.dedup_window_margin_s) * 1000
    old_start = st.window_start()
    dropped = 0
    while len(st.window) > 1 and st.window[1][1] < cutoff:
        st.window.pop(0)
        dropped += 1
    if len(st.window) == 1 and st.window[0][1] < cutoff:
        st.window.pop()  # nothing adopted for a whole window: every id has expired
        dropped += 1
    start = st.window_start()
    loaded = st.loaded_upto()
    # Finished slots the window still covers are kept (their ids count); those it has just
    # passed, finished earlier or now, go. Slots not yet loaded stay whatever their age.
    passed = {s for s in range(old_start, min(start, loaded)) if s not in st.segments}
    freed[:] = sorted(passed.union(s for s in freed if s < start))
    for seq in [s for s in st.dups if s < min(start, loaded)]:
        del st.dups[seq]
    return dropped > 0


def _lease(st: QueueState, now_ms: int, op: Lease, taken: set[tuple[int, int]]) -> LeaseResult:
    if st.attrs.fifo:
        return _lease_fifo(st, now_ms, op, taken)
    live, due = first_in_line(st, now_ms, op.max_messages, taken)
    granted = [_grant(st, now_ms, op, seq, idx, taken) for seq, idx in live]
    dead = [_grant(st, now_ms, op, seq, idx, taken) for seq, idx in due]
    if op.log and granted:
        st.logs.setdefault(op.log, set()).update((g.seq, g.idx) for g in granted)
    return LeaseResult(tuple(granted), tuple(dead))


def _lease_fifo(st: QueueState, now_ms: int, op: Lease, taken: set[tuple[int, int]]) -> LeaseResult:
    """As SQS answers it (recorded): each group offers its visible messages from its first
    unfinished one up to its first hidden one (in flight, delayed, or leased earlier in this
    commit), so no message goes out while an earlier one of its group is hidden, and a head
    made visible again goes out although later messages of its group are still held. Groups go
    whole and one after another, the one visible longest first (a head never received since
    its send, one whose lease ran out since its end), so a group received and given back
    waits behind the groups that were waiting meanwhile; ties keep slot order."""
    mrc = st.attrs.max_receive_count
    runs, since = fifo_group_runs(st, now_ms, taken)
    granted: list[Grant] = []
    dead: list[Grant] = []
    for group in sorted(runs, key=since.__getitem__):
        for seq, idx in runs[group]:
            if len(granted) >= op.max_messages or len(dead) >= op.max_messages:
                return LeaseResult(tuple(granted), tuple(dead))
            receives = st.segments[seq].leases.get(idx, (0, 0, 0))[0]
            grant = _grant(st, now_ms, op, seq, idx, taken)
            (dead if mrc is not None and receives >= mrc else granted).append(grant)
    return LeaseResult(tuple(granted), tuple(dead))


def _grant(
    st: QueueState, now_ms: int, op: Lease, seq: int, idx: int, taken: set[tuple[int, int]]
) -> Grant:
    """Lease message (seq, idx), which is visible now: one receive more, hidden until the
    lease runs out."""
    seg = st.segments[seq]
    receives, _until_ms, first_ms = seg.leases.get(idx, (0, 0, 0))
    taken.add((seq, idx))
    mrc = st.attrs.max_receive_count
    # A dead grant is held while its copy lands in the dead-letter queue; a zero visibility
    # would let every retry of a long poll re-lease it and copy it again.
    hold_ms = limits.dead_letter_hold_ms if mrc is not None and receives >= mrc else 0
    until_ms = now_ms + max(op.visibility_ms, hold_ms)
    grant = Grant(seq, idx, receives + 1, first_ms or now_ms, until_ms)
    seg.leases[idx] = (grant.epoch, until_ms, grant.first_receive_ms)
    return grant


def _holder(
    st: QueueState, seq: int, idx: int, epoch: int, incarnation: str = "", earlier: bool = False
) -> SegmentState | Literal["gone", "stale"]:
    """The segment holding a live message whose lease epoch is `epoch` (or, with `earlier`,
    any epoch some receive of it was given: 1 up to the current one)."""
    if incarnation and incarnation != st.incarnation:
        return "gone"  # minted by a deleted queue of the same name
    seg = st.segments.get(seq)
    if seg is None or idx >= seg.count:
        return "gone" if seq < st.loaded_upto() else "stale"
    if seg.is_done(idx):
        return "gone"
    lease = seg.leases.get(idx)
    if lease is None or not (1 <= epoch <= lease[0] if earlier else lease[0] == epoch):
        return "stale"
    return seg


def _ack(st: QueueState, now_ms: int, op: Ack) -> AckResult:
    seg = _holder(st, op.seq, op.idx, op.epoch, op.incarnation, earlier=True)
    if isinstance(seg, str):
        return seg
    if st.attrs.fifo:
        # A FIFO queue deletes only under the lease still in force (recorded from SQS: "The
        # receipt handle has expired"): once it ran out, the group's next receive may already
        # have the message, and order is the promise.
        receives, until_ms, _first_ms = seg.leases[op.idx]
        if receives != op.epoch or until_ms <= now_ms:
            return "expired"
    seg.done |= 1 << op.idx
    del seg.leases[op.idx]
    return "acked"


def _change_visibility(st: QueueState, now_ms: int, op: ChangeVisibility) -> VisibilityResult:
    # As SQS answers (recorded): a receipt from any receive so far, and a lease already run out,
    # still set the message's visibility from now.
    seg = _holder(st, op.seq, op.idx, op.epoch, op.incarnation, earlier=True)
    if isinstance(seg, str):
        return seg
    receives, _until_ms, first_ms = seg.leases[op.idx]
    seg.leases[op.idx] = (receives, now_ms + op.visibility_ms, first_ms)
    return "ok"


def _mark_dead(st: QueueState, op: MarkDead) -> bool:
    seg = _holder(st, op.seq, op.idx, op.epoch, op.incarnation)
    if isinstance(seg, str):
        return False
    seg.done |= 1 << op.idx
    del seg.leases[op.idx]
    return True


def _release(st: QueueState, op: Release) -> bool:
    seg = _holder(st, op.seq, op.idx, op.epoch, op.incarnation)
    if isinstance(seg, str):
        return False
    receives, until_ms, first_ms = seg.leases[op.idx]
    if until_ms == 0:
        # Released already: a node can hold two leases of one message taken ahead (the first
        # ran out and its next lease took the message again) and hand both back at once; the
        # older one must not step the count back a second time (simulator seed 400231).
        return False
    if op.until_ms == 0 or until_ms == op.until_ms:
        seg.leases[op.idx] = (receives - 1, 0, first_ms if receives > 1 else 0)
    # Else a visibility change made since, with an earlier receipt, stands as its client asked
    # (found by the simulator, seed 20272: a node whose clock ran 3 s fast took a message
    # ahead while its first lease was still held, the holder changed it to 9 s, and the
    # release made it visible at once). The unseen receive stays counted.
    for places in st.logs.values():  # handed out to no client: no ack of it can be logged
        places.discard((op.seq, op.idx))
    return True
