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
all of them. A receipt names its lane, so a delete goes to that lane's manifest wherever it is
asked. One node alone never meets another's segment, so a queue served by one node has no lane
and costs what it always did.

Each lane is a whole `Queue` (okuri/engine/queue.py): leases, ack logs, leadership, discovery
and the simulator's checks apply to it unchanged. The queue's own manifest stays the authority
for attributes, the lane list and the queue's life: a lane takes the queue's attributes when
created and again whenever they differ from a fresh read of the queue's; deleting the queue
deletes the lanes it lists, then the queue, then any lane created meanwhile.

A lane a node has seen hold nothing for `limits.lane_quiet_s` is closed, kept a freed slot's
keep and dropped (okuri/engine/lane_retirement.py says why that is safe). Not lanes (yet): FIFO
queues (a group's order and the deduplication window span the queue) and queues with an expiry
(a lease in a lane would not record a use of the queue); a send scheduled beyond the longest
delay goes to the queue's own log, whose scheduled items outlive any lane.
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
from okuri.core.lane_ops import AddLane
from okuri.core.receipts import Receipt
from okuri.core.schedule import beyond_delay
from okuri.core.state import QueueAttrs
from okuri.core.transitions import SetAttributes
from okuri.core.views import Counts, has_visible, oldest_visible_sent_ms
from okuri.engine.browse import browse
from okuri.engine.lane_retirement import Retirement
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
# A message in another lane waiting so long goes before this node's own lane (`_order`): a lane
# whose node's consumers left or cannot keep up. Not much less: at a cluster's capacity every
# lane holds messages half a second old, and consumers that turned to other lanes then (0.5 s,
# one receive in four) made every lane slower, 91% of 28,800 messages/s deleted on sixteen
# nodes where own lane first deleted them all.
_LATE_S = 5.0
# One receive in so many on a node with a lane of its own looks at late lanes first.
_LATE_EVERY = 8
# How often a node with a lane of its own looks into the others while its receives wait.
_FOREIGN_LOOK_S = 1.0
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
        self._looked: dict[str, float] = {}  # lane name -> when this node last looked into it
        self._looked_last = -1e18  # when this node, with a lane of its own, last looked
        self._retirement = Retirement(root, store, clock, stats, self._tasks, quiet_s, self._disown)
        self._missing: dict[str, float] = {}  # lane name -> when a receive found it gone
        self._turn = 0
        self._late_turn = 0
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
                self.own = q
                self._stats["lanes_opened"] += 1
        except (QueueDoesNotExist, Unavailable) as err:
            log.info("opening a lane of %s failed: %s", self.root.name, err)

    # --- consuming ----------------------------------------------------------------------------

    async def receive(
        self,
        max_messages: int,
        visibility_s: int | None,
        wait_s: int | None,
        lease_ahead: bool,
    ) -> list[Delivery]:
        """Lease from this node's own lane first, then from wherever messages seem to be;
        wait on every lane until one has some or the wait is over."""
        st = await self.root.current()
        if not st.lanes:
            return await self.root.receive(max_messages, visibility_s, wait_s, lease_ahead)
        wait = st.attrs.receive_wait_s if wait_s is None else wait_s
        deadline = self._clock.monotonic_s() + wait
        first = True
        while True:
            lanes = self._live(self.everyone())
            own = self.own if self.own in lanes else None
            for q in lanes:
                q.poke()  # scheduled items and sweeps, in lanes no receive may lease from
            # Discovery runs for the lanes this node waits on closely: its own, or every lane
            # while it has none. The others it looks into at most every `_FOREIGN_LOOK_S`:
            # with each node taking from its own lane, N nodes probing N lanes 20 times a
            # second cost more GETs than messages.
            close = [own] if own is not None else lanes
            signals = [q.receiver.watch() for q in close]
            signals += [q.receiver.signal for q in lanes if q not in close]
            try:
                looks = self._due_looks(lanes, own, first)
                if looks:
                    await asyncio.gather(*(self._look(q, max_messages) for q in looks))
                self._retirement.note(lanes)
                for q in self._order(lanes):
                    self._sync_attrs(q)
                    try:
                        got = await q.receive(max_messages, visibility_s, 0, lease_ahead)
                    except QueueDoesNotExist:
                        if q is self.root:
                            raise
                        await self._gone(q)
                        continue
                    if got:
                        return got
                first = False
                remaining = deadline - self._clock.monotonic_s()
                if remaining <= 0 or self.root.receiver.stopping:
                    return []
                pace_s = _FOREIGN_LOOK_S if own is not None else limits.poll_ms_max / 1000
                await self._first_of(signals, min(remaining, pace_s))
            finally:
                for q in close:
                    q.receiver.unwatch()

    def _live(self, lanes: list[Queue]) -> list[Queue]:
        """`lanes` but those found gone within `_FOREIGN_LOOK_S`."""
        now = self._clock.monotonic_s()
        for name, since in list(self._missing.items()):
            if now - since >= _FOREIGN_LOOK_S:
                del self._missing[name]
        return [q for q in lanes if q.name not in self._missing]

    async def _gone(self, q: Queue) -> None:
        """A listed lane whose manifest is gone: dropped (this node's copy of the queue's
        manifest still lists it) or deleted with its queue. Read the queue's manifest again,
        and leave the lane out of receives for a while: waiting on a lane that is not there
        would end every wait at once."""
        self._missing[q.name] = self._clock.monotonic_s()
        try:
            await self.root.refresh()
        except Unavailable as err:
            log.debug("reading %s again: %s", self.root.name, err)

    def _due_looks(self, lanes: list[Queue], own: Queue | None, first: bool) -> list[Queue]:
        """The lanes to look into before this pass: on a receive's first pass, each that seems
        empty; with a lane of its own, one a `_FOREIGN_LOOK_S`, the one looked into longest
        ago. Every node looking into every lane each second cost N GETs a second a node, more
        than the messages on sixteen nodes; one each, the cluster still looks into every lane
        about once a second (a lane its owner cannot drain, or whose owner died)."""
        if own is None and not first:
            return []  # every lane's discovery runs while this receive waits
        now = self._clock.monotonic_s()
        quiet = [q for q in lanes if q is not own and not self._promising(q)]
        if own is not None:
            if not quiet or now - self._looked_last < _FOREIGN_LOOK_S:
                return []
            quiet = [min(quiet, key=lambda q: (self._looked.get(q.name, -1e18), q.name))]
            self._looked_last = now
        for q in quiet:
            self._looked[q.name] = now
        return quiet

    async def _look(self, q: Queue, want_messages: int) -> None:
        """Probe a lane's log (paced: at most a probe per poll interval) and read its manifest
        when the copy here is older than a poll, without leasing: a lease on a lane another
        node leads travels there, and most lanes hold nothing for this receive."""
        try:
            if q.manifest.age_s() > limits.poll_ms_max / 1000:
                await q.refresh()
            await q.slots.discover(want_messages, paced=True)
        except (QueueDoesNotExist, Unavailable) as err:
            log.debug("looking into lane %s: %s", q.name, err)

    def _order(self, lanes: list[Queue]) -> list[Queue]:
        """The others holding a message that waited `_LATE_S` (the oldest first), this node's
        own lane, then the other lanes that seem to hold messages, starting from a different
        one each time so none is starved.

        Own lane first, always, starved the rest under load: a node's own lane never empties
        while its producers send, so what was sent before the lanes opened (or into the lane
        of a node whose consumers cannot keep up, or that died) waited until the load ended."""
        own = self.own if self.own in lanes else None
        others = [q for q in lanes if q is not own and self._promising(q)]
        if others:
            self._turn = (self._turn + 1) % len(others)
            others = others[self._turn :] + others[: self._turn]
        self._late_turn = (self._late_turn + 1) % _LATE_EVERY
        if own is not None and self._late_turn:
            return [own, *others]
        late_ms = self._clock.now_ms() - int(_LATE_S * 1000)
        waiting = [(self._waiting_since_ms(q), q) for q in others]
        late = sorted(
            ((sent, q) for sent, q in waiting if sent is not None and sent <= late_ms),
            key=lambda pair: pair[0],
        )
        first = [q for _, q in late]
        rest = [q for q in others if q not in first]
        return [*first, own, *rest] if own is not None else [*first, *rest]

    def _waiting_since_ms(self, q: Queue) -> int | None:
        """When the oldest message this node knows waits in lane `q` was sent: one visible in
        its manifest as last seen here, or the first slot past its cursor."""
        st = q.state
        if st is None:
            return None
        oldest = oldest_visible_sent_ms(st, self._clock.now_ms())
        first = q.slots.known.get(st.next_seq)
        if first is not None and first.messages:
            oldest = first.sent_ms if oldest is None else min(oldest, first.sent_ms)
        return oldest

    def _promising(self, q: Queue) -> bool:
        st = q.state
        if st is None or q.receiver.holds_ahead() or q.slots.known_end() > st.next_seq:
            return True
        return has_visible(st, self._clock.now_ms())

    async def _first_of(self, signals: list[asyncio.Event], timeout_s: float) -> None:
        waits = [asyncio.ensure_future(s.wait()) for s in signals]
        try:
            await self._clock.wait_for(
                asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED), timeout_s
            )
        except TimeoutError:
            pass
        finally:
            for w in waits:
                w.cancel()

    def _sync_attrs(self, q: Queue) -> None:
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
