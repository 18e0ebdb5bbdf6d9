"""The Celery app of `okuri bench celery`: one `add` task, configured from BENCH_CELERY_* variables.

Why a module of its own: the bench's worker is a real `celery -A okuri.bench.celery_app worker`
subprocess, and the producer builds its app from the same `make_app()`, so worker and producer
cannot drift apart. There is no result backend (results are ignored, as the load asks): the bench
learns that a task ran because `add` appends one byte to a counter file opened with O_APPEND (one
`write(2)` per task, atomic across the pool's processes, a few microseconds); the producer polls
the file's size. That costs far less than any result backend would, and needs nothing from the
broker under test.

BENCH_CELERY_BROKER_URL: the broker; BENCH_CELERY_TRANSPORT_OPTIONS: JSON; BENCH_CELERY_COUNTER:
the counter file; BENCH_CELERY_QUEUE: the queue. `okuri://` needs okuri_kombu importable (it is
imported to register the transport).
"""

from __future__ import annotations

import json
import os
from typing import Any

from celery import Celery

BROKER_ENV = "BENCH_CELERY_BROKER_URL"
OPTIONS_ENV = "BENCH_CELERY_TRANSPORT_OPTIONS"
COUNTER_ENV = "BENCH_CELERY_COUNTER"
QUEUE_ENV = "BENCH_CELERY_QUEUE"

_counter_fd: int | None = None


def _tick() -> None:
    global _counter_fd
    if _counter_fd is None:
        _counter_fd = os.open(os.environ[COUNTER_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(_counter_fd, b".")


def make_app(broker_url: str, transport_options: dict[str, Any], queue: str) -> Celery:
    if broker_url.startswith(("okuri://", "okuris://")):
        import okuri_kombu  # registers okuri:// with kombu

        okuri_kombu.register()
    app = Celery("okuri_bench_celery")
    app.conf.update(
        broker_url=broker_url,
        broker_transport_options=transport_options,
        broker_connection_retry_on_startup=True,
        task_default_queue=queue,
        task_ignore_result=True,
        result_backend=None,
        task_serializer="json",
        accept_content=["json"],
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )

    @app.task(name="bench.add", ignore_result=True)  # type: ignore[untyped-decorator]
    def add(x: int, y: int) -> int:
        _tick()
        return x + y

    return app


def _from_environ() -> Celery | None:
    url = os.environ.get(BROKER_ENV)
    if url is None:
        return None
    options = json.loads(os.environ.get(OPTIONS_ENV, "{}"))
    return make_app(url, options, os.environ.get(QUEUE_ENV, "celery"))


app = _from_environ()  # `celery -A okuri.bench.celery_app` finds it here
