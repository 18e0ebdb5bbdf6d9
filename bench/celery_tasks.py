"""The Celery app of `python -m bench celery`, its one task, and how executions are counted.

Why a module of its own: the bench's worker (`celery -A bench.celery_worker worker`) and
its producers must build the same app from the same configuration (a JSON document, passed in
the environment), so neither can drift from the other whichever broker is measured.

Counting executions without a result backend: each run of `add(x, y)` appends one fixed-width
record, `"<x> <CLOCK_MONOTONIC seconds>\\n"` (RECORD_BYTES), to a file of its own pool process
(opened once per process, O_APPEND): one write(2) of 32 bytes per task, no fsync, no network,
no lock. The bench reads what the files gained every few milliseconds (RecordReader); a phase
is done when every x it sent has a record, and its end is the latest of their timestamps, so
the reader's polling adds nothing to the figure. CLOCK_MONOTONIC is one clock for every
process of the machine, so the bench compares those timestamps with its own.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASK_NAME = "okuri_bench.add"
CONFIG_ENV = "OKURI_BENCH_CELERY"  # the worker's configuration, a JSON document
RECORD_BYTES = 32
ID_DIGITS = 10
STAMP_CHARS = RECORD_BYTES - ID_DIGITS - 2  # a space and a newline
ID_MAX = 10**ID_DIGITS - 1

_record: dict[str, int] = {}  # "pid" and "fd" of this process's record file


@dataclass(frozen=True)
class AppConfig:
    """Everything the worker and the producers of one broker share."""

    broker_url: str
    transport_options: dict[str, Any]
    queue: str
    record_dir: str
    ready_file: str
    needs_okuri_kombu: bool = False

    def to_json(self) -> str:
        return json.dumps(self.__dict__)

    @classmethod
    def from_json(cls, text: str) -> AppConfig:
        return cls(**json.loads(text))


def record_line(task_id: int, at_s: float) -> bytes:
    return f"{task_id:0{ID_DIGITS}d} {at_s:0{STAMP_CHARS}.6f}\n".encode()


def record_execution(record_dir: str, task_id: int) -> None:
    """Append this execution's record to this process's file (opened on first use)."""
    pid = os.getpid()
    if _record.get("pid") != pid:  # first task of this pool process (prefork children fork)
        path = os.path.join(record_dir, f"runs-{pid}.rec")
        _record["fd"] = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        _record["pid"] = pid
    os.write(_record["fd"], record_line(task_id, time.monotonic()))


def make_app(config: AppConfig) -> Any:
    """A Celery app with `add` on `config`'s broker, results ignored (celery imported here)."""
    if config.needs_okuri_kombu:
        import okuri_kombu  # registers okuri:// with kombu

        okuri_kombu.register()
    import logging

    from celery import Celery

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request at INFO
    app = Celery("okuri_bench", set_as_current=False)
    app.conf.update(
        broker_url=config.broker_url,
        broker_transport_options=config.transport_options,
        broker_connection_retry_on_startup=True,
        task_default_queue=config.queue,
        task_ignore_result=True,
        result_backend=None,
        task_serializer="json",
        accept_content=["json"],
        worker_hijack_root_logger=False,
        worker_redirect_stdouts=False,
    )
    record_dir = config.record_dir

    @app.task(name=TASK_NAME, ignore_result=True)  # type: ignore[untyped-decorator]
    def add(x: int, y: int) -> int:
        record_execution(record_dir, x)
        return x + y

    ready_file = config.ready_file
    from celery.signals import worker_ready

    def mark_ready(**_: Any) -> None:
        Path(ready_file).touch()

    worker_ready.connect(mark_ready, weak=False)
    return app


@dataclass
class RecordReader:
    """What the pool processes recorded: task id -> its first execution's time (monotonic s)."""

    record_dir: Path
    runs: dict[int, float] = field(default_factory=dict)
    executions: int = 0  # duplicates included
    _offsets: dict[Path, int] = field(default_factory=dict)

    def poll(self) -> int:
        """Read what every file gained since the last poll; the number of new records."""
        new = 0
        for path in sorted(self.record_dir.glob("runs-*.rec")):
            offset = self._offsets.get(path, 0)
            with open(path, "rb") as f:
                f.seek(offset)
                data = f.read()
            whole = len(data) - len(data) % RECORD_BYTES  # a record being written: next time
            self._offsets[path] = offset + whole
            for start in range(0, whole, RECORD_BYTES):
                task_id, at_s = data[start : start + RECORD_BYTES].split()
                self.runs.setdefault(int(task_id), float(at_s))
                new += 1
        self.executions += new
        return new

    def done(self, ids: range) -> bool:
        return all(i in self.runs for i in ids)

    def count(self, ids: range) -> int:
        return sum(1 for i in ids if i in self.runs)

    def last_s(self, ids: range) -> float | None:
        stamps = [self.runs[i] for i in ids if i in self.runs]
        return max(stamps) if stamps else None
