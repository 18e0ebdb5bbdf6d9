"""The lease keeper: one thread per connection that sends what okuri_kombu/leases.py decides.

kombu acks from whatever thread finishes a message (a Celery prefork worker acks from its pool's
result thread) and expects the call to return at once. So an ack or reject here only records
the finish and wakes the keeper; the keeper sends every finish waiting, in batches, while the
worker goes on. A lone ack leaves at once; after a send, the next waits until `pace_s` has
passed, so that under load the acks of those milliseconds share one request (the worker never
waits for them: its prefetch window has room again as soon as it acks).
Between finishes the keeper renews the leases of held messages as they come due.

A failed send is kept and tried again `retry_s` later; a message whose finish never reaches
okuri returns to its queue when its lease ends, as after any lost consumer (at least once).

The thread is a daemon and is started by the first lease; closing the connection stops it after
a last round of finishes. A forked child forgets its parent's leases (they are not its own).
The clock is `time.monotonic`, not okuri.clock: this runs in users' processes.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Protocol

from okuri.client import OkuriClientError

from .leases import Batch, Finish, LeaseBook

logger = logging.getLogger("okuri_kombu.keeper")

RETRY_S = 1.0  # after a failed send
PACE_S = 0.005  # between two sends of finishes: at most 200 such requests a second
CLOSE_JOIN_S = 10.0  # how long closing waits for the thread's last round
SUCCESS = {"complete": "completed", "retry": "retried", "dead": "dead", "extend": "extended"}


class FinishingClient(Protocol):
    """What the keeper needs of okuri.client.Client."""

    def complete(self, queue: str, handles: list[str]) -> list[str]: ...

    def retry(self, queue: str, handles: list[str], *, dead: bool = False) -> list[str]: ...

    def extend(self, queue: str, handles: list[str], lease_s: int) -> list[str]: ...


class LeaseKeeper:
    def __init__(
        self,
        client: FinishingClient,
        lease_s: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        retry_s: float = RETRY_S,
        pace_s: float = PACE_S,
    ) -> None:
        self.client = client
        self.lease_s = lease_s
        self.clock = clock
        self.retry_s = retry_s
        self.pace_s = pace_s
        self._book = LeaseBook(lease_s)
        self._new_locks()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._resend_at = 0.0  # finishes that failed wait until then
        self._paced_until = 0.0  # finishes wait until then after a send

    def _new_locks(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pid = os.getpid()

    def _forked(self) -> None:
        """In a child forked from the process this keeper served: start afresh, empty."""
        if self._pid != os.getpid():
            self._new_locks()
            self._book.clear()
            self._thread = None
            self._stopping = False

    # --- from the consumer and from any thread that acks -------------------------------------

    def hold(self, queue: str, handle: str, leased_at: float) -> None:
        self._forked()
        with self._lock:
            self._book.hold(queue, handle, leased_at)
            self._wake.notify()
        self.start()

    def ack(self, handle: str) -> bool:
        return self._finish(handle, "complete")

    def requeue(self, handle: str) -> bool:
        return self._finish(handle, "retry")

    def dead(self, handle: str) -> bool:
        return self._finish(handle, "dead")

    def complete_unheld(self, queue: str, handle: str) -> None:
        """Complete a message no one holds (a no-ack consumer's, as it is delivered)."""
        with self._lock:
            self._book.finish_unheld(queue, handle, "complete")
            self._wake.notify()
        self.start()

    def holds(self, handle: str) -> bool:
        with self._lock:
            return self._book.holds(handle)

    def _finish(self, handle: str, how: Finish) -> bool:
        with self._lock:
            known = self._book.finish(handle, how)
            if known:
                self._wake.notify()
        return known

    # --- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        self._forked()
        with self._lock:
            if self._thread is not None or self._stopping:
                return
            self._thread = threading.Thread(
                target=self._loop, name="okuri-kombu-lease-keeper", daemon=True
            )
        self._thread.start()

    def close(self, join_s: float = CLOSE_JOIN_S) -> None:
        """Stop renewing; send the finishes still waiting (once more if they failed before)."""
        with self._lock:
            self._stopping = True
            self._resend_at = self._paced_until = 0.0
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(join_s)
        self.run_once(renew=False)
        with self._lock:
            unsent = self._book.take_finishes()
        if unsent:
            count = sum(len(b.handles) for b in unsent)
            logger.warning(
                "okuri: %d ack(s)/reject(s) could not be sent before closing; those messages "
                "return to their queues when their leases end",
                count,
            )

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._stopping and (wait_s := self._idle_s(self.clock())) > 0:
                    self._wake.wait(wait_s)
                if self._stopping:
                    return
            try:
                self.run_once()
            except Exception:  # never let the thread die: held leases would run out
                logger.exception("okuri: the lease keeper's round failed")
                with self._lock:
                    self._resend_at = self.clock() + self.retry_s

    def _idle_s(self, now: float) -> float:
        """How long to sleep before there is something to send (0: send now). Caller locks."""
        due: list[float] = []
        if self._book.has_finishes():
            due.append(max(self._resend_at, self._paced_until))
        if (renewal := self._book.next_renewal()) is not None:
            due.append(renewal)
        if not due:
            return 60.0  # nothing held: sleep until woken
        return max(0.0, min(due) - now)

    # --- one round ---------------------------------------------------------------------------

    def run_once(self, renew: bool = True) -> None:
        """Send every finish waiting (unless they wait to be resent) and every extend due."""
        now = self.clock()
        with self._lock:
            due = now >= max(self._resend_at, self._paced_until) or self._stopping
            finishes = self._book.take_finishes() if due else []
            if finishes:
                self._paced_until = now + self.pace_s
            extends = self._book.due(now) if renew else []
        failed: list[Batch] = []
        for batch in finishes:
            if not self._send(batch):
                failed.append(batch)
        if failed:
            with self._lock:
                self._book.give_back(failed)
                self._resend_at = self.clock() + self.retry_s
        for batch in extends:
            sent_at = self.clock()
            if not self._send(batch, sent_at):
                with self._lock:
                    self._book.postpone(batch.handles, sent_at + self.retry_s)

    def _send(self, batch: Batch, sent_at: float = 0.0) -> bool:
        handles = list(batch.handles)
        try:
            if batch.kind == "complete":
                results = self.client.complete(batch.queue, handles)
            elif batch.kind == "retry":
                results = self.client.retry(batch.queue, handles)
            elif batch.kind == "dead":
                results = self.client.retry(batch.queue, handles, dead=True)
            else:
                results = self.client.extend(batch.queue, handles, self.lease_s)
        except Exception as err:  # OkuriClientError, or a bug: either way, keep it to try again
            level = logging.WARNING if isinstance(err, OkuriClientError) else logging.ERROR
            logger.log(
                level, "okuri: %s of %d message(s) of %r failed (%r); trying again",
                batch.kind, len(handles), batch.queue, err, exc_info=level == logging.ERROR,
            )  # fmt: skip
            return False
        self._settle(batch, results, sent_at)
        return True

    def _settle(self, batch: Batch, results: list[str], sent_at: float) -> None:
        ok = SUCCESS[batch.kind]
        lost = [h for h, r in zip(batch.handles, results, strict=False) if r != ok]
        if batch.kind == "extend":
            with self._lock:
                self._book.extended(batch.handles, sent_at)
                self._book.forget(lost)
        for handle, result in zip(batch.handles, results, strict=False):
            if result == ok or result == "gone":
                continue
            logger.warning(
                "okuri: %s of a message of %r answered %r: its lease is no longer this "
                "consumer's (it ran out, or another consumer leased the message), so the "
                "message may be delivered again%s",
                batch.kind, batch.queue, result, f" (handle {handle[:16]}...)",
            )  # fmt: skip
