"""Receiving from a queue with lanes: which lane a receive tries first, and how it waits on all.

A node's own lane (the one its producers write, okuri/engine/lanes.py) goes first, since it never
empties while they send; then lanes holding a message that waited `_LATE_S`, one receive in
`_LATE_EVERY`; then partitions this node leads (a high-throughput FIFO queue's,
okuri/engine/partitions.py); then the rest that seem to hold something, from a different one
each time. A node with a lane of its own waits closely only on it and looks into one other
lane a second; one without waits on every lane, and the first to find something wakes it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from okuri import limits
from okuri.clock import Clock
from okuri.core.fifo import partitions
from okuri.core.leadership import leader
from okuri.core.views import has_leasable, oldest_visible_sent_ms
from okuri.engine.queue import Queue
from okuri.engine.types import Delivery
from okuri.errors import QueueDoesNotExist, Unavailable

if TYPE_CHECKING:
    from okuri.engine.lanes import Lanes

log = logging.getLogger("okuri.engine")

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


class LaneReceiving:
    """The receives of one queue with lanes, on this node."""

    def __init__(self, lanes: Lanes, clock: Clock) -> None:
        self._lanes = lanes
        self._clock = clock
        self._looked: dict[str, float] = {}  # lane name -> when this node last looked into it
        self._looked_last = -1e18  # when this node, with a lane of its own, last looked
        self._missing: dict[str, float] = {}  # lane name -> when a receive found it gone
        self._turn = 0
        self._late_turn = 0

    async def receive(
        self,
        max_messages: int,
        visibility_s: int | None,
        wait_s: int | None,
        lease_ahead: bool,
    ) -> list[Delivery]:
        """Lease from this node's own lane first, then from wherever messages seem to be;
        wait on every lane until one has some or the wait is over."""
        st = await self._lanes.root.current()
        count = partitions(st.attrs.extra)
        if not st.lanes and not count:
            return await self._lanes.root.receive(max_messages, visibility_s, wait_s, lease_ahead)
        wait = st.attrs.receive_wait_s if wait_s is None else wait_s
        deadline = self._clock.monotonic_s() + wait
        first = True
        while True:
            if (
                count
                and self._lanes.partitions.missing(count)
                and self._lanes.root.manifest.age_s() > 1.0
            ):
                await self._lanes.root.refresh()  # a partition's lane opened through another node
            lanes = self._live(self._lanes.everyone())
            own = self._lanes.own if self._lanes.own in lanes else None
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
                self._lanes.retirement.note(lanes)
                for q in self._order(lanes):
                    self._lanes.sync_attrs(q)
                    try:
                        got = await q.receive(max_messages, visibility_s, 0, lease_ahead)
                    except QueueDoesNotExist:
                        if q is self._lanes.root:
                            raise
                        await self._gone(q)
                        continue
                    if got:
                        return got
                first = False
                remaining = deadline - self._clock.monotonic_s()
                if remaining <= 0 or self._lanes.root.receiver.stopping:
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
            await self._lanes.root.refresh()
        except Unavailable as err:
            log.debug("reading %s again: %s", self._lanes.root.name, err)

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
        """The others holding a message that waited `_LATE_S` (the oldest first; one receive
        in `_LATE_EVERY`), this node's own lane, then the other lanes that seem to hold
        messages, starting from a different one each time so none is starved.

        Own lane first, always, starved the rest under load: a node's own lane never empties
        while its producers send, so what was sent before the lanes opened (or into the lane
        of a node whose consumers cannot keep up, or that died) waited until the load ended.
        The queue's own log is one of the others: what is left there once nodes have lanes
        only drains, but trying it first, on every receive or one in four, made receives wait
        for its one manifest, and sixteen nodes at 25,600 messages/s kept a worse p99 from
        offer to receive (1.39 s and 1.10 s, against 1.03 s)."""
        own = self._lanes.own if self._lanes.own in lanes else None
        others = [q for q in lanes if q is not own and self._promising(q)]
        if others:
            self._turn = (self._turn + 1) % len(others)
            others = others[self._turn :] + others[: self._turn]
            # Partitions this node leads first: their leases and deletes commit here, with no
            # hop to another node's commit window (a group's next turn waits for both).
            others.sort(key=lambda q: not self._leads(q))
        first: list[Queue] = []
        self._late_turn = (self._late_turn + 1) % _LATE_EVERY
        if own is None or not self._late_turn:
            late_ms = self._clock.now_ms() - int(_LATE_S * 1000)
            waiting = [(self._waiting_since_ms(q), q) for q in others]
            late = sorted(
                ((sent, q) for sent, q in waiting if sent is not None and sent <= late_ms),
                key=lambda pair: pair[0],
            )
            first = [q for _, q in late]
        rest = [q for q in others if q not in first]
        return [*first, own, *rest] if own is not None else [*first, *rest]

    def _leads(self, q: Queue) -> bool:
        st = q.state
        lead = None if st is None else leader(st, self._clock.now_ms())
        return lead is not None and lead[0] == q.manifest.node_id

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
        if st.loaded_upto() < st.next_seq:
            return True  # FIFO: slots adopted, their messages not loaded yet
        return has_leasable(st, self._clock.now_ms())

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
