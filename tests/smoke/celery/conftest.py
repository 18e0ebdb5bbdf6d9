"""Celery smoke fixtures: one real `okuri serve` on a moto bucket for the session, workers per test.

okuri keeps its queues in the bucket under `okuri/`; Celery's S3 result backend writes under
`celery-results/` of the same bucket, as docs/celery.md sets it up. Each test uses queues of its
own, so the whole session shares one server.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
INTEGRATIONS = HERE.parents[2] / "integrations"
for path in (HERE, INTEGRATIONS / "celery", INTEGRATIONS / "kombu"):
    # smoke_app, celery_smoke, and the okuri_celery and okuri_kombu packages
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from celery import Celery  # noqa: E402
from celery_smoke import (  # noqa: E402
    ADMIN_KEY,
    EXPIRY_SWEEP_S,
    S3_KEY_ID,
    S3_SECRET,
    CeleryOkuri,
    CeleryWorker,
    Records,
    StartWorker,
    spawn_worker,
    stop_all,
)

from tests.servers import start_server  # noqa: E402


@pytest.fixture(scope="session")
def celery_okuri(
    tmp_path_factory: pytest.TempPathFactory, moto_s3_endpoint: str, moto_s3_client: Any
) -> Iterator[CeleryOkuri]:
    bucket = f"okuri-celery-{uuid.uuid4().hex[:12]}"
    moto_s3_client.create_bucket(Bucket=bucket)
    server = start_server(
        tmp_path_factory.mktemp("celery-okuri"),
        {
            "OKURI_S3_ENDPOINT": moto_s3_endpoint,
            "OKURI_S3_BUCKET": bucket,
            "OKURI_S3_PREFIX": "okuri/",
            "OKURI_S3_ACCESS_KEY_ID": S3_KEY_ID,
            "OKURI_S3_SECRET_ACCESS_KEY": S3_SECRET,
            "OKURI_ADMIN_KEY": ADMIN_KEY,  # okuri:// (integrations/kombu) speaks the native API
            "OKURI_EXPIRY_SWEEP_S": str(EXPIRY_SWEEP_S),  # abandoned reply/event queues go soon
        },
    )
    yield CeleryOkuri(server, bucket, moto_s3_endpoint)
    server.terminate()


@pytest.fixture
def queue_name(request: pytest.FixtureRequest) -> str:
    """A queue of this test's own, `smoke-<test>-<random>`, within SQS's 80 characters."""
    name = request.node.name.removeprefix("test_").replace("_", "-")[:40]
    return f"smoke-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def record_dir(tmp_path: Path) -> Path:
    path = tmp_path / "records"
    path.mkdir()
    return path


@pytest.fixture
def records(record_dir: Path) -> Records:
    return Records(record_dir)


@pytest.fixture
def broker(request: pytest.FixtureRequest) -> str:
    """Which transport the workers and the producer use: "sqs" unless a test parametrizes it
    (`@pytest.mark.parametrize("broker", BROKERS, indirect=True)`)."""
    return str(getattr(request, "param", "sqs"))


@pytest.fixture
def celery_broker(celery_okuri: CeleryOkuri, broker: str) -> CeleryOkuri:
    return celery_okuri.with_broker(broker)


@pytest.fixture
def start_worker(
    celery_broker: CeleryOkuri, record_dir: Path, tmp_path: Path
) -> Iterator[StartWorker]:
    """Start real workers on given queues; every one is stopped by pid at teardown."""
    started: list[CeleryWorker] = []

    def start(
        queue: str, *, heartbeat: bool = True, name: str | None = None, wait: bool = True
    ) -> CeleryWorker:
        name = name or f"w{len(started) + 1}"
        log_path = tmp_path / f"worker-{name}.log"
        worker = spawn_worker(celery_broker, queue, name, record_dir, log_path, heartbeat)
        started.append(worker)
        if wait:
            worker.wait_ready()
        return worker

    try:
        yield start
    finally:
        stop_all(started)


@pytest.fixture
def producer(celery_broker: CeleryOkuri, queue_name: str) -> Iterator[Celery]:
    """The sending side: a Celery app with the workers' configuration and no tasks."""
    app = Celery("smoke-producer", set_as_current=False)
    app.conf.update(celery_broker.config(queue_name))
    yield app
    app.close()
