"""Group commit: callers hand in items, one flush runs at a time, at most one per linger.

The rate cap is the cost model: a queue on one node writes to the bucket at most once per linger
window however many clients it serves, and everything that arrived meanwhile rides along.

A client (one connection, as the server names it in `caller`) waits on each answer before it
asks again. So once every client the last flush carried waits for the next one, nothing more
could ride along, and the flush goes at once: a lone client writes at most once per call, and
consumers looping receive and delete flush together, once per turn of the slowest, rather
than each waiting out part of a window on every delete. Every flush then carries each of its
clients' calls, so the writes per call are what the linger gives or fewer. The linger holds
while a client of the last flush has not come back (it may be about to), and for unnamed
tasks. While several share the flushes (`limits.flush_gather_callers`), they are also spaced
by the gather window: each flush costs CPU whatever it carries, so on a busy node fewer,
fuller flushes leave more CPU for the requests themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Generic, TypeVar

from okuri import limits
from okuri.clock import Clock

T = TypeVar("T")
R = TypeVar("R")

# Who waits on a flush: a server sets it to the client's connection for each request, since one
# connection's requests come one after another while each may run in a task of its own; tasks
# started for a request inherit it. Without it the caller is the asyncio task, and the linger
# always holds: an unnamed task may be one of many (a simulated client, background work).
caller: ContextVar[object | None] = ContextVar("okuri_caller", default=None)


class Batcher(Generic[T, R]):
    def __init__(
        self,
        clock: Clock,
        linger_ms: int,
        flush: Callable[[list[T]], Awaitable[list[R]]],
        max_items: int,
        size: Callable[[T], int] = lambda _: 0,
        max_size: int = 0,
        gather_ms: int = 0,
    ) -> None:
        self._clock = clock
        self._linger_s = linger_ms / 1000
        self._gather_s = gather_ms / 1000
        # Its owner may turn pacing off between flushes: then neither the linger nor gathering
        # holds a flush back (a flush that writes nothing of its own, such as a forward).
        self.paced = True
        self._busy = False  # several callers shared the last flush or wait for the next
        self._last_callers: set[object] = set()  # who the last flush carried
        self._flush = flush
        self._max_items = max_items
        self._size = size
        self._max_size = max_size
        self._pending: list[tuple[T, asyncio.Future[R], object]] = []  # item, its future, caller
        self._pending_size = 0
        self._wake = asyncio.Event()
        self._last_flush_s = -1e18
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def submit(self, item: T) -> asyncio.Future[R]:
        if self._closed:
            raise RuntimeError("batcher closed")
        fut: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, fut, caller.get() or asyncio.current_task()))
        self._pending_size += self._size(item)
        self._wake.set()
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())
        return fut

    @property
    def linger_s(self) -> float:
        """The least time between two flushes' starts, as things stand."""
        return self._linger_s if self.paced else 0.0

    @property
    def gather_s(self) -> float:
        """The least time between two flushes' starts while several callers share them."""
        return self._gather_s if self.paced else 0.0

    @property
    def closed(self) -> bool:
        """Drained for shutdown: it takes nothing more."""
        return self._closed

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _full(self) -> bool:
        return len(self._pending) >= self._max_items or (
            self._max_size > 0 and self._pending_size >= self._max_size
        )

    async def _run(self) -> None:
        while self._pending:
            if self._all_in():
                # Every client the flushes serve waits on this one: nothing else could ride
                # along, so the linger would only delay them (gathering still spaces a busy one).
                window = self.gather_s if self._busy else 0.0
            elif self._busy:
                window = max(self.linger_s, self.gather_s)
            else:
                window = self.linger_s
            due = self._last_flush_s + window
            now = self._clock.monotonic_s()
            if due - now > 1e-6 and not self._full() and not self._closed:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await self._clock.wait_for(self._wake.wait(), due - now)
                continue
            batch = self._take()
            self._last_flush_s = self._clock.monotonic_s()
            try:
                results = await self._flush([item for item, _, _ in batch])
            except asyncio.CancelledError:
                for _, fut, _ in batch:
                    if not fut.done():
                        fut.cancel()
                raise
            except Exception as err:  # each caller hears the failure of its own batch
                for _, fut, _ in batch:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            for (_, fut, _), result in zip(batch, results, strict=True):
                if not fut.done():
                    fut.set_result(result)
            self._last_callers = {caller for _, _, caller in batch}
            self._busy = len(self._callers()) >= limits.flush_gather_callers

    def _all_in(self) -> bool:
        """Does every client the last flush carried wait for the next one already? Only named
        clients count (an unnamed task may be one of many, so the linger holds it)."""
        waiting = {caller for _, _, caller in self._pending}
        if any(isinstance(c, asyncio.Task) for c in waiting):
            return False
        return self._last_callers <= waiting

    def _callers(self) -> set[object]:
        """Who shares the flushes: those the last one carried and those waiting for the next."""
        return self._last_callers | {caller for _, _, caller in self._pending}

    def _take(self) -> list[tuple[T, asyncio.Future[R], object]]:
        batch: list[tuple[T, asyncio.Future[R], object]] = []
        size = 0
        while self._pending and len(batch) < self._max_items:
            item_size = self._size(self._pending[0][0])
            if batch and self._max_size > 0 and size + item_size > self._max_size:
                break
            batch.append(self._pending.pop(0))
            size += item_size
        self._pending_size -= size
        return batch

    async def drain(self) -> None:
        """Flush everything pending now, ignoring the linger (graceful shutdown)."""
        self._closed = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def cancel(self) -> None:
        """Abandon pending work (a crash, in the simulator)."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
        for _, fut, _ in self._pending:
            fut.cancel()
        self._pending.clear()
