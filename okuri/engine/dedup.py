"""FIFO deduplication on one node: the window's ids, folded from the segments in slot order.

Why not a table in the bucket: a row per message would cost a request per send, and a table
inside the manifest would make every commit rewrite five minutes of ids. The ids already travel
in the segments, which a FIFO queue keeps until the window has passed them; the manifest holds
only where the window starts and which adopted messages were duplicates. So every node derives
the same verdict: a message duplicates the latest *original* (non-duplicate) message with its
key that comes before it in slot order and was sent less than the window earlier. The node that
adopts a slot records that verdict; a node may adopt only while it has folded every slot of the
window, so no id is ever missed for want of a read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from okuri import limits
from okuri.core.message import Segment
from okuri.core.state import QueueState


@dataclass(frozen=True, slots=True)
class Original:
    """The message a key's duplicates answer with."""

    seq: int
    idx: int
    sent_ms: int
    message_id: str


class DedupIndex:
    """The latest original of every key in the window, as of slot `upto` (exclusive)."""

    def __init__(self) -> None:
        self.incarnation = ""
        self.upto = 0
        self.start = 0  # the window's first slot when last folded
        self.keys: dict[str, Original] = {}

    def reset(self) -> None:
        self.incarnation, self.upto, self.start, self.keys = "", 0, 0, {}

    def missing(self, st: QueueState) -> range:
        """Adopted slots this node must still read before it may judge a new one."""
        start = self.upto if self.incarnation == st.incarnation else st.window_start()
        return range(max(start, st.window_start()), st.next_seq)

    def fold(self, st: QueueState, segment_at: Callable[[int], Segment | None]) -> bool:
        """Take in every adopted slot up to the cursor that `segment_at` knows; True if all."""
        if self.incarnation != st.incarnation:
            self.reset()
            self.incarnation, self.upto = st.incarnation, st.window_start()
        self.upto = max(self.upto, st.window_start())
        if st.window_start() > self.start:
            # The window moved on (or a purge cleared it): ids before it count no more.
            self.start = st.window_start()
            self.keys = {k: o for k, o in self.keys.items() if o.seq >= self.start}
        while self.upto < st.next_seq:
            seg = segment_at(self.upto)
            if seg is None:
                return False
            mask = st.dups.get(self.upto, 0)
            for idx, m in enumerate(seg.messages):
                if m.dedup_key is None or mask >> idx & 1:
                    continue
                # A slot a purge stepped over was never judged (no mask says which of its
                # messages were duplicates): judge its messages as adoption would have, or one
                # would displace the original it duplicates (simulator seed 3717). An adopted
                # slot's messages were judged so already: the same rule leaves them originals.
                first = self.keys.get(m.dedup_key)
                if first is None or m.sent_ms - first.sent_ms >= limits.dedup_window_s * 1000:
                    self.keys[m.dedup_key] = Original(self.upto, idx, m.sent_ms, m.id)
            self.upto += 1
        if len(self.keys) > limits.dedup_entries_max:
            self._prune()
        return True

    def _prune(self) -> None:
        newest = max(o.sent_ms for o in self.keys.values())
        cutoff = newest - (limits.dedup_window_s + limits.dedup_window_margin_s) * 1000
        self.keys = {k: o for k, o in self.keys.items() if o.sent_ms >= cutoff}

    def judge(self, segments: list[tuple[int, Segment]]) -> list[int]:
        """Duplicate masks for consecutive slots about to be adopted right after `upto`,
        each judged against the index and the originals of the slots before it."""
        overlay: dict[str, Original] = {}
        masks = []
        for seq, seg in segments:
            mask = 0
            for idx, m in enumerate(seg.messages):
                key = m.dedup_key
                if key is None:
                    continue
                first = overlay.get(key) or self.keys.get(key)
                if first is not None and m.sent_ms - first.sent_ms < limits.dedup_window_s * 1000:
                    mask |= 1 << idx
                else:
                    overlay[key] = Original(seq, idx, m.sent_ms, m.id)
            masks.append(mask)
        return masks

    def original(self, key: str) -> Original | None:
        return self.keys.get(key)
