"""An asyncio event loop on virtual time: when nothing is ready, time jumps to the next timer.

The engine runs on it unchanged (its sleeps and timeouts are the loop's), so a whole cluster of
nodes, clients and a slow, faulty bucket runs single-threaded and reproduces exactly from a seed.
"""

from __future__ import annotations

import asyncio
import math
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class SimDeadlock(RuntimeError):
    """Every task waits on something that no timer will ever wake."""


class _Map(Mapping[Any, selectors.SelectorKey]):
    def __init__(self, keys: dict[Any, selectors.SelectorKey]) -> None:
        self._keys = keys

    def __getitem__(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys[fileobj]

    def __iter__(self) -> Any:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)


class _VirtualSelector(selectors.BaseSelector):
    """Never reports I/O; a wait of `timeout` seconds just moves the clock forward."""

    def __init__(self) -> None:
        self.now = 0.0
        self.loop: Any = None
        self._keys: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = selectors.SelectorKey(fileobj, id(fileobj), events, data)
        self._keys[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._keys.pop(fileobj)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            raise SimDeadlock("no runnable task and no timer: the simulation is stuck")
        if timeout > 0 or (self.loop is not None and not self.loop._ready):
            # Always move forward, even by a sub-ulp timeout or onto a timer due right now:
            # the loop fires a timer only once the clock has passed it.
            self.now = max(self.now + timeout, math.nextafter(self.now, math.inf))
        return []

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return _Map(self._keys)

    def close(self) -> None:
        self._keys.clear()


class VirtualLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)
        self._virtual.loop = self
        self._clock_resolution = 0.0  # fire timers when due, never "close enough" early

    def time(self) -> float:
        return self._virtual.now


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on a fresh virtual-time loop."""
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            loop.close()
