"""Items scheduled beyond the longest delay, on one node: writing their batches, and moving the
batches that fall due into the queue (the decisions are okuri/core/schedule.py's).

A produce writes each minute's items as one batch object beside the queue, never touching the
manifest. Any node serving the queue looks for due batches at most every
`limits.schedule_scan_s` (one LIST), claims each one it finds (a create-only claim object, taken
over once it runs out), appends its items through the slot log as delayed messages with their
ids, and deletes the batch, then the claim. A node that dies after appending and before deleting
leaves a claim that runs out: the next mover appends the items again, with the same ids, so a
consumer may see such an item twice, as at-least-once delivery allows. A purge drops every
batch written before it; a deleted queue's batches go with the hourly sweep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.message import Message, Segment, SegmentCorrupt, decode_segment, encode_segment
from okuri.core.schedule import Claim, bucket_of, is_due, moved_in
from okuri.core.state import QueueState
from okuri.engine.manifest import Manifest
from okuri.engine.retry import retrying
from okuri.engine.tasks import Tasks
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    QueueDoesNotExist,
    Transient,
    Unavailable,
)
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

SendRawFn = Callable[[Sequence[Message]], Awaitable[None]]


class Scheduler:
    def __init__(
        self,
        name: str,
        store: ObjectStore,
        clock: Clock,
        manifest: Manifest,
        send_raw: SendRawFn,
        tasks: Tasks,
        stats: Counter[str],
        node_id: str,
    ) -> None:
        self.name = name
        self.store = store
        self.clock = clock
        self.manifest = manifest
        self._send_raw = send_raw
        self._tasks = tasks
        self._stats = stats
        self._node_id = node_id
        self._last_scan_s: float | None = None
        self._scan: asyncio.Task[int] | None = None

    # --- writing -----------------------------------------------------------------------------

    async def schedule(self, st: QueueState, messages: Sequence[Message]) -> None:
        """Write `messages` (each due at its `visible_at_ms`) as one batch per minute."""
        by_minute: dict[int, list[Message]] = {}
        for m in messages:
            by_minute.setdefault(bucket_of(m.visible_at_ms), []).append(m)
        now = self.clock.now_ms()
        await asyncio.gather(
            *(self._write(st.incarnation, due, now, ms) for due, ms in by_minute.items())
        )
        self._stats["scheduled_items"] += len(messages)

    async def _write(self, incarnation: str, due_ms: int, now_ms: int, ms: list[Message]) -> None:
        sid = self.clock.new_id()
        key = keys.scheduled(self.name, incarnation, due_ms, now_ms, sid)
        data = encode_segment(Segment(sid, tuple(ms)))

        async def put() -> None:
            # The key is new, so one that exists is an earlier attempt of ours that landed.
            with contextlib.suppress(PreconditionFailed):
                await self.store.put_if_absent(key, data)

        await retrying(self.clock, put)

    # --- moving due batches in ---------------------------------------------------------------

    def poke(self) -> None:
        """Someone uses the queue here: look for due batches if the last look is old enough."""
        now_s = self.clock.monotonic_s()
        if self._scan is not None and not self._scan.done():
            return
        if self._last_scan_s is not None and now_s - self._last_scan_s < limits.schedule_scan_s:
            return
        self._last_scan_s = now_s
        self._scan = self._tasks.spawn(self._move_quietly())

    async def _move_quietly(self) -> int:
        try:
            return await self.move_due()
        except QueueDoesNotExist:
            return 0  # nothing to move into; a deleted queue's batches go with the sweep
        except Unavailable as err:
            log.warning("moving scheduled items into %s failed: %s", self.name, err)
            return 0

    async def move_due(self) -> int:
        """Move every due batch into the queue; returns how many items this node moved."""
        st = await self.manifest.refresh()
        prefix = keys.scheduled_of(self.name, st.incarnation)
        moved = 0
        after = ""
        for _ in range(limits.schedule_pages_max):
            page = await retrying(
                self.clock, lambda a=after: self.store.list(prefix, a, limits.list_keys_max)  # type: ignore[misc]
            )
            found = [k for k in map(keys.parse_scheduled, page) if k is not None]
            claimed = {k.batch for k in found if k.is_claim}
            for k in found:
                if k.is_claim:
                    continue
                if not is_due(k.due_ms, self.clock.now_ms()):
                    return moved  # keys list by due minute: the rest are later still
                if k.sent_ms <= st.purged_ms:
                    await self._drop(k.batch)
                    continue
                moved += await self._move(k.batch, k.batch in claimed)
            if len(page) < limits.list_keys_max:
                break
            after = page[-1]
        return moved

    async def _move(self, batch: str, claimed: bool) -> int:
        if not await self._claim(keys.claim(batch), claimed):
            return 0
        try:
            blob = await retrying(self.clock, lambda: self.store.get(batch))
        except NotFound:  # another node moved it and deleted it since we listed
            await self._delete(keys.claim(batch))
            return 0
        try:
            items = decode_segment(blob.data).messages
        except SegmentCorrupt as err:
            log.error("scheduled batch %s does not decode (%s); left in place", batch, err)
            return 0
        now = self.clock.now_ms()
        await self._send_raw([moved_in(m, now) for m in items])
        await self._drop(batch)
        self._stats["scheduled_moved"] += len(items)
        return len(items)

    async def _claim(self, key: str, exists: bool) -> bool:
        """Take the claim on a batch: create it, or take over one that has run out. Any doubt
        (a conflict, an ambiguous write) means not ours this time; a claim that did land runs
        out and the batch moves on a later look."""
        now = self.clock.now_ms()
        mine = Claim(self._node_id, now + limits.schedule_claim_ms).encode()
        try:
            if not exists:
                try:
                    await self.store.put_if_absent(key, mine)
                    return True
                except PreconditionFailed:
                    pass  # claimed since we listed: take over only if it has run out
            blob = await self.store.get(key)
            held = Claim.decode(blob.data)
            if held is not None and held.until_ms > now:
                return False
            await self.store.put_if_match(key, mine, blob.etag)
            return True
        except (NotFound, PreconditionFailed, Conflict, Transient, Ambiguous):
            return False

    async def _drop(self, batch: str) -> None:
        await self._delete(batch)
        await self._delete(keys.claim(batch))

    async def _delete(self, key: str) -> None:
        try:
            await retrying(self.clock, lambda: self.store.delete(key))
        except Unavailable:
            log.warning("could not delete %s; the sweep will", key)

    # --- cleaning up -------------------------------------------------------------------------

    async def sweep(self, st: QueueState | None) -> int:
        """Delete batches of a deleted queue (`st` None) or incarnation, batches a purge
        dropped, and claims whose batch is gone; returns how many keys went."""
        prefix = keys.scheduled_of_queue(self.name)
        deleted = 0
        after = ""
        batches: set[str] = set()
        for _ in range(limits.schedule_pages_max * 10):
            page = await retrying(
                self.clock, lambda a=after: self.store.list(prefix, a, limits.list_keys_max)  # type: ignore[misc]
            )
            for key in page:
                k = keys.parse_scheduled(key)
                if k is None:
                    continue
                stale = st is None or k.incarnation != st.incarnation or k.sent_ms <= st.purged_ms
                # A claim lists right after its batch: one without it outlived a finished move.
                if stale or (k.is_claim and k.batch not in batches):
                    await self._delete(key)
                    deleted += 1
                elif not k.is_claim:
                    batches.add(key)
            if len(page) < limits.list_keys_max:
                break
            after = page[-1]
        return deleted

    async def close(self) -> None:
        """Let a move under way finish, so its claim does not outlive it."""
        if self._scan is not None:
            await asyncio.gather(self._scan, return_exceptions=True)
