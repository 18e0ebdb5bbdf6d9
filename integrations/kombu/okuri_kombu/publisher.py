"""The publisher: with `confirm_publish` off, one thread per connection sends what was published.

With `confirm_publish` on (the default) a publish is one produce request that returns once
okuri has committed the message, as SendMessage does. Off, a publish only queues the message
here and wakes this thread, which sends everything waiting in as few produce requests as it can
(one per queue and 100 items, in publish order) while the caller goes on: the way py-amqp
publishes without confirms. Nothing is lingered for: a lone publish leaves at once, and those
that arrive while a request is in flight leave together in the next.

The price is RabbitMQ's without confirms: a message is on okuri a few milliseconds after the
publish returned, so a process that dies in between loses what it had not sent. Closing the
connection, and the interpreter's exit, wait for what is waiting (at most `CLOSE_JOIN_S`). A
queue deleted meanwhile is declared again and the produce sent again (Transport.produce, as
for a confirmed publish); a refused produce (a message too large, a key that may not produce)
is logged and dropped; a failed one (no answer, 429, 5xx) is tried again `RETRY_S` later, in
order.

A forked child starts empty: what its parent queued is its parent's to send.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable

from okuri.client import Item, OkuriClientError, RetryableError, ServerError

logger = logging.getLogger("okuri_kombu.publisher")

RETRY_S = 1.0  # after a failed send
CLOSE_JOIN_S = 10.0  # how long closing waits for what is waiting
BATCH_ITEMS_MAX = 100  # okuri's native_items_max
BATCH_CHARS_MAX = 1_000_000  # well within a request's 4 MiB, JSON escaping included
RETRYABLE = (RetryableError, ServerError)


# Produces items to a kombu queue (Transport.produce): raises the client's errors.
ProduceFn = Callable[[str, list[Item]], object]


class Publisher:
    def __init__(self, produce: ProduceFn, *, retry_s: float = RETRY_S) -> None:
        self.produce = produce
        self.retry_s = retry_s
        self._new_state()
        _LIVE.add(self)

    def _new_state(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: deque[tuple[str, str]] = deque()  # (kombu queue, message text)
        self._sending = 0  # messages taken by the thread and not yet settled
        self._settled = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._pid = os.getpid()

    def _forked(self) -> None:
        if self._pid != os.getpid():
            self._new_state()

    def publish(self, queue: str, text: str) -> None:
        """Queue `text` for kombu queue `queue`; it leaves as soon as the thread can send."""
        self._forked()
        with self._lock:
            if self._stopping:
                raise RuntimeError("okuri: publish on a closed connection")
            self._pending.append((queue, text))
            self._wake.notify()
            start = self._thread is None
            if start:
                self._thread = threading.Thread(
                    target=self._loop, name="okuri-kombu-publisher", daemon=True
                )
        if start:
            assert self._thread is not None
            self._thread.start()

    def flush(self, timeout_s: float = CLOSE_JOIN_S) -> int:
        """Wait until everything published so far was sent (or dropped); how many messages are
        still waiting when `timeout_s` ran out."""
        self._forked()
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._pending or self._sending:
                if self._thread is None:  # never started: nothing will send them
                    break
                left_s = deadline - time.monotonic()
                if left_s <= 0:
                    break
                self._settled.wait(left_s)
            return len(self._pending) + self._sending

    def close(self, join_s: float = CLOSE_JOIN_S) -> None:
        """Send what is waiting, then stop the thread."""
        unsent = self.flush(join_s)
        with self._lock:
            self._stopping = True
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(1.0)
        _LIVE.discard(self)
        if unsent:
            logger.error(
                "okuri: %d published message(s) could not be sent before closing; they are lost",
                unsent,
            )

    # --- the thread --------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._stopping:
                    self._wake.wait()
                if not self._pending:
                    return
                queue, batch = _take_batch(self._pending)
                self._sending = len(batch)
            sent = self._send(queue, batch)
            with self._lock:
                if not sent:
                    self._pending.extendleft((queue, text) for text in reversed(batch))
                self._sending = 0
                self._settled.notify_all()
                if not sent and self._stopping:
                    return  # closed meanwhile: close() has counted them as lost
            if not sent:
                time.sleep(self.retry_s)

    def _send(self, queue: str, batch: list[str]) -> bool:
        """Whether the batch is settled: sent, or refused for good (and logged)."""
        try:
            self.produce(queue, [Item(text) for text in batch])
        except RETRYABLE as err:
            logger.warning(
                "okuri: publishing %d message(s) to %r failed (%r); trying again in %.1f s",
                len(batch), queue, err, self.retry_s,
            )  # fmt: skip
            return False
        except OkuriClientError as err:
            logger.error(
                "okuri: okuri refused %d published message(s) to %r (%r); they are dropped",
                len(batch), queue, err,
            )  # fmt: skip
        except Exception:  # a bug: keep the thread alive, keep the messages
            logger.exception("okuri: publishing to %r failed", queue)
            return False
        return True


def _take_batch(pending: deque[tuple[str, str]]) -> tuple[str, list[str]]:
    """The longest run at the head of `pending` for one queue, within one request's bounds."""
    queue, text = pending.popleft()
    batch, chars = [text], len(text)
    while pending and len(batch) < BATCH_ITEMS_MAX:
        next_queue, next_text = pending[0]
        if next_queue != queue or chars + len(next_text) > BATCH_CHARS_MAX:
            break
        pending.popleft()
        batch.append(next_text)
        chars += len(next_text)
    return queue, batch


_LIVE: weakref.WeakSet[Publisher] = weakref.WeakSet()


def _close_all() -> None:
    """At the interpreter's exit: what was published and not yet sent is sent first."""
    for publisher in list(_LIVE):
        if publisher._pid == os.getpid():
            publisher.close()


atexit.register(_close_all)
