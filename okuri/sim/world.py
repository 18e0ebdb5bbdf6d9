"""A simulated cluster: nodes sharing one faulty in-memory bucket, clients, crashes, bad clocks.

One root seed decides everything: the shape of the run (swarm testing: node count, linger, fault
rates, clock skew, workload mix) and every random choice inside it. A run has a fault phase, then
a liveness phase with faults off, every node up and consumers draining, which must converge.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core.invariants import check_state
from okuri.core.state import QueueAttrs, decode_state
from okuri.engine import Engine, SendRequest
from okuri.engine.types import Delivery
from okuri.errors import OkuriError
from okuri.sim.checkers import Violation, check_history
from okuri.sim.history import Acked, Delivered, History, Purged, Sent
from okuri.store.counting import CountingStore
from okuri.store.memory import Faults, MemoryStore

T = TypeVar("T")
EPOCH_MS = 1_767_225_600_000  # 2026-01-01, so timestamps look real
QUEUE = "jobs"


@dataclass(frozen=True)
class SimConfig:
    seed: int
    nodes: int
    linger_ms: int
    latency_ms: float
    p_transient: float
    p_conflict: float
    p_ambiguous: float
    skew_ms_max: int
    crash_every_s: float  # mean seconds between crashes across the cluster; 0 = never
    producers: int
    consumers: int
    messages: int
    visibility_s: int
    max_receive_count: int | None
    retention_s: int
    purges: int
    fault_phase_s: float

    @staticmethod
    def from_seed(seed: int) -> SimConfig:
        r = random.Random(f"config-{seed}")
        return SimConfig(
            seed=seed,
            nodes=r.choice([1, 2, 2, 3, 4]),
            linger_ms=r.choice([5, 20, 100]),
            latency_ms=r.choice([0.0, 5.0, 20.0]),
            p_transient=r.choice([0.0, 0.01, 0.05]),
            p_conflict=r.choice([0.0, 0.01, 0.05]),
            p_ambiguous=r.choice([0.0, 0.01, 0.05]),
            skew_ms_max=r.choice([0, 200, 3000]),
            crash_every_s=r.choice([0.0, 5.0, 15.0]),
            producers=r.randint(1, 3),
            consumers=r.randint(1, 3),
            messages=r.randint(40, 160),
            visibility_s=r.randint(1, 4),
            max_receive_count=r.choice([None, None, 2, 4]),
            retention_s=r.choice([4 * 86400, 4 * 86400, 4 * 86400, 60]),
            purges=r.choice([0, 0, 0, 1, 2]),
            fault_phase_s=30.0,
        )


class NodeDown(Exception):
    """The node serving a request crashed before answering."""


@dataclass
class Node:
    index: int
    clock: LoopClock
    engine: Engine | None = None
    generation: int = 0
    inflight: dict[asyncio.Task[Any], None] = field(default_factory=dict)


@dataclass
class RunResult:
    config: SimConfig
    violations: list[Violation]
    history: History
    requests: dict[str, int]

    @property
    def ok(self) -> bool:
        return not self.violations


class World:
    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.rng = random.Random(f"world-{config.seed}")
        self.history = History()
        faults = Faults(
            enabled=True,
            latency_ms_median=config.latency_ms,
            p_transient=config.p_transient,
            p_conflict=config.p_conflict,
            p_ambiguous=config.p_ambiguous,
        )
        self.memory = MemoryStore(
            clock=LoopClock(EPOCH_MS, random.Random(f"store-{config.seed}")),
            rng=random.Random(f"faults-{config.seed}"),
            faults=faults,
        )
        self.store = CountingStore(self.memory)
        self.nodes = [
            Node(
                i,
                LoopClock(
                    EPOCH_MS,
                    random.Random(f"node-{config.seed}-{i}"),
                    self.rng.randint(-config.skew_ms_max, config.skew_ms_max),
                ),
            )
            for i in range(config.nodes)
        ]
        self.stopping = False

    # --- nodes -------------------------------------------------------------------------------

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    def start(self, node: Node) -> None:
        node.generation += 1
        node.engine = Engine(
            self.store,
            node.clock,
            self.config.linger_ms,
            node_id=f"n{node.index}g{node.generation}",
        )
        self.history.note(self.now(), f"start n{node.index}")

    def crash(self, node: Node) -> None:
        if node.engine is None:
            return
        self.history.crashes += 1
        self.history.note(self.now(), f"crash n{node.index}")
        engine, node.engine = node.engine, None
        for task in list(node.inflight):
            task.cancel()
        engine.crash()

    async def call(self, fn: Callable[[Engine], Awaitable[T]]) -> T:
        """Send one request to a random live node, as a load balancer would."""
        live = [n for n in self.nodes if n.engine is not None]
        if not live:
            raise NodeDown("no node is up")
        node = self.rng.choice(live)
        assert node.engine is not None
        task = asyncio.ensure_future(fn(node.engine))
        node.inflight[task] = None
        try:
            return await task
        except asyncio.CancelledError:
            if task.cancelled():
                raise NodeDown(f"n{node.index} crashed") from None
            raise
        finally:
            node.inflight.pop(task, None)

    async def chaos(self) -> None:
        if self.config.crash_every_s <= 0:
            return
        while not self.stopping:
            await asyncio.sleep(self.rng.expovariate(1 / self.config.crash_every_s))
            if self.stopping:
                return
            node = self.rng.choice(self.nodes)
            self.crash(node)
            await asyncio.sleep(self.rng.uniform(0.1, 3.0))
            if node.engine is None:
                self.start(node)

    # --- clients -----------------------------------------------------------------------------

    async def producer(self, index: int, count: int) -> None:
        sent = 0
        batch_no = 0
        while sent < count and not self.stopping:
            await asyncio.sleep(self.rng.expovariate(1 / 0.3))
            size = min(count - sent, self.rng.choice([1, 1, 1, 3, 10]))
            reqs = []
            for k in range(size):
                body = f"p{index}-b{batch_no}-m{k}".encode()
                self.history.attempted_bodies.add(body)
                delay = self.rng.choice([None, None, None, 0, 1, 3])
                reqs.append(SendRequest(body, delay_s=delay))
            batch_no += 1
            sent += size
            start = self.now()
            try:
                results = await self.call(lambda e, r=reqs: e.send(QUEUE, r))  # type: ignore[misc]
            except (NodeDown, OkuriError):
                continue
            end = self.now()
            for req, res in zip(reqs, results, strict=True):
                if not isinstance(res, Exception):
                    self.history.sent.append(Sent(QUEUE, res.message_id, req.body, start, end))
                    self.history.note(end, f"sent {res.message_id}")

    def _record(self, queue: str, got: list[Delivery], start: float) -> None:
        end = self.now()
        for d in got:
            self.history.delivered.append(
                Delivered(
                    queue,
                    d.message.id,
                    d.message.body,
                    d.receive_count,
                    start,
                    end,
                    d.message.dead_letter_source,
                )
            )
            self.history.note(end, f"delivered {queue}/{d.message.id}#{d.receive_count}")

    async def _ack(self, queue: str, batch: list[Delivery]) -> None:
        if not batch:
            return
        start = self.now()
        try:
            results = await self.call(lambda e: e.ack(queue, [d.receipt_handle for d in batch]))
        except (NodeDown, OkuriError):
            return
        end = self.now()
        for d, res in zip(batch, results, strict=True):
            self.history.acked.append(
                Acked(queue, d.message.id, d.receive_count, str(res), start, end)
            )
            self.history.note(end, f"ack {queue}/{d.message.id}#{d.receive_count}={res}")

    async def consumer(self, index: int, queue: str = QUEUE) -> None:
        old: list[Delivery] = []
        while not self.stopping:
            start = self.now()
            vis = self.rng.choice([None, None, 1, self.config.visibility_s])
            try:
                got = await self.call(
                    lambda e, v=vis: e.receive(  # type: ignore[misc]
                        queue, self.rng.randint(1, 10), v, self.rng.choice([0, 1, 3])
                    )
                )
            except (NodeDown, OkuriError):
                await asyncio.sleep(0.2)
                continue
            self._record(queue, got, start)
            if not got:
                continue
            fate = self.rng.random()
            if fate < 0.1:
                old.extend(got)  # abandon: let the lease expire
                continue
            if fate < 0.2:
                await asyncio.sleep(self.rng.uniform(0, 2 * self.config.visibility_s))
            elif fate < 0.3:
                entries = [(d.receipt_handle, self.rng.randint(0, 3)) for d in got]
                with contextlib.suppress(NodeDown, OkuriError):
                    await self.call(lambda e, es=entries: e.change_visibility(queue, es))  # type: ignore[misc]
            if old and self.rng.random() < 0.3:
                got = [*got, *old[:3]]  # try some receipts that may be stale by now
                del old[:3]
            await self._ack(queue, got)

    async def purger(self) -> None:
        for _ in range(self.config.purges):
            await asyncio.sleep(self.rng.uniform(2, self.config.fault_phase_s))
            start = self.now()
            try:
                await self.call(lambda e: e.purge(QUEUE))
            except (NodeDown, OkuriError):
                self.history.purged.append(Purged(QUEUE, start, self.now(), confirmed=False))
                continue
            self.history.purged.append(Purged(QUEUE, start, self.now(), confirmed=True))
            self.history.note(self.now(), "purged")

    # --- the run -----------------------------------------------------------------------------

    async def run(self) -> list[Violation]:
        cfg = self.config
        for node in self.nodes:
            self.start(node)
        attrs = QueueAttrs(
            visibility_timeout_s=cfg.visibility_s,
            retention_s=cfg.retention_s,
            max_receive_count=cfg.max_receive_count,
        )
        for _ in range(100):
            try:
                await self.call(lambda e: e.create_queue(QUEUE, attrs))
                break
            except (NodeDown, OkuriError):
                await asyncio.sleep(0.1)
        per_producer = max(1, cfg.messages // cfg.producers)
        clients = [
            asyncio.ensure_future(self.producer(i, per_producer)) for i in range(cfg.producers)
        ]
        consumers = [asyncio.ensure_future(self.consumer(i)) for i in range(cfg.consumers)]
        extra = [asyncio.ensure_future(self.chaos()), asyncio.ensure_future(self.purger())]
        await asyncio.sleep(cfg.fault_phase_s)
        self.stopping = True
        # Chaos may be in the middle of a long random sleep; waiting it out would leave the queue
        # without consumers long enough for retention to expire messages, which no_loss (judged
        # against the last delivery) would then report as lost. The liveness phase restarts any
        # node it left down.
        extra[0].cancel()
        await asyncio.gather(*clients, *consumers, *extra, return_exceptions=True)
        return await self.liveness()

    async def liveness(self) -> list[Violation]:
        """Faults off, every node up: the queue must drain, and then the invariants must hold."""
        cfg = self.config
        self.memory.faults.enabled = False
        for node in self.nodes:
            if node.engine is None:
                self.start(node)
        self.history.note(self.now(), "liveness")
        drained = False
        deadline = self.now() + 600
        quiet = 0
        while self.now() < deadline:
            moved = 0
            for queue in (QUEUE, f"{QUEUE}-dlq"):
                start = self.now()
                try:
                    got = await self.call(lambda e, q=queue: e.receive(q, 10, 30, 1))  # type: ignore[misc]
                except OkuriError:
                    got = []
                self._record(queue, got, start)
                await self._ack(queue, got)
                moved += len(got)
            quiet = quiet + 1 if moved == 0 else 0
            if quiet >= 3 and await self._empty():
                drained = True
                break
        violations = []
        if not drained:
            violations.append(Violation("liveness", "the queue did not drain within 600 s"))
        skew_s = cfg.skew_ms_max / 1000 * 2 + 1
        violations += check_history(self.history, QUEUE, cfg.retention_s, skew_s)
        violations += await self.final_state()
        return violations

    async def _empty(self) -> bool:
        for queue in (QUEUE, f"{QUEUE}-dlq"):
            try:
                c = await self.call(lambda e, q=queue: e.counts(q))  # type: ignore[misc]
            except OkuriError:
                continue  # the DLQ may not exist
            if c.visible or c.in_flight or c.delayed:
                return False
        return True

    async def final_state(self) -> list[Violation]:
        out: list[Violation] = []
        for node in self.nodes:
            if node.engine is not None:
                await node.engine.close()
        engine = Engine(self.store, self.nodes[0].clock, self.config.linger_ms, node_id="checker")
        if self.config.retention_s < 3600:
            # Expired messages are collected by the next commit; jump past retention, commit.
            await asyncio.sleep(self.config.retention_s + self.config.skew_ms_max / 1000 + 1)
        for queue in (QUEUE, f"{QUEUE}-dlq"):
            with contextlib.suppress(OkuriError):
                await engine.receive(queue, 1, 0, 0)
        for queue in (QUEUE, f"{QUEUE}-dlq"):
            try:
                await engine.sweep(queue)
            except OkuriError as err:
                out.append(Violation("sweep", f"{queue}: {err}"))
        await engine.close()
        await asyncio.sleep(1)
        manifests = 0
        for key, blob in sorted(self.memory.objects.items()):
            if key.startswith(keys.MANIFESTS):
                manifests += 1
                st = decode_state(blob.data)
                check_state(st)
                if st.segments:
                    out.append(
                        Violation("final_state", f"{key} still holds {len(st.segments)} segments")
                    )
            else:
                out.append(Violation("no_orphans", f"{key} left in the bucket after the drain"))
        return out[:5]


async def simulate(config: SimConfig) -> RunResult:
    world = World(config)
    violations = await world.run()
    return RunResult(config, violations, world.history, world.store.counts.snapshot())
