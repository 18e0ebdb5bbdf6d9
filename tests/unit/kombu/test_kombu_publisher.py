"""Publishing with `confirm_publish` off (okuri_kombu/publisher.py): a publish returns at once and
the connection's publisher thread sends what waits in batches, in order, before the connection
closes; and the confirmed publish's handling of a queue deleted under it. Against the fake okuri
of fake_okuri.py, with the publisher's real thread."""

from __future__ import annotations

import base64
import json
import logging
import threading
import time
from typing import Any

import pytest
from fake_okuri import FakeOkuri
from kombu import Producer
from okuri_kombu.publisher import BATCH_ITEMS_MAX, Publisher

from okuri.client import Item, RetryableError


def bodies(fake: FakeOkuri, queue: str) -> list[Any]:
    """The published numbers in `queue`, in order (kombu base64-encodes each body)."""
    messages = [json.loads(item.body) for item in fake.live(queue)]
    return [json.loads(base64.b64decode(message["body"])) for message in messages]


def publish(conn: Any, count: int, queue: str = "jobs", first: int = 0) -> None:
    producer = Producer(conn.channel())
    for n in range(first, first + count):
        producer.publish(json.dumps(n), routing_key=queue, serializer="raw")


class TestUnconfirmed:
    def test_publishes_leave_in_batches_in_order_and_closing_waits_for_them(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(confirm_publish=False)
        publish(conn, 250)
        conn.close()  # waits for the publisher
        assert bodies(fake, "jobs") == list(range(250))
        assert all(len(p.doc["items"]) <= BATCH_ITEMS_MAX for p in fake.seen("produce"))

    def test_two_queues_interleaved_keep_each_queues_order(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(confirm_publish=False)
        producer = Producer(conn.channel())
        for n in range(40):
            producer.publish(json.dumps(n), routing_key=("a", "b")[n % 2], serializer="raw")
        assert conn.transport.publisher.flush() == 0
        assert bodies(fake, "a") == list(range(0, 40, 2))
        assert bodies(fake, "b") == list(range(1, 40, 2))

    def test_a_failed_produce_is_sent_again_and_nothing_is_lost(
        self, fake: FakeOkuri, connect: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        conn = connect(confirm_publish=False)
        conn.channel().queue_declare("jobs")
        conn.transport.publisher.retry_s = 0.01
        fake.fail_next("produce", 500, "internal")
        publish(conn, 5)
        assert conn.transport.publisher.flush() == 0
        assert bodies(fake, "jobs") == list(range(5))
        assert "trying again" in caplog.text

    def test_a_queue_deleted_after_its_declaration_is_declared_again(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(confirm_publish=False)
        publish(conn, 1)
        assert conn.transport.publisher.flush() == 0
        del fake.queues["jobs"]  # deleted elsewhere, or expired
        publish(conn, 2, first=1)
        assert conn.transport.publisher.flush() == 0
        assert bodies(fake, "jobs") == [1, 2]
        assert len(fake.seen("create_queue")) == 2

    def test_a_refused_produce_is_logged_and_the_next_ones_still_leave(
        self, fake: FakeOkuri, connect: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        conn = connect(confirm_publish=False)
        conn.channel().queue_declare("jobs")
        publisher = conn.transport.publisher
        fake.fail_next("produce", 413, "too_large")
        publish(conn, 1)
        assert publisher.flush() == 0
        publish(conn, 1, first=1)
        assert publisher.flush() == 0
        assert bodies(fake, "jobs") == [1]
        assert "refused 1 published message(s)" in caplog.text

    def test_the_confirmed_default_sends_each_publish_before_it_returns(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect()
        publish(conn, 3)
        assert bodies(fake, "jobs") == [0, 1, 2]  # no flush, no close
        assert [len(p.doc["items"]) for p in fake.seen("produce")] == [1, 1, 1]
        assert conn.transport._publisher is None  # no thread for confirmed publishes


class TestConfirmed:
    def test_a_queue_deleted_after_its_declaration_is_declared_again(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect()
        publish(conn, 1)
        del fake.queues["jobs"]
        publish(conn, 1, first=1)
        assert bodies(fake, "jobs") == [1]
        assert len(fake.seen("create_queue")) == 2


class Gate:
    """A producing client whose first produce waits until the test opens the gate."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.took = threading.Event()
        self.produced: list[tuple[str, list[str]]] = []

    def produce(self, queue: str, items: list[Item]) -> list[str]:
        self.took.set()
        assert self.open.wait(5)
        self.produced.append((queue, [str(i.body) for i in items]))
        return [f"id-{n}" for n in range(len(items))]


class TestPublisherThread:
    def make(self) -> tuple[Publisher, Gate]:
        gate = Gate()
        return Publisher(lambda queue, items: gate.produce(f"okuri-{queue}", items)), gate

    def test_what_arrives_during_a_request_leaves_together_in_the_next(self) -> None:
        publisher, gate = self.make()
        publisher.publish("q", "first")
        assert gate.took.wait(5)  # the first is in flight, alone: nothing lingered for it
        for n in range(3):
            publisher.publish("q", f"then-{n}")
        gate.open.set()
        assert publisher.flush() == 0
        then = ["then-0", "then-1", "then-2"]
        assert gate.produced == [("okuri-q", ["first"]), ("okuri-q", then)]
        publisher.close()

    def test_flush_says_how_many_are_still_waiting_when_its_time_runs_out(self) -> None:
        publisher, gate = self.make()
        publisher.publish("q", "a")
        assert gate.took.wait(5)
        publisher.publish("q", "b")
        assert publisher.flush(0.05) == 2
        gate.open.set()
        assert publisher.flush() == 0

    def test_closing_with_messages_it_cannot_send_says_they_are_lost(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        publisher, gate = self.make()
        publisher.publish("q", "a")
        assert gate.took.wait(5)
        with caplog.at_level(logging.ERROR, "okuri_kombu.publisher"):
            publisher.close(join_s=0.05)
        assert "1 published message(s) could not be sent before closing" in caplog.text
        gate.open.set()
        with pytest.raises(RuntimeError, match="closed connection"):
            publisher.publish("q", "late")

    def test_a_closed_publisher_stops_trying_what_it_could_not_send(self) -> None:
        failing = Gate()
        failing.open.set()
        attempts: list[int] = []

        def produce(queue: str, items: list[Item]) -> list[str]:
            attempts.append(len(items))
            raise RetryableError(None, "unavailable", "down")

        failing.produce = produce  # type: ignore[method-assign]
        publisher = Publisher(failing.produce, retry_s=0.01)
        publisher.publish("q", "a")
        publisher.close(join_s=0.05)
        thread = publisher._thread
        assert thread is not None
        thread.join(2)
        assert not thread.is_alive()
        tried = len(attempts)
        time.sleep(0.05)
        assert len(attempts) == tried  # nothing more after the thread ended

    def test_a_forked_child_starts_empty(self) -> None:
        publisher, gate = self.make()
        publisher.publish("q", "parent's")
        assert gate.took.wait(5)
        publisher.publish("q", "parent's too")
        publisher._pid = -1  # as a child forked from this process sees it
        assert publisher.flush(0.05) == 0  # the parent's messages are the parent's to send
        gate.open.set()
