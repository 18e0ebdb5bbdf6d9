"""The Celery load of `python -m bench celery` on one broker: a real prefork worker, producer
processes, and the two figures of each load.

A broker's turn: start one `celery worker --pool=prefork --concurrency=C` (its own session,
stopped by pid: SIGTERM, then SIGKILL to its process group); then, for each load, start P
producer processes (bench/celery_producer.py), let each connect and send one warm-up task,
wait until the worker has run every warm-up task (so the worker consumes and every connection
is open), then give them all the go at once. Each sends its share of `add(i, i)` (ids unique in
the run). Two figures per load:

- enqueue tasks/s: tasks sent / (the last producer's end - the go): how fast the producers
  got `apply_async` to return, while the worker consumed;
- end-to-end tasks/s: tasks / (the last execution's record - the go) (celery_tasks says how
  executions are recorded).

Beside them, the broker's CPU per task: its processes' user and system seconds (every thread)
from the go until the last execution, over the tasks, so a row says what its broker spent.

Every wait is bounded: a producer by the load's time limit, the load by the same limit plus the
worker's drain; what did not finish is reported as such (`complete` false), never waited for.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.celery_brokers import Broker
from bench.celery_tasks import CONFIG_ENV, AppConfig, RecordReader
from bench.measure import process_cpu_s
from bench.metrics import COMMITS_EVENT, NodeCounters, scrape
from bench.servers import BenchError, clean_environ, tail

WORKER_READY_S = 60.0
WORKER_STOP_S = 20.0
PRODUCER_READY_S = 60.0
PRODUCER_REPORT_SLACK_S = 30.0
WARMUP_S = 60.0
RECORD_POLL_S = 0.005
QUEUE = "okuri-bench"
WARMUP_ID_BASE = 9_000_000_000  # warm-up tasks' ids, apart from the measured ones


@dataclass(frozen=True)
class Load:
    name: str
    tasks: int
    producers: int
    limit_s: float  # the producers' time, and again the worker's, at most


@dataclass
class Ids:
    """Task ids unique within the run: measured ones count up from 0, warm-ups from far above."""

    next_id: int = 0
    next_warmup: int = WARMUP_ID_BASE

    def take(self, count: int) -> range:
        ids = range(self.next_id, self.next_id + count)
        self.next_id += count
        return ids

    def warmup(self) -> int:
        self.next_warmup += 1
        return self.next_warmup


def child_environ(config: AppConfig, python_path: list[str]) -> dict[str, str]:
    env = clean_environ()
    env[CONFIG_ENV] = config.to_json()
    env["PYTHONPATH"] = os.pathsep.join([*python_path, env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def app_config(broker: Broker, workdir: Path) -> AppConfig:
    records = workdir / f"records-{broker.name}"
    records.mkdir()
    return AppConfig(
        broker_url=broker.url,
        transport_options=broker.transport_options,
        queue=QUEUE,
        record_dir=str(records),
        ready_file=str(workdir / f"worker-{broker.name}.ready"),
        needs_okuri_kombu=broker.needs_okuri_kombu,
    )


# --- the worker --------------------------------------------------------------------------------


@contextlib.contextmanager
def worker(
    config: AppConfig, concurrency: int, python_path: list[str], log_path: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """A ready `celery worker` on `config`'s queue; warm-shut down (then killed) on the way out."""
    argv = [
        sys.executable, "-m", "celery", "-A", "bench.celery_worker", "worker",
        "--pool=prefork", f"--concurrency={concurrency}", "-Q", config.queue,
        "-n", f"okuri-bench-{os.getpid()}@localhost", "--loglevel=warning",
        "--without-mingle", "--without-gossip", "--without-heartbeat",
    ]  # fmt: skip
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            env=child_environ(config, python_path),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its pool processes share its group: killed with it
        )
    try:
        deadline = time.monotonic() + WORKER_READY_S
        ready = Path(config.ready_file)
        while not ready.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"the Celery worker did not start:\n{tail(log_path)}")
            time.sleep(0.05)
        yield proc
    finally:
        _stop_worker(proc)


def _stop_worker(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)  # warm shutdown
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=WORKER_STOP_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # the group this worker leads, whatever is left
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=WORKER_STOP_S)


# --- the producers -----------------------------------------------------------------------------


@dataclass
class Producer:
    proc: subprocess.Popen[str]

    def say(self, doc: dict[str, Any] | None = None) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        stdin.write(("" if doc is None else json.dumps(doc)) + "\n")
        stdin.flush()

    def hear(self, timeout_s: float) -> dict[str, Any]:
        stdout: IO[str] | None = self.proc.stdout
        assert stdout is not None
        line = _read_line(stdout, timeout_s)
        if not line:
            raise BenchError(f"a producer (pid {self.proc.pid}) said nothing in {timeout_s:g} s")
        doc: dict[str, Any] = json.loads(line)
        if "error" in doc:
            raise BenchError(f"a producer failed: {doc['error']}")
        return doc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=WORKER_STOP_S)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()


def _read_line(stream: IO[str], timeout_s: float) -> str:
    import selectors

    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        if not sel.select(timeout_s):
            return ""
    return stream.readline()


def _spawn_producer(config: AppConfig, python_path: list[str], log_path: Path) -> Producer:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.celery_producer"],
            env=child_environ(config, python_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    return Producer(proc)


def _shares(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def _wait_for_runs(reader: RecordReader, ids: range, deadline: float) -> bool:
    while True:
        reader.poll()
        if reader.done(ids):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(RECORD_POLL_S)


def _broker_cpu_s(pids: Sequence[int]) -> float | None:
    """CPU seconds the broker's processes have used (None: not readable here)."""
    total = 0.0
    for pid in pids:
        seconds = process_cpu_s(pid)
        if seconds is None:
            return None
        total += seconds
    return total if pids else None


def run_load(
    load: Load,
    config: AppConfig,
    ids: Ids,
    python_path: list[str],
    workdir: Path,
    broker_pids: Sequence[int] = (),
    health_url: str = "",
) -> dict[str, Any]:
    """One load through the running worker: its figures; with `health_url` (okuri's), also
    its store requests and manifest commits per task."""
    reader = RecordReader(Path(config.record_dir))
    producers: list[Producer] = []
    log_path = workdir / f"producers-{load.name}.log"
    try:
        warmups: list[int] = []
        shares = _shares(load.tasks, load.producers)
        ranges = [ids.take(n) for n in shares]
        for share in ranges:
            producer = _spawn_producer(config, python_path, log_path)
            producers.append(producer)
            warmup = ids.warmup()
            warmups.append(warmup)
            producer.say({
                "config": config.__dict__, "warmup_id": warmup, "first_id": share.start,
                "count": len(share), "limit_s": load.limit_s,
            })  # fmt: skip
        for producer in producers:
            producer.hear(PRODUCER_READY_S)
        warm = range(min(warmups), max(warmups) + 1)
        if not _wait_for_runs(reader, warm, time.monotonic() + WARMUP_S):
            raise BenchError(f"the worker did not run the warm-up tasks in {WARMUP_S:g} s")
        go_s = time.monotonic()
        cpu_before = _broker_cpu_s(broker_pids)
        counted_before = scrape(health_url) if health_url else None
        for producer in producers:
            producer.say()
        reports = [p.hear(load.limit_s + PRODUCER_REPORT_SLACK_S) for p in producers]
        sent = sum(int(r["sent"]) for r in reports)
        enqueue_end_s = max(float(r["end_s"]) for r in reports)
        measured = range(ranges[0].start, ranges[-1].stop)
        complete = _wait_for_runs(reader, measured, go_s + 2 * load.limit_s)
        cpu_after = _broker_cpu_s(broker_pids)
        counted_after = scrape(health_url) if health_url else None
    finally:
        for producer in producers:
            producer.stop()
    last_s = reader.last_s(measured)
    executed = reader.count(measured)
    return {
        "load": load.name,
        "tasks": load.tasks,
        "producers": load.producers,
        "sent": sent,
        "executed": executed,
        "complete": complete and sent == load.tasks,
        "enqueue_s": enqueue_end_s - go_s,
        "end_to_end_s": None if last_s is None else last_s - go_s,
        "enqueue_tasks_per_s": sent / (enqueue_end_s - go_s),
        "end_to_end_tasks_per_s": None if last_s is None else executed / (last_s - go_s),
        "duplicates": reader.executions - len(reader.runs),
        "broker_cpu_ms_per_task": None
        if cpu_before is None or cpu_after is None
        else (cpu_after - cpu_before) * 1000 / load.tasks,
        "store_per_task": _per_task(counted_before, counted_after, load.tasks),
    }


def _per_task(
    before: NodeCounters | None, after: NodeCounters | None, tasks: int
) -> dict[str, float] | None:
    """okuri's store requests by class, manifest commits, syncs (fsync and fdatasync calls: its
    durable write barriers) and API requests, each over the tasks. None for another broker, or
    a node that did not answer."""
    if before is None or after is None or tasks <= 0:
        return None
    spent = after.minus(before)
    out = {cls: n / tasks for cls, n in sorted(spent.store.items()) if n}
    out["commits"] = spent.events.get(COMMITS_EVENT, 0.0) / tasks
    if spent.syncs is not None:
        out["syncs"] = spent.syncs / tasks
    out.update({f"api {op}": n / tasks for op, n in sorted(spent.api.items()) if n})
    return out
