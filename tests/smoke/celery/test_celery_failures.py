"""Failures: a worker killed mid-task; a task that always fails, ending in the dead-letter queue."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from celery import Celery
from celery_smoke import VISIBILITY_S, CeleryOkuri, Records, StartWorker

from tests.servers import create_with_dead_letter_queue

MAX_RECEIVE_COUNT = 2
REDELIVERY_SLACK_S = 5.0  # a poll (1 s wait + 0.2 s interval) and a busy 2-core machine


def test_an_acks_late_task_of_a_worker_killed_mid_task_is_completed_by_another(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    """The heartbeat hides the running task from the idle rescuer while its worker lives, and
    stops with the worker: the rescuer gets it one visibility timeout after the kill."""
    doomed = start_worker(queue_name, name="doomed")
    result = producer.send_task(
        "smoke.sleepy",
        args=("victim", 1),
        kwargs={"seconds_on": {"doomed@smoke": 60}},
        queue=queue_name,
    )
    (first,) = records.wait(lambda runs: len(runs) == 1, timeout_s=30, tag="victim")
    start_worker(queue_name, name="rescuer")
    # Well past the visibility timeout, with a second consumer polling: still one run.
    while time.time() < first["start"] + VISIBILITY_S + 2:
        time.sleep(0.1)
    assert len(records.all("victim")) == 1
    doomed.kill()  # SIGKILL to the main process and its pool children at once
    killed_at = time.time()

    assert result.get(timeout=60, interval=0.1) == "rescuer@smoke"
    first, second = records.all("victim")
    assert first["worker"] == "doomed@smoke" and first["end"] is None
    assert second["worker"] == "rescuer@smoke" and second["end"] is not None
    assert first["task_id"] == second["task_id"] == result.id
    assert second["start"] - killed_at < VISIBILITY_S + REDELIVERY_SLACK_S


def _decode(body: str) -> dict[str, object]:
    """kombu's SQS transport sends the kombu envelope as base64'd JSON."""
    decoded: dict[str, object] = json.loads(base64.b64decode(body))
    return decoded


def test_a_task_that_always_fails_ends_in_the_dead_letter_queue_after_max_receive_count(
    celery_okuri: CeleryOkuri,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    sqs = celery_okuri.sqs()
    url, dlq_url, _ = create_with_dead_letter_queue(
        sqs, queue_name, MAX_RECEIVE_COUNT, VisibilityTimeout=str(VISIBILITY_S)
    )
    start_worker(queue_name)

    result = producer.send_task("smoke.always_fails", args=("doomed",), queue=queue_name)
    runs = records.wait(lambda runs: len(runs) >= MAX_RECEIVE_COUNT, timeout_s=60, tag="doomed")

    dead: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while not dead and time.monotonic() < deadline:
        dead = sqs.receive_message(
            QueueUrl=dlq_url, WaitTimeSeconds=2, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
    assert len(dead) == 1, "the message moved to the dead-letter queue"
    envelope = _decode(dead[0]["Body"])
    headers = envelope["headers"]
    assert isinstance(headers, dict)
    assert headers["id"] == result.id and headers["task"] == "smoke.always_fails"
    assert dead[0]["Attributes"]["DeadLetterQueueSourceArn"].endswith(f":{queue_name}")

    assert len(records.all("doomed")) == MAX_RECEIVE_COUNT == len(runs)
    assert {run["task_id"] for run in runs} == {result.id}
    # The copy lands in the dead-letter queue before the source finishes the message, and the
    # counts are approximate (as on SQS): they settle at zero within moments.
    deadline = time.monotonic() + 10
    while True:
        left = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        names = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")
        settled = tuple(left[n] for n in names)
        if settled == ("0", "0") or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert settled == ("0", "0")
