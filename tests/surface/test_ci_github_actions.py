"""docs/testing.md's GitHub Actions recipe for pytest, run: docs/ci/github-actions.yml's steps
against a real `okuri serve` set up as the workflow's container is.

okuri gets exactly the variables the workflow's "Start okuri" step hands its container; the
readiness loop and the pytest command run as written, in the shell a runner uses, with the
pytest step's environment. Only the runner's addresses 127.0.0.1:8080 and :9090 become the
test server's free ports. The app suite is bench/testing_suite (the one `python -m bench
testing` times) with its okuri conftest: its first scenario fails if a test sees another's
queues, so the plugin's per-test isolation is exercised on an external server too. The server's
own request counters show the tests talked to it, not to a server the plugin started itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from bench import testing
from tests.ci_recipes import (
    PYTEST_WORKFLOW,
    READY_STEP,
    RUN_SHELL,
    START_STEP,
    load,
    localised,
    okuri_environment,
    only_job,
    port_of,
    step,
)
from tests.servers import Launch, clean_environ

PYTEST_STEP = "pytest against okuri"
TESTS = testing.SCENARIOS
READY_S = 90.0
PYTEST_S = 240.0


def test_the_workflows_pytest_step_passes_an_app_suite_against_okuri(
    launch: Launch, tmp_path: Path
) -> None:
    job = only_job(load(PYTEST_WORKFLOW))
    server = launch(okuri_environment(step(job, START_STEP)))
    ports = port_of(server.url), port_of(server.health_url)

    ready = subprocess.run(
        [*RUN_SHELL, localised(step(job, READY_STEP)["run"], *ports)],
        capture_output=True, text=True, timeout=READY_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ready.returncode == 0, ready.stdout + ready.stderr

    app = tmp_path / "app"
    app.mkdir()
    shutil.copy(testing.SUITE / "test_app.py", app / "test_app.py")
    shutil.copy(testing.SUITE / testing.CONFTESTS["okuri"], app / "conftest.py")
    tests = step(job, PYTEST_STEP)
    base = clean_environ(drop=("OKURI_", "AWS_", "PYTEST_"))
    env = {
        **base,
        **{str(k): localised(str(v), *ports) for k, v in tests["env"].items()},
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")]),
        "BENCH_TESTS": str(TESTS),
    }
    done = subprocess.run(
        [*RUN_SHELL, localised(tests["run"], *ports)],
        cwd=app, env=env, capture_output=True, text=True, timeout=PYTEST_S,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:] + server.log[-2000:]
    assert re.search(rf"\b{TESTS} passed\b", done.stdout), done.stdout[-2000:]
    metrics = server.get("/metrics").text
    created = re.search(
        r'okuri_sqs_requests_total\{action="CreateQueue",outcome="ok"\} (\d+)', metrics
    )
    assert created and int(created.group(1)) >= TESTS, "the suite did not use this server"
