"""Laravel's own SQS queue driver, live against a real `okuri serve`, in every test run.

The smoke app beside this file (`php artisan okuri:smoke`, docs/laravel.md) runs on Debian's
packaged Laravel (8.83; `make clients` installs it) with the AWS SDK for PHP read in place from
../shared/clients/aws-sdk-php, once per scenario, on the local store and on S3:

- laravel-queue: five jobs run once each, a delayed job waits out its delay, and a job that
  always fails is tried three times and then lands in failed_jobs;
- laravel-fifo: two message groups sent through the app's `sqs-fifo` driver run in order, a
  group's later job waits for an earlier one's retry, and a duplicate send never runs.

The app checks these itself and exits non-zero when one fails; this test checks them again from
what the app leaves behind (its run log and its failed_jobs table), so a broken check on either
side cannot pass alone. Where the SDK is absent (a clone without ../shared beside it) the tests
skip, saying so, as the other third-party clients of ../shared do.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat.clients import ROOT, Client
from tests.servers import ServerProcess, client_environ, run_or_fail

RUN_S = 180.0  # the queue scenario takes about 12 s: a 5 s delay, then a 6 s empty long poll
DELAY_S = 5  # OkuriSmoke::DELAY_S
FAILING_JOB = "App\\Jobs\\AlwaysFails"
# Each FIFO group's run log, in order: `name#attempt outcome` (OkuriSmoke::FIFO_GROUPS).
FIFO_GROUPS = {
    "a": ["a-1#1 ok", "a-2#1 failed", "a-2#2 ok", "a-3#1 ok"],
    "b": ["b-1#1 ok", "b-2#1 ok"],
}


@dataclass(frozen=True)
class SmokeRun:
    runs: list[dict[str, Any]]  # one entry per job attempt, in the order they ran
    failed_jobs: list[tuple[str, str, str]]  # (connection, queue, payload)

    def of(self, job: str) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["job"] == job]


def run_smoke(
    server: ServerProcess, client: Client, scenario: str, tmp: Path, app_env: dict[str, str]
) -> SmokeRun:
    """Run one scenario of the app against `server`, its files where `app_env` puts them."""
    storage, database = Path(app_env["LARAVEL_STORAGE_PATH"]), Path(app_env["DB_DATABASE"])
    env = {**client_environ(server, client, scenario, tmp), **app_env}
    done = run_or_fail(
        client.argv(), f"laravel {scenario}", server, cwd=ROOT, env=env, timeout_s=RUN_S
    )
    last = (done.stdout.strip().splitlines() or [""])[-1]
    marker = json.loads(last.removeprefix("SCENARIO ")) if last.startswith("SCENARIO ") else {}
    assert marker.get("client") == "laravel" and marker.get("scenario") == scenario, last
    assert " / aws-sdk-php " in marker["version"], marker  # Laravel's version, then the SDK's
    log = (storage / "okuri-smoke" / "runs.jsonl").read_text().splitlines()
    with contextlib.closing(sqlite3.connect(database)) as db:
        failed = db.execute("SELECT connection, queue, payload FROM failed_jobs ORDER BY id")
        return SmokeRun([json.loads(line) for line in log if line], list(failed.fetchall()))


def queue_urls(server: ServerProcess, name: str) -> list[str]:
    listed = server.sqs_client().list_queues(QueueNamePrefix=name).get("QueueUrls", [])
    return [url for url in listed if url.endswith(f"/{name}")]


def test_laravel_runs_each_job_once_waits_out_a_delay_and_fails_a_job_into_failed_jobs(
    laravel: Client, sqs_server: ServerProcess, tmp_path: Path, laravel_env: dict[str, str]
) -> None:
    run = run_smoke(sqs_server, laravel, "laravel-queue", tmp_path, laravel_env)

    for i in range(1, 6):
        assert [r["attempt"] for r in run.of(f"job-{i}")] == [1], run.runs
    [delayed] = run.of("delayed")
    assert delayed["ran_at"] - delayed["dispatched_at"] >= DELAY_S
    assert run.of("always-fails") == [
        {"job": "always-fails", "attempt": 1},
        {"job": "always-fails", "attempt": 2},
        {"job": "always-fails", "attempt": 3},
        {"job": "always-fails", "failed": "okuri smoke: this job always fails"},
    ]
    [(connection, queue, payload)] = run.failed_jobs
    assert connection == "sqs"
    assert queue == f"{sqs_server.url}/000000000000/laravel-jobs"  # Laravel keeps the URL
    assert json.loads(payload)["displayName"] == FAILING_JOB
    assert queue_urls(sqs_server, "laravel-jobs") == []  # the app deleted it when done


def test_laravel_fifo_groups_keep_their_order_through_a_retry_and_a_duplicate_never_runs(
    laravel: Client, sqs_server: ServerProcess, tmp_path: Path, laravel_env: dict[str, str]
) -> None:
    run = run_smoke(sqs_server, laravel, "laravel-fifo", tmp_path, laravel_env)

    ran = {
        group: [
            f"{r['job']}#{r['attempt']} {'ok' if r['ok'] else 'failed'}"
            for r in run.runs
            if r["group"] == group
        ]
        for group in FIFO_GROUPS
    }
    assert ran == FIFO_GROUPS
    assert len(run.runs) == sum(map(len, FIFO_GROUPS.values()))  # no group but a and b
    assert run.failed_jobs == []  # a-2's first failure was retried, not given up
    assert queue_urls(sqs_server, "laravel-jobs.fifo") == []
