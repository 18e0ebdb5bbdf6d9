"""One queue over several lanes: how a standard queue grows past one slot log and one manifest.

A queue's slot log takes one segment per slot, so producers on several nodes race for its next
slot: a loser reads forward and tries again, and its send waits (docs/cost.md, scale-out). And
every lease and delete of the queue lands on its one manifest, which S3 lets change about 15
times a second, so what one commit carries bounds the queue.

So a standard queue may have lanes: each a slot log and manifest of its own (its manifest at
`l/{queue}/{lane}`, its segments and ack logs under the lane's name `{queue}~{lane}`), listed
in the queue's manifest (`lanes`, grown by `AddLane`). A node whose producer finds another
node's segment in the slot it picked (`_CONTENDED` times within `_CONTENDED_S`) creates a lane,
lists it and from then on sends only there: a lane has one producer node, so its slots are
never raced for, and its commits are made by whichever node leads it (okuri/core/leadership.py),
usually that same node, whose consumers receive from it first. A receive tries this node's own
lane, then the queue's own log and the lanes that look like they hold messages, then waits on
all of them (okuri/engine/lane_receiving.py). A receipt names its lane, so a delete goes to
that lane's manifest wherever it is asked. One node alone never meets another's segment, so a
queue served by one node has no lane and costs what it always did.

Each lane is a whole `Queue` (okuri/engine/queue.py): leases, ack logs, leadership, discovery
and the simulator's checks apply to it unchanged. The queue's own manifest stays the authority
for attributes, the lane list and the queue's life: a lane takes the queue's attributes when
created and again whenever they differ from a fresh read of the queue's; deleting the queue
deletes the lanes it lists, then the queue, then any lane created meanwhile.

A lane a node has seen hold nothing for `limits.lane_quiet_s` is closed, kept a freed slot's
keep and dropped (okuri/engine/lane_retirement.py says why that is safe). A FIFO queue opens
no lane on contention (a group's order and the deduplication window span the queue), but one
made in SQS's high-throughput mode has a lane per partition of its groups, for its whole life
(okuri/engine/partitions.py). Queues with an expiry have none (a lease in a lane would not
record a use of the queue); a send scheduled beyond the longest delay goes to the queue's own
log, whose scheduled items outlive any lane.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar, cast

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.browse import BrowsePage, MessageView, lane_position, position_in_lane
from okuri.core.fifo import partitions
from okuri.core.lane_ops import AddLane
from okuri.core.message import Message
from okuri.core.receipts import Receipt
from okuri.core.schedule import beyond_delay
from okuri.core.state import QueueAttrs
from okuri.core.transitions import SetAttributes
from okuri.core.views import Counts
from okuri.engine.browse import browse
from okuri.engine.lane_receiving import LaneReceiving
from okuri.engine.lane_retirement import Retirement
from okuri.engine.partitions import Partitions
from okuri.engine.queue import Queue
from okuri.engine.retry import retrying
from okuri.engine.tasks import Tasks
from okuri.engine.types import Delivery, SendRequest, SendResult
from okuri.errors import QueueDoesNotExist, ReceiptHandleInvalid, Unavailable
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

T = TypeVar("T")
R = TypeVar("R")

# Slots lost to another node's segment, within so many seconds, before a node opens a lane: one
# loss can be a slot written before this node started.
_CONTENDED = 2
_CONTENDED_S = 10.0
# How fresh a read of the queue's manifest must be for its attributes to overwrite a lane's.
_ATTRS_FRESH_S = 1.0
# How often a node sending into its own lane reads the queue's manifest, to learn whether the
# queue was deleted meanwhile (its own lane's commits keep only the lane's copy current).
_ROOT_CHECK_S = 5.0


class Lanes:
    """A queue's own log and its lanes, on this node."""

    def __init__(
        self,
        root: Queue,
        make: Callable[[str], Queue],
        store: ObjectStore,
        clock: Clock,
        stats: Counter[str],
        enabled: bool,
        quiet_s: float = limits.lane_quiet_s,
    ) -> None:
        self.root = root
        self._make = make
        self._store = store
        self._clock = clock
        self._stats = stats
        self._enabled = enabled
        self._tasks = Tasks()
        self._lanes: dict[str, Queue] = {}
        self._own: Queue | None = None
        self._losses: deque[float] = deque(maxlen=_CONTENDED)
        self._opening: asyncio.Task[None] | None = None
        self._checking: asyncio.Task[None] | None = None
        self._syncing: set[str] = set()
        self.retirement = Retirement(root, store, clock, stats, self._tasks, quiet_s, self._disown)
        self.partitions = Partitions(root, self.lane, store, clock)
        self.receiving = LaneReceiving(self, clock)  # receives (okuri/engine/lane_receiving.py)
        root.slots.contended = self._contended

    # --- which lane ---------------------------------------------------------------------------

    @property
    def own(self) -> Queue | None:
        """The lane this node's producers write, once it has one."""
        return self._own

    @own.setter
    def own(self, q: Queue | None) -> None:
        """This node leads the lane it produces into (its consumers take from it first; with
        another leading it, every lease and delete would travel there), and no other."""
        if self._own is not None:
            self._own.manifest.claims = False
        if q is not None:
            q.manifest.claims = True
        self._own = q

    def _disown(self, q: Queue) -> None:
        """`q` is being retired: this node's producers stop sending into it."""
        if self._own is q:
            self.own = None

    def lane(self, name: str) -> Queue:
        """The lane named `name` (`keys.lane_name`) on this node."""
        q = self._lanes.get(name)
        if q is None:
            q = self._lanes[name] = self._make(name)
        return q

    def listed(self) -> list[Queue]:
        """The lanes the queue's manifest, as last seen here, lists."""
        st = self.root.state
        if st is None or not st.lanes:
            return []
        return [self.lane(keys.lane_name(self.root.name, lane)) for lane in st.lanes]

    def everyone(self) -> list[Queue]:
        return [self.root, *self.listed()]

    def known(self) -> list[Queue]:
        """The queue's own log and every lane this node has met, listed or not."""
        return [self.root, *self._lanes.values()]

    def is_lane(self, name: str) -> bool:
        """Is `name` a lane of this queue, as far as its manifest, last seen here, says?"""
        st = self.root.state
        root, _, lane = name.partition(keys.LANE_SEP)
        return root == self.root.name and st is not None and lane in st.lanes

    async def _of_receipt(self, handle: str) -> Queue:
        """Where a receipt's message lives: a listed lane, else the queue's own log (which
        answers for a receipt of another queue, or one that is no receipt)."""
        try:
            name = Receipt.decode(handle).queue
        except ReceiptHandleInvalid:
            return self.root
        if keys.LANE_SEP not in name or keys.root_of(name) != self.root.name:
            return self.root
        if not self.is_lane(name):
            await self.root.refresh()  # a lane listed since this node last looked
        return self.lane(name) if self.is_lane(name) else self.root

    # --- producing ----------------------------------------------------------------------------

    async def send(self, requests: Sequence[SendRequest]) -> list[SendResult | Exception]:
        count = await self._partition_count()
        if count:
            return await self.partitions.send(requests, count)
        own = self.own
        if own is not None and self._scheduled(requests):
            own = None  # kept beside the queue until due: a lane may be retired before that
        if own is not None and own.state is not None and own.state.closed_ms:
            self.own = own = None  # being retired: a lane is opened again on contention
        if own is not None:
            self._check_root(own)
            try:
                results = await own.send(requests)
                if not all(isinstance(r, QueueDoesNotExist) for r in results):
                    return results
            except QueueDoesNotExist:
                pass
            if self.own is own:
                self.own = None  # its lane is gone (the queue was deleted): the queue decides
        return await self.root.send(requests)

    async def send_raw(self, messages: Sequence[Message]) -> None:
        """Messages already built (dead letters, moves): into the queue's own log, or each
        into its group's partition."""
        count = await self._partition_count()
        if count:
            await self.partitions.send_raw(messages, count)
        else:
            await self.root.send_raw(messages)

    async def open_partitions(self) -> None:
        """A high-throughput FIFO queue was made: list its partitions' lanes now."""
        count = await self._partition_count()
        if count:
            await self.partitions.open_all(count)

    async def _partition_count(self) -> int:
        """How many partitions the queue's groups are spread over (0: none, one log)."""
        return partitions((await self.root.current()).attrs.extra)

    def _scheduled(self, requests: Sequence[SendRequest]) -> bool:
        """Does any of `requests` wait outside the log until due (okuri/engine/schedule.py)?"""
        now = self._clock.now_ms()
        return any(
            r.enqueue_at_ms is not None and beyond_delay(r.enqueue_at_ms, now) for r in requests
        )

    def _check_root(self, own: Queue) -> None:
        if self.root.manifest.age_s() < _ROOT_CHECK_S:
            return
        if self._checking is None or self._checking.done():
            self._checking = self._tasks.spawn(self._root_alive(own))

    async def _root_alive(self, own: Queue) -> None:
        """Was the queue deleted (or deleted and created again) while this node sent into its
        own lane? Such a lane is read by no one (a DeleteQueue whose node died before it found
        the lane): it is deleted, so sends into it fail their check and go to the queue."""
        try:
            st = await self.root.refresh()
            if own.state is not None and st.incarnation == own.state.incarnation:
                return
        except QueueDoesNotExist:
            pass
        except Unavailable:
            return
        if self.own is own:
            self.own = None
        await retrying(self._clock, lambda: self._store.delete(keys.manifest(own.name)))
        own.forget()
        self._stats["lanes_orphaned"] += 1

    def _contended(self) -> None:
        """Another node's segment took the slot this node picked in the queue's own log."""
        if not self._enabled or self.own is not None:
            return
        if self._opening is not None and not self._opening.done():
            return
        now = self._clock.monotonic_s()
        self._losses.append(now)
        if len(self._losses) == _CONTENDED and now - self._losses[0] <= _CONTENDED_S:
            self._losses.clear()
            self._opening = self._tasks.spawn(self._open_own())

    async def _open_own(self) -> None:
        """Create a lane for this node's producers: its manifest first, then its listing, so a
        listed lane always has one; sends go there once it is listed."""
        try:
            st = await self.root.current()
            if st.attrs.fifo or st.attrs.expires_s is not None:
                return
            if len(st.lanes) >= limits.lanes_max:
                return
            name = keys.lane_name(self.root.name, self._clock.new_id().replace("-", "")[:12])
            q = self.lane(name)
            await q.manifest.create_lane(st.incarnation, st.attrs)
            lane = name.partition(keys.LANE_SEP)[2]
            (listed,) = await self.root.manifest.commit([AddLane(lane, st.incarnation)])
            if listed is True:
                q.slots.sole_writer = True
                self.own = q
                self._stats["lanes_opened"] += 1
        except (QueueDoesNotExist, Unavailable) as err:
            log.info("opening a lane of %s failed: %s", self.root.name, err)

    # --- attributes --------------------------------------------------------------------------

    def sync_attrs(self, q: Queue) -> None:
        """Give a lane the queue's attributes when a fresh read of the queue shows others."""
        root, lane = self.root.state, q.state
        if q is self.root or root is None or lane is None or lane.attrs == root.attrs:
            return
        if self.root.manifest.age_s() > _ATTRS_FRESH_S or q.name in self._syncing:
            return
        self._syncing.add(q.name)
        self._tasks.spawn(self._set_attrs(q, root.attrs))

    async def _set_attrs(self, q: Queue, attrs: QueueAttrs) -> None:
        try:
            await q.manifest.commit([SetAttributes(attrs)])
        except (QueueDoesNotExist, Unavailable) as err:
            log.info("attributes of lane %s: %s", q.name, err)
        finally:
            self._syncing.discard(q.name)

    async def attributes_changed(self) -> None:
        """The queue's attributes were changed through this node: every lane takes them now."""
        st = await self.root.refresh()
        lanes = self.listed()
        for q in lanes:
            self._syncing.add(q.name)
        await asyncio.gather(*(self._set_attrs(q, st.attrs) for q in lanes))

    # --- by receipt ---------------------------------------------------------------------------

    async def by_receipt(
        self,
        entries: Sequence[T],
        handle: Callable[[T], str],
        run: Callable[[Queue, list[T]], Awaitable[list[R]]],
    ) -> list[R]:
        """Run `run` on each lane with the entries whose receipts it issued; results in the
        order of `entries`."""
        places: dict[str, tuple[Queue, list[int]]] = {}
        for i, entry in enumerate(entries):
            q = await self._of_receipt(handle(entry))
            places.setdefault(q.name, (q, []))[1].append(i)
        if len(places) == 1:
            ((q, _),) = places.values()
            return await run(q, list(entries))
        results: list[R | None] = [None] * len(entries)

        async def one(q: Queue, idxs: list[int]) -> None:
            for i, r in zip(idxs, await run(q, [entries[i] for i in idxs]), strict=True):
                results[i] = r

        await asyncio.gather(*(one(q, idxs) for q, idxs in places.values()))
        return cast(list[R], results)  # each filled by its lane (zip is strict)

    async def recall_receive(self, attempt: str) -> list[Delivery] | None:
        """What the receive made with `attempt` answered and is still in flight, in whichever
        lanes (okuri/engine/attempts.py); their visibility timeout starts over."""
        found = await self.root.attempts.recall(attempt)
        if found is None:
            return None
        handles, vis_s = found
        again = await self.by_receipt(handles, lambda h: h, lambda q, hs: q.attempts.in_flight(hs))
        deliveries = [d for d in again if d is not None]
        if not deliveries:
            return None
        await self.by_receipt(
            [(d.receipt_handle, vis_s) for d in deliveries],
            lambda e: e[0],
            lambda q, es: q.change_visibility(es),
        )
        return deliveries

    # --- the whole queue ----------------------------------------------------------------------

    async def counts(self) -> Counts:
        total = await self.root.counts()
        for c in await asyncio.gather(*(q.counts() for q in self.listed())):
            total = total + c
        return total

    async def purge(self) -> None:
        await self.root.purge()
        await asyncio.gather(*(q.purge() for q in self.listed()))

    async def browse(self, after: str | None, limit: int) -> BrowsePage:
        """A page over the queue's own log, then each lane in the order they were listed; the
        position says which (okuri/core/browse.py, `lane_position`)."""
        k, start = lane_position(after)
        await self.root.refresh()
        everyone = self.everyone()
        views: list[MessageView] = []
        while k < len(everyone):
            page = await browse(everyone[k], start, limit - len(views))
            views.extend(page.messages)
            if page.next is not None:
                return BrowsePage(tuple(views), position_in_lane(k, page.next))
            k, start = k + 1, (0, 0)
            if len(views) == limit and k < len(everyone):
                return BrowsePage(tuple(views), position_in_lane(k, "0.0"))
        return BrowsePage(tuple(views), None)

    async def delete(self) -> list[str]:
        """Delete the lanes the queue lists (before the queue: a send into a lane whose
        manifest is gone fails, and goes to the queue instead); the lanes' names."""
        st = await self.root.refresh()
        names = [keys.lane_name(self.root.name, lane) for lane in st.lanes]
        for name in names:
            await retrying(self._clock, lambda n=name: self._store.delete(keys.manifest(n)))  # type: ignore[misc]
        return names

    async def delete_unlisted(self) -> list[str]:
        """After the queue's manifest is gone: delete every lane manifest left under it (a lane
        listed while the queue was being deleted); their names."""
        prefix = keys.lanes_of_queue(self.root.name)
        found: list[str] = []
        after = ""
        for _ in range(limits.lanes_max):
            page = await retrying(
                self._clock,
                lambda a=after: self._store.list(prefix, a, 1000),  # type: ignore[misc]
            )
            for key in page:
                name = keys.lane_of_manifest(key)
                if name is not None:
                    await retrying(self._clock, lambda k=key: self._store.delete(k))  # type: ignore[misc]
                    found.append(name)
            if len(page) < 1000:
                break
            after = page[-1]
        return found

    def forget(self) -> None:
        self.own = None
        for q in self._lanes.values():
            q.forget()

    def stop_waiting(self) -> None:
        for q in self._lanes.values():
            q.receiver.stop_waiting()

    async def close(self) -> None:
        await self._tasks.wait()
        await asyncio.gather(*(q.close() for q in self._lanes.values()))

    def crash(self) -> None:
        self._tasks.cancel()
        for q in self._lanes.values():
            q.crash()
        self._lanes.clear()
        self.own = None
