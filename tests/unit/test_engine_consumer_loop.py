"""An SQS consumer loop (receive 10, delete them, receive again) on S3-like latency, in
virtual time: the round trips each turn costs.

A delete's commit takes the consumer's next batch along (leases taken ahead), so the receive
that follows makes only its re-check read, never a commit of its own; and consumers that all
wait on the next commit flush at once rather than waiting out the linger.
"""

from __future__ import annotations

import asyncio
import random

from okuri.clock import LoopClock
from okuri.core import keys
from okuri.engine import Engine, SendRequest, caller
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import Faults, MemoryStore
from okuri.store.port import Blob

Q = "jobs"
LINGER_MS = 100  # S3's default
TURNS = 12
WARM_TURNS = 2


class ManifestRequests(ForwardingStore):
    """Counts the manifest's reads and compare-and-swaps."""

    reads = 0
    writes = 0

    async def get(self, key: str) -> Blob:
        if key == keys.manifest(Q):
            self.reads += 1
        return await super().get(key)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        self.writes += 1
        return await super().put_if_match(key, data, etag)


def s3_like() -> MemoryStore:
    """15 ms a read, 30 ms a write, every time (no spread, no faults)."""
    faults = Faults(enabled=True, latency_ms_median=15, write_latency_ms_median=30, latency_sigma=0)
    return MemoryStore(LoopClock(EPOCH_MS, random.Random(3)), random.Random(4), faults)


async def consumer_turns(consumers: int) -> tuple[int, int, int, float]:
    """Each consumer loops receive and delete; the manifest's reads and writes and the
    deletes over the turns after the warm-up, and the virtual seconds those turns took."""
    store = ManifestRequests(s3_like())
    engine = Engine(store, LoopClock(EPOCH_MS, random.Random(5)), LINGER_MS, "n1")
    await engine.create_queue(Q)
    for i in range(consumers * TURNS * 2):
        await engine.send(Q, [SendRequest(b"%d-%d" % (i, k)) for k in range(10)])
    loop = asyncio.get_running_loop()
    warm = asyncio.Barrier(consumers + 1)
    marked = asyncio.Event()
    marks: dict[str, float | int] = {}

    async def consume(k: int) -> int:
        caller.set(f"consumer {k}")  # its connection, as the server names it
        deletes = 0
        for turn in range(TURNS):
            if turn == WARM_TURNS:
                await warm.wait()
                await marked.wait()
            got = await engine.receive(Q, 10, None, 1)
            assert len(got) == 10
            await engine.ack(Q, [d.receipt_handle for d in got])
            deletes += turn >= WARM_TURNS
        return deletes

    async def mark() -> None:
        await warm.wait()
        marks.update(reads=store.reads, writes=store.writes, at=loop.time())
        marked.set()

    marking = asyncio.ensure_future(mark())
    done = await asyncio.gather(*(consume(k) for k in range(consumers)))
    await marking
    took_s = loop.time() - marks["at"]
    reads, writes = store.reads - int(marks["reads"]), store.writes - int(marks["writes"])
    await engine.close()
    return reads, writes, sum(done), took_s


def test_a_lone_consumers_receive_makes_no_commit_of_its_own() -> None:
    reads, writes, deletes, _ = run_virtual(consumer_turns(1))
    # One compare-and-swap a turn (the delete's, carrying the next batch's leases) and one
    # read (the receive's re-check). Before, every few turns a receive found the leases taken
    # ahead used up and committed on its own: a second compare-and-swap that turn.
    assert deletes == TURNS - WARM_TURNS
    assert writes == deletes
    assert reads == deletes


def test_four_consumers_share_commits_without_waiting_out_the_linger() -> None:
    _, writes, deletes, took_s = run_virtual(consumer_turns(4))
    assert deletes == 4 * (TURNS - WARM_TURNS)
    # Every commit carries several consumers' deletes, and no receive commits by itself.
    assert writes <= deletes // 2
    # Each turn is a commit and a read (45 ms here) plus the wait for the slowest consumer,
    # never a whole linger window: before, four consumers waited for a window on each delete
    # and a turn took over 100 ms.
    assert took_s / (TURNS - WARM_TURNS) < LINGER_MS / 1000
