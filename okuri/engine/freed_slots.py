"""Objects of freed slots, deleted only `limits.freed_slot_keep_s` after this node saw them freed.

Why wait: a slot below the cursor was read, and once its messages are finished its object goes.
A producer whose cached cursor is stale could then write that slot again, where no consumer
reads. While the object stays, such a write finds the slot taken (412) and moves on; so a
producer that picked its slot on a manifest shown current less than half the keep before its
write landed knows the slot was at or past the cursor, without reading the manifest again after
its write (`SlotLog._verify_slot`). A slot is freed only after the cursor passed it, and this node
learns of it only after that, so waiting here from that moment waits at least as long from the
moment the cursor moved.

The wait is measured on this node's monotonic clock, never a wall clock. Deletes still pending
when the node stops (or dies) are the sweeper's, which waits the same before it deletes.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from okuri import limits
from okuri.clock import Clock


class FreedSlots:
    def __init__(self, clock: Clock, delete: Callable[[str], Coroutine[Any, Any, None]]) -> None:
        self.clock = clock
        self._delete = delete  # quiet: a failure is left to the sweeper
        self._due: deque[tuple[float, str]] = deque()  # in due order: one wait for all
        self._runner: asyncio.Task[None] | None = None
        self._deleting: set[asyncio.Task[None]] = set()

    def delete_later(self, keys: Iterable[str]) -> None:
        """Delete these slot objects once the keep has passed; beyond the bound, the sweeper
        will (it waits the same)."""
        due = self.clock.monotonic_s() + limits.freed_slot_keep_s
        for key in keys:
            if len(self._due) >= limits.freed_slots_pending_max:
                break
            self._due.append((due, key))
        if self._due and (self._runner is None or self._runner.done()):
            self._runner = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while self._due:
            due, key = self._due[0]
            wait = due - self.clock.monotonic_s()
            if wait > 0:
                await self.clock.sleep(wait)
                continue
            if len(self._deleting) >= limits.freed_slot_deletes_concurrent:
                await asyncio.wait(self._deleting, return_when=asyncio.FIRST_COMPLETED)
                continue
            self._due.popleft()
            task = asyncio.create_task(self._delete(key))  # a store round trip each
            self._deleting.add(task)
            task.add_done_callback(self._deleting.discard)

    def stop(self) -> None:
        """Leave what is pending to the sweeper: deleting it early is what the keep forbids."""
        if self._runner is not None:
            self._runner.cancel()
            self._runner = None
        for task in list(self._deleting):
            task.cancel()
        self._due.clear()
