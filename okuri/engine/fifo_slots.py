"""A FIFO queue's side of the slot log: adopting slots only with the deduplication window in hand.

Every node derives the same duplicate verdicts from the segments (okuri/engine/dedup.py), so a
FIFO queue's slots are adopted only by a node that has taken in every slot of the window, with
its verdict on each message; `catch_up` reads the slots it lacks. Adopted slots are then loaded,
from the first not loaded, while leases want messages. A send may answer before its slot is
adopted when this node can already tell that no adopter will find an original for it
(`surely_original`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from okuri import limits
from okuri.clock import Clock
from okuri.core.message import Segment
from okuri.core.state import QueueState
from okuri.core.transitions import Adopt, Load, Op
from okuri.core.views import adoption_room, counts
from okuri.engine.cache import SegmentCache
from okuri.engine.dedup import DedupIndex

# The segment in a slot of the named incarnation, or None if the slot is empty.
ReadSlotFn = Callable[[str, int], Awaitable[Segment | None]]

_EMPTY = Segment("gone", ())


class FifoSlots:
    def __init__(
        self,
        name: str,
        clock: Clock,
        cache: SegmentCache,
        known: dict[int, Segment],
        read_slot: ReadSlotFn,
    ) -> None:
        self.name = name
        self.clock = clock
        self.cache = cache
        self.known = known  # the slot log's slots at or above the cursor, not yet adopted
        self._read_slot = read_slot
        self.dedup = DedupIndex()

    def reset(self) -> None:
        self.dedup.reset()

    def adopt_ops(self, st: QueueState, wanted: int, reach: int) -> list[Op]:
        """Adopt known slots from the cursor up, judging each message against the window, and
        load adopted ones while leases want messages; nothing until the whole window is in."""
        if not self._window_held(st):
            return []  # a slot of the window not read here yet: `catch_up` first
        visible = counts(st, self.clock.now_ms()).visible
        room = adoption_room(st)
        run: list[tuple[int, Segment]] = []
        seq = st.next_seq
        while seq in self.known and (visible < wanted or seq <= reach) and len(run) < room:
            seg = self.known[seq]
            run.append((seq, seg))
            visible += len(seg.messages) - len(seg.delays())
            seq += 1
        masks = self.dedup.judge(run)
        adopts: list[Op] = [
            Adopt(seq, seg.sid, len(seg.messages), seg.sent_ms, seg.delays(), seg.groups(), mask)
            for (seq, seg), mask in zip(run, masks, strict=True)
        ]
        return adopts + self._loads(st, wanted, dict(run), masks)

    def _loads(
        self, st: QueueState, wanted: int, adopting: dict[int, Segment], masks: list[int]
    ) -> list[Op]:
        """Load adopted slots from the first not loaded, while leases want messages."""
        if not wanted:
            return []
        first_new = st.next_seq
        end = first_new + len(adopting)
        visible = counts(st, self.clock.now_ms()).visible
        room = adoption_room(st)
        loads: list[Op] = []
        seq = st.load_seq
        while seq < end and visible < wanted and len(loads) < room:
            seg = adopting.get(seq) or self._held(st, seq)
            if seg is None:
                break  # not read here yet: `catch_up` reads it before the next commit
            dups = masks[seq - first_new] if seq >= first_new else st.dups.get(seq, 0)
            loads.append(
                Load(seq, seg.sid, len(seg.messages), seg.sent_ms, seg.groups(), seg.delays())
            )
            visible += len(seg.messages) - dups.bit_count()
            seq += 1
        return loads

    def _window_held(self, st: QueueState) -> bool:
        """Has this node taken in every slot of the deduplication window (folded into the index)?"""
        return self.dedup.fold(st, lambda seq: self._held(st, seq))

    def _held(self, st: QueueState, seq: int) -> Segment | None:
        """An adopted slot's segment if this node holds it (the window keeps finished ones)."""
        return self.cache.get((self.name, st.incarnation, seq))

    async def catch_up(self, st: QueueState, load_messages: int = 0) -> None:
        """Read the adopted slots of the deduplication window this node has not seen, and the
        first slots not yet loaded, up to about `load_messages` messages."""
        have, seq = 0, st.load_seq
        end = min(st.next_seq, st.load_seq + limits.fifo_load_ahead_slots)
        while have < load_messages and seq < end:
            seg = self._held(st, seq) or await self._read_slot(st.incarnation, seq)
            have += len(seg.messages) if seg is not None else 0
            seq += 1
        missing = self.dedup.missing(st)
        gone: set[int] = set()
        for start in range(missing.start, missing.stop, limits.probe_parallel_max):
            stop = min(start + limits.probe_parallel_max, missing.stop)
            segs = await asyncio.gather(
                *(self._read_slot(st.incarnation, s) for s in range(start, stop))
            )
            gone.update(s for s, seg in zip(range(start, stop), segs, strict=True) if seg is None)
        # An adopted slot found empty was deleted by hand or by an older okuri: nothing to match.
        self.dedup.fold(st, lambda seq: _EMPTY if seq in gone else self._held(st, seq))

    def surely_original(self, st: QueueState, placed: Sequence[tuple[int, int]]) -> bool:
        """Will adoption judge every message `placed` (slot, index; none adopted in `st`) an
        original, whoever adopts it? Only said when this node holds the whole window and every
        slot from the cursor up to the last of them, and no message before each one has its key.

        A sure no-match, not the rule itself: whatever the manifest commits after `st` (a purge,
        the window moving on) only narrows what a key is judged against, and every slot before
        them is in hand, so no adopter can find an original that is not here. A key seen at all
        (a retry) is left to the manifest's verdict."""
        last = max(seq for seq, _ in placed)
        if min(seq for seq, _ in placed) < st.next_seq:
            return False
        if last - st.next_seq >= limits.probe_segments_max:
            return False
        if not self._window_held(st):
            return False
        ours = set(placed)
        seen: set[str | None] = set()
        for s in range(st.next_seq, last + 1):
            seg = self.known.get(s) or self._held(st, s)
            if seg is None:
                return False
            for idx, m in enumerate(seg.messages):
                key = m.dedup_key
                if (s, idx) in ours and (
                    key is None or key in seen or self.dedup.original(key) is not None
                ):
                    return False
                seen.add(key)
        return True
