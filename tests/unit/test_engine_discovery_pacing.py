"""How often a node probes the slot log for other nodes' sends, in virtual time.

A probe is a GET, billed. While slots keep coming a waiting consumer probes every 50 ms; on a
quiet log the pace backs off to once a second and stays there across receives, so a consumer
repeating short polls (Celery's `wait_time_seconds=1`) does not restart it at 50 ms each time.
"""

from __future__ import annotations

import asyncio
import random

from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Engine, SendRequest
from okuri.errors import NotFound
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.counting import CountingStore
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob

Q = "jobs"
LINGER_MS = 20
QUIET_S = 60


def nodes(store: MemoryStore) -> tuple[Engine, Engine, CountingStore]:
    """Node a (a producer's) and node b (a consumer's, its requests counted)."""
    counted = CountingStore(store)
    a = Engine(store, LoopClock(EPOCH_MS, random.Random(1)), LINGER_MS, "a")
    b = Engine(counted, LoopClock(EPOCH_MS, random.Random(2)), LINGER_MS, "b")
    return a, b, counted


def test_short_polls_on_a_quiet_queue_cost_a_get_each_and_one_probe_a_second() -> None:
    async def scenario() -> tuple[int, int]:
        a, b, counted = nodes(MemoryStore())
        await a.create_queue(Q)
        await b.read_manifest(Q)
        loop = asyncio.get_running_loop()
        start = loop.time()
        before = counted.counts["get"]
        receives = 0
        while loop.time() - start < QUIET_S:
            assert await b.receive(Q, 10, None, 1) == []
            receives += 1
            await asyncio.sleep(0.2)  # Celery's polling_interval in its smoke tests
        gets = counted.counts["get"] - before
        await a.close()
        await b.close()
        return gets, receives

    gets, receives = run_virtual(scenario())
    # An empty receive reads the manifest when its copy is over a second old (one GET, as SQS
    # bills one request), and the slot log is probed once a second; restarting the probes at
    # 50 ms on every receive made it five probes a receive.
    assert receives >= QUIET_S // 1.2 - 1
    assert gets <= receives + QUIET_S * 1.1 + 5, (gets, receives)


def test_a_send_through_another_node_still_arrives_within_a_second_of_a_quiet_spell() -> None:
    async def scenario() -> list[float]:
        a, b, _ = nodes(MemoryStore())
        await a.create_queue(Q)
        await b.read_manifest(Q)
        loop = asyncio.get_running_loop()
        for _ in range(20):  # ten quiet seconds: the pace is at its slowest
            assert await b.receive(Q, 10, None, 0) == []
            await asyncio.sleep(0.5)
        waits = []
        for i in range(5):
            sent = loop.time()
            await a.send_one(Q, SendRequest(b"m%d" % i))
            got = await b.receive(Q, 10, None, 5)
            waits.append(loop.time() - sent)
            assert [d.message.body for d in got] == [b"m%d" % i]
            await b.ack(Q, [d.receipt_handle for d in got])
        await a.close()
        await b.close()
        return waits

    waits = run_virtual(scenario())
    assert max(waits) <= limits.poll_ms_max / 1000 + 0.2, waits


class EmptyReads(MemoryStore):
    """Counts GETs that found no object: probes of slots not written yet."""

    misses = 0

    async def get(self, key: str) -> Blob:
        try:
            return await super().get(key)
        except NotFound:
            self.misses += 1
            raise


def test_consumers_receiving_at_once_share_one_probe_of_the_log() -> None:
    """Thirty consumers on one node ask at once while another node's sends keep coming: a probe
    already out answers for all of them. Each reading the same next slot for itself made
    most of a busy cluster's GETs (404s on one empty slot, thirty at a time)."""

    async def scenario() -> tuple[int, int, float]:
        store = EmptyReads()
        a = Engine(store, LoopClock(EPOCH_MS, random.Random(1)), 100, "a")
        b = Engine(store, LoopClock(EPOCH_MS, random.Random(2)), 100, "b")
        await a.create_queue(Q)
        await b.read_manifest(Q)
        loop = asyncio.get_running_loop()
        start = loop.time()
        end = start + 10
        received = 0
        sends: list[asyncio.Future[object]] = []

        async def produce() -> None:
            i = 0
            while loop.time() < end:  # a batch every 10 ms, not waiting for the answers
                batch = [SendRequest(b"m%d-%d" % (i, k)) for k in range(10)]
                sends.append(asyncio.ensure_future(a.send(Q, batch)))
                i += 1
                await asyncio.sleep(0.01)

        async def consume() -> None:
            nonlocal received
            while loop.time() < end + 2:
                got = await b.receive(Q, 10, None, 1)
                received += len(got)
                if got:
                    await b.ack(Q, [d.receipt_handle for d in got])

        await asyncio.gather(produce(), *(consume() for _ in range(30)))
        await asyncio.gather(*sends)
        seconds = loop.time() - start
        await a.close()
        await b.close()
        return store.misses, received, seconds

    misses, received, seconds = run_virtual(scenario())
    assert received >= 9_000
    # The log is probed at most every 50 ms while slots keep coming (20 a second), and node a
    # reads no slot: each consumer probing for itself missed several times as often.
    assert misses <= 20 * seconds, (misses, seconds)
