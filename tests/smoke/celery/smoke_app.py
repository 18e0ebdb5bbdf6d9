"""The Celery app of the smoke tests (`celery -A smoke_app worker`), configured from SMOKE_*.

`celery_config()` is the whole broker and result configuration of docs/celery.md with the short
timings of the tests, for kombu's SQS transport (`sqs://`) or okuri's own (`okuri://`,
integrations/kombu); the test process builds its producer app from the same function, so the
workers and the producer cannot drift apart.

Every task execution leaves a JSON file in SMOKE_RECORD_DIR (written when it starts, rewritten
when it ends, each time atomically), so the tests see every run of every task across worker
processes, including runs in processes that were killed.

A worker touches SMOKE_READY_FILE, when set, once it consumes: the worker container's healthcheck
(compose.yaml) reads it, since kombu's SQS transport cannot answer `celery inspect ping`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from celery import Celery, Task
from celery.exceptions import Reject
from celery.signals import worker_ready

VISIBILITY_S = 5  # the queues' visibility timeout: short, so a dead worker's tasks return fast


def broker_transport_options(broker_url: str, visibility_s: int) -> dict[str, Any]:
    """The transport options of docs/celery.md for `broker_url`'s transport."""
    if broker_url.startswith(("okuri://", "okuris://")):
        import okuri_kombu  # registers okuri:// with kombu

        okuri_kombu.register()
        return {
            "lease_s": visibility_s,  # renewed while held; a dead worker's tasks return this fast
            "wait_time_s": 1,  # long poll; 10 in production
        }
    return {
        "region": "us-east-1",
        "is_secure": False,
        "visibility_timeout": visibility_s,
        "wait_time_seconds": 1,  # long poll; 10 in production
        "polling_interval": 0.2,  # after an empty poll; 1 in production
    }


def celery_config(
    broker_url: str,
    *,
    s3_endpoint: str,
    s3_bucket: str,
    s3_key_id: str,
    s3_secret: str,
    results_prefix: str = "celery-results/",
    visibility_s: int = VISIBILITY_S,
    queue: str = "celery",
) -> dict[str, Any]:
    return {
        "broker_url": broker_url,
        "broker_transport_options": broker_transport_options(broker_url, visibility_s),
        "broker_connection_retry_on_startup": True,
        "task_default_queue": queue,
        "result_backend": "s3",
        "s3_endpoint_url": s3_endpoint,
        "s3_bucket": s3_bucket,
        "s3_base_path": results_prefix,
        "s3_access_key_id": s3_key_id,
        "s3_secret_access_key": s3_secret,
        "s3_region": "us-east-1",
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "worker_hijack_root_logger": True,
        "worker_redirect_stdouts": False,
    }


def config_from_environ(env: dict[str, str]) -> dict[str, Any]:
    return celery_config(
        env["SMOKE_BROKER_URL"],
        s3_endpoint=env["SMOKE_S3_ENDPOINT"],
        s3_bucket=env["SMOKE_S3_BUCKET"],
        s3_key_id=env["SMOKE_S3_KEY_ID"],
        s3_secret=env["SMOKE_S3_SECRET"],
        visibility_s=int(env.get("SMOKE_VISIBILITY_S", VISIBILITY_S)),
        queue=env.get("SMOKE_QUEUE", "celery"),
    )


# okuri.client's HTTP library logs every request at INFO: one line per lease and ack on okuri://.
logging.getLogger("httpx").setLevel(logging.WARNING)

app = Celery("smoke")
if "SMOKE_BROKER_URL" in os.environ:
    app.conf.update(config_from_environ(dict(os.environ)))
if os.environ.get("SMOKE_HEARTBEAT") == "on":
    import okuri_celery

    okuri_celery.install(app)


@worker_ready.connect
def _mark_ready(**_: Any) -> None:
    if path := os.environ.get("SMOKE_READY_FILE"):
        Path(path).touch()


# --- recording executions -------------------------------------------------------------------


def _record_dir() -> Path:
    return Path(os.environ["SMOKE_RECORD_DIR"])


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


class Execution:
    """One run of one task, on disk from its first instant."""

    def __init__(self, task: Task, tag: str) -> None:
        self.path = _record_dir() / f"{tag}.{uuid.uuid4().hex}.json"
        self.data: dict[str, Any] = {
            "tag": tag,
            "task_id": task.request.id,
            "worker": task.request.hostname,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "retries": task.request.retries,
            "eta": None if task.request.eta is None else str(task.request.eta),
            "start": time.time(),
            "end": None,
        }
        _write(self.path, self.data)

    def finish(self, **extra: Any) -> None:
        self.data.update(extra, end=time.time())
        _write(self.path, self.data)


# --- tasks ----------------------------------------------------------------------------------


@app.task(name="smoke.add", bind=True)
def add(self: Task, x: int, y: int, tag: str = "add") -> int:
    Execution(self, tag).finish()
    return x + y


@app.task(name="smoke.stamp", bind=True)
def stamp(self: Task, tag: str) -> float:
    run = Execution(self, tag)
    run.finish()
    return float(run.data["start"])


@app.task(name="smoke.flaky", bind=True, max_retries=5)
def flaky(self: Task, tag: str, countdowns_s: list[float]) -> int:
    """Fails (and retries after countdowns_s[n]) until it has retried len(countdowns_s) times."""
    Execution(self, tag).finish()
    attempt = int(self.request.retries)
    if attempt < len(countdowns_s):
        failure = RuntimeError(f"attempt {attempt} fails")
        raise self.retry(exc=failure, countdown=countdowns_s[attempt])
    return attempt


@app.task(name="smoke.sleepy", bind=True, acks_late=True, reject_on_worker_lost=True)
def sleepy(self: Task, tag: str, seconds: float, seconds_on: dict[str, float] | None = None) -> str:
    """Sleeps `seconds`, or `seconds_on[worker hostname]` on the workers named there."""
    run = Execution(self, tag)
    time.sleep((seconds_on or {}).get(self.request.hostname, seconds))
    run.finish()
    return str(self.request.hostname)


@app.task(name="smoke.always_fails", bind=True, acks_late=True, acks_on_failure_or_timeout=False)
def always_fails(self: Task, tag: str) -> None:
    Execution(self, tag).finish()
    raise RuntimeError("this task always fails")


@app.task(name="smoke.requeued", bind=True, acks_late=True)
def requeued(self: Task, tag: str) -> None:
    """Gives its message back every time (Reject with requeue: the broker delivers it again)."""
    Execution(self, tag).finish()
    raise Reject("given back", requeue=True)
