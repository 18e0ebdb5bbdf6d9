"""Retiring a lane (okuri/engine/lanes.py) that has held nothing for a while, so a queue whose
producers went back to one node (or none) costs what a queue without lanes does.

Each node keeps, per lane, since when it has seen the lane hold nothing (no segment, no slot
past its cursor, no lease taken ahead here). After `quiet_s` it closes the lane (`CloseLane`,
only while its cursor is where this node saw it and nothing is unfinished), waits a freed
slot's keep, and, the lane still empty on a fresh read and a probe past its cursor, drops it
from the queue's manifest (`DropLane`), deletes its manifest and sweeps its segments.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.lane_ops import CloseLane, DropLane, partition_of_queue
from okuri.engine.queue import Queue
from okuri.engine.retry import retrying
from okuri.engine.tasks import Tasks
from okuri.errors import QueueDoesNotExist, Unavailable
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")


class Retirement:
    """The lanes of one queue this node watches go quiet, and retires."""

    def __init__(
        self,
        root: Queue,
        store: ObjectStore,
        clock: Clock,
        stats: Counter[str],
        tasks: Tasks,
        quiet_s: float,
        disown: Callable[[Queue], None],
    ) -> None:
        """`disown`: called as a lane is closed, so this node's producers stop sending there."""
        self._root = root
        self._store = store
        self._clock = clock
        self._stats = stats
        self._tasks = tasks
        self._quiet_s = quiet_s
        self._disown = disown
        self._quiet_since: dict[str, float] = {}  # lane name -> since when it held nothing here
        self._retiring: set[str] = set()

    def note(self, lanes: list[Queue]) -> None:
        """Keep, per lane, since when this node has seen it hold nothing (as `lanes` are now, on
        this node); retire one quiet for `quiet_s`."""
        now = self._clock.monotonic_s()
        for q in lanes:
            st = q.state
            if q is self._root or st is None or partition_of_queue(q.name) is not None:
                continue  # a partition's lane holds its groups' order for the queue's life
            if st.segments or q.slots.known_end() > st.next_seq or q.receiver.holds_ahead():
                self._quiet_since.pop(q.name, None)
                continue
            since = self._quiet_since.setdefault(q.name, now)
            if now - since >= self._quiet_s and q.name not in self._retiring:
                self._retiring.add(q.name)
                self._tasks.spawn(self._retire(q))

    async def _retire(self, q: Queue) -> None:
        try:
            await self._close_and_drop(q)
        except (QueueDoesNotExist, Unavailable) as err:
            log.info("retiring lane %s: %s", q.name, err)
        finally:
            self._retiring.discard(q.name)
            self._quiet_since.pop(q.name, None)

    async def _close_and_drop(self, q: Queue) -> None:
        """Close a quiet lane to sends, wait until no send picked before the close can still
        land, then unlist it and delete it, if it still holds nothing.

        A producer acknowledges a send without reading the lane's manifest again only when the
        manifest it picked its slot from was shown current less than half a freed slot's keep
        before (okuri/engine/slot_log.py, `_verify_slot`): once the lane has been closed for a
        whole keep, every slot written into it was written before the close, or is refused."""
        if not await self._empty(q):
            return
        st = q.state
        assert st is not None
        if not st.closed_ms:
            (closed,) = await q.manifest.commit([CloseLane(st.next_seq)])
            if closed is not True:
                return  # something came meanwhile
            self._stats["lanes_closed"] += 1
        self._disown(q)
        await self._clock.sleep(limits.freed_slot_keep_s)
        if not await self._empty(q):
            return  # sends that landed before the close: consumed as any, retired later
        lane = q.name.partition(keys.LANE_SEP)[2]
        (dropped,) = await self._root.manifest.commit([DropLane(lane)])
        if dropped is True:
            self._stats["lanes_dropped"] += 1
        await retrying(self._clock, lambda: self._store.delete(keys.manifest(q.name)))
        q.forget()
        q.tasks.spawn(q.sweep_quietly())  # its segments, read by no one now

    async def _empty(self, q: Queue) -> bool:
        """Does the lane hold nothing, on a fresh read and a probe past its cursor?"""
        st = await q.refresh()
        await q.slots.discover(1)
        return not st.segments and q.slots.known_end() <= st.next_seq
