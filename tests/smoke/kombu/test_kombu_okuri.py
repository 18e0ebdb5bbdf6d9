"""kombu on a real `okuri serve` through okuri://: the scenarios kombu's integration suite runs on
its Redis transport, where they apply (publish and consume, ack, reject with and without
requeue, purge, declare counts, prefetch), and what okuri:// adds: the dead-letter queue,
queue attributes from transport options, leases renewed while a message is held, role keys."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from kombu import Consumer, Exchange, Producer, Queue
from kombu_smoke import NS, Okuri, kombu_body, okuri_name

from okuri.client import ForbiddenError
from tests.readme import block
from tests.servers import clean_environ

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "integrations" / "kombu" / "README.md"
PYTHONPATH = os.pathsep.join([str(ROOT / "integrations" / "kombu"), str(ROOT)])
# Publishes unconfirmed and leaves without closing: the interpreter's exit sends what waits.
UNCONFIRMED = """
import sys
import okuri_kombu
from kombu import Connection, Producer

url, queue, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
conn = Connection(url, transport_options={"confirm_publish": False})
producer = Producer(conn.channel())
for n in range(count):
    producer.publish(n, routing_key=queue)
"""

LEASE_S = 2
HELD_S = 3 * LEASE_S


def test_a_message_published_is_consumed_once_and_gone_after_its_ack(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    conn = connect()
    queue = conn.SimpleQueue(queue_name)
    queue.put({"hello": "world"}, headers={"k": "v"})
    message = queue.get(timeout=10)
    assert message.payload == {"hello": "world"} and message.headers == {"k": "v"}
    assert message.delivery_info["okuri_attempts"] == 1
    message.ack()
    with pytest.raises(queue.Empty):
        queue.get(timeout=1)
    conn.close()  # sends what the keeper still owes
    with okuri.client() as client:
        stats = client.get_queue(okuri_name(queue_name)).stats
    assert (stats.visible, stats.leased) == (0, 0)


def test_queue_declare_creates_the_queue_with_the_transport_options_and_counts_it(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    conn = connect(lease_s=LEASE_S, queue_attributes={"max_attempts": 4, "retention_s": 3600})
    channel = conn.channel()
    assert channel.queue_declare(queue_name).message_count == 0
    producer = Producer(channel)
    for i in range(3):
        producer.publish({"n": i}, routing_key=queue_name)
    assert channel.queue_declare(queue_name, passive=True).message_count == 3
    with okuri.client() as client:
        attributes = client.get_queue(okuri_name(queue_name)).attributes
    assert (attributes.lease_timeout_s, attributes.max_attempts) == (LEASE_S, 4)
    assert attributes.retention_s == 3600


def test_a_consumer_leases_up_to_its_prefetch_and_more_as_it_acks(
    connect: Any, queue_name: str
) -> None:
    conn = connect()
    queue = Queue(queue_name, Exchange(queue_name, "direct"), queue_name)
    producer = Producer(conn.channel())
    for i in range(10):
        producer.publish({"n": i}, exchange=queue.exchange, routing_key=queue_name, declare=[queue])
    got: list[Any] = []
    with Consumer(conn, [queue], callbacks=[lambda body, message: got.append(message)]) as c:
        c.qos(prefetch_count=4)
        conn.drain_events(timeout=5)
        assert len(got) == 4
        while len(got) < 10:
            for message in got:
                if not message.acknowledged:
                    message.ack()
            conn.drain_events(timeout=5)
            assert sum(not m.acknowledged for m in got) <= 4
        for message in got:
            if not message.acknowledged:
                message.ack()
    assert sorted(m.payload["n"] for m in got) == list(range(10))


def test_reject_with_requeue_redelivers_the_message_and_without_dead_letters_it(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    conn = connect()
    queue = conn.SimpleQueue(queue_name)
    queue.put("poison")
    queue.get(timeout=10).reject(requeue=True)
    again = queue.get(timeout=10)
    assert again.payload == "poison" and again.delivery_info["okuri_attempts"] == 2
    again.reject()
    conn.close()
    with okuri.client() as client:
        dead = client.lease(f"{okuri_name(queue_name)}-dlq", 10, request_timeout_s=5)
        assert [kombu_body(item) for item in dead] == [b"poison"]
        client.complete(f"{okuri_name(queue_name)}-dlq", dead)
        stats = client.get_queue(okuri_name(queue_name)).stats
    assert (stats.visible, stats.leased) == (0, 0)


def test_a_queue_with_max_attempts_dead_letters_a_message_requeued_that_often(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    conn = connect(queue_overrides={queue_name: {"max_attempts": 2}})
    queue = conn.SimpleQueue(queue_name)
    queue.put("again and again")
    for attempt in (1, 2):
        message = queue.get(timeout=10)
        assert message.delivery_info["okuri_attempts"] == attempt
        message.reject(requeue=True)
    with pytest.raises(queue.Empty):
        queue.get(timeout=2)
    with okuri.client() as client:
        (dead,) = client.lease(f"{okuri_name(queue_name)}-dlq", 10, request_timeout_s=5)
    assert kombu_body(dead) == b"again and again"


def test_purge_empties_the_queue_and_says_how_many_it_removed(
    connect: Any, queue_name: str
) -> None:
    queue = connect().SimpleQueue(queue_name)
    for i in range(5):
        queue.put(i)
    assert queue.qsize() == 5
    assert queue.clear() == 5
    assert queue.qsize() == 0


def test_queue_delete_removes_the_okuri_queue(okuri: Okuri, connect: Any, queue_name: str) -> None:
    channel = connect().channel()
    channel.queue_declare(queue_name)
    channel.queue_delete(queue_name)
    with okuri.client() as client:
        assert okuri_name(queue_name) not in list(client.iter_queues(NS))


def test_a_message_held_past_its_lease_is_renewed_and_not_delivered_again(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    """An unacked message of a live consumer stays its own for three leases while a second
    consumer polls; acked, it is gone."""
    holder = connect(lease_s=LEASE_S).SimpleQueue(queue_name)
    other = connect(lease_s=LEASE_S).SimpleQueue(queue_name)
    holder.put("held")
    message = holder.get(timeout=10)
    until = time.monotonic() + HELD_S
    while time.monotonic() < until:
        with pytest.raises(other.Empty):
            other.get(timeout=1)
    message.ack()
    with pytest.raises(other.Empty):
        other.get(timeout=LEASE_S + 1)


def test_an_unacked_message_comes_back_at_once_when_its_connection_closes(
    connect: Any, queue_name: str
) -> None:
    first = connect(lease_s=600)
    first.SimpleQueue(queue_name).put("kept")
    assert first.SimpleQueue(queue_name).get(timeout=10).payload == "kept"
    first.close()  # not acked: given back (retry now), not held for the 600 s lease
    again = connect().SimpleQueue(queue_name).get(timeout=10)
    assert again.payload == "kept" and again.delivery_info["okuri_attempts"] == 2


def test_role_keys_publish_and_consume_queues_an_admin_made_but_cannot_make_them(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    with okuri.client() as client:
        client.create_queue(okuri_name(queue_name))
    connect("producer").SimpleQueue(queue_name).put("from a producer key")
    message = connect("consumer").SimpleQueue(queue_name).get(timeout=10)
    assert message.payload == "from a producer key"
    message.ack()
    with pytest.raises(ForbiddenError):
        connect("producer").SimpleQueue(f"{queue_name}-new").put("nowhere")


def test_the_readmes_kombu_example_runs_as_written(
    okuri: Okuri, capsys: pytest.CaptureFixture[str]
) -> None:
    """integrations/kombu/README.md's example, verbatim but for the key and address."""
    code = block("kombu-example", README)
    assert 'Connection("okuri://KEY@localhost:8080")' in code
    exec(code.replace("okuri://KEY@localhost:8080", okuri.url()), {})
    assert capsys.readouterr().out == "{'to': 'ada@example.com'}\n"


def test_unconfirmed_publishes_are_all_on_okuri_in_order_once_the_publisher_exits(
    okuri: Okuri, connect: Any, queue_name: str
) -> None:
    subprocess.run(
        [sys.executable, "-c", UNCONFIRMED, okuri.url(), queue_name, "300"],
        env={**clean_environ(), "PYTHONPATH": PYTHONPATH},
        check=True,
        timeout=60,
    )
    queue = connect().SimpleQueue(queue_name)
    assert queue.qsize() == 300
    got = []
    for _ in range(300):
        message = queue.get(timeout=10)
        got.append(message.payload)
        message.ack()
    assert sorted(got) == list(range(300))  # each once (a standard queue's order is loose)
