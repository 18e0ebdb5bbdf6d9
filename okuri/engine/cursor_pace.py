"""How fast a queue's cursor moves, as this node sees it: how far a cached cursor may lag.

A producer picks its slot from the cached manifest. If that cursor is far behind, the slot it
leads to was likely read and freed already, and the manifest remembers which segment such a
slot held only for its latest `manifest_recent_slots` slots: past that, the producer cannot
tell whether its write was read, and fails the send. So it reads the manifest before picking
whenever the cursor may have moved a good part of that window since the cache was shown current.
"""

from __future__ import annotations

# Cursor positions closer together in time than this say little about the pace.
_SAMPLE_S = 0.05


class CursorPace:
    def __init__(self) -> None:
        self._at_s: float | None = None
        self._seq = 0
        self.per_s = 0.0  # slots adopted per second, at the latest measure

    def saw(self, at_s: float, seq: int) -> None:
        """The cursor was at `seq` at `at_s` (a manifest installed here)."""
        if self._at_s is None or seq < self._seq:
            self._at_s, self._seq = at_s, seq
            return
        elapsed = at_s - self._at_s
        if elapsed < _SAMPLE_S:
            return
        rate = (seq - self._seq) / elapsed
        # Quick to rise, slow to fall: a lull between bursts must not hide the next burst.
        self.per_s = rate if rate >= self.per_s else (self.per_s + rate) / 2
        self._at_s, self._seq = at_s, seq

    def behind(self, age_s: float) -> float:
        """Slots the cursor may have moved in `age_s`, at the pace last seen."""
        return self.per_s * age_s
