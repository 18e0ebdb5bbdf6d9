"""docs/testing.md's "PHPUnit for Laravel" recipe, run: the app's own PHPUnit test
(tests/Feature/QueueOnOkuriTest.php: dispatch a job through Laravel's `sqs` driver, see it
arrive, let a worker run it) against a real `okuri serve`, configured as the recipe's workflow
(docs/ci/github-actions-laravel.yml) configures both sides.

okuri gets exactly the variables the workflow's "Start okuri" step hands its container; the
workflow's readiness step runs as written; PHPUnit gets the environment of the workflow's
PHPUnit step. Only the runner's addresses 127.0.0.1:8080 and :9090 become the test server's
free ports. Debian's phpunit stands in for the app's composer-installed one. The run log the job
writes is checked here too, so a test that passed without running the job cannot pass this.
Skips where the AWS SDK for PHP is absent, as the other Laravel tests do.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from compat.clients import ROOT, Client
from tests.ci_recipes import (
    LARAVEL_WORKFLOW,
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
from tests.servers import Launch, clean_environ, run_or_fail

APP = ROOT / "tests" / "smoke" / "laravel"
PHPUNIT_STEP = "PHPUnit against okuri"
READY_S = 90.0
PHPUNIT_S = 180.0


def test_the_apps_phpunit_test_passes_against_okuri_set_up_as_the_workflow_does(
    laravel: Client, launch: Launch, laravel_env: dict[str, str], tmp_path: Path
) -> None:
    phpunit = shutil.which("phpunit")
    if phpunit is None:
        pytest.fail("phpunit is missing: run `make clients` (Debian's phpunit)", pytrace=False)
    job = only_job(load(LARAVEL_WORKFLOW))
    server = launch(okuri_environment(step(job, START_STEP)))
    ports = port_of(server.url), port_of(server.health_url)

    ready = subprocess.run(
        [*RUN_SHELL, localised(step(job, READY_STEP)["run"], *ports)],
        capture_output=True, text=True, timeout=READY_S, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ready.returncode == 0, ready.stdout + ready.stderr

    tests = step(job, PHPUNIT_STEP)
    env = {
        **clean_environ(drop=("OKURI_", "AWS_")),
        **{str(k): localised(str(v), *ports) for k, v in tests["env"].items()},
        **laravel_env,
        **laravel.environ(),
    }
    done = run_or_fail(
        [phpunit, "--configuration", str(APP / "phpunit.xml")],
        "phpunit", server, cwd=APP, env=env, timeout_s=PHPUNIT_S,
    )  # fmt: skip
    assert "OK (1 test, " in done.stdout, done.stdout
    runs = Path(laravel_env["LARAVEL_STORAGE_PATH"]) / "okuri-smoke" / "runs.jsonl"
    [run] = [json.loads(line) for line in runs.read_text().splitlines() if line]
    assert (run["job"], run["attempt"]) == ("phpunit", 1)
    sqs = server.sqs_client(env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"])
    leftover = sqs.list_queues(QueueNamePrefix="phpunit-").get("QueueUrls", [])
    assert leftover == [], "the test's tearDown did not delete its queue"
