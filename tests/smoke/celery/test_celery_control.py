"""Celery's remote control and events on `okuri://`: real prefork workers started without any
`--without-*` flag, `celery inspect` and `celery control` from the test process (through okuri's
fanout exchange `celery-pidbox` and direct reply exchange), events read by an EventReceiver
(through the topic exchange `celeryev`), and the queues of such clients killed with SIGKILL
expiring on okuri by themselves.

Inspect calls wait CONTROL_TIMEOUT_S for replies (Celery's default is 1 s; a busy two-core
machine running two workers needs more to be sure of both).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery_smoke import EXPIRY_SWEEP_S, HERE, CeleryOkuri, Records, StartWorker

from okuri.client import NotFoundError

CONTROL_TIMEOUT_S = 5.0
EVENTS_S = 30.0
ABANDONED_EXPIRES_S = 2
HELD_COUNTDOWN_S = 20  # the worker holds it meanwhile (reserved, in its eta timer)

pytestmark = pytest.mark.parametrize("broker", ["okuri"], indirect=True)


def _until(check: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting after {timeout_s} s for {what}")
        time.sleep(0.2)


def test_inspect_ping_is_answered_by_every_worker_and_registered_lists_their_tasks(
    start_worker: StartWorker, producer: Celery, queue_name: str
) -> None:
    start_worker(queue_name, name="w1")
    start_worker(queue_name, name="w2")
    inspect = producer.control.inspect(timeout=CONTROL_TIMEOUT_S)
    assert inspect.ping() == {"w1@smoke": {"ok": "pong"}, "w2@smoke": {"ok": "pong"}}
    registered = inspect.registered()
    assert set(registered) == {"w1@smoke", "w2@smoke"}
    for tasks in registered.values():
        assert {"smoke.add", "smoke.sleepy", "smoke.stamp"} <= set(tasks)
    only = producer.control.inspect(["w2@smoke"], timeout=CONTROL_TIMEOUT_S).ping()
    assert only == {"w2@smoke": {"ok": "pong"}}


def test_inspect_active_shows_the_running_task(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    result = producer.send_task("smoke.sleepy", args=("busy", 8), queue=queue_name)
    records.wait(lambda runs: len(runs) == 1, timeout_s=30, tag="busy")
    active = producer.control.inspect(timeout=CONTROL_TIMEOUT_S).active()
    assert [task["id"] for task in active["w1@smoke"]] == [result.id]
    assert result.get(timeout=30, interval=0.1) == "w1@smoke"


def test_a_task_revoked_before_it_arrives_never_runs(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    task_id = str(uuid.uuid4())
    producer.control.revoke(task_id)
    time.sleep(2)  # the worker sees the broadcast within its poll (about a second)
    revoked = producer.send_task(
        "smoke.stamp", args=("revoked",), queue=queue_name, task_id=task_id
    )
    after = producer.send_task("smoke.stamp", args=("after",), queue=queue_name)
    after.get(timeout=30, interval=0.1)
    _until(lambda: revoked.state == "REVOKED", 30, "the revoked state")
    assert records.all("revoked") == []


def test_a_task_revoked_while_a_worker_holds_it_for_its_countdown_never_runs(
    start_worker: StartWorker, producer: Celery, records: Records, queue_name: str
) -> None:
    start_worker(queue_name)
    held = producer.send_task(
        "smoke.stamp", args=("held",), countdown=HELD_COUNTDOWN_S, queue=queue_name
    )
    # One worker named: each call returns with its reply, not after the whole timeout.
    inspect = producer.control.inspect(["w1@smoke"], timeout=CONTROL_TIMEOUT_S)

    def reserved() -> bool:
        scheduled = inspect.scheduled() or {}
        return any(entry["request"]["id"] == held.id for entry in scheduled.get("w1@smoke", []))

    _until(reserved, HELD_COUNTDOWN_S / 2, "the worker to hold the countdown task")
    replies = producer.control.revoke(
        held.id, destination=["w1@smoke"], reply=True, timeout=CONTROL_TIMEOUT_S
    )
    assert replies and "w1@smoke" in replies[0]
    after = producer.send_task(
        "smoke.stamp", args=("after",), countdown=HELD_COUNTDOWN_S, queue=queue_name
    )
    after.get(timeout=60, interval=0.1)  # due after the revoked one
    _until(lambda: held.state == "REVOKED", 30, "the revoked state")
    assert records.all("held") == []


@pytest.fixture
def events(celery_broker: CeleryOkuri, producer: Celery) -> Iterator[list[dict[str, Any]]]:
    """Every event an EventReceiver in the test process gets while the test runs (it starts
    once the receiver's queue is bound to okuri's `celeryev` exchange)."""
    got: list[dict[str, Any]] = []
    with producer.connection_for_read() as conn:
        receiver = producer.events.Receiver(conn, handlers={"*": got.append})
        thread = threading.Thread(
            target=receiver.capture, kwargs={"limit": None, "timeout": None}, daemon=True
        )
        thread.start()
        queue = receiver.queue.name.replace(".", "-")

        def bound() -> bool:
            with celery_broker.okuri() as okuri:
                try:
                    bindings = okuri.get_exchange("celeryev").bindings
                except NotFoundError:
                    return False
            return any(binding.queue == queue for binding in bindings)

        _until(bound, 30, "the event receiver's binding")
        yield got
        receiver.should_stop = True
        thread.join(timeout=10)


def test_events_of_tasks_and_worker_heartbeats_reach_an_event_receiver(
    start_worker: StartWorker, producer: Celery, queue_name: str, events: list[dict[str, Any]]
) -> None:
    start_worker(queue_name)
    assert producer.control.enable_events(reply=True, timeout=CONTROL_TIMEOUT_S)
    producer.conf.task_send_sent_event = True
    result = producer.send_task("smoke.add", args=(2, 3), queue=queue_name)
    assert result.get(timeout=30, interval=0.1) == 5

    def seen() -> set[str]:
        types = {e["type"] for e in events if e.get("uuid") == result.id}
        heartbeats = {e["type"] for e in events if e.get("hostname") == "w1@smoke"}
        return types | heartbeats

    wanted = {"task-sent", "task-received", "task-started", "task-succeeded", "worker-heartbeat"}
    _until(lambda: wanted <= seen(), EVENTS_S, f"events {wanted}")


@pytest.mark.parametrize("mode", ["events", "inspect"])
def test_the_queue_of_a_killed_event_receiver_or_inspect_expires_by_itself(
    celery_broker: CeleryOkuri, record_dir: Path, tmp_path: Path, queue_name: str, mode: str
) -> None:
    """`python abandoned.py MODE` declares its queue with `expires` 2 s and waits; SIGKILLed,
    it never deletes it, and okuri does, within the expiry and a sweep period."""
    mine = (
        (lambda n: n.startswith("celeryev-"))
        if mode == "events"
        else (lambda n: n.endswith("-reply-celery-pidbox"))
    )
    with celery_broker.okuri() as okuri:
        before = {n for n in okuri.iter_queues() if mine(n)}
    env = {
        **celery_broker.worker_environ(queue_name, record_dir, heartbeat=False),
        "SMOKE_QUEUE_EXPIRES_S": str(ABANDONED_EXPIRES_S),
    }
    with open(tmp_path / f"abandoned-{mode}.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "abandoned.py", mode],
            cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    try:

        def appeared() -> set[str]:
            with celery_broker.okuri() as okuri:
                return {n for n in okuri.iter_queues() if mine(n)} - before

        (queue,) = _until(appeared, 60, f"the {mode} queue")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def gone() -> bool:
        with celery_broker.okuri() as okuri:
            return queue not in set(okuri.iter_queues())

    _until(gone, ABANDONED_EXPIRES_S + EXPIRY_SWEEP_S + 30, f"{queue} to expire")
