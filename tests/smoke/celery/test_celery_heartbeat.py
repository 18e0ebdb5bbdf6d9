"""Long and far-eta tasks: once with okuri_celery's heartbeat, more than once without it.

One scenario runs for the whole module, three workers side by side, each on a queue of its own
with a 5 s visibility timeout:

- `hb`: heartbeat on; gets a task that sleeps 12 s (`acks_late`) and a task with a 12 s countdown.
- `nohb-long`: heartbeat off; gets the same sleeping task.
- `nohb-eta`: heartbeat off; gets the same countdown task.

Without the heartbeat, SQS hands each held message out again every 5 s: the running task starts
a second time on the worker's other pool process, and the eta task is held two or three times
over and runs once per copy. With the heartbeat, each runs once and its message is gone from the
queue afterwards, so it cannot come back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery_smoke import WAIT_POLL_S, CeleryOkuri, Records, Run, spawn_worker, stop_all

HELD_S = 12  # more than twice the 5 s visibility timeout
SCENARIO_S = 60.0
EARLY_TOLERANCE_S = 0.01


@dataclass
class Scenario:
    records: Records
    sent_s: float
    hb_queue_left: dict[str, str]
    logs: dict[str, str]

    def runs(self, tag: str) -> list[Run]:
        return self.records.all(tag)


def _queue_counts(sqs: Any, queue: str) -> dict[str, str]:
    url = sqs.get_queue_url(QueueName=queue)["QueueUrl"]
    answer = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=[
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ],
    )
    return dict(answer["Attributes"])


def _finished(records: Records) -> bool:
    def count(tag: str, ended: bool = False) -> int:
        return sum(1 for run in records.all(tag) if run["end"] is not None or not ended)

    return (
        count("long-hb", ended=True) >= 1
        and count("eta-hb") >= 1
        and count("long-nohb") >= 2
        and count("eta-nohb") >= 2
    )


@pytest.fixture(scope="module")
def scenario(
    celery_okuri: CeleryOkuri, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    tmp: Path = tmp_path_factory.mktemp("celery-heartbeat")
    record_dir = tmp / "records"
    record_dir.mkdir()
    suffix = uuid.uuid4().hex[:8]
    queues = {name: f"smoke-{name}-{suffix}" for name in ("hb", "nohb-long", "nohb-eta")}
    workers = [
        spawn_worker(celery_okuri, queues[name], name, record_dir, tmp / f"{name}.log", hb)
        for name, hb in (("hb", True), ("nohb-long", False), ("nohb-eta", False))
    ]
    producer = Celery("smoke-heartbeat-producer", set_as_current=False)
    producer.conf.update(celery_okuri.config(queues["hb"]))
    records = Records(record_dir)
    try:
        for worker in workers:
            worker.wait_ready()
        sent = time.time()
        producer.send_task("smoke.sleepy", args=("long-hb", HELD_S), queue=queues["hb"])
        producer.send_task("smoke.stamp", args=("eta-hb",), countdown=HELD_S, queue=queues["hb"])
        producer.send_task("smoke.sleepy", args=("long-nohb", HELD_S), queue=queues["nohb-long"])
        producer.send_task(
            "smoke.stamp", args=("eta-nohb",), countdown=HELD_S, queue=queues["nohb-eta"]
        )
        records.wait(lambda _: _finished(records), timeout_s=SCENARIO_S)

        # Acknowledged means deleted: wait for the hb queue to be empty, so nothing can come back.
        sqs = celery_okuri.sqs()
        deadline = time.monotonic() + 15
        while True:
            left = _queue_counts(sqs, queues["hb"])
            if set(left.values()) == {"0"} or time.monotonic() > deadline:
                break
            time.sleep(WAIT_POLL_S)
        yield Scenario(records, sent, left, {worker.name: worker.log for worker in workers})
    finally:
        stop_all(workers, grace_s=3.0)
        producer.close()


def test_a_task_running_past_the_visibility_timeout_runs_once_with_the_heartbeat(
    scenario: Scenario,
) -> None:
    (run,) = scenario.runs("long-hb")
    assert run["end"] - run["start"] >= HELD_S
    assert scenario.hb_queue_left == {
        "ApproximateNumberOfMessages": "0",
        "ApproximateNumberOfMessagesNotVisible": "0",
        "ApproximateNumberOfMessagesDelayed": "0",
    }, "acknowledged after the heartbeat extended it, so the message is deleted"
    assert "okuri heartbeat: extending held messages to 5 s" in scenario.logs["hb"]


def test_a_task_with_an_eta_beyond_the_visibility_timeout_runs_once_with_the_heartbeat(
    scenario: Scenario,
) -> None:
    (run,) = scenario.runs("eta-hb")
    assert run["start"] >= scenario.sent_s + HELD_S - EARLY_TOLERANCE_S
    assert set(scenario.hb_queue_left.values()) == {"0"}


def test_without_the_heartbeat_a_task_running_past_the_visibility_timeout_runs_twice(
    scenario: Scenario,
) -> None:
    runs = scenario.runs("long-nohb")
    assert len(runs) >= 2
    assert len({run["task_id"] for run in runs}) == 1, "one task, started again"
    assert runs[1]["start"] < runs[0]["start"] + HELD_S, "the second run began during the first"
    assert runs[1]["pid"] != runs[0]["pid"]


def test_without_the_heartbeat_a_task_with_an_eta_beyond_the_visibility_timeout_runs_twice(
    scenario: Scenario,
) -> None:
    runs = scenario.runs("eta-nohb")
    assert len(runs) >= 2
    assert len({run["task_id"] for run in runs}) == 1
    assert all(run["start"] >= scenario.sent_s + HELD_S - EARLY_TOLERANCE_S for run in runs)
