"""The steady workload: what a deployment looks like, run until the liveness oracle is satisfied.

Why a module of its own: it asks a different question of the cluster than the chaos workload
(okuri/sim/chaos.py). Chaos hunts for safety bugs; steady load asks for progress. One seed in
`STEADY_SEED_EVERY` (okuri/sim/config.py draws its shape and sets its rate) runs it: two to four
nodes, producers pinned to some and well-behaved consumers to the others, so every message is
written through one node and must be found from another. Producers send a bounded number of
batches at a fixed rate, half of what the consumers take on a healthy engine. The fault phase
may end with the consumer nodes down (a backlog to catch up on); the load then goes on for
`STEADY_PHASE_S` with faults off, and the liveness oracle (okuri/sim/liveness.py) demands
progress: every message delivered within a bound, a backlog that does not grow. A steady seed
runs thousands of messages where a chaos seed runs dozens, hence a share of the seeds.
"""

from __future__ import annotations

import asyncio

from okuri import limits
from okuri.engine import SendRequest, SendResult
from okuri.errors import OkuriError
from okuri.sim.checkers import Violation
from okuri.sim.liveness import LivenessBounds, check_liveness
from okuri.sim.world import QUEUE, NodeDown, World

STEADY_WAIT_S_CHOICES = (1, 5, 20)  # consumers long-poll, as SQS clients do
STEADY_DOWN_RETRY_S = 0.2  # a pinned client whose node is down tries again after this
# After the load, consumers stay until every acknowledged send was delivered, checking this
# often, for at most this long: longer than any delivery bound the liveness oracle sets, so
# a late message is judged on the consumers' pace, not on the slower drain that follows.
STEADY_TAIL_CHECK_S = 0.5
STEADY_TAIL_S_MAX = 60.0


class SteadyLoad:
    """The steady shape's clients and its run over one world."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.load_done = False  # the producers are finished and the tail has been waited out

    async def producer(self, index: int) -> None:
        """Send `batches` batches through one node at a fixed rate, not waiting for replies
        (many clients, each sending now and then), so the rate does not sag with latency."""
        w = self.world
        cfg = w.config
        node = w.nodes[index % cfg.producer_nodes]
        sends: list[asyncio.Future[list[SendResult | None]]] = []
        await asyncio.sleep(w.rng.uniform(0, cfg.batch_interval_s))
        for batch_no in range(cfg.batches):
            reqs = []
            for k in range(cfg.batch_messages):
                body = f"p{index}-b{batch_no}-m{k}".encode()
                w.history.attempted_bodies.add(body)
                reqs.append(SendRequest(body))
            sends.append(asyncio.ensure_future(w.send(reqs, node)))
            await asyncio.sleep(cfg.batch_interval_s)
        await asyncio.gather(*sends)

    async def consumer(self, index: int) -> None:
        """Receive and delete through one node until the load is over; never misbehave."""
        w = self.world
        cfg = w.config
        consumer_nodes = w.nodes[cfg.producer_nodes :]
        node = consumer_nodes[index % len(consumer_nodes)]
        wait_s = w.rng.choice(STEADY_WAIT_S_CHOICES)
        while not self.load_done:
            start = w.now()
            try:
                got = await w.call(
                    lambda e: e.receive(QUEUE, limits.receive_messages_max, None, wait_s), node
                )
            except (NodeDown, OkuriError):
                await asyncio.sleep(STEADY_DOWN_RETRY_S)
                continue
            w.record(QUEUE, got, start)
            await w.ack(QUEUE, got, node)

    async def run(self) -> list[Violation]:
        """Steady load through the fault phase and on for `steady_phase_s` after it, healed."""
        w = self.world
        cfg = w.config
        producers = [asyncio.ensure_future(self.producer(i)) for i in range(cfg.producers)]
        consumers = [asyncio.ensure_future(self.consumer(i)) for i in range(cfg.consumers)]
        crasher = asyncio.ensure_future(w.crasher())
        await asyncio.sleep(cfg.fault_phase_s - cfg.outage_s)
        w.stopping = True
        crasher.cancel()
        await asyncio.gather(crasher, return_exceptions=True)
        if cfg.outage_s > 0:
            # The fault phase ends with every consumer node down (a bad deploy of the workers'
            # side); the heal brings them back to the backlog the producers built meanwhile.
            for node in w.nodes[cfg.producer_nodes :]:
                w.crash(node)
            await asyncio.sleep(cfg.outage_s)
        w.heal()
        await asyncio.gather(*producers)
        w.history.note(w.now(), "load done")
        load_end_s = w.now()
        waiting = {s.message_id for s in w.history.sent} - w.delivered_ids
        while waiting and w.now() < load_end_s + STEADY_TAIL_S_MAX:
            await asyncio.sleep(STEADY_TAIL_CHECK_S)
            waiting -= w.delivered_ids
        self.load_done = True
        await asyncio.gather(*consumers)
        violations = await w.liveness()
        assert w.healed_s is not None
        bounds = LivenessBounds.for_run(
            linger_ms=cfg.linger_ms,
            latency_ms=cfg.latency_ms,
            visibility_s=cfg.visibility_s,
            skew_ms_max=cfg.skew_ms_max,
            send_rate_per_s=cfg.send_rate_per_s,
        )
        return check_liveness(w.history, QUEUE, bounds, w.healed_s, load_end_s) + violations
