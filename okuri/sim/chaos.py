"""The chaos workload: clients that send through random nodes and misbehave on purpose.

Why a module of its own: it is one of the two things a run can do on the simulated cluster
(okuri/sim/world.py), and the one that hunts for safety bugs. Most seeds run it (the shape is
drawn in okuri/sim/config.py). Producers send small batches, some delayed, each to a random live
node; consumers abandon messages, sleep past their leases, change visibility and reuse receipts
that may be stale by now; a purger empties the queue now and then; nodes crash throughout. After
`fault_phase_s` the clients stop and the world's liveness phase drains and checks the queue.

On a failover seed a consumer deletes what a receive brought through another node than the one
that served it, as an application's calls spread by a load balancer do.

On a FIFO seed the producers spread their messages over the seed's message groups and send
again with the same deduplication id: after an answer that never came (the node crashed, or
the send failed), and now and then on purpose, sometimes twice at once through two nodes.
Every attempt carries a body of its own, so the oracle can tell which attempt was enqueued.

On a native seed the clients also use what only the native API offers: some sends carry an
enqueue time (a few beyond the longest delay, so they wait outside the queue until due),
receives lease up to a hundred, and consumers retry at a time, extend a lease while they work,
or dead-letter on their own word (okuri/sim/native_checks.py judges those).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from okuri import limits
from okuri.engine import SendRequest
from okuri.engine.types import Delivery
from okuri.errors import OkuriError
from okuri.sim.checkers import Violation
from okuri.sim.history import Purged
from okuri.sim.world import Node, NodeDown, World

# A FIFO message is sent at most this many times with its deduplication id (lost answers and
# resends on purpose together), so a producer finishes even while nodes keep crashing.
FIFO_ATTEMPTS_MAX = 4
# Of the consumers' visibility changes on a FIFO seed, this share gives some messages back and
# keeps the others `FIFO_HOLD_S` longer than the queue's visibility timeout (`give_back`).
FIFO_GIVE_BACK_SHARE = 0.7
FIFO_HOLD_S = 10  # beyond twice the largest clock skew, so the oracle can tell it is held
# Native seeds: how far ahead an enqueue time is, seconds: near ones are delays to the
# millisecond; far ones (`SimConfig.p_far` of the sends) wait outside the queue.
NATIVE_NEAR_S = (0.5, 20.0)
NATIVE_FAR_S = (limits.delay_s_max + 1.0, limits.delay_s_max + 120.0)
NATIVE_RETRY_AT_S = (1, 10)  # a retry at a time, seconds ahead


@dataclass(frozen=True, slots=True)
class _FifoEntry:
    """One FIFO message as its producer knows it: its group, its deduplication id, and which
    attempt this is (each attempt's body is its own)."""

    group_id: str
    dedup_id: str
    attempt: int = 0

    def again(self) -> _FifoEntry:
        return _FifoEntry(self.group_id, self.dedup_id, self.attempt + 1)

    def request(self) -> SendRequest:
        body = f"{self.dedup_id}-a{self.attempt}".encode()
        return SendRequest(body, group_id=self.group_id, dedup_id=self.dedup_id)


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
                reqs.append(self._request(body))
            batch_no += 1
            sent += size
            await w.send(reqs)

    def _request(self, body: bytes) -> SendRequest:
        w = self.world
        delay = w.rng.choice([None, None, None, 0, 1, 3])
        if not w.config.native or w.rng.random() < 0.5:
            return SendRequest(body, delay_s=delay)
        far = w.rng.random() < w.config.p_far * 2  # half the sends may carry a time
        ahead_s = w.rng.uniform(*(NATIVE_FAR_S if far else NATIVE_NEAR_S))
        at_ms = w.nodes[0].clock.now_ms() + int(ahead_s * 1000)  # the client's own clock
        return SendRequest(body, enqueue_at_ms=at_ms)

    async def fifo_producer(self, index: int, count: int) -> None:
        """Send `count` messages to the FIFO queue over the seed's groups, in batches as
        `producer` does; send again what was not acknowledged and, at `p_resend`, what was."""
        w = self.world
        cfg = w.config
        sent = 0
        batch_no = 0
        again: list[_FifoEntry] = []
        while (sent < count or again) and not w.stopping:
            await asyncio.sleep(w.rng.expovariate(1 / 0.3))
            size = min(count - sent, w.rng.choice([1, 1, 1, 3, 10]))
            entries = [
                _FifoEntry(f"g{w.rng.randrange(cfg.groups)}", f"p{index}-b{batch_no}-m{k}")
                for k in range(size)
            ]
            entries += [e.again() for e in again[: limits.batch_entries_max - size]]
            del again[: limits.batch_entries_max - size]
            batch_no += 1
            sent += size
            twin = w.rng.random() < cfg.p_resend / 2  # the same messages twice at once
            batches = [entries, [e.again() for e in entries]] if twin else [entries]
            for batch in batches:
                w.history.attempted_bodies.update(e.request().body for e in batch)
            answers = await asyncio.gather(*(w.send([e.request() for e in b]) for b in batches))
            for i, entry in enumerate(batches[-1]):
                answered = any(a[i] is not None for a in answers)
                if entry.attempt + 1 >= FIFO_ATTEMPTS_MAX:
                    continue
                if not answered or w.rng.random() < cfg.p_resend:
                    again.append(entry)

    async def consumer(self, index: int, queue: str | None = None) -> None:
        w = self.world
        queue = queue or w.queue
        old: list[Delivery] = []
        while not w.stopping:
            start = w.now()
            vis = w.rng.choice([None, None, 1, w.config.visibility_s])
            most = w.rng.choice([10, 100]) if w.config.native else 10
            try:
                node = w.pick() if w.config.failover else None
                got = await w.call(
                    lambda e, v=vis, n=most: e.receive(  # type: ignore[misc]
                        queue, w.rng.randint(1, n), v, w.rng.choice([0, 1, 3])
                    ),
                    node,
                )
            except (NodeDown, OkuriError):
                await asyncio.sleep(0.2)
                continue
            w.record(queue, got, start, vis)
            if not got:
                continue
            fate = w.rng.random()
            if fate < 0.1:
                old.extend(got)  # abandon: let the lease expire
                continue
            if fate < 0.2:
                await asyncio.sleep(w.rng.uniform(0, 2 * w.config.visibility_s))
            elif fate < 0.3 and w.config.fifo and w.rng.random() < FIFO_GIVE_BACK_SHARE:
                got = await self.give_back(queue, got)
            elif fate < 0.3:
                await w.change_visibility(queue, [(d, w.rng.randint(0, 3)) for d in got])
            elif fate < 0.45 and w.config.native:
                got = await self.native_fates(queue, got)
            if old and w.rng.random() < 0.3:
                got = [*got, *old[:3]]  # try some receipts that may be stale by now
                del old[:3]
            await w.ack(queue, got, self._elsewhere(node))

    def _elsewhere(self, node: Node | None) -> Node | None:
        """Where a failover seed's consumer deletes what `node` served: another live node."""
        if node is None:
            return None
        try:
            return self.world.pick(avoid=node)
        except NodeDown:
            return None  # none up: the delete goes to whichever is, or fails

    async def native_fates(self, queue: str, got: list[Delivery]) -> list[Delivery]:
        """What a native consumer may do instead of completing: dead-letter some on its own
        word, retry some at a time, and extend the lease of the rest while it works on them;
        returns what it completes."""
        w = self.world
        dead = [d for d in got if w.rng.random() < 0.3]
        later = [d for d in got if d not in dead and w.rng.random() < 0.4]
        keep = [d for d in got if d not in dead and d not in later]
        if dead:
            await w.dead_letter(queue, dead)
        if later:
            retry = [(d, w.rng.randint(*NATIVE_RETRY_AT_S)) for d in later]
            await w.change_visibility(queue, retry)
        if keep:
            extend_s = w.config.visibility_s + w.rng.randint(1, 5)
            await w.change_visibility(queue, [(d, extend_s) for d in keep])
            await asyncio.sleep(w.rng.uniform(0, extend_s))
        return keep

    async def give_back(self, queue: str, got: list[Delivery]) -> list[Delivery]:
        """Make some of `got` visible again at once and keep the rest longer, working on it
        for a while; return the rest, to be deleted. On a FIFO queue this leaves an earlier
        message of a group visible while a later one is in flight: the earlier one may go out
        again (as on SQS), nothing after the held one may."""
        w = self.world
        # The first message of each group that came with more (a worker failing on the head
        # of its group); when none did, any half.
        groups = [d.message.group_id for d in got]
        back = [
            d
            for i, d in enumerate(got)
            if groups.count(groups[i]) > 1 and groups[i] not in groups[:i]
        ]
        back = back or [d for d in got if w.rng.random() < 0.5]
        keep = [d for d in got if d not in back]
        hold_s = w.config.visibility_s + FIFO_HOLD_S
        await w.change_visibility(queue, [(d, 0) for d in back] + [(d, hold_s) for d in keep])
        await asyncio.sleep(w.rng.uniform(0, hold_s))
        return keep

    async def purger(self) -> None:
        w = self.world
        for _ in range(w.config.purges):
            await asyncio.sleep(w.rng.uniform(2, w.config.fault_phase_s))
            start = w.now()
            try:
                await w.call(lambda e: e.purge(w.queue))
            except (NodeDown, OkuriError):
                w.history.purged.append(Purged(w.queue, start, w.now(), confirmed=False))
                continue
            w.history.purged.append(Purged(w.queue, start, w.now(), confirmed=True))
            w.history.note(w.now(), "purged")

    async def run(self) -> list[Violation]:
        w = self.world
        cfg = w.config
        per_producer = max(1, cfg.messages // cfg.producers)
        producer = self.fifo_producer if cfg.fifo else self.producer
        clients = [asyncio.ensure_future(producer(i, per_producer)) for i in range(cfg.producers)]
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
