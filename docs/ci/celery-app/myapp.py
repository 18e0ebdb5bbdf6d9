"""An example Celery app for the compose.yaml beside it (docs/testing.md, "Docker Compose: a
Celery app"): the broker and the result backend come from CELERY_BROKER_URL and
CELERY_RESULT_BACKEND, which Celery reads by itself; the transport options are okuri's over
SQS (docs/celery.md, 3.), with short polls so that a test's task starts at once."""

from __future__ import annotations

import os

from celery import Celery

app = Celery("myapp")
app.conf.update(
    broker_transport_options={
        "region": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
        "is_secure": False,  # okuri over http://
        "wait_time_seconds": 1,
        "polling_interval": 0.1,
    },
    task_default_queue="myapp",
    accept_content=["json"],
)


@app.task
def add(x: int, y: int) -> int:
    return x + y
