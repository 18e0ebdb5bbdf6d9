"""`python -m bench celery`: one Celery load on okuri (okuri:// and sqs://), in-memory SQS emulators
(ministack, moto), Redis and RabbitMQ.

Why: what a Celery user compares is the same app on each broker. So this runs, for each broker
in turn (bench/celery_brokers.py starts it on 127.0.0.1 and stops it by pid afterwards),
one real `celery worker --pool=prefork --concurrency=2` and two loads of `add(i, i)` tasks with
results ignored (bench/celery_load.py): first one producer process sending --tasks, then
--producers processes sharing them. It prints enqueue-alone and end-to-end tasks/s per broker
and load, side by side, with ratios against Redis, okuri against the brokers as durable and
as lazy, and sqs:// on okuri against the same transport on each emulator. With --rounds N
every broker runs N times, interleaved, and each figure is the median, printed with its spread.

Celery is imported only by the processes the bench starts (worker, producers), never by this
one, and nothing here is imported by the server.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import okuri
from bench.celery_brokers import (
    BROKERS,
    DEFAULT_BROKERS,
    OKURI_LEASE_S,
    OKURI_WAIT_S,
    SqsSettings,
    broker,
)
from bench.celery_load import Ids, Load, app_config, run_load, worker
from bench.celery_report import SPREADS, render
from bench.flags import bounded
from bench.launch import ROOT
from bench.servers import BenchError, Unavailable

TASKS_MAX = 100_000
PRODUCERS_MAX = 64
CONCURRENCY_MAX = 32
ROUNDS_MAX = 20
LIMIT_S_MAX = 3600.0
SQS_WAIT_S_MAX = 20
SQS_POLLING_S_MAX = 60.0
DEFAULT_SQS_WAIT_S = 10
DEFAULT_SQS_POLLING_S = 0.1


def python_path() -> list[str]:
    """What the worker and producers need on sys.path: this okuri, this bench (its checkout), and
    okuri_kombu (installed, or else in the bench's checkout, integrations/kombu)."""
    paths = list(dict.fromkeys([str(Path(okuri.__file__).resolve().parents[1]), str(ROOT)]))
    spec = importlib.util.find_spec("okuri_kombu")
    if spec is not None and spec.origin is not None:
        # Found on this process's sys.path, which a child need not share: pass it on.
        paths.append(str(Path(spec.origin).resolve().parents[1]))
        return paths
    checkout = ROOT / "integrations" / "kombu"
    if (checkout / "okuri_kombu").is_dir():
        paths.append(str(checkout))
        sys.path.append(str(checkout))  # so that the broker check finds it too
    return paths


def _one_broker(
    name: str, args: argparse.Namespace, workdir: Path, ids: Ids, paths: list[str]
) -> dict[str, Any]:
    sqs = SqsSettings(args.sqs_wait_time_seconds, args.sqs_polling_interval)
    with broker(name, workdir, sqs) as b:
        config = app_config(b, workdir)
        runs: dict[str, Any] = {}
        log_path = workdir / f"worker-{name}.log"
        with worker(config, args.concurrency, paths, log_path):
            for load in loads(args):
                print(f"python -m bench celery: {name}, {load.name} ...", file=sys.stderr)
                runs[load.name] = run_load(load, config, ids, paths, workdir, b.pids, b.health_url)
        return {"described": b.described, "url_scheme": b.url.split(":")[0], "runs": runs}


def loads(args: argparse.Namespace) -> list[Load]:
    out = [Load("one producer", args.tasks, 1, args.limit_s)]
    if args.producers > 1:
        out.append(Load(f"{args.producers} producers", args.tasks, args.producers, args.limit_s))
    return out


FIGURES = tuple(key for _, key, _ in SPREADS)


def combined(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One load's runs over the rounds: each figure's median, its spread (min, max), and
    complete only if every round was. The machines drift within minutes, so one run says
    little; rounds are interleaved across brokers, so a drift lands on all of them."""
    out = dict(rounds[0])
    out["complete"] = all(r["complete"] for r in rounds)
    out["rounds"] = len(rounds)
    for key in FIGURES:
        values = [r[key] for r in rounds if r.get(key) is not None]
        out[key] = statistics.median(values) if values else None
        out[f"{key}_spread"] = [min(values), max(values)] if values else None
    counted = [r["store_per_task"] for r in rounds if r.get("store_per_task")]
    if counted:
        out["store_per_task"] = {
            k: statistics.median(c.get(k, 0.0) for c in counted) for k in counted[0]
        }
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    paths = python_path()
    ids = Ids()
    rounds: dict[str, list[dict[str, Any]]] = {}
    described: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="okuri-bench-celery-") as tmp:
        for turn in range(args.rounds):
            for name in args.brokers:
                if name in skipped:
                    continue
                workdir = Path(tmp) / f"{name}-{turn}"
                workdir.mkdir()
                try:
                    one = _one_broker(name, args, workdir, ids, paths)
                except Unavailable as why:
                    print(f"python -m bench celery: skipping {why}", file=sys.stderr)
                    skipped[name] = str(why)
                    continue
                described[name] = {k: v for k, v in one.items() if k != "runs"}
                rounds.setdefault(name, []).append(one["runs"])
    results = {
        name: {
            **described[name],
            "runs": {load: combined([r[load] for r in runs]) for load in runs[0]},
        }
        for name, runs in rounds.items()
    }
    return {
        "config": {
            "tasks": args.tasks,
            "concurrency": args.concurrency,
            "cpus": os.cpu_count(),
            "rounds": args.rounds,
            "sqs_wait_time_seconds": args.sqs_wait_time_seconds,
            "sqs_polling_interval": args.sqs_polling_interval,
            "okuri_lease_s": OKURI_LEASE_S,
            "okuri_wait_time_s": OKURI_WAIT_S,
            "limit_s": args.limit_s,
        },
        "loads": [
            {"name": load.name, "tasks": load.tasks, "producers": load.producers}
            for load in loads(args)
        ],
        "brokers": results,
        "skipped": skipped,
    }


def _broker_list(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in BROKERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"brokers are a comma-separated list of {', '.join(BROKERS)}"
        )
    return list(dict.fromkeys(names))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench celery",
        description="One Celery load (add(i, i), results ignored, one prefork worker) on okuri "
        "via okuri:// and sqs://, sqs:// on in-memory emulators, Redis and RabbitMQ, started "
        "here on 127.0.0.1: enqueue and "
        "end-to-end tasks/s side by side.",
    )
    add = p.add_argument
    add("--tasks", type=bounded(int, 1, TASKS_MAX), default=2000, help="tasks per load")
    add("--producers", type=bounded(int, 1, PRODUCERS_MAX), default=8,
        help="producer processes of the second load (1: only the first load)")  # fmt: skip
    add("--concurrency", type=bounded(int, 1, CONCURRENCY_MAX), default=2,
        help="the worker's prefork pool size")  # fmt: skip
    add("--rounds", type=bounded(int, 1, ROUNDS_MAX), default=1,
        help="runs of every broker, interleaved: each figure is their median, with its "
        "spread")  # fmt: skip
    add("--brokers", type=_broker_list, default=list(DEFAULT_BROKERS),
        help=f"comma-separated, in order; default {','.join(DEFAULT_BROKERS)}; also "
        f"{','.join(b for b in BROKERS if b not in DEFAULT_BROKERS)}")  # fmt: skip
    add("--limit-seconds", dest="limit_s", type=bounded(float, 1, LIMIT_S_MAX), default=300.0,
        help="the producers' time at most per load, and again the worker's")  # fmt: skip
    add("--sqs-wait-time-seconds", type=bounded(int, 0, SQS_WAIT_S_MAX),
        default=DEFAULT_SQS_WAIT_S, help="sqs://'s wait_time_seconds (long poll)")  # fmt: skip
    add("--sqs-polling-interval", type=bounded(float, 0, SQS_POLLING_S_MAX),
        default=DEFAULT_SQS_POLLING_S,
        help="sqs://'s polling_interval (see docs/celery.md: it paces a full prefetch "
        "window too)")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object")
    return p


def cli_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = measure(args)
    except BenchError as err:
        print(f"python -m bench celery: error: {err}", file=sys.stderr)
        return 1
    with contextlib.suppress(BrokenPipeError):
        print(json.dumps(result) if args.json else render(result))
    return 0
