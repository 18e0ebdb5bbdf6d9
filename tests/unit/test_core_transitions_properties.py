"""Property tests of the pure transition function, driven by hypothesis.

Hypothesis draws a random history of commits (time steps, adoptions, leases, acks, visibility
changes, dead-letter marks, releases, purges, attribute changes); each commit goes through
`apply` exactly as the engine sends it. After every commit the named invariants must hold, and a
message that was acked (or otherwise finished) must never be granted again.

Kept apart from test_core_transitions.py so that a machine without hypothesis loses only this file.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from okuri import limits
from okuri.core.invariants import check_state, check_step
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import (
    Ack,
    Adopt,
    ChangeVisibility,
    Grant,
    Lease,
    LeaseResult,
    MarkDead,
    Op,
    Purge,
    Release,
    SetAttributes,
    apply,
)
from okuri.core.views import counts

# Hypothesis caches under ./.hypothesis by default; keep the work tree clean.
set_hypothesis_home_dir(str(Path(tempfile.gettempdir()) / "okuri-hypothesis"))

T0 = 1_700_000_000_000
KINDS = ("adopt", "lease", "ack", "vis", "dead", "release", "purge", "attrs")


def _live(s: QueueState) -> set[tuple[int, int]]:
    return {
        (seq, idx)
        for seq, seg in s.segments.items()
        for idx in range(seg.count)
        if not seg.is_done(idx)
    }


def _draw_grant(data: st.DataObject, held: list[Grant]) -> Grant:
    if held and data.draw(st.booleans(), label="use a held receipt"):
        return data.draw(st.sampled_from(held), label="receipt")
    return Grant(
        data.draw(st.integers(0, 6), label="seq"),
        data.draw(st.integers(0, 4), label="idx"),
        data.draw(st.integers(1, 5), label="epoch"),
        0,
    )


def _draw_op(data: st.DataObject, s: QueueState, held: list[Grant], sid: int) -> Op:
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    if kind == "adopt":
        seq = data.draw(
            st.one_of(st.just(s.next_seq), st.integers(0, s.next_seq + 2)), label="adopt seq"
        )
        n = data.draw(st.integers(1, 5), label="count")
        delayed = data.draw(st.sets(st.integers(0, n - 1), max_size=n), label="delayed")
        delays = tuple(
            (i, T0 + data.draw(st.integers(0, 30_000), label="visible at")) for i in sorted(delayed)
        )
        sent = T0 + data.draw(st.integers(0, 20_000), label="sent")
        return Adopt(seq, f"sid-{sid}", n, sent, delays)
    if kind == "lease":
        return Lease(
            data.draw(st.integers(1, 6), label="max"),
            data.draw(st.sampled_from([0, 1, 700, 5_000, 30_000]), label="visibility"),
        )
    if kind == "purge":
        return Purge(s.next_seq + data.draw(st.integers(-1, 2), label="head offset"))
    if kind == "attrs":
        return SetAttributes(
            QueueAttrs(
                max_receive_count=data.draw(st.sampled_from([None, 1, 2, 4]), label="mrc"),
                retention_s=data.draw(
                    st.sampled_from([limits.retention_s_min, limits.retention_s_default]),
                    label="retention",
                ),
            )
        )
    g = _draw_grant(data, held)
    if kind == "ack":
        return Ack(g.seq, g.idx, g.epoch)
    if kind == "vis":
        vis = data.draw(st.sampled_from([0, 1_000, 30_000]), label="new visibility")
        return ChangeVisibility(g.seq, g.idx, g.epoch, vis)
    if kind == "dead":
        return MarkDead(g.seq, g.idx, g.epoch)
    return Release(g.seq, g.idx, g.epoch)


@settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_histories_keep_invariants_and_never_grant_a_finished_message(
    data: st.DataObject,
) -> None:
    s = QueueState("q", "inc", T0, QueueAttrs(), modified_ms=T0)
    now = T0
    held: list[Grant] = []  # receipts some client holds
    adopted: set[tuple[int, int]] = set()
    acked: set[tuple[int, int]] = set()
    sid = 0
    for commit in range(data.draw(st.integers(1, 30), label="commits")):
        now += data.draw(st.sampled_from([0, 1, 500, 1_000, 5_000, 31_000, 61_000]), label="dt")
        ops: list[Op] = []
        for _ in range(data.draw(st.integers(1, 4), label="ops")):
            ops.append(_draw_op(data, s, held, sid))
            sid += 1
        finished_before = adopted - _live(s)

        out = apply(s, now, ops, f"t{commit}")

        check_state(out.state)
        if out.changed:
            check_step(s, out.state)
            assert out.state.commits[-1] == f"t{commit}"
        else:
            assert out.state == s, "a commit that changed nothing must leave the manifest equal"
        assert len(out.results) == len(ops)
        for seq in out.freed:
            assert seq not in out.state.segments
        c = counts(out.state, now)
        assert min(c.visible, c.in_flight, c.delayed) >= 0
        assert c.visible + c.in_flight + c.delayed == len(_live(out.state)) or any(
            seg.sent_ms <= now - out.state.attrs.retention_s * 1000
            for seg in out.state.segments.values()
        )

        for op, res in zip(ops, out.results, strict=True):
            if isinstance(op, Lease):
                assert isinstance(res, LeaseResult)
                assert len(res.granted) <= op.max_messages
                assert len(res.dead) <= op.max_messages
                for g in res.granted + res.dead:
                    assert (g.seq, g.idx) not in acked, "an acked message was granted again"
                    assert (g.seq, g.idx) not in finished_before, "a finished message came back"
                    assert g.epoch >= 1
                    held.append(g)
            elif isinstance(op, Ack) and res == "acked":
                acked.add((op.seq, op.idx))
            elif isinstance(op, Release) and res is True:
                # a released lease was never shown to a client
                held = [h for h in held if (h.seq, h.idx, h.epoch) != (op.seq, op.idx, op.epoch)]
        adopted |= {
            (seq, idx)
            for seq, seg in out.state.segments.items()
            if seq not in s.segments
            for idx in range(seg.count)
        }
        assert not acked & _live(out.state)
        s = out.state


@settings(max_examples=100, deadline=None, database=None)
@given(
    count=st.integers(1, 6),
    visibilities=st.lists(st.sampled_from([0, 100, 1_000]), min_size=1, max_size=12),
)
def test_any_receipt_deletes_and_changes_visibility(
    count: int, visibilities: list[int]
) -> None:
    """Whatever the history of receives, every receipt of a message deletes it and changes its
    visibility (as on SQS); a receipt from a receive that never happened is stale."""
    s = QueueState("q", "inc", T0, QueueAttrs(), modified_ms=T0)
    s = apply(s, T0, [Adopt(0, "sid", count, T0)], "a").state
    now = T0
    receipts: dict[int, list[Grant]] = {}
    for i, vis in enumerate(visibilities):
        now += 1_000
        out = apply(s, now, [Lease(count, vis)], f"l{i}")
        res = out.results[0]
        assert isinstance(res, LeaseResult)
        for g in res.granted:
            previous = receipts.setdefault(g.idx, [])
            assert all(p.epoch < g.epoch for p in previous)
            previous.append(g)
        s = out.state
    for grants in receipts.values():
        *old, newest = grants
        for g in old:
            assert apply(s, now, [Ack(g.seq, g.idx, g.epoch)], "x").results == ["acked"]
            vis = ChangeVisibility(g.seq, g.idx, g.epoch, 5)
            assert apply(s, now, [vis], "v").results == ["ok"]
            too_new = ChangeVisibility(g.seq, g.idx, newest.epoch + 1, 5)
            assert apply(s, now, [too_new], "w").results == ["stale"]
        assert apply(s, now, [Ack(newest.seq, newest.idx, newest.epoch)], "y").results == ["acked"]
        future = Ack(newest.seq, newest.idx, newest.epoch + 1)
        assert apply(s, now, [future], "z").results == ["stale"]
