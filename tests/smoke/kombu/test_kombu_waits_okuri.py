"""okuri:// waits on a real `okuri serve`: a drain lasts its whole timeout, whatever it is, with a
poll or two, and an idle consumer loop sends a handful of requests (counted by the server's
/metrics), not hundreds; a message arriving meanwhile is delivered at once. And its requests are
logged at DEBUG only: a worker at `--loglevel=INFO` does not log every lease.

kombu's ConsumerMixin, which `celery events`, Flower and EventReceiver.capture() run on, drains
with a timeout of one second and drains again as soon as a drain times out; SimpleQueue.get
drains with what is left of its own timeout. A drain that ended early made both spin.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kombu import Connection, Consumer, Queue
from kombu.mixins import ConsumerMixin
from kombu_smoke import Okuri

IDLE_S = 3.0
IDLE_REQUESTS_MAX = 15  # a long poll a second, and room for a reconnect's few requests
PROMPT_S = 0.5  # a message published to a long-polling consumer arrives within this
METRIC = re.compile(r'^okuri_native_requests_total\{.*operation="(\w+)".*\} (\d+)$', re.M)


def requests_served(okuri: Okuri, operation: str | None = None) -> int:
    """How many native API requests (of `operation`, or of any) the server has answered."""
    text = okuri.server.get("/metrics").text
    return sum(int(n) for op, n in METRIC.findall(text) if operation in (None, op))


def timed(call: Any) -> float:
    started = time.monotonic()
    call()
    return time.monotonic() - started


def raises_timeout(conn: Connection, timeout: float) -> None:
    with pytest.raises(socket.timeout):
        conn.drain_events(timeout=timeout)


class IdleLoop(ConsumerMixin):  # type: ignore[misc]  # kombu is untyped
    """kombu's ConsumerMixin on one queue, as EventReceiver is: its deliveries, timed."""

    def __init__(self, connection: Connection, queue: str) -> None:
        self.connection = connection
        self.queue = Queue(queue)
        self.consuming = threading.Event()
        self.got: list[tuple[float, Any]] = []
        self.iterations = 0

    def get_consumers(self, consumer: Any, channel: Any) -> list[Any]:
        return [consumer([self.queue], callbacks=[self.on_message])]

    def on_consume_ready(self, *args: Any, **kwargs: Any) -> None:
        self.consuming.set()

    def on_iteration(self) -> None:
        self.iterations += 1

    def on_message(self, body: Any, message: Any) -> None:
        self.got.append((time.monotonic(), body))
        message.ack()


@pytest.fixture
def idle_loop(connect: Any, queue_name: str) -> Iterator[IdleLoop]:
    """An IdleLoop consuming `queue_name` in a thread of its own, stopped at teardown."""
    connect().SimpleQueue(queue_name).clear()  # declares it
    loop = IdleLoop(connect(), queue_name)
    thread = threading.Thread(target=loop.run, daemon=True)
    thread.start()
    assert loop.consuming.wait(10)
    yield loop
    loop.should_stop = True
    thread.join(10)
    assert not thread.is_alive()


@pytest.mark.parametrize("timeout", [0.3, 1.0, 2.5])
def test_get_on_an_empty_queue_waits_its_whole_timeout_then_raises_empty(
    connect: Any, queue_name: str, timeout: float
) -> None:
    queue = connect().SimpleQueue(queue_name)
    queue.clear()

    def get() -> None:
        with pytest.raises(queue.Empty):
            queue.get(timeout=timeout)

    assert timeout - 0.05 <= timed(get) < timeout + 0.5


def test_a_sub_second_drain_waits_its_timeout_and_a_zero_one_does_not(
    connect: Any, queue_name: str
) -> None:
    conn = connect()
    with Consumer(conn, [Queue(queue_name)], callbacks=[lambda b, m: None]):
        raises_timeout(conn, 0)  # declares, and consumes
        assert 0.25 <= timed(lambda: raises_timeout(conn, 0.3)) < 0.8
        assert timed(lambda: raises_timeout(conn, 0)) < 0.2  # kombu's non-blocking poll


def test_an_idle_consumer_loop_sends_a_handful_of_requests_and_gets_a_message_at_once(
    okuri: Okuri, connect: Any, queue_name: str, idle_loop: IdleLoop
) -> None:
    served, iterations = requests_served(okuri), idle_loop.iterations
    time.sleep(IDLE_S)
    assert requests_served(okuri) - served <= IDLE_REQUESTS_MAX
    assert idle_loop.iterations - iterations <= IDLE_S + 2  # a drain of a second at a time

    for n in range(3):  # at whatever moment of a drain it arrives
        time.sleep(0.3)
        sent = time.monotonic()
        connect().SimpleQueue(queue_name).put(n)
        deadline = sent + 5
        while len(idle_loop.got) <= n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert idle_loop.got[n][1] == n
        assert idle_loop.got[n][0] - sent < PROMPT_S


def test_celery_event_capture_waits_out_its_timeout_with_a_handful_of_requests(
    okuri: Okuri, connect: Any
) -> None:
    celery = pytest.importorskip("celery")
    app = celery.Celery("smoke", set_as_current=False)
    conn = connect()
    receiver = app.events.Receiver(conn, handlers={"*": lambda event: None})
    served = requests_served(okuri, "lease")
    started = time.monotonic()
    with pytest.raises(socket.timeout):  # what `celery events` runs until it is stopped
        receiver.capture(limit=None, timeout=IDLE_S, wakeup=False)
    assert time.monotonic() - started >= IDLE_S - 0.2
    assert requests_served(okuri, "lease") - served <= IDLE_REQUESTS_MAX


def test_with_short_polls_only_an_idle_drain_polls_once_a_second(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    conn = connect(wait_time_s=0)  # no long poll: the transport's polling_interval, 1 s
    with Consumer(conn, [Queue(queue_name)], callbacks=[lambda b, m: None]):
        raises_timeout(conn, 0)
        served = requests_served(okuri, "lease")
        assert 1.9 <= timed(lambda: raises_timeout(conn, 2)) < 2.5
        assert requests_served(okuri, "lease") - served <= 3


def test_its_requests_are_logged_at_debug_not_at_info(
    connect: Any, queue_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    def requests_logged(level: int) -> set[str]:
        return {
            r.name
            for r in caplog.records
            if r.levelno >= level and r.getMessage().startswith("HTTP Request:")
        }

    caplog.set_level(logging.INFO)  # the root logger, as `celery worker --loglevel=INFO` sets it
    queue = connect().SimpleQueue(queue_name)
    queue.put("quiet")
    queue.get(timeout=5).ack()
    assert requests_logged(logging.DEBUG) == set()

    caplog.set_level(logging.DEBUG)
    queue.put("visible")
    queue.get(timeout=5).ack()
    assert requests_logged(logging.DEBUG) == {"okuri_kombu.http"}
    assert requests_logged(logging.INFO) == set()
