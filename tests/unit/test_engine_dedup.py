"""The FIFO deduplication index (okuri/engine/dedup.py) on hand-made manifests and segments:
what it takes to be the original of each key, slot by slot."""

from __future__ import annotations

from okuri.core.message import Message, Segment
from okuri.core.state import QueueAttrs, QueueState
from okuri.engine.dedup import DedupIndex

T0 = 1_767_225_600_000


def _segment(*messages: tuple[str, str, int]) -> Segment:
    """Messages as (id, deduplication key, seconds after T0)."""
    return Segment(
        "s",
        tuple(
            Message(mid, b"", T0 + at * 1000, T0, group_id="g", dedup_key=key)
            for mid, key, at in messages
        ),
    )


def _state(next_seq: int, dups: dict[int, int] | None = None) -> QueueState:
    return QueueState(
        name="q.fifo",
        incarnation="i",
        created_ms=T0,
        attrs=QueueAttrs(fifo=True),
        next_seq=next_seq,
        window=[(0, T0)],
        dups=dups or {},
    )


def test_a_slot_a_purge_stepped_over_does_not_displace_the_original_it_duplicates() -> None:
    """Simulator seed 3717: a purge moved the cursor over slot 1 (never adopted, so no mask),
    which held a resend of the message in slot 0. Folding it as an original made the next
    duplicate answer with the resend's id instead of the first message's."""
    slots = {0: _segment(("m1", "k", 0)), 1: _segment(("m2", "k", 1), ("m3", "j", 1))}
    index = DedupIndex()
    assert index.fold(_state(2), slots.get)
    first = index.original("k")
    assert first is not None and first.message_id == "m1"
    other = index.original("j")
    assert other is not None and other.message_id == "m3"
    assert index.judge([(2, _segment(("m4", "k", 2)))]) == [1]


def test_an_adopted_slot_s_verdict_stands_and_a_key_sent_a_window_later_is_new() -> None:
    slots = {
        0: _segment(("m1", "k", 0)),
        1: _segment(("m2", "k", 10)),  # judged a duplicate at adoption
        2: _segment(("m3", "k", 400)),  # more than five minutes after m1: an original
    }
    index = DedupIndex()
    assert index.fold(_state(3, dups={1: 1}), slots.get)
    latest = index.original("k")
    assert latest is not None and (latest.message_id, latest.seq) == ("m3", 2)
