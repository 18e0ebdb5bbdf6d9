"""Celery on `okuri://` (integrations/kombu) where it differs from `sqs://`: held tasks keep their
leases without a worker extension, a killed worker's task comes back, and failing tasks end in
the dead-letter queue, by rejection or after the queue's max_attempts.

Every worker here leases for 5 s (`lease_s`, smoke_app.VISIBILITY_S): a task held longer runs
twice unless okuri_kombu renews its lease.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from celery import Celery
from celery_smoke import VISIBILITY_S, CeleryOkuri, Records, StartWorker

from okuri.client import NotFoundError

HELD_S = 12  # more than twice the 5 s lease
LEASE_S = VISIBILITY_S
REDELIVERY_SLACK_S = 5.0  # a long poll (1 s) and a busy 2-core machine
SETTLE_S = 10.0
DEAD_LETTER_S = 30.0

pytestmark = pytest.mark.parametrize("broker", ["okuri"], indirect=True)


def _stats(okuri: Any, queue: str) -> tuple[int, int, int]:
    stats = okuri.get_queue(queue).stats
    return stats.visible, stats.leased, stats.delayed


def _settles_empty(celery_broker: CeleryOkuri, queue: str) -> tuple[int, int, int]:
    """The queue's counts once they reach zero (acks are sent a moment after the task), or
    what they are after SETTLE_S."""
    with celery_broker.okuri() as okuri:
        deadline = time.monotonic() + SETTLE_S
        while (counts := _stats(okuri, queue)) != (0, 0, 0) and time.monotonic() < deadline:
            time.sleep(0.1)
    return counts


def _dead_letters(celery_broker: CeleryOkuri, dlq: str) -> list[dict[str, Any]]:
    """The kombu envelopes that reach dead-letter queue `dlq` (made when the first arrives)
    within DEAD_LETTER_S, leased for good."""
    with celery_broker.okuri() as okuri:
        deadline = time.monotonic() + DEAD_LETTER_S
        while time.monotonic() < deadline:
            try:
                items = okuri.lease(dlq, 10, lease_s=600, request_timeout_s=2)
            except NotFoundError:
                time.sleep(0.2)
                continue
            if items:
                return [json.loads(item.body) for item in items]
    return []


def test_a_long_running_task_and_a_far_countdown_run_once_past_the_lease(
    celery_broker: CeleryOkuri,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    start_worker(queue_name)
    sent = time.time()
    long = producer.send_task("smoke.sleepy", args=("long", HELD_S), queue=queue_name)
    later = producer.send_task("smoke.stamp", args=("later",), countdown=HELD_S, queue=queue_name)

    assert long.get(timeout=60, interval=0.1) == "w1@smoke"
    assert later.get(timeout=60, interval=0.1) >= sent + HELD_S - 0.01
    assert [run["task_id"] for run in records.all("long")] == [long.id]
    assert [run["task_id"] for run in records.all("later")] == [later.id]
    assert _settles_empty(celery_broker, queue_name) == (0, 0, 0)


def test_an_acks_late_task_of_a_worker_killed_mid_task_runs_again_on_another(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    """The lease is renewed while the first worker lives, though a second one polls; after
    SIGKILL the renewals stop and the second gets the task one lease later."""
    doomed = start_worker(queue_name, name="doomed")
    result = producer.send_task(
        "smoke.sleepy",
        args=("victim", 1),
        kwargs={"seconds_on": {"doomed@smoke": 60}},
        queue=queue_name,
    )
    (first,) = records.wait(lambda runs: len(runs) == 1, timeout_s=30, tag="victim")
    start_worker(queue_name, name="rescuer")
    while time.time() < first["start"] + LEASE_S + 2:
        time.sleep(0.1)
    assert len(records.all("victim")) == 1, "the lease ran out while its worker lived"
    doomed.kill()  # SIGKILL to the main process and its pool children at once
    killed_at = time.time()

    assert result.get(timeout=60, interval=0.1) == "rescuer@smoke"
    first, second = records.all("victim")
    assert first["worker"] == "doomed@smoke" and first["end"] is None
    assert second["worker"] == "rescuer@smoke" and second["end"] is not None
    assert first["task_id"] == second["task_id"] == result.id
    assert second["start"] - killed_at < LEASE_S + REDELIVERY_SLACK_S


def test_a_failing_task_that_rejects_its_message_goes_to_the_dead_letter_queue_at_once(
    celery_broker: CeleryOkuri,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    """`acks_on_failure_or_timeout=False`: the failure rejects the message (requeue False),
    which okuri:// sends to the queue's dead-letter queue, `{queue}-dlq`."""
    start_worker(queue_name)
    result = producer.send_task("smoke.always_fails", args=("doomed",), queue=queue_name)
    records.wait(lambda runs: len(runs) == 1 and runs[0]["end"] is not None, 30, tag="doomed")

    (envelope,) = _dead_letters(celery_broker, f"{queue_name}-dlq")
    assert envelope["headers"]["id"] == result.id
    assert envelope["headers"]["task"] == "smoke.always_fails"
    assert [run["task_id"] for run in records.all("doomed")] == [result.id]
    assert _settles_empty(celery_broker, queue_name) == (0, 0, 0)


def test_a_task_given_back_every_time_goes_to_the_dead_letter_queue_after_max_attempts(
    celery_broker: CeleryOkuri,
    start_worker: StartWorker,
    producer: Celery,
    records: Records,
    queue_name: str,
) -> None:
    """The queue is made with max_attempts 2 before the worker starts (okuri:// then uses it
    as it is); a task that raises Reject(requeue=True) runs twice, then okuri moves it."""
    with celery_broker.okuri() as okuri:
        okuri.create_queue(queue_name, lease_timeout_s=LEASE_S, max_attempts=2)
    start_worker(queue_name)
    result = producer.send_task("smoke.requeued", args=("again",), queue=queue_name)

    (envelope,) = _dead_letters(celery_broker, f"{queue_name}-dlq")
    assert envelope["headers"]["id"] == result.id
    runs = records.wait(lambda runs: len(runs) == 2, timeout_s=10, tag="again")
    assert {run["task_id"] for run in runs} == {result.id}
    assert _settles_empty(celery_broker, queue_name) == (0, 0, 0)
    assert len(records.all("again")) == 2
