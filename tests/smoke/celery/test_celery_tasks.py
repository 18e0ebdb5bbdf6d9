"""Celery on okuri, through kombu's stock SQS transport (`sqs://`) and through okuri's own
(`okuri://`, integrations/kombu): throughput, results, countdown/eta, retries.

Results go through Celery's S3 result backend into the same bucket okuri keeps its queues in.
The scenarios live in scenarios.py, shared with the compose stack's worker container
(tests/compose); here the workers are local processes, and each scenario runs on both brokers.
"""

from __future__ import annotations

from typing import Any

import pytest
import scenarios
from celery import Celery
from celery_smoke import BROKERS, CeleryOkuri, Records, StartWorker

TASKS = 200
on_both_brokers = pytest.mark.parametrize("broker", BROKERS, indirect=True)


@on_both_brokers
def test_two_hundred_tasks_complete_with_their_results_in_the_same_bucket(
    celery_okuri: CeleryOkuri,
    moto_s3_client: Any,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    start_worker(queue_name, name="a")
    start_worker(queue_name, name="b")
    scenarios.tasks_complete_with_results_in_the_bucket(
        producer, records, queue_name, moto_s3_client, celery_okuri.bucket, TASKS
    )


@on_both_brokers
def test_countdown_and_eta_tasks_run_no_earlier_than_asked(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    scenarios.countdown_and_eta_tasks_run_no_earlier_than_asked(producer, records, queue_name)


@on_both_brokers
def test_retries_back_off_by_their_countdowns(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    scenarios.retries_back_off_by_their_countdowns(producer, records, queue_name)
