"""A queue that runs for days keeps a small manifest and an almost empty bucket."""

from __future__ import annotations

import asyncio
import random

from okuri.clock import LoopClock
from okuri.engine import Engine, SendRequest
from okuri.sim.loop import run_virtual
from okuri.sim.runner import seed_workers
from okuri.sim.world import EPOCH_MS
from okuri.store.memory import Faults, MemoryStore


async def _two_days(rate_per_s: float) -> tuple[list[int], list[int], int, int]:
    rng = random.Random(5)
    memory = MemoryStore(
        clock=LoopClock(EPOCH_MS, random.Random(1)),
        rng=random.Random(2),
        faults=Faults(enabled=True, latency_ms_median=10),
    )
    producer = Engine(memory, LoopClock(EPOCH_MS, random.Random(3)), 100, "producer")
    consumer = Engine(memory, LoopClock(EPOCH_MS, random.Random(4)), 100, "consumer")
    await producer.create_queue("q")
    loop = asyncio.get_running_loop()
    stop = loop.time() + 48 * 3600
    manifest_bytes: list[int] = []
    objects: list[int] = []
    sent = acked = 0

    async def produce() -> None:
        nonlocal sent
        while loop.time() < stop:
            await producer.send_one("q", SendRequest(b"x" * 100))
            sent += 1
            await asyncio.sleep(1 / rate_per_s)

    async def consume() -> None:
        nonlocal acked
        while loop.time() < stop:
            got = await consumer.receive("q", 10, 30, 20)
            if got and rng.random() < 0.95:  # the rest time out and come back
                await consumer.ack("q", [d.receipt_handle for d in got])
                acked += len(got)

    async def watch() -> None:
        while loop.time() < stop:
            await asyncio.sleep(900)
            manifest_bytes.append(len(memory.objects["m/q"].data))
            objects.append(len(memory.objects))

    await asyncio.gather(produce(), consume(), consume(), watch())
    await producer.close()
    await consumer.close()
    return manifest_bytes, objects, sent, acked


def two_days(rate_per_s: float) -> tuple[list[int], list[int], int, int]:
    return run_virtual(_two_days(rate_per_s))


def test_manifest_and_bucket_stay_small_over_two_simulated_days() -> None:
    # In a worker process: the same run, outside the coverage tracer that makes it 2-3x slower.
    with seed_workers(1) as worker:
        manifest_bytes, objects, sent, acked = worker.submit(two_days, 0.05).result()
    assert sent > 8000 and acked > 0.95 * sent
    assert max(manifest_bytes) < 8 * 1024, manifest_bytes
    assert max(objects) <= 8, objects
