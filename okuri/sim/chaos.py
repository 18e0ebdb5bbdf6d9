"""The chaos workload: clients that send through random nodes and misbehave on purpose.

Why a module of its own: it is one of the two things a run can do on the simulated cluster
(okuri/sim/world.py), and the one that hunts for safety bugs. Most seeds run it (the shape is
drawn in okuri/sim/config.py). Producers send small batches, some delayed, each to a random live
node; consumers abandon messages, sleep past their leases, change visibility and reuse receipts
that may be stale by now; a purger empties the queue now and then; nodes crash throughout. After
`fault_phase_s` the clients stop and the world's liveness phase drains and checks the queue.
"""

from __future__ import annotations

import asyncio
import contextlib

from okuri.engine import SendRequest
from okuri.engine.types import Delivery
from okuri.errors import OkuriError
from okuri.sim.checkers import Violation
from okuri.sim.history import Purged
from okuri.sim.world import QUEUE, NodeDown, World


class ChaosLoad:
    """The chaos shape's clients and its run over one world."""

    def __init__(self, world: World) -> None:
        self.world = world

    async def producer(self, index: int, count: int) -> None:
        w = self.world
        sent = 0
        batch_no = 0
        while sent < count and not w.stopping:
            await asyncio.sleep(w.rng.expovariate(1 / 0.3))
            size = min(count - sent, w.rng.choice([1, 1, 1, 3, 10]))
            reqs = []
            for k in range(size):
                body = f"p{index}-b{batch_no}-m{k}".encode()
                w.history.attempted_bodies.add(body)
                delay = w.rng.choice([None, None, None, 0, 1, 3])
                reqs.append(SendRequest(body, delay_s=delay))
            batch_no += 1
            sent += size
            await w.send(reqs)

    async def consumer(self, index: int, queue: str = QUEUE) -> None:
        w = self.world
        old: list[Delivery] = []
        while not w.stopping:
            start = w.now()
            vis = w.rng.choice([None, None, 1, w.config.visibility_s])
            try:
                got = await w.call(
                    lambda e, v=vis: e.receive(  # type: ignore[misc]
                        queue, w.rng.randint(1, 10), v, w.rng.choice([0, 1, 3])
                    )
                )
            except (NodeDown, OkuriError):
                await asyncio.sleep(0.2)
                continue
            w.record(queue, got, start)
            if not got:
                continue
            fate = w.rng.random()
            if fate < 0.1:
                old.extend(got)  # abandon: let the lease expire
                continue
            if fate < 0.2:
                await asyncio.sleep(w.rng.uniform(0, 2 * w.config.visibility_s))
            elif fate < 0.3:
                entries = [(d.receipt_handle, w.rng.randint(0, 3)) for d in got]
                with contextlib.suppress(NodeDown, OkuriError):
                    await w.call(lambda e, es=entries: e.change_visibility(queue, es))  # type: ignore[misc]
            if old and w.rng.random() < 0.3:
                got = [*got, *old[:3]]  # try some receipts that may be stale by now
                del old[:3]
            await w.ack(queue, got)

    async def purger(self) -> None:
        w = self.world
        for _ in range(w.config.purges):
            await asyncio.sleep(w.rng.uniform(2, w.config.fault_phase_s))
            start = w.now()
            try:
                await w.call(lambda e: e.purge(QUEUE))
            except (NodeDown, OkuriError):
                w.history.purged.append(Purged(QUEUE, start, w.now(), confirmed=False))
                continue
            w.history.purged.append(Purged(QUEUE, start, w.now(), confirmed=True))
            w.history.note(w.now(), "purged")

    async def run(self) -> list[Violation]:
        w = self.world
        cfg = w.config
        per_producer = max(1, cfg.messages // cfg.producers)
        clients = [
            asyncio.ensure_future(self.producer(i, per_producer)) for i in range(cfg.producers)
        ]
        consumers = [asyncio.ensure_future(self.consumer(i)) for i in range(cfg.consumers)]
        extra = [asyncio.ensure_future(w.crasher()), asyncio.ensure_future(self.purger())]
        await asyncio.sleep(cfg.fault_phase_s)
        w.stopping = True
        # The crasher may be in the middle of a long random sleep; waiting it out would leave the
        # queue without consumers long enough for retention to expire messages, which no_loss
        # (judged against the last delivery) would then report as lost. The liveness phase
        # restarts any node it left down.
        extra[0].cancel()
        await asyncio.gather(*clients, *consumers, *extra, return_exceptions=True)
        return await w.liveness()
