"""okuri_kombu's Transport and Channel through kombu's own API (Connection, Producer, Consumer,
SimpleQueue), as kombu's transport tests drive theirs, against the fake okuri: what reaches
okuri for each kombu operation, and what kombu sees back."""

from __future__ import annotations

import json
import socket
import ssl
from typing import Any

import certifi
import pytest
from fake_okuri import KEY, URL, FakeOkuri, fake_transport
from kombu import Connection, Consumer, Exchange, Producer, Queue
from okuri_kombu import SecureTransport, Transport
from okuri_kombu.names import QueueNameError
from okuri_kombu.pacing import LEASE_BATCH_WAIT_S, MULTI_QUEUE_WAIT_S
from okuri_kombu.transport import _verify

from okuri.client import AuthError, ForbiddenError, TransportError

LEASE_S = 10


class TestConnection:
    def test_the_url_names_the_server_and_its_key_and_okuri_is_the_default_port(self) -> None:
        for url, base in [
            ("okuri://k@queues.example:9000", "http://queues.example:9000"),
            ("okuri://k@queues.example", "http://queues.example:8080"),
            ("okuris://k@queues.example", "https://queues.example:443"),
            ("okuris://k@queues.example:8443", "https://queues.example:8443"),
            ("okuri://k@[::1]:8080", "http://[::1]:8080"),
        ]:
            transport = Connection(url).transport
            assert transport.base_url() == base and transport.key() == "k"
        assert Connection("okuri://k@h", ssl=True).transport.base_url() == "https://h:8080"

    def test_the_key_may_be_the_urls_password_or_a_transport_option(self) -> None:
        assert Connection("okuri://:secret@h").transport.key() == "secret"
        conn = Connection("okuri://h", transport_options={"key": "from-options"})
        assert conn.transport.key() == "from-options"
        with pytest.raises(ValueError, match="okuri:// needs a bearer key"):
            Connection("okuri://h:8080").transport.key()

    def test_the_key_is_masked_wherever_kombu_prints_the_url(self) -> None:
        conn = Connection("okuri://a-secret-key@h:8080")
        assert "a-secret-key" not in conn.as_uri()
        assert conn.as_uri() == "okuri://:**@h:8080//"

    def test_tls_verification_follows_kombus_ssl_option(self) -> None:
        assert _verify(True) is True and _verify(None) is True
        assert _verify({"cert_reqs": ssl.CERT_NONE}) is False
        trusting = _verify({"ca_certs": certifi.where()})
        assert isinstance(trusting, ssl.SSLContext) and trusting.get_ca_certs()
        assert Connection("okuris://k@h").transport_cls == "okuris"
        assert isinstance(Connection("okuris://k@h").transport, SecureTransport)

    def test_connecting_checks_that_okuri_answers_and_takes_the_key(self, fake: FakeOkuri) -> None:
        conn = Connection(URL, transport=fake_transport(fake))
        conn.connect()
        assert [r.operation for r in fake.requests] == ["list_queues"]
        wrong = Connection(URL.replace(KEY, "wrong-key"), transport=fake_transport(fake))
        with pytest.raises(AuthError):
            wrong.connect()

    def test_no_server_is_a_connection_error_kombu_and_celery_retry(self) -> None:
        conn = Connection("okuri://k@127.0.0.1:9", transport_options={"timeout_s": 2})
        with pytest.raises(conn.connection_errors) as failed:
            conn.transport.okuri.list_queues()
        assert isinstance(failed.value, TransportError) and not failed.value.sent
        assert socket.error in Transport.connection_errors
        assert conn.recoverable_connection_errors == conn.connection_errors
        assert conn.recoverable_channel_errors == ()
        refused = AuthError(401, "bad_key", "no")
        assert isinstance(refused, conn.channel_errors)
        assert not isinstance(refused, conn.connection_errors)
        assert not conn.transport.implements.asynchronous


class TestQueues:
    def test_declaring_a_queue_creates_it_with_the_options_attributes_and_counts_it(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(lease_s=LEASE_S, queue_attributes={"max_attempts": 3})
        channel = conn.channel()
        name, count, _ = channel.queue_declare("jobs.high")
        assert (name, count) == ("jobs.high", 0)
        attributes = fake.queues["jobs-high"].attributes
        assert attributes["lease_timeout_s"] == LEASE_S and attributes["max_attempts"] == 3
        fake.produce("jobs-high", b"x")
        fake.produce("jobs-high", b"y")
        assert channel.queue_declare("jobs.high", passive=True).message_count == 2

    def test_a_queue_made_elsewhere_with_other_attributes_is_used_as_it_is(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        fake.client().create_queue("jobs", lease_timeout_s=300, max_attempts=2)
        connect(lease_s=LEASE_S).channel().queue_declare("jobs")
        assert fake.queues["jobs"].attributes["lease_timeout_s"] == 300

    def test_a_key_that_may_not_create_queues_uses_those_that_exist(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        fake.client().create_queue("jobs")
        fake.forbid_create = True
        channel = connect().channel()
        channel.queue_declare("jobs")
        with pytest.raises(ForbiddenError):
            channel.queue_declare("other")

    def test_a_passive_declare_of_a_missing_queue_fails_as_on_amqp(self, connect: Any) -> None:
        with pytest.raises(connect().channel_errors):
            connect().channel().queue_declare("missing", passive=True)

    def test_purge_counts_what_it_removed(self, fake: FakeOkuri, connect: Any) -> None:
        channel = connect().channel()
        channel.queue_declare("jobs")
        for _ in range(3):
            fake.produce("jobs", b"x")
        assert channel.queue_purge("jobs") == 3
        assert fake.live("jobs") == []

    def test_delete_removes_the_okuri_queue_once_bound_or_not(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        channel = connect().channel()
        queue = Queue("bound", Exchange("ex", "direct"), "a")(channel)
        queue.declare()
        queue.queue_bind()
        channel.queue_declare("unbound")
        channel.queue_delete("bound")
        channel.queue_delete("unbound")
        assert "bound" not in fake.queues and "unbound" not in fake.queues
        assert len(fake.seen("delete_queue")) == 2
        channel.queue_delete("unbound")  # gone already: nothing to do

    def test_delete_if_empty_keeps_a_queue_that_holds_messages(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        channel = connect().channel()
        channel.queue_declare("jobs")
        fake.produce("jobs", b"x")
        channel.queue_delete("jobs", if_empty=True)
        assert "jobs" in fake.queues

    def test_a_fifo_queue_is_refused_as_a_channel_error(self, connect: Any) -> None:
        conn = connect()
        with pytest.raises(conn.channel_errors) as refused:
            conn.channel().queue_declare("orders.fifo")
        assert isinstance(refused.value, QueueNameError)


class TestPublishing:
    def test_a_published_message_is_one_item_holding_kombus_whole_message(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect()
        queue = Queue("jobs", Exchange("jobs", "direct"), "jobs")
        Producer(conn.channel()).publish(
            {"n": 1}, exchange=queue.exchange, routing_key="jobs", declare=[queue],
            headers={"task": "add"}, serializer="json",
        )  # fmt: skip
        (item,) = fake.live("jobs")
        message = json.loads(item.body)
        assert message["headers"] == {"task": "add"}
        assert message["content-type"] == "application/json"
        assert message["properties"]["delivery_info"]["routing_key"] == "jobs"
        (publish,) = fake.seen("publish")  # to the queue's exchange: okuri routes it
        assert publish.queue == "jobs" and publish.doc["routing_key"] == "jobs"
        assert len(publish.doc["items"]) == 1

    def test_publishing_to_a_queue_not_declared_creates_it(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        Producer(connect().channel()).publish("hi", routing_key="fresh")  # the default exchange
        assert len(fake.live("fresh")) == 1
        assert len(fake.seen("create_queue")) == 1


class TestConsuming:
    def setup_queue(self, fake: FakeOkuri, connect: Any, count: int, **options: Any) -> Any:
        conn = connect(lease_s=LEASE_S, wait_time_s=5, **options)
        queue = conn.SimpleQueue("jobs")
        for i in range(count):
            queue.put({"n": i})
        return conn, queue

    def test_get_leases_one_and_ack_completes_it(self, fake: FakeOkuri, connect: Any) -> None:
        conn, queue = self.setup_queue(fake, connect, 2)
        message = queue.get(timeout=1)
        assert message.payload == {"n": 0}
        assert message.delivery_info["okuri_attempts"] == 1
        message.ack()
        conn.transport.keeper.run_once()
        first, second = fake.queues["jobs"].items
        assert first.done == "completed" and second.done is None
        assert fake.seen("complete")[0].doc["handles"] == [message.delivery_tag]

    def test_consuming_leases_as_many_as_the_prefetch_window_holds(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, _ = self.setup_queue(fake, connect, 10)
        got: list[Any] = []
        with Consumer(conn, [Queue("jobs")], callbacks=[lambda b, m: got.append(m)]) as consumer:
            consumer.qos(prefetch_count=3)
            conn.drain_events(timeout=1)
            assert len(got) == 3
            (lease,) = fake.seen("lease")
            assert lease.doc == {"max_items": 3, "lease_s": LEASE_S, "request_timeout_s": 1}
            with pytest.raises(socket.timeout):  # the window is full: no lease is sent
                conn.drain_events(timeout=0.01)
            assert len(fake.seen("lease")) == 1
            got[0].ack()
            fake.now += LEASE_BATCH_WAIT_S  # a room of one waits that long for more (below)
            conn.drain_events(timeout=1)
            assert len(got) == 4 and fake.seen("lease")[1].doc["max_items"] == 1

    def test_while_most_of_the_window_is_held_a_lease_waits_for_half_of_it_to_free_up(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, _ = self.setup_queue(fake, connect, 10)
        got: list[Any] = []
        with Consumer(conn, [Queue("jobs")], callbacks=[lambda b, m: got.append(m)]) as consumer:
            consumer.qos(prefetch_count=4)
            conn.drain_events(timeout=1)
            (channel,) = [ch for ch in conn.transport.channels if ch._consumers]
            assert len(got) == 4 and channel.lease_wait_s() is None  # full: only an ack helps
            got[0].ack()
            assert channel.lease_wait_s() == pytest.approx(LEASE_BATCH_WAIT_S)
            fake.now += LEASE_BATCH_WAIT_S / 2
            assert channel.lease_wait_s() == pytest.approx(LEASE_BATCH_WAIT_S / 2)
            got[1].ack()  # half the window free: lease now
            assert channel.lease_wait_s() == 0.0
            conn.drain_events(timeout=1)
            assert len(got) == 6 and fake.seen("lease")[1].doc["max_items"] == 2

    def test_a_long_poll_waits_no_longer_than_drain_events_may(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, _ = self.setup_queue(fake, connect, 0)
        with Consumer(conn, [Queue("jobs")], callbacks=[lambda b, m: None]):
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=0.5)
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=3)
        waits = [r.doc["request_timeout_s"] for r in fake.seen("lease")]
        assert waits[0] == 0 and max(waits[1:]) <= 3

    @pytest.mark.parametrize(
        ("timeout", "waits"),
        [
            (0.95, [1]),  # a second but for the drain's own start: long-polled
            (0.3, [0]),  # under a second: a short poll, then the rest waited here
            (2.5, [2, 0]),  # whole seconds long-polled, then the rest
            (0, [0]),  # kombu's non-blocking poll: one short poll, no wait
        ],
    )
    def test_a_drain_on_an_empty_queue_lasts_its_whole_timeout_with_a_poll_or_two(
        self, fake: FakeOkuri, connect: Any, timeout: float, waits: list[int]
    ) -> None:
        """kombu's ConsumerMixin (`celery events`, Flower) drains again as soon as a drain
        times out: one that ended early would spin, leasing hundreds of times a second."""
        conn, _ = self.setup_queue(fake, connect, 0)
        with Consumer(conn, [Queue("jobs")], callbacks=[lambda b, m: None]):
            started = fake.now
            with pytest.raises(socket.timeout):
                conn.drain_events(timeout=timeout)
            lasted_s = fake.now - started
        assert [r.doc["request_timeout_s"] for r in fake.seen("lease")] == waits
        assert timeout - 1e-9 <= lasted_s <= max(timeout, 1)  # never shorter; a bit longer, maybe

    def test_each_of_several_queues_is_long_polled_a_second_at_most(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn = connect(wait_time_s=10)
        consumer = Consumer(conn, [Queue("a"), Queue("b")], callbacks=[lambda b, m: None])
        started = fake.now
        with consumer, pytest.raises(socket.timeout):
            conn.drain_events(timeout=5)
        waits = [r.doc["request_timeout_s"] for r in fake.seen("lease")]
        assert max(waits) == MULTI_QUEUE_WAIT_S and set(waits) <= {0, MULTI_QUEUE_WAIT_S}
        assert {r.queue for r in fake.seen("lease")} == {"a", "b"}
        # Their polls add up within the timeout: the last queue has no time left to wait.
        assert fake.now - started == pytest.approx(5)

    def test_reject_with_requeue_gives_the_same_item_back_at_once(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, queue = self.setup_queue(fake, connect, 1)
        queue.get(timeout=1).reject(requeue=True)
        conn.transport.keeper.run_once()
        again = queue.get(timeout=1)
        assert again.payload == {"n": 0} and again.delivery_info["okuri_attempts"] == 2
        assert len(fake.queues["jobs"].items) == 1, "requeued, not published again"

    def test_reject_without_requeue_sends_the_message_to_the_dead_letter_queue(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, queue = self.setup_queue(fake, connect, 1)
        (item,) = fake.live("jobs")
        queue.get(timeout=1).reject()
        conn.transport.keeper.run_once()
        assert fake.live("jobs") == []
        (dead,) = fake.live("jobs-dlq")
        assert dead.id == item.id and dead.body == item.body

    def test_a_message_held_unacked_is_renewed_until_acked(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, queue = self.setup_queue(fake, connect, 1)
        message = queue.get(timeout=1)
        keeper = conn.transport.keeper
        for _ in range(6):  # three leases long
            fake.now += LEASE_S / 2
            keeper.run_once()
            assert fake.visible("jobs") == []
        message.ack()
        keeper.run_once()
        assert fake.live("jobs") == []

    def test_closing_the_channel_gives_unacked_messages_back_at_once(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, queue = self.setup_queue(fake, connect, 2)
        kept = queue.get(timeout=1)
        queue.get(timeout=1).ack()
        conn.close()
        (left,) = fake.visible("jobs")
        assert left.handle == kept.delivery_tag and left.attempts == 1
        assert len(fake.seen("retry")) == 1 and len(fake.seen("complete")) == 1

    def test_a_no_ack_consumer_completes_each_message_as_it_arrives(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        conn, _ = self.setup_queue(fake, connect, 2)
        got: list[Any] = []
        with Consumer(conn, [Queue("jobs")], callbacks=[lambda b, m: got.append(b)], no_ack=True):
            conn.drain_events(timeout=1)
        conn.transport.keeper.run_once()
        assert got == [{"n": 0}, {"n": 1}] and fake.live("jobs") == []

    def test_a_queue_deleted_while_consumed_is_declared_again(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        _, queue = self.setup_queue(fake, connect, 1)
        fake.client().delete_queue("jobs")
        with pytest.raises(queue.Empty):
            queue.get(block=False)
        with pytest.raises(queue.Empty):
            queue.get(block=False)
        assert "jobs" in fake.queues

    def test_an_item_produced_without_kombu_arrives_as_a_plain_message(
        self, fake: FakeOkuri, connect: Any
    ) -> None:
        _, queue = self.setup_queue(fake, connect, 0)
        fake.produce("jobs", b"from curl", {"source": "curl"})
        message = queue.get(timeout=1)
        assert message.body == b"from curl" and message.headers == {"source": "curl"}
