"""The only place time, sleeps, randomness and ids come from.

Everything that would make a run irreproducible goes through a `Clock`, so the simulator can hand
each node a skewed, virtual one and replay a failure from its seed.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch, as this node believes it (may be skewed)."""

    def monotonic_s(self) -> float:
        """Seconds on the event loop's clock, for deadlines within this process."""

    async def sleep(self, seconds: float) -> None: ...

    def random(self) -> random.Random: ...

    def new_id(self) -> str:
        """A fresh unique id in UUID form."""


class SystemClock:
    """Real time, real randomness."""

    def __init__(self) -> None:
        self._rng = random.Random()

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def monotonic_s(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def random(self) -> random.Random:
        return self._rng

    def new_id(self) -> str:
        return str(uuid.uuid4())


class LoopClock:
    """Time read from the running event loop, offset to an epoch and skewed; ids from a seeded rng.

    On a virtual-time loop (the simulator) this is fully deterministic.
    """

    def __init__(self, epoch_ms: int, rng: random.Random, skew_ms: int = 0) -> None:
        self._epoch_ms = epoch_ms
        self._rng = rng
        self.skew_ms = skew_ms

    def now_ms(self) -> int:
        return self._epoch_ms + int(asyncio.get_running_loop().time() * 1000) + self.skew_ms

    def monotonic_s(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def random(self) -> random.Random:
        return self._rng

    def new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
