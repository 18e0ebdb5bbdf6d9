"""kombu's exchanges on a real `okuri serve` through okuri://: kombu's integration scenarios for
exchange types where they apply (fanout to several queues, topic routing with `*` and `#`), and
what only shared bindings give: a binding made in one process routes a publish made in another.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

from kombu import Exchange, Producer, Queue
from kombu_smoke import NS, Okuri, okuri_name

from tests.servers import clean_environ

ROOT = Path(__file__).resolve().parents[3]
PYTHONPATH = os.pathsep.join([str(ROOT / "integrations" / "kombu"), str(ROOT)])

PUBLISHER = """
import sys
import okuri_kombu
from kombu import Connection, Exchange, Producer

url, exchange, kind, key, body = sys.argv[1:]
with Connection(url) as conn:
    Producer(conn.channel()).publish(body, exchange=Exchange(exchange, kind), routing_key=key)
"""


def _names(tag: str) -> str:
    return f"{NS}{tag}.{uuid.uuid4().hex[:8]}"


def _drain(channel: Any, queue: str) -> list[Any]:
    got = []
    while (message := channel.basic_get(queue)) is not None:
        got.append(message.payload)
        message.ack()
    return got


def test_a_fanout_exchange_copies_each_message_to_every_bound_queue(connect: Any) -> None:
    channel = connect().channel()
    broadcast = Exchange(_names("fan"), "fanout")
    queues = [Queue(_names(f"reader{i}"), broadcast) for i in range(3)]
    for queue in queues:
        queue(channel).declare()
    Producer(channel).publish({"n": 1}, exchange=broadcast, routing_key="anything")
    for queue in queues:
        assert _drain(channel, queue.name) == [{"n": 1}]


def test_a_topic_exchange_routes_by_star_and_hash(connect: Any) -> None:
    channel = connect().channel()
    topic = Exchange(_names("topic"), "topic")
    one, every = Queue(_names("one"), topic, "a.*"), Queue(_names("every"), topic, "#")
    for queue in (one, every):
        queue(channel).declare()
    producer = Producer(channel)
    for key in ("a.b", "a.b.c", "b"):
        producer.publish(key, exchange=topic, routing_key=key)
    assert _drain(channel, one.name) == ["a.b"]
    assert sorted(_drain(channel, every.name)) == ["a.b", "a.b.c", "b"]


def test_a_binding_made_in_one_process_routes_a_publish_from_another(
    okuri: Okuri, connect: Any
) -> None:
    exchange = Exchange(_names("shared"), "direct")
    queue = Queue(_names("bound"), exchange, "key-1")
    channel = connect().channel()
    queue(channel).declare()
    for key, body in (("key-1", "routed"), ("key-2", "dropped")):
        subprocess.run(
            [sys.executable, "-c", PUBLISHER, okuri.url(), exchange.name, "direct", key, body],
            env={**clean_environ(), "PYTHONPATH": PYTHONPATH},
            check=True,
            timeout=60,
        )
    assert _drain(channel, queue.name) == ["routed"]
    with okuri.client() as client:
        (binding,) = client.get_exchange(okuri_name(exchange.name)).bindings
    assert (binding.queue, binding.routing_key) == (okuri_name(queue.name), "key-1")


def test_a_consumer_key_binds_and_a_producer_key_publishes_through_an_admins_exchange(
    okuri: Okuri, connect: Any
) -> None:
    topic = Exchange(_names("roles"), "topic")
    connect().channel().exchange_declare(topic.name, "topic")  # an admin makes the exchange
    queue = Queue(_names("consumed"), topic, "jobs.#")
    with okuri.client() as client:
        client.create_queue(okuri_name(queue.name))
    consumer = connect("consumer").channel()
    queue(consumer).declare()
    Producer(connect("producer").channel()).publish(
        "from a producer key", exchange=topic, routing_key="jobs.new"
    )
    assert _drain(consumer, queue.name) == ["from a producer key"]
