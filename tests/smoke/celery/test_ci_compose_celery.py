"""docs/testing.md's Compose recipe for a Celery app, run without containers: the compose file's
(docs/ci/celery-app/compose.yaml) worker and tests commands, with their environment, in a copy
of the example app beside it, against a real `okuri serve` started with the okuri service's
environment.

Only what a container network and a volume provide is replaced: the service address okuri:8080
by the test server's port, the shared /results volume by a directory. The worker is stopped by
its own pid.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from bench.launch import spawn, tail
from tests.ci_recipes import CELERY_APP, COMPOSE_CELERY, port_of
from tests.servers import Launch, clean_environ
from tests.unit.test_compose import environment

SERVICE_ADDRESS = "@okuri:8080"
RESULTS_VOLUME = "file:///results"
TESTS_S = 180.0


def localised(env: dict[str, str], sqs_port: int, results: Path) -> dict[str, str]:
    return {
        key: value.replace(SERVICE_ADDRESS, f"@127.0.0.1:{sqs_port}").replace(
            RESULTS_VOLUME, f"file://{results}"
        )
        for key, value in env.items()
    }


def test_the_stacks_worker_runs_the_tasks_its_tests_send_through_okuri(
    launch: Launch, tmp_path: Path
) -> None:
    services: dict[str, Any] = yaml.safe_load(COMPOSE_CELERY.read_text())["services"]
    server = launch(environment(services["okuri"]))
    app, results = tmp_path / "app", tmp_path / "results"
    shutil.copytree(CELERY_APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    results.mkdir()
    base = clean_environ(drop=("OKURI_", "AWS_", "CELERY_", "PYTEST_"), checkout=False)
    base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")])

    def env_of(name: str) -> dict[str, str]:
        return {**base, **localised(environment(services[name]), port_of(server.url), results)}

    worker = spawn(services["worker"]["command"], env_of("worker"), tmp_path / "worker.log", app)
    try:
        done = subprocess.run(
            services["tests"]["command"], cwd=app, env=env_of("tests"), capture_output=True,
            text=True, timeout=TESTS_S, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        worker.stop()
    log = tail(tmp_path / "worker.log")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:] + log
    assert "1 passed" in done.stdout, done.stdout
    assert "myapp.add" in log and "succeeded" in log, log
