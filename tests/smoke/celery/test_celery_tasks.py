"""Celery with kombu's stock SQS transport on okuri: throughput, results, countdown/eta, retries.

Results go through Celery's S3 result backend into the same bucket okuri keeps its queues in.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import Celery
from celery.result import AsyncResult
from celery_smoke import CeleryOkuri, Records, StartWorker

TASKS = 200
EARLY_TOLERANCE_S = 0.01  # wall-clock float round trip (eta string -> timer); not a grace period


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

    def send(i: int) -> AsyncResult:
        return producer.send_task("smoke.add", args=(i, 1000), queue=queue_name)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(send, range(TASKS)))

    runs = records.wait(lambda runs: len(runs) >= TASKS, timeout_s=120, tag="add")
    for i, result in enumerate(results):
        assert result.get(timeout=30, interval=0.1) == i + 1000
    assert len({run["task_id"] for run in runs}) == TASKS
    assert len(runs) == TASKS, "a task ran twice"

    s3 = moto_s3_client
    paginator = s3.get_paginator("list_objects_v2")
    keys = {
        item["Key"]
        for page in paginator.paginate(Bucket=celery_okuri.bucket, Prefix="celery-results/")
        for item in page.get("Contents", [])
    }
    assert {f"celery-results/celery-task-meta-{result.id}" for result in results} <= keys
    okuri_objects = s3.list_objects_v2(Bucket=celery_okuri.bucket, Prefix="okuri/", MaxKeys=1)
    assert okuri_objects["KeyCount"] == 1, "okuri's queues live in the same bucket"


def test_countdown_and_eta_tasks_run_no_earlier_than_asked(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    sent = time.time()
    eta = datetime.now(UTC) + timedelta(seconds=3)
    producer.send_task("smoke.stamp", args=("now",), queue=queue_name)
    producer.send_task("smoke.stamp", args=("countdown",), countdown=2, queue=queue_name)
    producer.send_task("smoke.stamp", args=("eta",), eta=eta, queue=queue_name)

    runs = records.wait(lambda runs: len(runs) >= 3, timeout_s=30)
    by_tag = {run["tag"]: run for run in runs}
    assert len(runs) == 3
    assert by_tag["countdown"]["start"] >= sent + 2 - EARLY_TOLERANCE_S
    assert by_tag["eta"]["start"] >= eta.timestamp() - EARLY_TOLERANCE_S
    for tag, asked in (("countdown", sent + 2), ("eta", eta.timestamp()), ("now", sent)):
        assert by_tag[tag]["start"] < asked + 10, f"{tag} ran {by_tag[tag]['start'] - asked} s late"


def test_retries_back_off_by_their_countdowns(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    countdowns_s = [1.0, 2.0]
    result = producer.send_task("smoke.flaky", args=("flaky", countdowns_s), queue=queue_name)

    assert result.get(timeout=30, interval=0.1) == len(countdowns_s)
    attempts = records.all("flaky")
    assert [run["retries"] for run in attempts] == [0, 1, 2]
    assert {run["task_id"] for run in attempts} == {result.id}
    for before, after, countdown_s in zip(attempts, attempts[1:], countdowns_s, strict=False):
        waited = after["start"] - before["end"]
        assert waited >= countdown_s - EARLY_TOLERANCE_S, (before, after)
        assert waited < countdown_s + 10
