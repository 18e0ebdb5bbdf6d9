"""Flower on `okuri://`: a real `celery flower` beside a real prefork worker, both on okuri. Its
task list is fed by the event stream (the topic exchange `celeryev`), its worker view by
remote control (`inspect` through the fanout `celery-pidbox`); both are read through Flower's
own HTTP API, as a dashboard would.

Flower's inspect waits `--inspect_timeout` for replies (1 s by default); a worker on okuri://
sees a broadcast within about a second, so a busy machine needs more (docs/celery.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery
from celery_smoke import HERE, CeleryOkuri, StartWorker

from bench.launch import free_port

pytestmark = pytest.mark.parametrize("broker", ["okuri"], indirect=True)

INSPECT_TIMEOUT_MS = 5000
FLOWER_START_S = 60.0
EVENTS_S = 60.0


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=INSPECT_TIMEOUT_MS / 1000 + 10) as answer:
        return json.load(answer)


@pytest.fixture
def flower(
    celery_broker: CeleryOkuri, queue_name: str, tmp_path: Path
) -> Iterator[str]:
    """`celery flower` on a free loopback port, with its API open (it is bound to loopback),
    stopped by its pid; its base URL."""
    port = free_port()
    env = {
        **celery_broker.worker_environ(queue_name, tmp_path, heartbeat=False),
        "FLOWER_UNAUTHENTICATED_API": "true",
    }
    command = [
        sys.executable, "-m", "celery", "-A", "smoke_app", "flower", "--address=127.0.0.1",
        f"--port={port}", f"--inspect_timeout={INSPECT_TIMEOUT_MS}",
    ]  # fmt: skip
    with open(tmp_path / "flower.log", "ab") as log:
        proc = subprocess.Popen(
            command, cwd=HERE, env=env, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + FLOWER_START_S
        while True:
            try:
                _get(f"{url}/api/tasks")
                break
            except (urllib.error.URLError, ConnectionError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    log_text = (tmp_path / "flower.log").read_text(errors="replace")
                    pytest.fail(f"flower did not answer:\n{log_text[-3000:]}")
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_flower_lists_the_tasks_from_events_and_the_worker_from_inspect(
    start_worker: StartWorker, producer: Celery, queue_name: str, flower: str
) -> None:
    start_worker(queue_name)
    control_timeout_s = INSPECT_TIMEOUT_MS / 1000
    assert producer.control.enable_events(reply=True, timeout=control_timeout_s)
    results = [producer.send_task("smoke.add", args=(n, n), queue=queue_name) for n in range(3)]
    assert [r.get(timeout=30, interval=0.1) for r in results] == [0, 2, 4]
    wanted = {r.id: str(2 * n) for n, r in enumerate(results)}

    deadline = time.monotonic() + EVENTS_S
    while True:
        tasks = _get(f"{flower}/api/tasks")
        done = {
            task_id: task["result"]
            for task_id, task in tasks.items()
            if task_id in wanted and task["state"] == "SUCCESS"
        }
        if done == wanted:
            break
        if time.monotonic() > deadline:
            pytest.fail(f"Flower's tasks after {EVENTS_S} s: {tasks}")
        time.sleep(0.5)
    assert all(tasks[t]["worker"] == "w1@smoke" for t in wanted)

    workers = _get(f"{flower}/api/workers?refresh=1")
    assert "w1@smoke" in workers, workers
    stats = workers["w1@smoke"]["stats"]
    assert stats["total"]["smoke.add"] >= 3
    assert {q["name"] for q in workers["w1@smoke"]["active_queues"]} == {queue_name}
