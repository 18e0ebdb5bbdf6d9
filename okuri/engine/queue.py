"""One queue as seen from one node: the rooms that own its state, composed.

- `Manifest` (manifest.py): the cached manifest and group commit of every change to it;
- `SlotLog` (slot_log.py): segments appended by this node's producers, and discovery of slots
  written through other nodes; within it `FifoSlots` (fifo_slots.py), a FIFO queue's adoption
  against the deduplication window;
- `Receiver` (leases.py): leases, the lease-ahead buffer, long-poll waiters;
- `Finisher` (finishing.py): deletes, visibility changes, dead letters;
- `Sender` (sending.py): send checks and the deduplication window;
- `Scheduler` (schedule.py): items due beyond the longest delay, kept beside the queue until
  they are due.

Producers never touch the manifest, so they never contend with consumers: a busy queue costs
one segment PUT per producer window plus one CAS per consumer window. This module wires the
rooms together and holds what spans them (purge, counts, sweep, lifecycle).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.message import Message
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import (
    AckResult,
    DeadLetterResult,
    LeaseResult,
    Outcome,
    Purge,
    Reach,
    SetAttributes,
    VisibilityResult,
)
from okuri.core.views import Counts, counts
from okuri.engine.ack_logs import AckLogs, close_due_logs, sweep_ack_logs
from okuri.engine.attempts import ReceiveAttempts
from okuri.engine.cache import SegmentCache
from okuri.engine.expiry import Expiry
from okuri.engine.finishing import Finisher, SendToFn
from okuri.engine.leader_slots import segments_of, take_from_leader
from okuri.engine.leases import Receiver
from okuri.engine.manifest import Manifest
from okuri.engine.peering import (
    CommitReply,
    CommitRequest,
    Peering,
    PeerRequestInvalid,
    leased_slots,
)
from okuri.engine.retry import retrying
from okuri.engine.schedule import Scheduler
from okuri.engine.sending import Sender
from okuri.engine.slot_log import SlotLog, wanted_messages
from okuri.engine.tasks import Tasks
from okuri.engine.types import Delivery, SendRequest, SendResult
from okuri.errors import QueueDoesNotExist, ReceiptHandleInvalid, Unavailable
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")


@dataclass(frozen=True, slots=True)
class Node:
    """What every queue on a node shares."""

    store: ObjectStore
    clock: Clock
    cache: SegmentCache
    stats: Counter[str]
    node_id: str
    linger_ms: int
    peering: Peering
    expiry: Expiry
    # Followers answer deletes from ack logs of their own (okuri/engine/ack_logs.py).
    ack_logs: bool = False


class Queue:
    def __init__(self, node: Node, name: str, send_to: SendToFn) -> None:
        self.name = name
        self.clock = node.clock
        self.store = node.store
        self.tasks = Tasks()
        self._incarnation: str | None = None
        self._last_sweep_s = self.clock.monotonic_s()
        self.manifest = Manifest(
            name,
            node.store,
            node.clock,
            node.linger_ms,
            node.node_id,
            node.stats,
            node.peering,
            adopt=lambda st, ops: self.slots.adopt_ops(st, ops),
            hints=lambda st: self.slots.hints(st),
            installed=self._installed,
            committed=self._committed,
            expiry=node.expiry,
            expired=self._expired,
            close_logs=lambda st: close_due_logs(
                node.store, name, st, node.clock.now_ms(), node.stats
            ),
        )
        self.slots = SlotLog(
            name,
            node.store,
            node.clock,
            node.cache,
            node.stats,
            node.linger_ms,
            self.manifest,
            self.tasks,
            notify=lambda: self.receiver.notify(),
        )
        self.manifest.on_leader_segments = lambda st, segs: take_from_leader(self.slots, st, segs)
        self.ack_logs = AckLogs(
            name,
            node.store,
            node.clock,
            node.node_id,
            node.stats,
            self.tasks,
            self.manifest.commit,
            node.ack_logs,
        )
        self.finisher = Finisher(self.manifest, self.slots, send_to, node.stats, self.ack_logs)
        self.receiver = Receiver(
            node.clock,
            node.linger_ms,
            self.manifest,
            self.slots,
            self.tasks,
            self.finisher.dead_letter,
            self.ack_logs,
        )
        self.scheduler = Scheduler(
            name,
            node.store,
            node.clock,
            self.manifest,
            lambda messages: self.sender.send_raw(messages),
            self.tasks,
            node.stats,
            node.node_id,
        )
        self.sender = Sender(
            node.clock, self.manifest, self.slots, self.scheduler.schedule, self.tasks
        )
        self.attempts = ReceiveAttempts(name, node.store, node.clock, self.manifest, self.slots)

    # --- wiring ------------------------------------------------------------------------------

    def _installed(self, old: QueueState | None, new: QueueState) -> None:
        if self._incarnation != new.incarnation:
            # A queue deleted and created again: nothing known about the old one applies.
            self.slots.reset()
            self.receiver.reset()
            self.ack_logs.reset()
            self._incarnation = new.incarnation
        self.slots.installed(new)
        self.ack_logs.installed(new)
        if old is None or old.version != new.version:
            self.receiver.notify()

    def _committed(self, out: Outcome) -> None:
        self.slots.freed(out.state.incarnation, out.freed)
        self.receiver.notify()

    def _expired(self) -> None:
        """This node found the queue expired and deleted its manifest: drop what it knew,
        and delete its segments (okuri/engine/expiry.py)."""
        self.forget()
        self.tasks.spawn(self.sweep_quietly())

    def forget(self) -> None:
        """The queue was deleted through this node."""
        self.manifest.forget()
        self.slots.reset()
        self.receiver.reset()
        self.ack_logs.reset()

    # --- the manifest ------------------------------------------------------------------------

    @property
    def state(self) -> QueueState | None:
        return self.manifest.state

    async def current(self) -> QueueState:
        return await self.manifest.current()

    async def refresh(self) -> QueueState:
        return await self.manifest.refresh()

    async def create(self, attrs: QueueAttrs) -> QueueState:
        return await self.manifest.create(attrs)

    async def set_attributes(self, attrs: QueueAttrs) -> None:
        await self.manifest.commit([SetAttributes(attrs)])

    async def update_attrs(
        self, change: Callable[[QueueAttrs], QueueAttrs], touch: bool
    ) -> QueueState:
        return await self.manifest.update_attrs(change, touch)

    # --- messages ----------------------------------------------------------------------------

    async def send(self, requests: Sequence[SendRequest]) -> list[SendResult | Exception]:
        self.scheduler.poke()
        return await self.sender.send(requests)

    async def send_raw(self, messages: Sequence[Message]) -> None:
        await self.sender.send_raw(messages)

    async def receive(
        self,
        max_messages: int,
        visibility_s: int | None,
        wait_s: int | None,
        lease_ahead: bool = True,
    ) -> list[Delivery]:
        """Lease up to `max_messages`; `lease_ahead` off for a caller that is no consumer
        loop (a move task), whose extra leases would only hide messages from others."""
        self.poke()
        return await self.receiver.receive(max_messages, visibility_s, wait_s, lease_ahead)

    def poke(self) -> None:
        """A consumer asks: move in scheduled items that are due, and sweep when it is time
        (in the background, each at its own pace)."""
        if self.clock.monotonic_s() - self._last_sweep_s >= limits.sweep_interval_s:
            self.tasks.spawn(self.sweep_quietly())
        self.scheduler.poke()

    async def remember_receive(
        self, attempt: str, deliveries: Sequence[Delivery], keep_s: int
    ) -> None:
        await self.attempts.remember(attempt, deliveries, keep_s)

    async def ack(self, handles: Sequence[str]) -> list[AckResult | ReceiptHandleInvalid]:
        return await self.finisher.ack(handles)

    async def change_visibility(
        self, entries: Sequence[tuple[str, int]]
    ) -> list[VisibilityResult | ReceiptHandleInvalid]:
        return await self.finisher.change_visibility(entries)

    async def dead_letter(
        self, handles: Sequence[str]
    ) -> list[DeadLetterResult | ReceiptHandleInvalid]:
        return await self.finisher.dead_letter_now(handles, self.clock.now_ms())

    async def send_for_peer(
        self, incarnation: str, messages: Sequence[Message]
    ) -> list[SendResult | Exception]:
        """Write FIFO messages a node forwarded to this one, the lane's leader
        (okuri/engine/peer_sends.py), never forwarding them on."""
        st = await self.current()
        if st.incarnation != incarnation:
            st = await self.refresh()
            if st.incarnation != incarnation:
                raise PeerRequestInvalid("the queue was deleted and created again")
        if not st.attrs.fifo:
            raise PeerRequestInvalid(f"{self.name!r} is no FIFO queue")
        return await self.sender.land_fifo(messages)

    async def commit_for_peer(self, req: CommitRequest) -> CommitReply:
        """Commit what a node that takes this one for the queue's leader forwarded: its
        results, the manifest as stored after, and, for a lease, the segments its grants came
        from that this node holds."""
        st = await self.current()
        if st.incarnation != req.incarnation:
            st = await self.refresh()
            if st.incarnation != req.incarnation:
                raise PeerRequestInvalid("the queue was deleted and created again")
        wanted = wanted_messages(req.ops)
        if st.attrs.fifo:
            # Adopting judges duplicates against every id of the window: read what is needed,
            # as this node does before its own receives and FIFO sends.
            await self.slots.fifo.catch_up(st, wanted)
            reach = max((op.seq for op in req.ops if isinstance(op, Reach)), default=-1)
            if reach >= st.next_seq:
                await self.slots.reach(reach)
            if wanted:
                await self.slots.discover(wanted, paced=True)
        else:
            self.slots.take_hints(st, req.slots)
        results, etag, data = await self.manifest.commit_for_peer(req.ops)
        dead = [g for r in results if isinstance(r, LeaseResult) for g in r.dead]
        if dead:
            # Moved here, not by the follower: were its answer lost, nobody would move them,
            # and each would stay held for the dead-letter hold (its FIFO group waiting behind
            # it), where a lost lease hides a message for a visibility timeout (simulator, seed
            # 9335). Awaited, so the dead-letter queue has them when the receive answers, but
            # not while this node's own forward is out: the move's commit would wait behind it.
            move = self.tasks.spawn(self.finisher.dead_letter(dead))
            if not self.manifest.forwarding:
                await asyncio.shield(move)
            results = [replace(r, dead=()) if isinstance(r, LeaseResult) else r for r in results]
        after = self.manifest.state
        if not req.segments or after is None:
            return CommitReply(results, etag, data)
        segments = segments_of(self.slots, after, leased_slots(results))
        return CommitReply(results, etag, data, segments)

    # --- whole-queue operations --------------------------------------------------------------

    async def purge(self) -> None:
        st = await self.refresh()
        head = await self.slots.find_head(st.incarnation, st.next_seq)
        await self.manifest.commit([Purge(head)])  # its install drops the slots it skipped
        self.receiver.reset()
        self.tasks.spawn(self.sweep_quietly())  # the slots the purge skipped

    async def counts(self) -> Counts:
        """Counts over adopted slots, plus visible and delayed messages in up to
        `count_probe_segments_max` slots not yet loaded (a FIFO queue's adopted ones) or past
        the cursor. Messages this node leased ahead count as visible: no consumer has them."""
        self.scheduler.poke()
        st = await self.refresh()
        now = self.clock.now_ms()
        total = counts(st, now)
        ahead = self.receiver.held_ahead(st, now)
        cutoff = st.retention_cutoff(now)
        visible, delayed = ahead, 0
        end = st.loaded_upto() + limits.count_probe_segments_max
        for seq in range(st.loaded_upto(), end):
            seg = await self.slots.read_slot(st.incarnation, seq)
            if seg is None:
                if seq < st.next_seq:
                    continue  # adopted and since freed (a purge, the window sliding on)
                break
            dups = st.dups.get(seq, 0) if seq < st.next_seq else 0
            for i, m in enumerate(seg.messages):
                if m.sent_ms <= cutoff or dups >> i & 1:
                    continue
                if m.visible_at_ms > now:
                    delayed += 1
                else:
                    visible += 1
        return total + Counts(visible, -ahead, delayed)

    async def sweep_quietly(self) -> None:
        self._last_sweep_s = self.clock.monotonic_s()
        try:
            await self.sweep()
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning("sweep of %s failed: %s", self.name, err)

    async def sweep(self) -> int:
        """Delete segment objects nothing references any more (freed slots' objects once their
        keep has passed, okuri/engine/freed_slots.py); returns how many.

        Each page is judged against a manifest read *after* listing it, so a queue recreated
        meanwhile can only have written keys this page never saw.
        """
        await self._slide_window()
        prefix = keys.segments_of_queue(self.name)
        deleted = 0
        after = ""
        for _ in range(10_000):
            page = await retrying(self.clock, lambda a=after: self.store.list(prefix, a, 1000))  # type: ignore[misc]
            if not page:
                break
            try:
                st: QueueState | None = await self.refresh()
            except QueueDoesNotExist:
                st = None
            freed: list[str] = []
            for key in page:
                parsed = keys.parse_segment(key)
                if parsed is None:
                    continue
                _, inc, seq = parsed
                if st is None or inc != st.incarnation:
                    await self.slots.delete_quietly(key)  # no one reads another incarnation
                    deleted += 1
                elif seq < st.kept_from() and seq not in st.segments:
                    freed.append(key)  # below the cursor: kept a while, as any freed slot
            self.slots.freed_slots.delete_later(freed)
            deleted += len(freed)
            after = page[-1]
            if len(page) < 1000:
                break
        try:
            gone = False
            st = await self.refresh()
        except QueueDoesNotExist:
            gone, st = True, None
        deleted += await self.scheduler.sweep(st)
        deleted += await self._sweep_ack_logs()
        return deleted + await self.attempts.sweep(everything=gone)

    async def _slide_window(self) -> None:
        """Commit on a FIFO log whose deduplication window holds anything: every commit ages
        the window (okuri/core/transitions.py), and a log nobody receives from (a partition's
        lane gone quiet) would otherwise keep its finished slots' objects for ever."""
        try:
            st = await self.current()
        except QueueDoesNotExist:
            return
        if st.attrs.fifo and st.window and st.next_seq > 0:
            await self.manifest.commit([Reach(st.next_seq - 1)])  # adopts nothing

    async def _sweep_ack_logs(self) -> int:
        async def manifest() -> QueueState | None:
            try:
                return await self.refresh()
            except QueueDoesNotExist:
                return None

        return await sweep_ack_logs(self.store, self.clock, self.name, manifest)

    def unadopted_slots(self) -> int | None:
        """Slots known to be written past the cached manifest's cursor (None: never read)."""
        st = self.manifest.state
        if st is None:
            return None
        return self.slots.known_end() - st.next_seq

    # --- lifecycle ---------------------------------------------------------------------------

    async def close(self) -> None:
        await self.scheduler.close()
        await self.slots.close()
        await self.receiver.release_all()
        await self.ack_logs.close()
        await self.manifest.close()
        self.receiver.close()
        await self.tasks.wait()

    def crash(self) -> None:
        self.ack_logs.crash()
        self.slots.crash()
        self.manifest.crash()
        self.receiver.close()
        self.tasks.cancel()
