"""okuri_kombu's exchanges and queue arguments through kombu's own API, against the fake okuri:
exchanges declared, bound and published to on okuri (so shared by every connection), the
default exchange, keys that may not declare, and kombu's `expires`, `message_ttl` and
`auto_delete` queue arguments; and how the connection polls Celery's auto_delete queues."""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import pytest
from fake_okuri import FakeOkuri
from kombu import Consumer, Exchange, Producer, Queue
from okuri_kombu.exchanges import ExchangeTypeError
from okuri_kombu.pacing import AUX_POLL_S

from okuri.client import ForbiddenError

LEASE_S = 10


def bodies(fake: FakeOkuri, queue: str) -> list[Any]:
    """What kombu published to okuri queue `queue`: its messages' bodies, decoded (JSON, or
    the text of a string kombu sent as text/plain)."""
    got = []
    for item in fake.live(queue):
        message = json.loads(item.body)
        body = base64.b64decode(message["body"])
        got.append(
            json.loads(body) if message["content-type"] == "application/json" else body.decode()
        )
    return got


def declared(connect: Any, *queues: Queue) -> Any:
    """A channel of a new connection on which `queues` (and their exchanges, bindings) are
    declared."""
    channel = connect().channel()
    for queue in queues:
        queue(channel).declare()
    return channel


class TestExchanges:
    def test_declaring_an_exchange_makes_it_on_okuri_under_the_translated_name(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        channel = connect().channel()
        Exchange("celery.pidbox", "fanout")(channel).declare()
        Exchange("celeryev", "topic")(channel).declare()
        assert {n: e.type for n, e in fake.exchanges.items()} == {
            "celery-pidbox": "fanout",
            "celeryev": "topic",
        }
        assert connect().transport.implements.exchange_type == {"direct", "topic", "fanout"}
        assert channel.supports_fanout

    def test_a_headers_exchange_is_refused_as_a_channel_error(self, connect: Any) -> None:
        conn = connect()
        with pytest.raises(conn.channel_errors) as refused:
            Exchange("hdr", "headers")(conn.channel()).declare()
        assert isinstance(refused.value, ExchangeTypeError)
        assert "direct, topic and fanout" in str(refused.value)

    def test_a_fanout_exchange_copies_one_publish_to_every_bound_queue(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        broadcast = Exchange("news", "fanout")
        queues = [Queue(f"reader{i}", broadcast) for i in range(3)]
        channel = declared(connect, *queues)
        before = len(fake.requests)
        Producer(channel).publish({"n": 1}, exchange=broadcast, routing_key="ignored")
        assert [r.operation for r in fake.requests[before:]] == ["publish"]
        for i in range(3):
            assert bodies(fake, f"reader{i}") == [{"n": 1}]

    def test_a_topic_exchange_routes_by_amqp_patterns(self, fake: FakeOkuri, connect: Any) -> None:
        topic = Exchange("events", "topic")
        channel = declared(connect, Queue("one", topic, "a.*"), Queue("all", topic, "#"))
        producer = Producer(channel)
        for key in ("a.b", "a.b.c", "b"):
            producer.publish({"key": key}, exchange=topic, routing_key=key)
        assert bodies(fake, "one") == [{"key": "a.b"}]
        assert bodies(fake, "all") == [{"key": "a.b"}, {"key": "a.b.c"}, {"key": "b"}]

    def test_a_binding_made_by_one_connection_routes_a_publish_of_another(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        exchange = Exchange("replies", "direct")
        consumer_channel = declared(connect, Queue("mine", exchange, "ticket-7"))
        publisher = connect().channel()  # declares the exchange only, as Celery's reply does
        Producer(publisher).publish("answer", exchange=exchange, routing_key="ticket-7")
        Producer(publisher).publish("lost", exchange=exchange, routing_key="ticket-8")
        message = consumer_channel.basic_get("mine")
        assert message.payload == "answer" and consumer_channel.basic_get("mine") is None

    def test_a_task_publish_after_the_first_declare_is_one_request(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        queue = Queue("tasks", Exchange("tasks", "direct"), "tasks")
        producer = Producer(connect().channel())
        producer.publish({"n": 0}, exchange=queue.exchange, routing_key="tasks", declare=[queue])
        for n in range(1, 4):
            before = len(fake.requests)
            producer.publish(
                {"n": n}, exchange=queue.exchange, routing_key="tasks", declare=[queue]
            )
            assert [r.operation for r in fake.requests[before:]] == ["publish"]
        assert bodies(fake, "tasks") == [{"n": n} for n in range(4)]

    def test_the_default_exchange_produces_to_the_queue_the_key_names(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        Producer(connect().channel()).publish("hi", routing_key="plain.q")
        assert bodies(fake, "plain-q") == ["hi"]
        assert fake.seen("publish") == [] and len(fake.seen("produce")) == 1

    def test_unbinding_and_deleting_an_exchange_change_okuri_and_keep_the_queues(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        exchange = Exchange("ex", "direct")
        channel = declared(connect, Queue("q1", exchange, "k"), Queue("q2", exchange, "k"))
        channel.queue_unbind("q1", "ex", "k")
        assert fake.exchanges["ex"].bindings == [("q2", "k")]
        channel.exchange_delete("ex")
        assert "ex" not in fake.exchanges and {"q1", "q2"} <= set(fake.queues)

    def test_a_publish_routed_nowhere_makes_the_bindings_this_process_knows_again(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        """The queue was deleted (or expired) and its binding with it: the publisher that
        bound it makes both again rather than drop the message."""
        queue = Queue("tasks", Exchange("tasks", "direct"), "tasks")
        producer = Producer(connect().channel())
        producer.publish(1, exchange=queue.exchange, routing_key="tasks", declare=[queue])
        fake.client().delete_queue("tasks")
        producer.publish(2, exchange=queue.exchange, routing_key="tasks", declare=[queue])
        assert bodies(fake, "tasks") == [2]
        assert fake.exchanges["tasks"].bindings == [("tasks", "tasks")]


class TestKeysThatMayNotDeclare:
    def test_a_direct_exchange_a_producer_key_cannot_make_routes_in_process(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        fake.client().create_queue("jobs")
        fake.forbid_create = fake.forbid_bind = True
        queue = Queue("jobs", Exchange("jobs", "direct"), "jobs")
        Producer(connect().channel()).publish(
            "x", exchange=queue.exchange, routing_key="jobs", declare=[queue]
        )
        assert bodies(fake, "jobs") == ["x"] and fake.exchanges == {}

    def test_an_exchange_and_binding_made_by_an_admin_serve_a_producer_key(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        queue = Queue("jobs", Exchange("work", "topic"), "jobs.#")
        declared(connect, queue)
        fake.forbid_create = fake.forbid_bind = True
        Producer(connect().channel()).publish(
            "y", exchange=queue.exchange, routing_key="jobs.one", declare=[queue]
        )
        assert bodies(fake, "jobs") == ["y"]

    def test_a_topic_exchange_that_does_not_exist_is_refused_to_such_a_key(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        fake.forbid_create = True
        with pytest.raises(ForbiddenError):
            Exchange("celeryev", "topic")(connect().channel()).declare()


class TestQueueArguments:
    def test_expires_becomes_whole_seconds_of_expires_s_and_ttl_a_retention(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        declared(
            connect,
            Queue("reply.q", expires=10.0, message_ttl=300.0),
            Queue("events.q", expires=0.2, message_ttl=5.0),
            Queue("plain"),
        )
        reply, events = fake.queues["reply-q"].attributes, fake.queues["events-q"].attributes
        assert (reply["expires_s"], reply["retention_s"]) == (10, 300)
        assert (events["expires_s"], events["retention_s"]) == (1, 60)
        assert fake.queues["plain"].attributes["expires_s"] is None

    def test_an_expired_queue_is_made_again_with_its_bindings_when_polled(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        pidbox = Queue("w1@host.pidbox", Exchange("pidbox", "fanout"), expires=10)
        conn = connect(lease_s=LEASE_S)
        channel = conn.channel()
        got: list[Any] = []
        with Consumer(channel, [pidbox], callbacks=[lambda b, m: got.append(b)], no_ack=True):
            fake.now += 11
            fake.expire()
            assert "w1_host-pidbox" not in fake.queues
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=1)  # not found: made again on the next poll
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=1)
            assert fake.exchanges["pidbox"].bindings == [("w1_host-pidbox", "")]
            Producer(connect().channel()).publish("ping", exchange="pidbox")
            conn.drain_events(timeout=1)
        assert got == ["ping"]

    def test_a_message_older_than_the_queues_ttl_is_dropped_when_leased(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(lease_s=LEASE_S)
        channel = declared(lambda: conn, Queue("ev", message_ttl=5))
        fake.produce("ev", b"stale")
        fake.now += 6
        fake.produce("ev", b"fresh")
        assert channel.basic_get("ev").body == b"fresh"
        conn.transport.keeper.run_once()
        assert fake.live("ev") == [fake.queues["ev"].items[1]]  # fresh is held, stale done
        assert fake.queues["ev"].items[0].done == "completed"

    def test_a_message_past_its_own_expiration_is_dropped_when_leased(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(lease_s=LEASE_S)
        channel = declared(lambda: conn, Queue("jobs"))
        producer = Producer(channel)
        producer.publish("short", routing_key="jobs", expiration=5)
        producer.publish("long", routing_key="jobs", expiration=60)
        producer.publish("forever", routing_key="jobs")
        fake.now += 6
        got = [channel.basic_get("jobs"), channel.basic_get("jobs"), channel.basic_get("jobs")]
        assert [m.payload if m else None for m in got] == ["long", "forever", None]
        conn.transport.keeper.run_once()
        assert fake.queues["jobs"].items[0].done == "completed"  # dropped, not delivered

    def test_an_auto_delete_queue_goes_with_its_last_consumer(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect()
        queue = Queue("celeryev.abc", Exchange("celeryev", "topic"), "#", auto_delete=True)
        first = Consumer(conn.channel(), [queue], callbacks=[lambda b, m: None])
        second = Consumer(conn.channel(), [queue], callbacks=[lambda b, m: None])
        first.consume()
        second.consume()
        first.cancel()
        assert "celeryev-abc" in fake.queues
        second.cancel()
        assert "celeryev-abc" not in fake.queues
        durable = Consumer(conn.channel(), [Queue("kept")], callbacks=[lambda b, m: None])
        durable.consume()
        durable.cancel()
        assert "kept" in fake.queues


class TestPollingControlQueues:
    def test_an_auto_delete_queue_beside_a_task_queue_is_short_polled(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(wait_time_s=10)
        tasks = Consumer(conn.channel(), [Queue("tasks")], callbacks=[lambda b, m: None])
        control = Queue("w1.pidbox", Exchange("pidbox", "fanout"), auto_delete=True)
        pidbox = Consumer(conn.channel(), [control], callbacks=[lambda b, m: None], no_ack=True)
        with tasks, pidbox, pytest.raises(socket.timeout):
            conn.drain_events(timeout=3)
        waits = {(r.queue, r.doc["request_timeout_s"]) for r in fake.seen("lease")}
        assert waits == {("tasks", 1), ("w1-pidbox", 0)}

    def test_a_busy_worker_polls_its_auto_delete_queue_at_most_every_tenth_of_a_second(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(wait_time_s=10)
        queue = conn.SimpleQueue("tasks")
        for n in range(6):
            queue.put(n)
        got: list[Any] = []
        tasks = Consumer(conn.channel(), [Queue("tasks")], callbacks=[lambda b, m: got.append(b)])
        control = Queue("w1.pidbox", Exchange("pidbox", "fanout"), auto_delete=True)
        pidbox = Consumer(conn.channel(), [control], callbacks=[lambda b, m: None], no_ack=True)
        with tasks, pidbox:
            tasks.qos(prefetch_count=1)
            for _ in range(3):  # a message each, acked at once: a busy worker
                conn.drain_events(timeout=3)
                tasks.channel.qos.ack(max(tasks.channel.qos._delivered))  # as message.ack
            fake.now += AUX_POLL_S
            for _ in range(3):
                conn.drain_events(timeout=3)
                tasks.channel.qos.ack(max(tasks.channel.qos._delivered))
        assert len(got) == 6
        assert [r.queue for r in fake.seen("lease")].count("w1-pidbox") == 2

    def test_an_auto_delete_queue_alone_is_long_polled(self, fake: FakeOkuri, connect: Any) -> None:
        conn = connect(wait_time_s=10)
        reply = Queue("oid.reply", Exchange("reply", "direct"), "oid", auto_delete=True)
        with (
            Consumer(conn.channel(), [reply], callbacks=[lambda b, m: None], no_ack=True),
            pytest.raises(socket.timeout),
        ):
            conn.drain_events(timeout=2)
        assert {r.doc["request_timeout_s"] for r in fake.seen("lease")} == {2}
