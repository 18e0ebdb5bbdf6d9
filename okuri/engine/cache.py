"""Node-local cache of segments. Segments are immutable, so a cached copy is never stale."""

from __future__ import annotations

from collections import OrderedDict

from okuri.core.message import Segment

SegmentKey = tuple[str, str, int]  # (queue, incarnation, seq)


class SegmentCache:
    def __init__(self, bytes_max: int) -> None:
        self._bytes_max = bytes_max
        self._bytes = 0
        self._items: OrderedDict[SegmentKey, tuple[Segment, int]] = OrderedDict()

    def get(self, key: SegmentKey) -> Segment | None:
        hit = self._items.get(key)
        if hit is None:
            return None
        self._items.move_to_end(key)
        return hit[0]

    def put(self, key: SegmentKey, segment: Segment) -> None:
        size = sum(len(m.body) for m in segment.messages) + 256 * len(segment.messages)
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        self._items[key] = (segment, size)
        self._bytes += size
        while self._bytes > self._bytes_max and len(self._items) > 1:
            _, (_, evicted) = self._items.popitem(last=False)
            self._bytes -= evicted

    def drop(self, key: SegmentKey) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old[1]

    def __len__(self) -> int:
        return len(self._items)
