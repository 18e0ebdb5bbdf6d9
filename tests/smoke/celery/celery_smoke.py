"""Helpers for the Celery smoke tests: the okuri under test, worker processes, execution records.

Workers and producers reach okuri through kombu's SQS transport (`sqs://`, the default) or
okuri's own (`okuri://`, integrations/kombu): `CeleryOkuri.broker` says which.

Workers are `python -m celery -A smoke_app worker --pool=prefork --concurrency=2`, each in a
session of its own so that its prefork children can be killed with it. They are stopped with
SIGTERM to the main process (warm shutdown), then SIGKILL to the process group they lead, by
pid, never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import pytest
import smoke_app

from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, clean_environ

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
INTEGRATION = ROOT / "integrations" / "celery"
KOMBU_INTEGRATION = ROOT / "integrations" / "kombu"
ADMIN_KEY = "celery-smoke-admin-key-0123456789"  # the okuri:// bearer key the server is given
BROKERS = ("sqs", "okuri")

S3_KEY_ID = "testing"
S3_SECRET = "testing"
WORKER_START_S = 60.0  # cold interpreters importing celery and boto3 on a busy 2-core box
WORKER_STOP_S = 10.0  # a warm shutdown waits for running tasks; after this, SIGKILL
WAIT_POLL_S = 0.1
VISIBILITY_S = smoke_app.VISIBILITY_S
EXPIRY_SWEEP_S = 2  # the server's OKURI_EXPIRY_SWEEP_S here (45 s by default)


@dataclass
class CeleryOkuri:
    """A real `okuri serve` keeping its queues in a moto bucket that also holds the results,
    reached through `broker`: "sqs" (kombu's SQS transport) or "okuri" (okuri_kombu)."""

    server: ServerProcess
    bucket: str
    s3_endpoint: str
    broker: str = "sqs"

    def with_broker(self, broker: str) -> CeleryOkuri:
        assert broker in BROKERS, broker
        return replace(self, broker=broker)

    @property
    def broker_url(self) -> str:
        address = self.server.url.removeprefix("http://")
        if self.broker == "okuri":
            return f"okuri://{ADMIN_KEY}@{address}"
        return f"sqs://{SQS_KEY}:{SQS_SECRET}@{address}"

    def okuri(self) -> Any:
        """An okuri.client.Client of the server, with the admin key."""
        from okuri.client import Client

        return Client(self.server.url, ADMIN_KEY)

    def sqs(self) -> Any:
        return self.server.sqs_client()

    def config(self, queue: str) -> dict[str, Any]:
        return smoke_app.celery_config(
            self.broker_url,
            s3_endpoint=self.s3_endpoint,
            s3_bucket=self.bucket,
            s3_key_id=S3_KEY_ID,
            s3_secret=S3_SECRET,
            queue=queue,
        )

    def worker_environ(self, queue: str, record_dir: Path, heartbeat: bool) -> dict[str, str]:
        return {
            **clean_environ(),
            # smoke_app, both integrations, and this checkout's okuri (okuri_kombu's client)
            "PYTHONPATH": os.pathsep.join(
                [str(HERE), str(INTEGRATION), str(KOMBU_INTEGRATION), str(ROOT)]
            ),
            "SMOKE_BROKER_URL": self.broker_url,
            "SMOKE_S3_ENDPOINT": self.s3_endpoint,
            "SMOKE_S3_BUCKET": self.bucket,
            "SMOKE_S3_KEY_ID": S3_KEY_ID,
            "SMOKE_S3_SECRET": S3_SECRET,
            "SMOKE_QUEUE": queue,
            "SMOKE_RECORD_DIR": str(record_dir),
            # okuri:// renews its leases itself; the extension speaks SQS only
            "SMOKE_HEARTBEAT": "on" if heartbeat and self.broker == "sqs" else "off",
        }


@dataclass
class CeleryWorker:
    name: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    killed: bool = False

    @property
    def hostname(self) -> str:
        return f"{self.name}@smoke"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = WORKER_START_S) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"worker {self.name} exited with {self.proc.returncode}:\n{self.log}")
            if f"{self.hostname} ready." in self.log:
                return
            time.sleep(WAIT_POLL_S)
        pytest.fail(f"worker {self.name} not ready within {timeout_s} s:\n{self.log[-4000:]}")

    def stop(self, grace_s: float = WORKER_STOP_S) -> None:
        """SIGTERM (warm shutdown) to the main process; SIGKILL to the group after `grace_s`."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace_s)
        self.kill()

    def kill(self) -> None:
        """SIGKILL the worker and its pool children: the process group its session started.

        Once only: after that the group id may, in principle, name someone else's group."""
        if self.killed:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=WORKER_STOP_S)
        self.killed = True


def stop_all(workers: list[CeleryWorker], grace_s: float = WORKER_STOP_S) -> None:
    """Warm-shut every worker down at once, then SIGKILL the groups of any still running."""
    for worker in workers:
        if worker.proc.poll() is None:
            os.kill(worker.proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for worker in workers:
        with contextlib.suppress(subprocess.TimeoutExpired):
            worker.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        worker.kill()


def spawn_worker(
    okuri: CeleryOkuri, queue: str, name: str, record_dir: Path, log_path: Path, heartbeat: bool
) -> CeleryWorker:
    command = [
        sys.executable, "-m", "celery", "-A", "smoke_app", "worker",
        "--pool=prefork", "--concurrency=2", "-Q", queue, "-n", f"{name}@smoke",
        "--loglevel=info",
    ]  # fmt: skip
    if okuri.broker == "sqs":  # kombu's SQS transport has no broadcast; okuri:// runs them all
        command += ["--without-mingle", "--without-gossip", "--without-heartbeat"]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            command,
            cwd=HERE,
            env=okuri.worker_environ(queue, record_dir, heartbeat),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    return CeleryWorker(name, proc, log_path)


class StartWorker(Protocol):
    def __call__(
        self, queue: str, *, heartbeat: bool = True, name: str | None = None, wait: bool = True
    ) -> CeleryWorker: ...


Run = dict[str, Any]


class Records:
    """The task executions the workers wrote, one JSON file each (see smoke_app.Execution)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def all(self, tag: str | None = None) -> list[Run]:
        runs = []
        for file in self.path.glob("*.json"):
            run = json.loads(file.read_text())
            if tag is None or run["tag"] == tag:
                runs.append(run)
        return sorted(runs, key=lambda run: run["start"])

    def wait(
        self, done: Callable[[list[Run]], bool], timeout_s: float, tag: str | None = None
    ) -> list[Run]:
        deadline = time.monotonic() + timeout_s
        while True:
            runs = self.all(tag)
            if done(runs):
                return runs
            if time.monotonic() > deadline:
                pytest.fail(f"still waiting after {timeout_s} s for {tag or 'runs'}: {runs}")
            time.sleep(WAIT_POLL_S)
