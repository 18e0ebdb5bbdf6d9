"""The compose stack booted for real: okuri's image on an S3 service, a Celery worker container.

Everything is reached from the host through the ports the stack publishes on 127.0.0.1: okuri's
health listener and SQS API, and the bucket (to read Celery's results as the worker stored them).
The Celery scenarios are those the local smoke tests run (tests/smoke/celery/scenarios.py); here
the worker that runs them is the container compose.yaml describes.
"""

from __future__ import annotations

import re
import socket
from typing import Any

import scenarios
from celery import Celery
from celery_smoke import Records

from tests.compose.images import Engine
from tests.compose.stack import LOOPBACK, Stack
from tests.servers import http

TASKS = 20  # a smoke, not a benchmark: tests/smoke/celery sends 200 to local workers


def counter(metrics: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", metrics, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_okuri_is_ready_and_counts_what_it_serves_through_its_loopback_ports(
    compose_stack: Stack, compose_engine: Engine, sqs_client: Any
) -> None:
    assert http("GET", compose_stack.health_url + "/readyz").status == 200
    before = http("GET", compose_stack.health_url + "/metrics").text
    queue_url = sqs_client.create_queue(QueueName="compose-metrics")["QueueUrl"]
    sqs_client.send_message(QueueUrl=queue_url, MessageBody="through the published port")

    metrics = http("GET", compose_stack.health_url + "/metrics")
    assert metrics.status == 200
    assert re.search(r"^okuri_up 1(\.0)?$", metrics.text, re.MULTILINE), metrics.text[:2000]
    sends = {"action": "SendMessage", "outcome": "ok"}
    sent = counter(metrics.text, "okuri_sqs_requests_total", **sends)
    assert sent == counter(before, "okuri_sqs_requests_total", **sends) + 1
    assert counter(metrics.text, "okuri_store_requests_total", **{"class": "put"}) > 0

    published = compose_engine.run("port", compose_stack.container("okuri")).stdout.split()
    hosts = [address.rsplit(":", 1)[0] for address in published if ":" in address]
    assert sorted(hosts) == [LOOPBACK, LOOPBACK], published


def test_celery_tasks_run_in_the_worker_container_with_results_in_the_bucket(
    compose_stack: Stack, producer: Celery, records: Records, queue: str, s3_client: Any
) -> None:
    bucket = compose_stack.environment("okuri")["OKURI_S3_BUCKET"]
    runs = scenarios.tasks_complete_with_results_in_the_bucket(
        producer, records, queue, s3_client, bucket, TASKS
    )
    hosts = {run["host"] for run in runs}
    assert len(hosts) == 1 and socket.gethostname() not in hosts, hosts


def test_countdown_and_eta_tasks_run_no_earlier_than_asked(
    producer: Celery, records: Records, queue: str
) -> None:
    scenarios.countdown_and_eta_tasks_run_no_earlier_than_asked(producer, records, queue)


def test_retries_back_off_by_their_countdowns(
    producer: Celery, records: Records, queue: str
) -> None:
    scenarios.retries_back_off_by_their_countdowns(producer, records, queue)
