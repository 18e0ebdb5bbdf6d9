"""Bounded retries with jittered backoff: the one way the engine waits out a flaky store."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from okuri import limits
from okuri.clock import Clock
from okuri.errors import Ambiguous, Conflict, Transient, Unavailable

T = TypeVar("T")


async def backoff(clock: Clock, attempt: int, cap_ms: float = limits.backoff_ms_max) -> None:
    """Sleep a random share of an exponentially growing, capped window (full jitter)."""
    cap = min(cap_ms, limits.backoff_ms_base * (2 ** min(attempt, 20)))
    await clock.sleep(clock.random().uniform(0, cap) / 1000)


class Backoff:
    """Backoff for a loop that also goes round for reasons other than a failing store (a slot
    taken, a lost compare-and-swap): its window grows with the store's failures only. Grown by
    the loop's turns instead, a failure after a few lost races would wait up to the cap (2 s)
    although the store had failed once."""

    def __init__(self, clock: Clock, cap_ms: float = limits.backoff_ms_max) -> None:
        self.clock = clock
        self.cap_ms = cap_ms
        self.failures = 0

    async def failed(self) -> None:
        """Wait after the store failed (again)."""
        await backoff(self.clock, self.failures, self.cap_ms)
        self.failures += 1


async def retrying(clock: Clock, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Retry a read (or an idempotent write) through transient failures, within bounds."""
    failing = Backoff(clock)
    for _ in range(limits.put_attempts_max):
        try:
            return await fn()
        except (Transient, Conflict, Ambiguous):
            await failing.failed()
    raise Unavailable("object store unavailable")
