"""The engine: every queue operation a surface (SQS, native) may ask for, on one node.

A node holds no durable state. It caches manifests and segments, batches what its clients ask
for, and writes through the store port; any number of nodes may share one bucket.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.browse import BrowsePage, PositionInvalid, lane_position
from okuri.core.expiry import touch_due, validate_expires_s
from okuri.core.fifo import as_declared, check_expiry_allowed, partitioned, partitions
from okuri.core.message import Message
from okuri.core.move_records import MoveTask
from okuri.core.names import is_fifo_name, validate_queue_name
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import AckResult, DeadLetterResult, Touch, VisibilityResult
from okuri.core.views import Counts, QueueView, counts, oldest_visible_sent_ms
from okuri.engine.cache import SegmentCache
from okuri.engine.exchanges import Exchanges
from okuri.engine.expiry import Expiry, ExpirySweeper
from okuri.engine.lanes import Lanes
from okuri.engine.move_tasks import MoveTasks, move_messages
from okuri.engine.peer_sends import decode_send, encode_send_reply, is_send
from okuri.engine.peering import Peering, PeerRequestInvalid, decode_request, encode_reply
from okuri.engine.queue import Node, Queue
from okuri.engine.quotas import QueueCount, Quotas, check_attributes
from okuri.engine.retry import retrying
from okuri.engine.tasks import Tasks
from okuri.engine.types import Delivery, SendRequest, SendResult
from okuri.errors import (
    InvalidArgument,
    QueueAlreadyExists,
    QueueDoesNotExist,
    ReceiptHandleInvalid,
)
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")


class Engine:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        linger_ms: int = limits.linger_ms_default,
        node_id: str | None = None,
        ack_logs: bool = False,
        quotas: Quotas | None = None,
        lanes: bool = True,
        lane_quiet_s: float = limits.lane_quiet_s,
        fifo_partitions: int = 0,
    ) -> None:
        """`ack_logs`: this node, following another, answers deletes from ack logs of its own
        (okuri/engine/ack_logs.py): one write more per lease it forwards, for a delete that
        waits for no hop. `quotas`: the operator's bounds (okuri/engine/quotas.py). `lanes`:
        this node opens a lane of its own in a queue whose slot log it shares with other
        producing nodes (okuri/engine/lanes.py); off, it still serves lanes others opened.
        `lane_quiet_s`: a lane seen holding nothing so long is retired (the simulator shortens
        it, so lanes close and drop while nodes crash). `fifo_partitions`: how many partitions
        a FIFO queue this node creates in SQS's high-throughput mode gets (okuri/engine/
        partitions.py); 0, one log. Every node serves a partitioned queue whatever its own."""
        self.store = store
        self.quotas = quotas or Quotas()
        self._queue_count = QueueCount(self.quotas, self.list_queues)
        self.clock = clock
        self.linger_ms = linger_ms
        self.node_id = node_id or clock.new_id()[:8]
        self.cache = SegmentCache(limits.segment_cache_bytes_max)
        self.stats: Counter[str] = Counter()
        # Per queue: messages sent and deleted through this node (the console's chart).
        self.sent: Counter[str] = Counter()
        self.deleted: Counter[str] = Counter()
        self.peering = Peering()  # the server connects it (okuri/engine/peering.py)
        self.expiry = Expiry(store, clock, self.stats, self.node_id)
        self.expiry_sweeper = ExpirySweeper(self.expiry, self._expired)
        self._node = Node(
            store,
            clock,
            self.cache,
            self.stats,
            self.node_id,
            linger_ms,
            self.peering,
            self.expiry,
            ack_logs,
        )
        self._tasks = Tasks()  # sweeps of queues the expiry sweeper deleted
        self._sweeper: asyncio.Task[None] | None = None
        self._queues: dict[str, Queue] = {}
        self._lanes: dict[str, Lanes] = {}
        self._lanes_on = lanes
        self._lane_quiet_s = lane_quiet_s
        self._fifo_partitions = fifo_partitions
        self._stopping = False
        self.moves = MoveTasks(self)
        self.exchanges = Exchanges(
            store, clock, self.stats, self.get_queue, self.cached_queue, self.send
        )

    def runtime(self, name: str) -> Queue:
        """This node's view of queue `name` (whether or not the queue exists)."""
        validate_queue_name(name)
        q = self._queues.get(name)
        if q is None:
            q = self._queues[name] = Queue(self._node, name, self._send_to)
            if self._stopping:
                q.receiver.stop_waiting()
        return q

    def lanes(self, name: str) -> Lanes:
        """Queue `name` with its lanes, on this node (okuri/engine/lanes.py)."""
        lanes = self._lanes.get(name)
        if lanes is None:
            lanes = self._lanes[name] = Lanes(
                self.runtime(name),
                self._lane,
                self.store,
                self.clock,
                self.stats,
                self._lanes_on,
                self._lane_quiet_s,
            )
        return lanes

    def _lane(self, name: str) -> Queue:
        q = Queue(self._node, name, self._send_to)
        if self._stopping:
            q.receiver.stop_waiting()
        return q

    def _named(self, name: str) -> Queue:
        """A queue, or a lane of one by its name (`keys.lane_name`), as peers name them."""
        root, sep, lane = name.partition(keys.LANE_SEP)
        if not sep:
            return self.runtime(name)
        if not lane or not lane.isalnum() or len(lane) > 32:
            raise InvalidArgument(f"{name!r} names no lane", "QueueName")
        return self.lanes(root).lane(name)

    async def _send_to(self, name: str, messages: Sequence[Message]) -> None:
        """Append dead-lettered messages to queue `name`, creating it if it is missing."""
        await self.ensure_queue(name)
        await self.lanes(name).send_raw(messages)

    # --- queues ------------------------------------------------------------------------------

    async def create_queue(
        self, name: str, attrs: QueueAttrs | None = None, namespace: str | None = None
    ) -> QueueView:
        """Create a queue; idempotent when it exists with the same attributes. `namespace`:
        the namespace of the key asking ("" for every queue), whose quotas a queue not there
        yet must fit; None for a queue the engine creates itself (never refused)."""
        validate_queue_name(name)
        attrs = attrs or QueueAttrs(fifo=is_fifo_name(name))
        if attrs.fifo != is_fifo_name(name):
            raise InvalidArgument(
                "The name of a FIFO queue can only include alphanumeric characters, hyphens, or "
                "underscores, must end with .fifo suffix.",
                "QueueName",
            )
        validate_expires_s(attrs.expires_s, "expires_s")
        if attrs.fifo and attrs.expires_s is None:  # SQS's high-throughput mode: partitions
            attrs = replace(attrs, extra=partitioned(attrs.extra, self._fifo_partitions))
        rt = self.runtime(name)
        if namespace is not None and not await self._exists(rt):
            check_attributes(self.quotas, attrs)
            async with self._queue_count.lock:  # counted and created one at a time
                await self._queue_count.check(name, namespace)
                st = await rt.create(attrs)
        else:
            st = await rt.create(attrs)
        if _declared(st.attrs) != _declared(attrs):  # the queue was already there, with others
            raise QueueAlreadyExists(
                f"A queue named {name!r} already exists with different attributes"
            )
        await self.lanes(name).open_partitions()
        if attrs.expires_s is not None:
            # After the manifest (okuri/engine/expiry.py); again on a re-declare, in case the
            # node that created the queue died between the two.
            await self.expiry.ensure_marker(name)
        return QueueView.of(await self._touch(rt, st))

    @staticmethod
    async def _exists(rt: Queue) -> bool:
        try:
            await rt.refresh()
        except QueueDoesNotExist:
            return False
        return True

    async def _touch(self, rt: Queue, st: QueueState) -> QueueState:
        """Record a use of the queue when one is due (a get, a create that finds it)."""
        if not touch_due(st, self.clock.now_ms()):
            return st
        await rt.manifest.commit([Touch()])
        return await rt.current()

    async def ensure_queue(self, name: str) -> Queue:
        """The queue's runtime, creating the queue with defaults if it is missing."""
        rt = self.runtime(name)
        try:
            await rt.current()
        except QueueDoesNotExist:
            await self.create_queue(name)
        return rt

    async def get_queue(self, name: str, trust_cached_s: float = 0.0) -> QueueView:
        """The queue as a surface sees it (a use of it, for its expiry): read fresh from the
        bucket, or the cached copy when it was shown current less than `trust_cached_s` ago."""
        return QueueView.of(await self.read_manifest(name, trust_cached_s))

    async def cached_queue(self, name: str) -> QueueView:
        """The queue as this node last saw it (read only if never seen): for the hot path,
        where a stale copy is harmless because every write is a CAS."""
        return QueueView.of(await self.runtime(name).current())

    async def read_manifest(self, name: str, trust_cached_s: float = 0.0) -> QueueState:
        """The queue's whole manifest, as `get_queue` reads it: for the engine's own tests and
        the simulator, which look inside. Surfaces use `get_queue`'s narrow view."""
        rt = self.runtime(name)
        st = rt.state
        if st is None or rt.manifest.age_s() >= trust_cached_s:
            st = await rt.refresh()
        return await self._touch(rt, st)

    async def cached_manifest(self, name: str) -> QueueState:
        """The queue's whole manifest as this node last saw it (see `read_manifest`)."""
        return await self.runtime(name).current()

    async def list_queues(self, prefix: str = "", limit: int = 1000, after: str = "") -> list[str]:
        """Queue names starting with `prefix`, in order, after the name `after`."""
        names: list[str] = []
        after = keys.manifest(after) if after else ""
        for _ in range(1000):
            page = await retrying(
                self.clock,
                lambda a=after: self.store.list(keys.MANIFESTS + prefix, a, 1000),  # type: ignore[misc]
            )
            names.extend(keys.queue_of_manifest(k) for k in page)
            if len(page) < 1000 or len(names) >= limit:
                break
            after = page[-1]
        return names[:limit]

    async def probe_store(self) -> None:
        """One cheap request to the bucket (a LIST of at most one manifest), not retried: the
        health listener's readiness probe. Raises StoreError when the bucket does not answer."""
        await self.store.list(keys.MANIFESTS, "", 1)

    async def delete_queue(self, name: str) -> None:
        q = self.runtime(name)
        st = await q.refresh()
        lanes = self.lanes(name)
        gone = await lanes.delete() if st.lanes else []  # before the queue (lanes.py says why)
        await retrying(self.clock, lambda: self.store.delete(keys.manifest(name)))
        lanes_possible = not (st.attrs.fifo or st.attrs.expires_s is not None)
        if st.lanes or partitions(st.attrs.extra) or lanes_possible:
            gone += await lanes.delete_unlisted()  # listed while this delete went on
        q.forget()
        lanes.forget()
        q.tasks.spawn(q.sweep())
        for lane in dict.fromkeys(gone):
            lq = lanes.lane(lane)
            lq.tasks.spawn(lq.sweep_quietly())
        if st.attrs.expires_s is not None:
            await self.expiry.drop_marker(name)

    async def set_attributes(self, name: str, attrs: QueueAttrs) -> None:
        validate_expires_s(attrs.expires_s, "expires_s")
        check_attributes(self.quotas, attrs)
        check_expiry_allowed((await self.runtime(name).current()).attrs.extra, attrs.expires_s)
        await self.runtime(name).set_attributes(attrs)
        await self._attributes_changed(name)
        if attrs.expires_s is not None:
            await self.expiry.ensure_marker(name)

    async def _attributes_changed(self, name: str) -> None:
        st = self.runtime(name).state
        if st is not None and st.lanes:
            await self.lanes(name).attributes_changed()

    async def update_attributes(
        self, name: str, change: Callable[[QueueAttrs], QueueAttrs], touch: bool = False
    ) -> QueueView:
        """Atomically replace the queue's attributes by `change(current)` (which may raise to
        refuse, and may run more than once); `touch` moves its LastModifiedTimestamp."""

        def checked(attrs: QueueAttrs) -> QueueAttrs:
            new = change(attrs)
            validate_expires_s(new.expires_s, "expires_s")
            check_expiry_allowed(attrs.extra, new.expires_s)
            check_attributes(self.quotas, new, attrs)
            return new

        st = await self.runtime(name).update_attrs(checked, touch)
        await self._attributes_changed(name)
        if st.attrs.expires_s is not None:
            await self.expiry.ensure_marker(name)
        return QueueView.of(st)

    async def purge(self, name: str) -> None:
        await self.lanes(name).purge()

    async def counts(self, name: str) -> Counts:
        return await self.lanes(name).counts()

    async def sweep(self, name: str) -> int:
        lanes = self.lanes(name)
        swept = await lanes.root.sweep()
        for q in lanes.listed():
            swept += await q.sweep()
        return swept

    # --- messages ----------------------------------------------------------------------------

    async def send(
        self, name: str, requests: Sequence[SendRequest]
    ) -> list[SendResult | Exception]:
        """Send messages; each gets its result or its own error, in order."""
        if not requests:
            return []
        results = await self.lanes(name).send(requests)
        self.sent[name] += sum(1 for r in results if not isinstance(r, Exception))
        return results

    async def send_one(self, name: str, request: SendRequest) -> SendResult:
        (result,) = await self.send(name, [request])
        if isinstance(result, Exception):
            raise result
        return result

    async def receive(
        self,
        name: str,
        max_messages: int = 1,
        visibility_s: int | None = None,
        wait_s: int | None = None,
        *,
        lease_ahead: bool = True,
    ) -> list[Delivery]:
        """Lease up to `max_messages`, waiting up to `wait_s` for one. `lease_ahead` off for a
        caller that is no consumer loop (a move task): its extra leases would only hide
        messages from others."""
        if not 1 <= max_messages <= limits.lease_messages_max:
            raise InvalidArgument(
                f"MaxNumberOfMessages must be 1 to {limits.lease_messages_max}",
                "MaxNumberOfMessages",
            )
        if visibility_s is not None and not 0 <= visibility_s <= limits.visibility_s_max:
            raise InvalidArgument("VisibilityTimeout out of range", "VisibilityTimeout")
        if wait_s is not None and not 0 <= wait_s <= limits.wait_s_max:
            raise InvalidArgument("WaitTimeSeconds must be 0 to 20", "WaitTimeSeconds")
        return await self.lanes(name).receiving.receive(
            max_messages, visibility_s, wait_s, lease_ahead
        )

    async def remember_receive(
        self, name: str, attempt: str, deliveries: Sequence[Delivery], keep_s: int
    ) -> None:
        """Record what a receive made with ReceiveRequestAttemptId `attempt` answered, so a
        retry on any node gets it again while it stays in flight (okuri/engine/attempts.py)."""
        await self.runtime(name).remember_receive(attempt, deliveries, keep_s)

    async def recall_receive(self, name: str, attempt: str) -> list[Delivery] | None:
        """What the receive first made with `attempt` answered and is still in flight, if any;
        their visibility timeout starts over, as SQS does for a retried receive."""
        return await self.lanes(name).recall_receive(attempt)

    async def ack(
        self, name: str, receipt_handles: Sequence[str]
    ) -> list[AckResult | ReceiptHandleInvalid]:
        results = await self.lanes(name).by_receipt(
            receipt_handles, lambda h: h, lambda q, hs: q.ack(hs)
        )
        self.deleted[name] += sum(1 for r in results if r in ("acked", "logged"))
        return results

    async def change_visibility(
        self, name: str, entries: Sequence[tuple[str, int]]
    ) -> list[VisibilityResult | ReceiptHandleInvalid]:
        for _, vis in entries:
            if not 0 <= vis <= limits.visibility_s_max:
                raise InvalidArgument("VisibilityTimeout out of range", "VisibilityTimeout")
        return await self.lanes(name).by_receipt(
            entries, lambda e: e[0], lambda q, es: q.change_visibility(es)
        )

    async def dead_letter(
        self, name: str, receipt_handles: Sequence[str]
    ) -> list[DeadLetterResult | ReceiptHandleInvalid]:
        """Move leased messages to the queue's dead-letter queue now, on their consumer's word
        ("dead" each; "stale" when the receipt is not the newest or its lease ran out; "gone"
        when the message is finished). The dead-letter queue is the queue's target, else
        `{name}-dlq`, created if missing, as for messages past maxReceiveCount."""
        return await self.lanes(name).by_receipt(
            receipt_handles, lambda h: h, lambda q, hs: q.dead_letter(hs)
        )

    async def browse(
        self, name: str, after: str | None = None, limit: int = limits.browse_items_default
    ) -> BrowsePage:
        """A page of the queue's messages, oldest first, without leasing any: visible, in
        flight and delayed, each with its state. Commits nothing, so no receive count and no
        expiry "last used" mark moves. `after`: the previous page's `next`."""
        if not 1 <= limit <= limits.browse_items_max:
            raise InvalidArgument(f"limit must be 1 to {limits.browse_items_max}", "limit")
        try:
            lane_position(after)
        except PositionInvalid as err:
            raise InvalidArgument(str(err), "after") from err
        return await self.lanes(name).browse(after, limit)

    async def send_raw(self, name: str, messages: Sequence[Message]) -> None:
        """Append already-built messages (moves, redrive) keeping their ids and times."""
        await self.lanes(name).send_raw(messages)

    async def redrive(self, dlq: str, target: str | None = None, max_messages: int = 10_000) -> int:
        """Move messages from a dead-letter queue back to where they came from, now.

        A message goes to `target`, else to the queue it was dead-lettered from, else (sent to
        the dead-letter queue directly) to the queue the `-dlq` convention names. For the
        tracked, paced, cancellable kind see `start_move_task`.
        """
        moved = 0
        while moved < max_messages:
            batch = await self.receive(
                dlq, min(limits.receive_messages_max, max_messages - moved), 60, 0
            )
            if not batch:
                break
            by_target: dict[str, list[Delivery]] = {}
            for d in batch:
                dest = target or d.message.dead_letter_source or dlq.removesuffix("-dlq")
                by_target.setdefault(dest, []).append(d)
            for dest, deliveries in by_target.items():
                await move_messages(self, dest, deliveries)
            await self.ack(dlq, [d.receipt_handle for d in batch])
            moved += len(batch)
        return moved

    # --- dead-letter sources and move tasks (okuri.engine.move_tasks) ------------------------

    async def dead_letter_sources(
        self, dlq: str, limit: int, after: str = ""
    ) -> tuple[list[str], str | None]:
        """Queues that dead-letter to `dlq`, at most `limit`, after the name `after`; and where
        to continue (None: no more)."""
        return await self.moves.dead_letter_sources(dlq, limit, after)

    async def start_move_task(
        self, source: str, destination: str | None = None, rate: int | None = None
    ) -> MoveTask:
        """Start moving the messages of dead-letter queue `source` back (see MoveTasks.start)."""
        return await self.moves.start(source, destination, rate)

    async def list_move_tasks(self, source: str, limit: int = 1) -> list[MoveTask]:
        return await self.moves.list_tasks(source, limit)

    async def cancel_move_task(self, source: str, task_id: str) -> MoveTask:
        return await self.moves.cancel(source, task_id)

    # --- commits forwarded by other nodes (okuri.engine.peering) -----------------------------

    async def commit_for_peer(self, body: bytes) -> bytes:
        """Apply a commit another node forwarded to this one; the reply to send it back.

        Raises PeerRequestInvalid (a request that does not decode, or names another life of
        the queue) and QueueDoesNotExist.
        """
        if is_send(body):  # a FIFO send for a partition this node leads
            queue, incarnation, messages = decode_send(body)
            try:
                lane = self._named(queue)
            except InvalidArgument as err:
                raise PeerRequestInvalid(str(err)) from err
            return encode_send_reply(await lane.send_for_peer(incarnation, messages))
        req = decode_request(body)
        try:
            rt = self._named(req.queue)
        except InvalidArgument as err:
            raise PeerRequestInvalid(str(err)) from err
        return encode_reply(await rt.commit_for_peer(req))

    def cached_counts(self) -> dict[str, Counts]:
        """Approximate depths of the queues this node has touched, from cached manifests only.

        Costs no request, so a metrics scrape never adds to the bucket bill; slots written
        through other nodes and not yet adopted are not included.
        """
        now = self.clock.now_ms()
        out = {
            name: counts(rt.state, now) for name, rt in self._queues.items() if rt.state is not None
        }
        for name, lanes in self._lanes.items():
            for q in lanes.known()[1:]:
                if q.state is not None and name in out:
                    out[name] = out[name] + counts(q.state, now)
        return out

    def cached_oldest_visible_ms(self) -> dict[str, int | None]:
        """Per queue this node has touched: when its oldest visible message was sent (None for
        none), from cached manifests only, like `cached_counts`."""
        now = self.clock.now_ms()
        out: dict[str, int | None] = {}
        for name, rt in self._queues.items():
            lanes = self._lanes.get(name)
            logs = lanes.known() if lanes is not None else [rt]
            found = [oldest_visible_sent_ms(q.state, now) for q in logs if q.state is not None]
            if found:
                out[name] = min((t for t in found if t is not None), default=None)
        return out

    def cached_unadopted_slots(self) -> dict[str, int]:
        """Per queue this node has touched: slots it knows to be written past the manifest's
        cursor (by its own producers or read by discovery). Costs no request."""
        out: dict[str, int] = {}
        for name, rt in self._queues.items():
            lanes = self._lanes.get(name)
            for q in lanes.known() if lanes is not None else [rt]:
                if (n := q.unadopted_slots()) is not None:
                    out[name] = out.get(name, 0) + n
        return out

    # --- expiry (okuri.engine.expiry) ---------------------------------------------------------

    def start_expiry_sweeper(self, period_s: float = limits.expiry_sweep_s_default) -> None:
        """Look for abandoned queues past their expiry every `period_s` (jittered), until
        close or crash."""
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(self.expiry_sweeper.run(period_s))

    async def sweep_expired(self) -> int:
        """One pass of the expiry sweeper now; how many queues it deleted."""
        return await self.expiry_sweeper.sweep()

    def _stop_sweeper(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None

    def _expired(self, name: str) -> None:
        """The sweeper deleted queue `name`: drop this node's view and delete its segments."""
        q = self._queues.get(name)
        if q is not None:
            q.forget()
            q.tasks.spawn(q.sweep_quietly())
        else:  # a runtime only for the sweep, so that abandoned queues leave nothing behind
            self._tasks.spawn(Queue(self._node, name, self._send_to).sweep_quietly())

    # --- lifecycle ---------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop this node's move tasks, flush every pending send and commit, release unused
        leases (graceful shutdown)."""
        self._stop_sweeper()
        await self._tasks.wait()
        await self.moves.close()
        await asyncio.gather(*(lanes.close() for lanes in self._lanes.values()))
        await asyncio.gather(*(rt.close() for rt in self._queues.values()))

    def stop_waiting(self) -> None:
        """Answer every long poll on this node now, and every later one without waiting: the
        first step of a graceful shutdown, so that idle consumers do not hold it up for their
        whole WaitTimeSeconds."""
        self._stopping = True
        for rt in self._queues.values():
            rt.receiver.stop_waiting()
        for lanes in self._lanes.values():
            lanes.stop_waiting()

    def crash(self) -> None:
        """Drop everything in flight at once, as a killed process would (simulation only)."""
        self.moves.crash()
        self._stop_sweeper()
        self._tasks.cancel()
        for lanes in self._lanes.values():
            lanes.crash()
        for rt in self._queues.values():
            rt.crash()
        self._queues.clear()
        self._lanes.clear()


def _declared(attrs: QueueAttrs) -> QueueAttrs:
    """Attributes as a CreateQueue compares them (`okuri.core.fifo.as_declared`)."""
    return replace(attrs, extra=as_declared(attrs.extra))


__all__ = ["Engine"]
