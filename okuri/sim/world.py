"""A simulated cluster: nodes sharing one faulty in-memory bucket, crashes, bad clocks.

One root seed decides everything (okuri/sim/config.py): the shape of the run and every random
choice inside it. This module is the cluster the workloads run on: nodes that start, crash and
serve requests, the bucket with its seeded faults, and the record of what clients saw
(okuri/sim/history.py, the checkers' only input). A run has a fault phase, driven by a workload
(okuri/sim/chaos.py or okuri/sim/steady.py), then a liveness phase with faults off, every node
up and consumers draining, which must converge; then the invariants must hold in the bucket.

A FIFO seed runs the same cluster on a FIFO queue and FIFO dead-letter queue; its history then
carries groups, deduplication ids and sequence numbers, and the FIFO oracle
(okuri/sim/fifo_checks.py) judges it on top of the checks every run gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from okuri import limits
from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core.invariants import check_state
from okuri.core.receipts import Receipt
from okuri.core.state import QueueAttrs, decode_state
from okuri.engine import Engine, PeerUnreachable, SendRequest, SendResult
from okuri.engine.types import Delivery
from okuri.errors import OkuriError
from okuri.sim.checkers import Violation, check_history
from okuri.sim.config import SimConfig
from okuri.sim.fifo_checks import check_fifo
from okuri.sim.history import (
    UNANSWERED,
    Acked,
    Changed,
    DeadLettered,
    Delivered,
    History,
    Sent,
)
from okuri.sim.native_checks import check_native
from okuri.store.counting import CountingStore
from okuri.store.memory import Faults, MemoryStore

T = TypeVar("T")
EPOCH_MS = 1_767_225_600_000  # 2026-01-01, so timestamps look real
QUEUE = "jobs"
FIFO_QUEUE = "jobs.fifo"
HIGH_THROUGHPUT_FIFO = {
    "DeduplicationScope": "messageGroup",
    "FifoThroughputLimit": "perMessageGroupId",
}
FIFO_DLQ = "jobs-dlq.fifo"  # named in the FIFO queue's attributes: "-dlq" after ".fifo" is no name


def run_s(epoch_ms: int) -> float:
    """A wall-clock time in milliseconds as run seconds (the history's time line)."""
    return (epoch_ms - EPOCH_MS) / 1000


def slot_of(d: Delivery) -> str:
    """The slot a delivered copy is in, from its receipt: its lane's name (okuri/engine/lanes.py)
    and number, since each lane numbers its slots from 0."""
    receipt = Receipt.decode(d.receipt_handle)
    return f"{receipt.queue}/{receipt.seq}"


class NodeDown(Exception):
    """The node serving a request crashed before answering."""


@dataclass
class Node:
    index: int
    clock: LoopClock
    engine: Engine | None = None
    generation: int = 0
    inflight: dict[asyncio.Task[Any], None] = field(default_factory=dict)


class World:
    """The cluster of one run: its nodes, its bucket, and what its clients saw."""

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
        self.healed_s: float | None = None  # when faults stopped and every node was up
        self.delivered_ids: set[str] = set()
        self.queue = FIFO_QUEUE if config.fifo else QUEUE
        self.dlq = FIFO_DLQ if config.fifo else f"{QUEUE}-dlq"
        self.receives = 0  # receive calls answered, to tell one call's deliveries from another's
        self.latest_at_s = 0.0  # the latest enqueue time any send asked for, run seconds
        self._wire_rng = random.Random(f"wire-{config.seed}")

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
            ack_logs=self.config.ack_logs,
            lane_quiet_s=self.config.lane_quiet_s,
            fifo_partitions=limits.fifo_partitions if self.config.fifo_partitioned else 0,
        )
        if self.config.peering:
            node.engine.peering.client = self
            node.engine.peering.url = f"sim://{node.index}"
        self.history.note(self.now(), f"start n{node.index}")

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        """The network between nodes (a PeerClient): a forwarded commit reaches the named
        node if it is up, and the forward or its answer is lost now and then; a node that
        crashes while committing it answers nothing."""
        node = self.nodes[int(url.removeprefix("sim://"))]
        hop_s = self.config.latency_ms / 10_000  # a network hop: a tenth of a store request
        if node.engine is None or self._wire_rng.random() < self.config.p_peer_lost:
            raise PeerUnreachable("refused, or lost on the way")
        await asyncio.sleep(hop_s)
        try:
            reply = await self.call(lambda engine: engine.commit_for_peer(body), node)
        except (NodeDown, OkuriError) as err:
            raise PeerUnreachable(f"{type(err).__name__}: {err}") from err
        if self._wire_rng.random() < self.config.p_peer_lost:
            raise PeerUnreachable("the answer was lost")
        await asyncio.sleep(hop_s)
        return reply

    def crash(self, node: Node) -> None:
        if node.engine is None:
            return
        self.history.crashes += 1
        self.history.note(self.now(), f"crash n{node.index}")
        engine, node.engine = node.engine, None
        for task in list(node.inflight):
            task.cancel()
        engine.crash()

    def pick(self, avoid: Node | None = None) -> Node:
        """A random live node, other than `avoid` where another is up (as a load balancer that
        spreads a client's calls would); NodeDown when none is up."""
        live = [n for n in self.nodes if n.engine is not None]
        if not live:
            raise NodeDown("no node is up")
        return self.rng.choice([n for n in live if n is not avoid] or live)

    async def call(self, fn: Callable[[Engine], Awaitable[T]], node: Node | None = None) -> T:
        """Send one request to `node`, or to a random live node as a load balancer would."""
        if node is None:
            node = self.pick()
        elif node.engine is None:
            raise NodeDown(f"n{node.index} is down")
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

    async def crasher(self) -> None:
        """Crash a random node every `crash_every_s` on average, and start it again soon after,
        until the fault phase stops."""
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

    async def setup(self) -> None:
        """Start every node and create the queue, retrying while faults refuse it."""
        cfg = self.config
        for node in self.nodes:
            self.start(node)
        attrs = QueueAttrs(
            visibility_timeout_s=cfg.visibility_s,
            retention_s=cfg.retention_s,
            max_receive_count=cfg.max_receive_count,
        )
        if cfg.fifo:
            dlq = FIFO_DLQ if cfg.max_receive_count is not None else None
            attrs = dataclasses.replace(attrs, fifo=True, dead_letter_queue=dlq)
            if cfg.fifo_partitioned:
                attrs = dataclasses.replace(attrs, extra=dict(HIGH_THROUGHPUT_FIFO))
        for _ in range(100):
            try:
                await self.call(lambda e: e.create_queue(self.queue, attrs))
                break
            except (NodeDown, OkuriError):
                await asyncio.sleep(0.1)

    # --- what clients saw ---------------------------------------------------------------------

    async def send(
        self, reqs: list[SendRequest], node: Node | None = None
    ) -> list[SendResult | None]:
        """One SendMessageBatch to `node` (or any live node), its acknowledged sends recorded;
        the answer for each request (None: not acknowledged, it may or may not have landed)."""
        start = self.now()
        for req in reqs:
            if req.dedup_id is not None:
                self.history.first_attempt.setdefault(req.dedup_id, start)
            if req.enqueue_at_ms is not None:
                self.latest_at_s = max(self.latest_at_s, run_s(req.enqueue_at_ms))
        try:
            results = await self.call(lambda e: e.send(self.queue, reqs), node)
        except (NodeDown, OkuriError):
            return [None] * len(reqs)
        end = self.now()
        out: list[SendResult | None] = []
        for req, res in zip(reqs, results, strict=True):
            if isinstance(res, Exception):
                out.append(None)
                continue
            out.append(res)
            self.history.sent.append(
                Sent(
                    self.queue,
                    res.message_id,
                    req.body,
                    start,
                    end,
                    req.group_id,
                    req.dedup_id,
                    res.duplicate,
                    res.sequence_number,
                    None if req.enqueue_at_ms is None else run_s(req.enqueue_at_ms),
                )
            )
            dup = " (duplicate)" if res.duplicate else ""
            self.history.note(end, f"sent {res.message_id}{dup}")
        return out

    def record(
        self, queue: str, got: list[Delivery], start: float, visibility_s: int | None = None
    ) -> None:
        """Record the deliveries of a receive sent at `start` (asking for `visibility_s`, None:
        the queue's default) that has just answered."""
        end = self.now()
        self.receives += 1
        vis = self.config.visibility_s if visibility_s is None else visibility_s
        for d in got:
            self.delivered_ids.add(d.message.id)
            self.history.delivered.append(
                Delivered(
                    queue,
                    d.message.id,
                    d.message.body,
                    d.receive_count,
                    start,
                    end,
                    d.message.dead_letter_source,
                    d.message.group_id,
                    d.sequence_number,
                    d.message.dedup_key,
                    run_s(d.message.sent_ms),
                    self.receives,
                    vis,
                    slot_of(d),
                )
            )
            self.history.note(end, f"delivered {queue}/{d.message.id}#{d.receive_count}")

    async def ack(self, queue: str, batch: list[Delivery], node: Node | None = None) -> None:
        """Delete `batch` through `node` (or any live node), each answer recorded."""
        if not batch:
            return
        start = self.now()
        try:
            results = await self.call(
                lambda e: e.ack(queue, [d.receipt_handle for d in batch]), node
            )
        except (NodeDown, OkuriError):
            if self.config.fifo:  # it may have landed: the FIFO oracle needs to know
                end = self.now()
                self.history.acked += [
                    Acked(
                        queue,
                        d.message.id,
                        d.receive_count,
                        UNANSWERED,
                        start,
                        end,
                        slot_of(d),
                    )
                    for d in batch
                ]
            return
        end = self.now()
        for d, res in zip(batch, results, strict=True):
            self.history.acked.append(
                Acked(
                    queue,
                    d.message.id,
                    d.receive_count,
                    str(res),
                    start,
                    end,
                    slot_of(d),
                )
            )
            self.history.note(end, f"ack {queue}/{d.message.id}#{d.receive_count}={res}")

    async def change_visibility(self, queue: str, entries: list[tuple[Delivery, int]]) -> None:
        """ChangeMessageVisibilityBatch through any live node; FIFO and native runs record
        each answer."""
        start = self.now()
        handles = [(d.receipt_handle, vis) for d, vis in entries]
        try:
            results: list[object] = list(
                await self.call(lambda e: e.change_visibility(queue, handles))
            )
        except (NodeDown, OkuriError):
            results = [UNANSWERED] * len(entries)
        if self.config.fifo or self.config.native:
            end = self.now()
            for (d, vis), res in zip(entries, results, strict=True):
                self.history.changed.append(
                    Changed(queue, d.message.id, d.receive_count, vis, str(res), start, end)
                )

    async def dead_letter(self, queue: str, batch: list[Delivery]) -> None:
        """Dead-letter `batch` on its consumer's word through any live node (the native
        API's `dead: true`), each answer recorded."""
        start = self.now()
        try:
            results: list[object] = list(
                await self.call(lambda e: e.dead_letter(queue, [d.receipt_handle for d in batch]))
            )
        except (NodeDown, OkuriError):
            results = [UNANSWERED] * len(batch)
        end = self.now()
        for d, res in zip(batch, results, strict=True):
            self.history.dead.append(
                DeadLettered(queue, d.message.id, slot_of(d), str(res), start, end)
            )
            self.history.note(end, f"dead {queue}/{d.message.id}#{d.receive_count}={res}")

    # --- the liveness phase -----------------------------------------------------------------

    def heal(self) -> None:
        """End the fault phase: faults off, every node up.

        The steady shape keeps the store's latency, which is no fault: progress has to be shown
        against a bucket that answers in tens of milliseconds, as S3 does. (The chaos shape
        drains against an instant bucket, as it always has.)
        """
        if self.healed_s is not None:
            return
        if self.config.steady:
            self.memory.faults = dataclasses.replace(
                self.memory.faults, p_transient=0.0, p_conflict=0.0, p_ambiguous=0.0
            )
        else:
            self.memory.faults.enabled = False
        for node in self.nodes:
            if node.engine is None:
                self.start(node)
        self.healed_s = self.now()
        self.history.note(self.now(), "liveness")

    async def liveness(self) -> list[Violation]:
        """Faults off, every node up: the queue must drain, and then the invariants must hold."""
        cfg = self.config
        self.heal()
        drained = False
        # Items scheduled beyond the longest delay move in when due: the drain waits for them.
        deadline = max(self.now(), self.latest_at_s) + 600
        quiet = 0
        while self.now() < deadline:
            moved = 0
            # Nothing to take while scheduled items are not due yet: long polls, not spins.
            wait_s = 20 if quiet >= 3 else 1
            for queue in (self.queue, self.dlq):
                start = self.now()
                # The dead-letter queue fills only from the queue's receives, just before: a
                # long poll there would keep the queue's unasked meanwhile (its messages held
                # by a lease whose answer was lost expired unseen while it waited, seed 1401).
                wait = wait_s if queue == self.queue else 0
                try:
                    got = await self.call(
                        lambda e, q=queue, w=wait: e.receive(q, 10, 30, w)  # type: ignore[misc]
                    )
                except OkuriError:
                    got = []
                self.record(queue, got, start, 30)
                await self.ack(queue, got)
                moved += len(got)
            quiet = quiet + 1 if moved == 0 else 0
            due_s = self.latest_at_s + cfg.skew_ms_max / 1000 + 1
            if quiet >= 3 and self.now() > due_s and await self._empty():
                drained = True
                break
        violations = []
        if not drained:
            violations.append(Violation("liveness", "the queue did not drain within 600 s"))
        skew_s = cfg.skew_ms_max / 1000 * 2 + 1
        violations += check_history(self.history, self.queue, cfg.retention_s, skew_s, self.dlq)
        if cfg.fifo:
            violations += check_fifo(
                self.history, self.queue, cfg.retention_s, cfg.skew_ms_max, cfg.fifo_partitioned
            )
        if cfg.native:
            violations += check_native(self.history, self.queue, self.dlq, skew_s)
        violations += await self.final_state()
        return violations

    async def _empty(self) -> bool:
        for queue in (self.queue, self.dlq):
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
        if self.config.fifo:
            # A FIFO queue keeps finished slots while their deduplication ids count; a commit
            # after the window (and its margin for clocks) has passed them frees them.
            window_s = limits.dedup_window_s + limits.dedup_window_margin_s
            await asyncio.sleep(window_s + self.config.skew_ms_max / 1000 + 1)
        for queue in (self.queue, self.dlq):
            with contextlib.suppress(OkuriError):
                await engine.receive(queue, 1, 0, 0)
        for queue in (self.queue, self.dlq):
            try:
                await engine.sweep(queue)
            except OkuriError as err:
                out.append(Violation("sweep", f"{queue}: {err}"))
        # Freed slots' objects stay a while after the sweep saw them (okuri/engine/freed_slots.py).
        await asyncio.sleep(limits.freed_slot_keep_s + 1)
        await engine.close()
        await asyncio.sleep(1)
        manifests = 0
        for key, blob in sorted(self.memory.objects.items()):
            if key.startswith((keys.MANIFESTS, keys.LANES)):  # a queue's, or a lane's
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
