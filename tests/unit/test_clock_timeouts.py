"""Every timeout in the engine goes through the clock (`Clock.wait_for`, `Clock.timeout`), as
its sleeps do, so whoever supplies the clock owns all of the engine's time: the simulator's
virtual loop, or a test's clock that jumps over a wait instead of sitting through it. ruff's
banned-API rule keeps `asyncio.wait_for` and `asyncio.timeout` out of okuri (pyproject.toml);
these tests show the engine really waits through the seam."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable
from typing import TypeVar

import pytest

from okuri.clock import LoopClock, SystemClock
from okuri.engine import Engine
from okuri.engine.batching import Batcher
from okuri.sim.loop import run_virtual
from okuri.store.memory import MemoryStore

T = TypeVar("T")
EPOCH_MS = 1_700_000_000_000


class JumpingClock(SystemClock):
    """Monotonic time that a timeout jumps instead of waiting for it (trio's autojump, by
    hand): a wait whose awaitable is not ready at once times out in no real time."""

    def __init__(self) -> None:
        super().__init__()
        self.jumped_s = 0.0
        self.timeouts_s: list[float] = []

    def monotonic_s(self) -> float:
        return super().monotonic_s() + self.jumped_s

    async def wait_for(self, aw: Awaitable[T], timeout_s: float) -> T:
        self.timeouts_s.append(timeout_s)
        task = asyncio.ensure_future(aw)
        await asyncio.sleep(0)  # let it run once: ready at once means no timeout
        if task.done():
            return task.result()
        task.cancel()
        self.jumped_s += timeout_s
        raise TimeoutError


class RecordingLoopClock(LoopClock):
    """The simulator's clock, noting every timeout asked of it."""

    def __init__(self) -> None:
        super().__init__(EPOCH_MS, random.Random(1))
        self.timeouts_s: list[float] = []

    async def wait_for(self, aw: Awaitable[T], timeout_s: float) -> T:
        self.timeouts_s.append(timeout_s)
        return await super().wait_for(aw, timeout_s)


async def test_the_system_clock_times_out_a_wait_and_passes_a_result_through() -> None:
    clock = SystemClock()
    never = asyncio.Event()
    with pytest.raises(TimeoutError):
        await clock.wait_for(never.wait(), 0.01)

    async def answer() -> int:
        return 42

    assert await clock.wait_for(answer(), 1.0) == 42


def test_the_simulators_clock_times_out_on_virtual_time_exactly() -> None:
    async def scenario() -> tuple[float, float]:
        clock = LoopClock(EPOCH_MS, random.Random(1))
        loop = asyncio.get_running_loop()
        start_s, start_ms = loop.time(), clock.now_ms()
        with pytest.raises(TimeoutError):
            await clock.wait_for(asyncio.Event().wait(), 3600.0)
        return loop.time() - start_s, (clock.now_ms() - start_ms) / 1000

    real = time.monotonic()
    waited_s, wall_s = run_virtual(scenario())
    assert time.monotonic() - real < 5  # an hour of virtual time, in no real time
    assert 3600.0 <= waited_s < 3600.001
    assert 3599.999 <= wall_s < 3600.002  # now_ms reads the same clock the timeout ran on


def test_a_timed_block_on_the_simulators_clock_ends_on_virtual_time() -> None:
    async def scenario() -> float:
        clock = LoopClock(EPOCH_MS, random.Random(1))
        loop = asyncio.get_running_loop()
        start_s = loop.time()
        with pytest.raises(TimeoutError):
            async with clock.timeout(5.0):
                await clock.sleep(60.0)
        return loop.time() - start_s

    assert 5.0 <= run_virtual(scenario()) < 5.001


async def test_a_linger_window_is_waited_on_the_clock() -> None:
    """Two callers, two rounds each, on a 60 s linger: the second round waits out the window
    after the first flush. On a clock that jumps its timeouts that takes no real time (through
    asyncio's own timeout it would take the minute)."""
    clock = JumpingClock()

    async def flush(items: list[int]) -> list[int]:
        return [i * 2 for i in items]

    b: Batcher[int, int] = Batcher(clock, 60_000, flush, max_items=100, gather_ms=0)

    async def rounds(k: int) -> list[int]:
        return [await b.submit(10 * k + r) for r in range(2)]

    real = time.monotonic()
    both = asyncio.gather(rounds(1), rounds(2))
    assert await asyncio.wait_for(both, 5) == [[20, 22], [40, 42]]
    assert time.monotonic() - real < 5
    assert clock.timeouts_s and max(clock.timeouts_s) <= 60.0
    assert 59.0 < clock.jumped_s <= 60.0  # the rest of the window, skipped


def test_a_long_poll_on_an_empty_queue_waits_on_the_clock() -> None:
    async def scenario() -> list[float]:
        clock = RecordingLoopClock()
        node = Engine(MemoryStore(), clock, 5, "a")
        try:
            await node.create_queue("jobs")
            assert await node.receive("jobs", wait_s=20) == []
        finally:
            await node.close()
        return clock.timeouts_s

    timeouts_s = run_virtual(scenario())
    assert timeouts_s and max(timeouts_s) <= 20.0
