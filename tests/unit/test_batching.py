"""Group commit's timing: a lone caller is never held, not even by a linger; clients that all
wait on the next flush are not held by it either, while one the last flush carried and not back
yet holds it; on a zero linger two are never held, and three or more at once have their flushes
spaced by the gather window."""

from __future__ import annotations

import asyncio
import itertools
import random
import time

from okuri.clock import LoopClock, SystemClock
from okuri.engine.batching import Batcher, caller
from okuri.sim.loop import run_virtual

GATHER_MS = 150
FLUSH_S = 0.01
LINGER_MS = 300


class Recorder:
    def __init__(self) -> None:
        self.starts: list[float] = []
        self.sizes: list[int] = []

    async def flush(self, items: list[int]) -> list[int]:
        self.starts.append(time.monotonic())
        self.sizes.append(len(items))
        await asyncio.sleep(FLUSH_S)
        return [i * 2 for i in items]

    def gaps_s(self) -> list[float]:
        return [b - a for a, b in zip(self.starts, self.starts[1:], strict=False)]


class VirtualRecorder(Recorder):
    """Flushes on the loop's (virtual) time."""

    async def flush(self, items: list[int]) -> list[int]:
        self.starts.append(asyncio.get_running_loop().time())
        self.sizes.append(len(items))
        await asyncio.sleep(FLUSH_S)
        return [i * 2 for i in items]


def batcher(rec: Recorder, linger_ms: int = 0) -> Batcher[int, int]:
    return Batcher(SystemClock(), linger_ms, rec.flush, max_items=100, gather_ms=GATHER_MS)


async def closed_loop(
    b: Batcher[int, int], callers: int, rounds: int, named: bool = False
) -> list[int]:
    """`callers` tasks, each submitting its next item as soon as its last one is answered;
    `named`: each names itself as a client, as the server names a connection."""

    async def one(k: int) -> list[int]:
        if named:
            caller.set(f"client {k}")
        return [await b.submit(k * 1000 + r) for r in range(rounds)]

    results = await asyncio.gather(*(one(k) for k in range(callers)))
    return [x for r in results for x in r]


async def test_a_lone_caller_never_waits_for_the_gather_window() -> None:
    rec = Recorder()
    b = batcher(rec)
    start = time.monotonic()
    assert await closed_loop(b, callers=1, rounds=5) == [0, 2, 4, 6, 8]
    assert time.monotonic() - start < GATHER_MS / 1000
    assert max(rec.gaps_s()) < GATHER_MS / 1000


async def test_two_callers_at_once_are_not_held_back() -> None:
    rec = Recorder()
    b = batcher(rec)
    start = time.monotonic()
    out = await closed_loop(b, callers=2, rounds=5)
    assert sorted(out) == sorted(2 * (k * 1000 + r) for k in range(2) for r in range(5))
    assert time.monotonic() - start < GATHER_MS / 1000


async def test_three_callers_at_once_share_flushes_spaced_by_the_gather_window() -> None:
    rec = Recorder()
    b = batcher(rec)
    out = await closed_loop(b, callers=3, rounds=4)
    assert sorted(out) == sorted(2 * (k * 1000 + r) for k in range(3) for r in range(4))
    # The first flush carries whoever came first; from then on all three wait together.
    assert rec.sizes[-1] == 3 and len(rec.sizes) <= 6
    assert min(rec.gaps_s()[1:]) >= GATHER_MS / 1000 * 0.9


async def test_a_longer_linger_still_caps_a_busy_batcher() -> None:
    rec = Recorder()
    b = batcher(rec, linger_ms=GATHER_MS * 2)
    await closed_loop(b, callers=3, rounds=2)
    assert min(rec.gaps_s()) >= GATHER_MS * 2 / 1000 * 0.9


async def test_a_lone_client_is_not_held_by_the_linger() -> None:
    """One client waiting on each answer: nothing could ride along, so each flush goes at once
    (on S3 the linger is 100 ms; a sequential client would wait it out on every call)."""
    rec = Recorder()
    b = batcher(rec, linger_ms=GATHER_MS * 2)
    start = time.monotonic()
    assert await closed_loop(b, callers=1, rounds=4, named=True) == [0, 2, 4, 6]
    assert time.monotonic() - start < GATHER_MS * 2 / 1000


def test_clients_all_waiting_flush_at_once_without_the_linger() -> None:
    """Two named clients in a closed loop, each waiting on its answer: once both are in,
    nothing more could ride along, so each flush goes at once (virtual time), carrying both.
    Before, every flush after the first waited out the linger."""

    async def scenario() -> tuple[list[int], float]:
        rec = VirtualRecorder()
        b = Batcher(LoopClock(0, random.Random(1)), LINGER_MS, rec.flush, max_items=100)
        loop = asyncio.get_running_loop()
        start = loop.time()
        await closed_loop(b, callers=2, rounds=5, named=True)
        return rec.sizes, loop.time() - start

    sizes, took_s = run_virtual(scenario())
    assert sizes[-4:] == [2, 2, 2, 2]
    assert took_s < len(sizes) * FLUSH_S + 1e-6 < LINGER_MS / 1000


def test_a_client_of_the_last_flush_not_back_yet_holds_the_linger() -> None:
    """A client the last flush carried may be about to ask again: the next flush waits the
    linger for it (the cost cap), and goes at once only when it is in."""

    async def scenario() -> tuple[list[int], list[float]]:
        rec = VirtualRecorder()
        b = Batcher(LoopClock(0, random.Random(1)), LINGER_MS, rec.flush, max_items=100)

        async def client(name: str, rounds: int) -> None:
            caller.set(name)
            for r in range(rounds):
                await b.submit(r)

        await asyncio.gather(client("a", 3), client("b", 1))  # b leaves after one call
        return rec.sizes, rec.starts

    sizes, starts = run_virtual(scenario())
    assert sizes == [2, 1, 1]
    gaps = [later - earlier for earlier, later in itertools.pairwise(starts)]
    assert gaps[0] >= LINGER_MS / 1000  # b was in the last flush and is not back: the linger
    assert gaps[1] < LINGER_MS / 1000  # then a alone: at once


async def test_an_unnamed_task_is_held_by_the_linger() -> None:
    """A task no server named (background work, one of many simulated clients) may not be
    alone: the linger holds it, as it always did."""
    rec = Recorder()
    b = batcher(rec, linger_ms=GATHER_MS * 2)
    await closed_loop(b, callers=1, rounds=3)
    assert min(rec.gaps_s()) >= GATHER_MS * 2 / 1000 * 0.9
