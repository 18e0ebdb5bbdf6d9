"""The Celery smoke scenarios, apart from where the workers run.

tests/smoke/celery starts workers as local processes on a local okuri; tests/compose runs the same
scenarios against the worker container of the compose stack. Each scenario sends its tasks
through `producer` to `queue`, waits for what the workers recorded (smoke_app.Execution) and
checks it. A scenario counts every record in `records`, so the record directory must hold only
its own runs.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from celery import Celery
from celery.result import AsyncResult
from celery_smoke import Records, Run

EARLY_TOLERANCE_S = 0.01  # wall-clock float round trip (eta string -> timer); not a grace period
LATE_S_MAX = 10.0  # a busy 2-core machine; a task this late is lost, not slow
RESULTS_PREFIX = "celery-results/"  # smoke_app.celery_config's default s3_base_path


def tasks_complete_with_results_in_the_bucket(
    producer: Celery, records: Records, queue: str, s3: Any, bucket: str, tasks: int
) -> list[Run]:
    """`tasks` additions each run once, their results read back from the bucket okuri uses."""

    def send(i: int) -> AsyncResult:
        return producer.send_task("smoke.add", args=(i, 1000), queue=queue)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(send, range(tasks)))

    runs = records.wait(lambda runs: len(runs) >= tasks, timeout_s=120, tag="add")
    for i, result in enumerate(results):
        assert result.get(timeout=30, interval=0.1) == i + 1000
    assert len({run["task_id"] for run in runs}) == tasks
    assert len(runs) == tasks, "a task ran twice"

    paginator = s3.get_paginator("list_objects_v2")
    keys = {
        item["Key"]
        for page in paginator.paginate(Bucket=bucket, Prefix=RESULTS_PREFIX)
        for item in page.get("Contents", [])
    }
    assert {f"{RESULTS_PREFIX}celery-task-meta-{result.id}" for result in results} <= keys
    okuri_objects = s3.list_objects_v2(Bucket=bucket, Prefix="okuri/", MaxKeys=1)
    assert okuri_objects["KeyCount"] == 1, "okuri's queues live in the same bucket"
    return runs


def countdown_and_eta_tasks_run_no_earlier_than_asked(
    producer: Celery, records: Records, queue: str
) -> None:
    sent = time.time()
    eta = datetime.now(UTC) + timedelta(seconds=3)
    producer.send_task("smoke.stamp", args=("now",), queue=queue)
    producer.send_task("smoke.stamp", args=("countdown",), countdown=2, queue=queue)
    producer.send_task("smoke.stamp", args=("eta",), eta=eta, queue=queue)

    runs = records.wait(lambda runs: len(runs) >= 3, timeout_s=30)
    by_tag = {run["tag"]: run for run in runs}
    assert len(runs) == 3
    assert by_tag["countdown"]["start"] >= sent + 2 - EARLY_TOLERANCE_S
    assert by_tag["eta"]["start"] >= eta.timestamp() - EARLY_TOLERANCE_S
    for tag, asked in (("countdown", sent + 2), ("eta", eta.timestamp()), ("now", sent)):
        late_s = by_tag[tag]["start"] - asked
        assert by_tag[tag]["start"] < asked + LATE_S_MAX, f"{tag} ran {late_s} s late"


def retries_back_off_by_their_countdowns(producer: Celery, records: Records, queue: str) -> None:
    countdowns_s = [1.0, 2.0]
    result = producer.send_task("smoke.flaky", args=("flaky", countdowns_s), queue=queue)

    assert result.get(timeout=30, interval=0.1) == len(countdowns_s)
    attempts = records.all("flaky")
    assert [run["retries"] for run in attempts] == [0, 1, 2]
    assert {run["task_id"] for run in attempts} == {result.id}
    for before, after, countdown_s in zip(attempts, attempts[1:], countdowns_s, strict=False):
        waited = after["start"] - before["end"]
        assert waited >= countdown_s - EARLY_TOLERANCE_S, (before, after)
        assert waited < countdown_s + LATE_S_MAX
