"""Running message move tasks, and finding which queues dead-letter to a queue.

A task moves messages out of a dead-letter queue: each to the queue it was dead-lettered from
(the message's `dead_letter_source`; for one sent to the dead-letter queue directly, the only
queue that dead-letters there, if just one does), or all to one destination. It runs on the
node that started it; its record, in the dead-letter queue's manifest
(`okuri.core.move_records`), is what every node reports. One step: lease up to
`limits.move_batch_messages_max` messages (hidden for `limits.move_visibility_s`), append them
to their destinations and wait until that is durable, and only then finish them in the dead-letter
queue. A node that dies between the two leaves the leased messages to reappear and be moved
again: a duplicate, never a loss. A message keeps its MessageId when moved (as the engine's
dead-letter move keeps it), so a duplicate is recognisable.

The rate (MaxNumberOfMessagesPerSecond) is a token bucket on the engine's clock. Cancel and
shutdown are seen between steps. A node that cannot report progress for half of
`limits.move_stale_ms` stops its task, since other nodes will soon report it FAILED.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core import move_records as rec
from okuri.core.message import Message
from okuri.core.move_records import MoveTask
from okuri.core.state import QueueAttrs, QueueState, decode_state
from okuri.core.transitions import AckResult, VisibilityResult
from okuri.core.views import Counts, QueueView
from okuri.engine.retry import retrying
from okuri.engine.types import Delivery
from okuri.errors import NotFound, QueueDoesNotExist, ReceiptHandleInvalid, Unavailable
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")


class _Stop(Exception):
    """Raised inside a task to end it with a final status."""

    def __init__(self, status: str, failure: str | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.failure = failure


@dataclass
class _Job:
    task: MoveTask
    unrecorded_source: str | None = None  # where a message without a recorded source goes
    moved: int = 0
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False
    finished: bool = False  # no more moves: its count is final
    recorded: bool = False  # its end was written (or the attempt failed and was logged)
    runner: asyncio.Task[None] | None = None


class Engine(Protocol):
    """What move tasks need of the engine (its public face), so this module never imports it."""

    clock: Clock
    store: ObjectStore
    node_id: str
    stats: Counter[str]

    async def get_queue(self, name: str) -> QueueView: ...
    async def counts(self, name: str) -> Counts: ...
    async def list_queues(
        self, prefix: str = "", limit: int = 1000, after: str = ""
    ) -> list[str]: ...
    async def update_attributes(
        self, name: str, change: Callable[[QueueAttrs], QueueAttrs], touch: bool = False
    ) -> QueueView: ...
    async def receive(
        self,
        name: str,
        max_messages: int = 1,
        visibility_s: int | None = None,
        wait_s: int | None = None,
        *,
        lease_ahead: bool = True,
    ) -> list[Delivery]: ...
    async def ack(
        self, name: str, receipt_handles: Sequence[str]
    ) -> list[AckResult | ReceiptHandleInvalid]: ...
    async def change_visibility(
        self, name: str, entries: Sequence[tuple[str, int]]
    ) -> list[VisibilityResult | ReceiptHandleInvalid]: ...
    async def send_raw(self, name: str, messages: Sequence[Message]) -> None: ...


class MoveTasks:
    """The move tasks of one node: starting, listing and cancelling them, and running its own."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.clock = engine.clock
        self._jobs: dict[str, _Job] = {}

    # --- records -----------------------------------------------------------------------------

    async def _update(self, queue: str, change: Callable[[list[MoveTask]], list[MoveTask]]) -> None:
        def apply(attrs: QueueAttrs) -> QueueAttrs:
            return rec.encode_tasks(attrs, change(rec.decode_tasks(attrs)))

        await self.engine.update_attributes(queue, apply)

    async def list_tasks(self, source: str, limit: int) -> list[MoveTask]:
        """The queue's latest tasks, newest first, as they must be reported now."""
        st = await self.engine.get_queue(source)
        now = self.clock.now_ms()
        tasks = [rec.as_seen(t, now) for t in rec.decode_tasks(st.attrs)[:limit]]
        return [self._live(t) for t in tasks]

    def _live(self, task: MoveTask) -> MoveTask:
        """This node's own running task with its up-to-the-step count."""
        job = self._jobs.get(task.id)
        if job is None or task.status not in rec.ACTIVE or job.finished:
            return task
        return replace(task, moved=max(task.moved, job.moved))

    # --- starting and cancelling -------------------------------------------------------------

    async def start(
        self, source: str, destination: str | None = None, rate: int | None = None
    ) -> MoveTask:
        """Start moving the visible messages of dead-letter queue `source`.

        Checked in SQS's order: QueueDoesNotExist if `source` does not exist,
        NotADeadLetterQueue unless some queue dead-letters to it, DestinationDoesNotExist, and
        MoveTaskActive while `source` has an active task.
        """
        if rate is not None and rate < 1:
            raise ValueError("rate must be at least 1 message per second")
        await self.engine.get_queue(source)
        sources = await self._sources(source, 2)
        if not sources:
            raise rec.NotADeadLetterQueue("Source queue must be configured as a Dead Letter Queue.")
        if destination is not None and await self._peek(destination) is None:
            raise rec.DestinationDoesNotExist(f"queue {destination!r} does not exist")
        counts = await self.engine.counts(source)
        now = self.clock.now_ms()
        task = MoveTask(
            id=self.clock.new_id(),
            source=source,
            destination=destination,
            rate=rate,
            status=rec.RUNNING,
            moved=0,
            to_move=counts.visible,
            started_ms=now,
            heartbeat_ms=now,
            node=self.engine.node_id,
        )
        await self._update(source, lambda tasks: rec.add_task(tasks, task, self.clock.now_ms()))
        # A message sent to the dead-letter queue directly records no source: it goes back to
        # the one queue that dead-letters here, if there is exactly one.
        job = _Job(task, unrecorded_source=sources[0] if len(sources) == 1 else None)
        self._jobs[task.id] = job
        job.runner = asyncio.create_task(self._run(job))
        return task

    async def cancel(self, source: str, task_id: str) -> MoveTask:
        """Ask a RUNNING task to stop (MoveTaskNotFound otherwise); the record as cancelled."""
        cancelled: list[MoveTask] = []

        def change(tasks: list[MoveTask]) -> list[MoveTask]:
            out, task = rec.request_cancel(tasks, task_id, self.clock.now_ms())
            cancelled[:] = [task]
            return out

        await self._update(source, change)
        job = self._jobs.get(task_id)
        if job is not None:
            job.cancel.set()
        return self._live(cancelled[0])

    # --- running -----------------------------------------------------------------------------

    async def _run(self, job: _Job) -> None:
        try:
            status, failure = await self._move(job)
        except asyncio.CancelledError:
            raise
        except _Stop as stop:
            status, failure = stop.status, stop.failure
        except Unavailable:
            status, failure = rec.FAILED, rec.FAILURE_UNAVAILABLE
        except QueueDoesNotExist:
            status, failure = rec.FAILED, rec.FAILURE_NO_QUEUE
        except Exception:  # a bug must not leave the task RUNNING until it goes stale
            log.exception("move task %s failed", job.task.id)
            status, failure = rec.FAILED, "Internal error."
        await self._finish(job, status, failure)

    async def _finish(self, job: _Job, status: str, failure: str | None) -> None:
        job.finished = True
        try:
            await self._report(job, status, failure)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning("could not record the end of move task %s: %s", job.task.id, err)
        job.recorded = True
        self._jobs.pop(job.task.id, None)

    async def _report(
        self, job: _Job, final: str | None = None, failure: str | None = None
    ) -> MoveTask | None:
        """Write progress; the record as it was, or None if the task is no longer ours."""
        before: list[MoveTask | None] = [None]

        def change(tasks: list[MoveTask]) -> list[MoveTask]:
            out, before[0] = rec.report(
                tasks,
                job.task.id,
                self.engine.node_id,
                job.moved,
                self.clock.now_ms(),
                final,
                failure,
            )
            return out

        await self._update(job.task.source, change)
        return before[0]

    async def _move(self, job: _Job) -> tuple[str, str | None]:
        task = job.task
        pacer = rec.Pacer(task.rate, limits.move_batch_messages_max, self.clock.monotonic_s())
        reported_s = last_ok_s = self.clock.monotonic_s()
        while True:
            if job.stopping:
                return rec.FAILED, rec.FAILURE_SHUTDOWN
            if job.cancel.is_set():
                return rec.CANCELLED, None
            remaining = task.to_move - job.moved
            if remaining <= 0:
                return rec.COMPLETED, None
            n = min(remaining, pacer.burst)
            wait_s = pacer.wait_s(n, self.clock.monotonic_s())
            if wait_s > 0:
                with contextlib.suppress(TimeoutError):
                    await self.clock.wait_for(job.cancel.wait(), wait_s)
                continue
            pacer.take(n, self.clock.monotonic_s())
            moved = await self._step(job, n)
            pacer.give_back(n - moved)
            if moved == 0:
                return rec.COMPLETED, None
            now_s = self.clock.monotonic_s()
            if (now_s - reported_s) * 1000 >= limits.move_heartbeat_ms:
                reported_s = now_s
                try:
                    stored = await self._report(job)
                except Unavailable as err:
                    if (now_s - last_ok_s) * 1000 >= limits.move_stale_ms / 2:
                        raise _Stop(rec.FAILED, rec.FAILURE_UNAVAILABLE) from err
                    log.warning("move task %s could not report progress: %s", task.id, err)
                    continue
                last_ok_s = now_s
                if stored is None:
                    raise _Stop(rec.FAILED, rec.FAILURE_NODE_LOST)  # not ours any more
                if stored.status == rec.CANCELLING:
                    return rec.CANCELLED, None

    async def _step(self, job: _Job, n: int) -> int:
        """Move up to `n` messages; how many were moved (0: the source had none visible)."""
        task = job.task
        engine = self.engine
        batches = await asyncio.gather(
            *(
                engine.receive(
                    task.source, min(10, n - i), limits.move_visibility_s, 0, lease_ahead=False
                )
                for i in range(0, n, 10)
            )
        )
        got = [d for batch in batches for d in batch]
        if not got:
            return 0
        routes: dict[str, list[Delivery]] = {}
        stranded: list[Delivery] = []
        for d in got:
            dest = task.destination or d.message.dead_letter_source or job.unrecorded_source
            if dest is None:
                stranded.append(d)
            else:
                routes.setdefault(dest, []).append(d)
        failure = rec.FAILURE_NO_SOURCE if stranded else None
        sent: list[Delivery] = []
        for dest, deliveries in routes.items():
            try:
                await move_messages(self.engine, dest, deliveries)
            except QueueDoesNotExist:
                failure = failure or rec.FAILURE_NO_QUEUE
                stranded.extend(deliveries)
            else:
                sent.extend(deliveries)
        if sent:
            await engine.ack(task.source, [d.receipt_handle for d in sent])
            job.moved += len(sent)
            self.engine.stats["moved_by_tasks"] += len(sent)
        if stranded:
            # Visible again at once rather than hidden until the lease runs out.
            with contextlib.suppress(QueueDoesNotExist, Unavailable):
                await engine.change_visibility(
                    task.source, [(d.receipt_handle, 0) for d in stranded]
                )
        if failure is not None:
            raise _Stop(rec.FAILED, failure)
        return len(got)

    # --- shutdown ----------------------------------------------------------------------------

    async def close(self) -> None:
        """Stop this node's tasks between steps and record them FAILED (shut down)."""
        jobs = list(self._jobs.values())
        for job in jobs:
            job.stopping = True
            job.cancel.set()  # wakes a paced wait; `stopping` decides the status
        runners = [j.runner for j in jobs if j.runner is not None]
        if not runners:
            return
        # Timing out the wait leaves the runners running: those still running are cancelled.
        with contextlib.suppress(TimeoutError):
            async with self.clock.timeout(limits.move_stop_s):
                await asyncio.wait(runners)
        pending = [runner for runner in runners if not runner.done()]
        for runner in pending:
            runner.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for job in jobs:
            if not job.recorded:  # abandoned mid-step, or while writing its end
                await self._finish(job, rec.FAILED, rec.FAILURE_SHUTDOWN)

    def crash(self) -> None:
        """Abandon every task without a word, as a killed process would (simulation only)."""
        for job in self._jobs.values():
            if job.runner is not None:
                job.runner.cancel()
        self._jobs.clear()

    # --- dead-letter sources -----------------------------------------------------------------

    async def is_dead_letter_queue(self, name: str) -> bool:
        """Whether some queue dead-letters to `name` (see `move_records.dead_letter_target`)."""
        base = name.removesuffix("-dlq")
        if base != name:  # the conventional name: one read usually settles it
            st = await self._peek(base)
            if st is not None and rec.dead_letter_target(base, st.attrs) == name:
                return True
        return bool(await self._sources(name, 1))

    async def _sources(self, dlq: str, limit: int) -> list[str]:
        """Up to `limit` queues that dead-letter to `dlq`, however many calls that takes."""
        found: list[str] = []
        after: str | None = ""
        while after is not None and len(found) < limit:
            page, after = await self.dead_letter_sources(dlq, limit - len(found), after)
            found.extend(page)
        return found

    async def dead_letter_sources(
        self, dlq: str, limit: int, after: str = ""
    ) -> tuple[list[str], str | None]:
        """Queues that dead-letter to `dlq`, in name order after `after`: at most `limit`.

        The second value is where a further call continues (the last name found, or the last
        read when the scan bound stopped it), or None when every queue was read. One call reads
        at most `limits.sources_scan_queues_max` manifests, so a short page may still continue.
        """
        found: list[str] = []
        scanned = 0
        limiter = asyncio.Semaphore(limits.sources_scan_concurrency)

        async def peek(name: str) -> QueueState | None:
            async with limiter:
                return await self._peek(name)

        while True:
            names = await self.engine.list_queues("", limits.sources_scan_page, after)
            states = await asyncio.gather(*(peek(n) for n in names))
            for name, st in zip(names, states, strict=True):
                if st is not None and rec.dead_letter_target(name, st.attrs) == dlq:
                    found.append(name)
                    if len(found) >= limit:
                        return found, name
            if len(names) < limits.sources_scan_page:
                return found, None
            after = names[-1]
            scanned += len(names)
            if scanned >= limits.sources_scan_queues_max:
                return found, after

    async def _peek(self, name: str) -> QueueState | None:
        """A queue's manifest read now, without keeping a runtime for it (None: no queue)."""
        store = self.engine.store
        try:
            blob = await retrying(self.clock, lambda: store.get(keys.manifest(name)))
        except NotFound:
            return None
        try:
            return decode_state(blob.data)
        except ValueError:  # ManifestCorrupt: not a queue anyone can use
            log.warning("manifest of %s is unreadable; not a dead-letter source", name)
            return None


async def move_messages(engine: Engine, dest: str, deliveries: list[Delivery]) -> None:
    """Append leased messages to `dest`, durably; the caller then finishes them at the source.

    Each keeps its id, body and attributes; it is sent anew (a fresh retention period, visible
    now) and carries no dead-letter source. QueueDoesNotExist if `dest` does not exist.
    """
    now = engine.clock.now_ms()
    await engine.send_raw(
        dest,
        [
            replace(
                d.message,
                sent_ms=now,
                visible_at_ms=now,
                dead_letter_source=None,
                receives_before=0,  # a redriven message's count starts over, as on SQS
                # Sent back on purpose: never to be taken for a duplicate of itself.
                dedup_key=None,
            )
            for d in deliveries
        ],
    )


__all__ = ["MoveTasks", "move_messages"]
