"""A high-throughput FIFO queue's partitions: lanes chosen by message group.

One FIFO queue's commits all land on its manifest, which S3 lets change about 15 times a
second, so one log carries what one node's commits can hold (about 1,800 messages/s on S3's
latency, `python -m bench scaleout --open-loop --fifo-groups 100`). SQS partitions a FIFO queue
by message group in its high-throughput mode, and okuri does the same where that mode is asked
for at creation (DeduplicationScope messageGroup and FifoThroughputLimit perMessageGroupId,
`okuri.core.fifo.partitioned`): the queue's groups are spread over a fixed number of
partitions by a hash of the group's id, and each partition is a lane (okuri/engine/lanes.py),
a whole FIFO queue with its own slot log and manifest.

What keeps FIFO's promises: a group lives in one partition for the queue's life (the count is
fixed when the queue is made, and a partition's lane is never retired: the invariant
`partitions_stay`), so its order is that lane's slot order and only one receive at a time
holds its messages, as on an unpartitioned queue. Deduplication is per group on such a queue,
so a partition's window holds every key a send can duplicate. Every partition's lane is opened
as the queue is created (its manifest, then its listing in the queue's; the queue lists at most
one lane a partition, `AddLane`); one still missing, its creator having died, is opened by the
first send into it, on whichever node. Every node sends a group's messages there, dead letters
and moves included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from okuri.clock import Clock
from okuri.core import keys
from okuri.core.fifo import partition_of
from okuri.core.lane_ops import AddLane, partition_lane, partition_lanes
from okuri.core.message import Message
from okuri.engine.queue import Queue
from okuri.engine.retry import retrying
from okuri.engine.types import SendRequest, SendResult
from okuri.errors import QueueDoesNotExist, Unavailable
from okuri.store.port import ObjectStore

T = TypeVar("T")


class Partitions:
    """Which lane each group's messages go to, on this node."""

    def __init__(
        self, root: Queue, lane: Callable[[str], Queue], store: ObjectStore, clock: Clock
    ) -> None:
        self.root = root
        self._lane = lane
        self._store = store
        self._clock = clock
        self._opening: dict[int, asyncio.Future[Queue]] = {}

    async def send(
        self, requests: Sequence[SendRequest], count: int
    ) -> list[SendResult | Exception]:
        """Each request in its group's partition; results in the order of `requests`."""
        results: list[SendResult | Exception] = [Unavailable("send not attempted")] * len(requests)

        async def one(k: int, idxs: list[int]) -> None:
            batch = [requests[i] for i in idxs]
            try:
                out = await self._into(k, lambda q: q.send(batch))
            except (QueueDoesNotExist, Unavailable) as err:
                out = [err] * len(idxs)
            for i, r in zip(idxs, out, strict=True):
                results[i] = r

        places = _by_partition([r.group_id for r in requests], count)
        await asyncio.gather(*(one(k, idxs) for k, idxs in places.items()))
        return results

    async def send_raw(self, messages: Sequence[Message], count: int) -> None:
        """Messages already built (dead letters, moves), each into its group's partition."""
        places = _by_partition([m.group_id for m in messages], count)

        async def one(k: int, idxs: list[int]) -> None:
            batch = [messages[i] for i in idxs]
            await self._into(k, lambda q: q.send_raw(batch))

        await asyncio.gather(*(one(k, idxs) for k, idxs in places.items()))

    async def _into(self, k: int, act: Callable[[Queue], Awaitable[T]]) -> T:
        """`act` on partition `k`'s lane; once more on the lane a fresh read of the queue
        lists, if that lane's manifest was gone (the queue deleted, maybe made again)."""
        q = await self.lane_of(k)
        try:
            return await act(q)
        except QueueDoesNotExist:
            await self.root.refresh()  # raises QueueDoesNotExist when the queue is gone too
        return await act(await self.lane_of(k))

    async def open_all(self, count: int) -> None:
        """List every partition's lane, as the queue is made: a node that only receives learns
        the lanes from its first read of the queue's manifest. (A lane missing still, its
        creator having died, is opened by the first send into it.)"""
        await asyncio.gather(*(self.lane_of(k) for k in range(count)))

    def missing(self, count: int) -> bool:
        """Does the queue's manifest, as last seen here, list fewer lanes than partitions?"""
        st = self.root.state
        return st is not None and len(partition_lanes(st.lanes)) < count

    def _partition(self, lane: str) -> Queue:
        q = self._lane(keys.lane_name(self.root.name, lane))
        q.manifest.forwards_sends = True  # written by its leader (okuri/engine/peer_sends.py)
        return q

    async def lane_of(self, k: int) -> Queue:
        """Partition `k`'s lane, opened if the queue lists none yet (one opening at a time
        on this node)."""
        name = partition_lanes((await self.root.current()).lanes).get(k)
        if name is not None:
            return self._partition(name)
        opening = self._opening.get(k)
        if opening is None or opening.done():
            opening = self._opening[k] = asyncio.ensure_future(self._open(k))
        return await asyncio.shield(opening)

    async def _open(self, k: int) -> Queue:
        """List a lane for partition `k`: its manifest first (so a listed lane always has one),
        then its listing; a node that lost the race to list one uses the winner's."""
        st = await self.root.refresh()
        listed = partition_lanes(st.lanes).get(k)
        if listed is not None:
            return self._partition(listed)
        lane = partition_lane(k, self._clock.new_id().replace("-", "")[:12])
        q = self._partition(lane)
        await q.manifest.create_lane(st.incarnation, st.attrs)
        (added,) = await self.root.manifest.commit([AddLane(lane, st.incarnation)])
        if added is True:
            return q
        # Another node listed this partition's lane first (or the queue was made again).
        await retrying(self._clock, lambda: self._store.delete(keys.manifest(q.name)))
        q.forget()
        st = await self.root.refresh()
        listed = partition_lanes(st.lanes).get(k)
        if listed is None:
            raise Unavailable(f"no lane for partition {k} of {self.root.name!r}: try again")
        return self._partition(listed)


def _by_partition(groups: Sequence[str | None], count: int) -> dict[int, list[int]]:
    """Indexes of `groups` by partition. A message without a group is refused by its lane's
    FIFO checks, so where it goes does not matter: partition 0."""
    places: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        places.setdefault(0 if g is None else partition_of(g, count), []).append(i)
    return places
