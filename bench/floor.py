"""`python -m bench floor`: each call a lone caller makes, beside its floor.

Why: throughput benches say how much okuri carries, not how close each call is to the least it
could cost. Here ONE caller makes one call at a time, and each call's median (p50) is printed
beside its floor:

    floor(call) = the p50 of the same client making the same call against a hello-world
                  server on the same HTTP stack (bench/floor_hello.py)
                  + (store writes the call's answer waits for) x (the store's own write p50)

and their ratio. The calls (bench/floor_calls.py): SQS SendMessage, ReceiveMessage of the
message just sent, DeleteMessage and GetQueueUrl through botocore; the native API's produce,
lease and complete through okuri.client; an okuri:// publish through kombu (skipped, saying
why, when kombu or okuri_kombu cannot be imported). The store's write p50 is measured on its
own (bench/floor_store.py), half of the writes before the calls and half after: the local
store okuri serve gives a new directory, on the same filesystem, or a conditional PUT to moto's
S3 through the latency proxy (bench/latency_proxy.py) okuri also talks through.

Also printed: the server's CPU per request that writes nothing (GetQueueUrl), okuri's beside the
hello-world server's, and the machine's speed (a 10-million-step Python loop), so a slow run
can be told from a slow machine. One `okuri serve` per store, configured by environment only;
every process is stopped by its pid; every loop is bounded by --calls and --seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from bench.flags import bounded
from bench.floor_calls import (
    Budget,
    Probe,
    Timings,
    Unavailable,
    kombu_rounds,
    native_rounds,
    sqs_cpu_per_call,
    sqs_rounds,
)
from bench.floor_hello import hello_server
from bench.floor_report import ROWS, render, row_figures
from bench.floor_store import StoreWrites, local_writes, s3_writes
from bench.latency_proxy import LATENCY_MS_MAX, latency_proxy
from bench.measure import rounded
from bench.metrics import NodeCounters, scrape
from bench.servers import (
    BenchError,
    Node,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
    tail,
)
from okuri import limits

STORES = ("local", "s3", "both")
CALLS_MAX = 100_000
SECONDS_MAX = 3600.0
S3_LATENCY_MS_DEFAULT = 30.0
CPU_CALLS_MIN = 500  # CPU is read in clock ticks (10 ms): enough calls to span many
MACHINE_LOOP_STEPS = 10_000_000
HELLO_KEY = "hello-world-takes-any-key"

# (surface: its rows' keys start with it and a dot, how to drive it: endpoint, key, budget)
Drive = Callable[[str, str, Budget, Probe | None], Timings]
SURFACES: tuple[tuple[str, Drive], ...] = (
    ("sqs", lambda endpoint, _key, budget, probe: sqs_rounds(endpoint, budget, probe)),
    ("native", native_rounds),
    ("kombu", kombu_rounds),
)


@dataclass(frozen=True)
class Options:
    stores: tuple[str, ...]
    calls: int
    seconds: float
    latency_ms: float | None  # None: S3_LATENCY_MS_DEFAULT
    linger_ms: int | None  # None: the server's default for its store


def machine_loop_s() -> float:
    """Seconds this interpreter takes for MACHINE_LOOP_STEPS empty loop steps."""
    start = perf_counter()
    for _ in range(MACHINE_LOOP_STEPS):
        pass
    return perf_counter() - start


def _errors(timings: list[Timings]) -> dict[str, Any]:
    first = next((t.first_error for t in timings if t.first_error), None)
    return {"count": sum(t.errors for t in timings), "first": first}


def _per(requests: dict[str, int] | None, count: int) -> dict[str, float] | None:
    if requests is None or not count:
        return None
    return {k: round(v / count, 3) for k, v in requests.items()}


def _calls(budget: Budget, node: Node, hello_endpoint: str, key: str) -> dict[str, Any]:
    """Every surface's rounds, on the hello-world server then on okuri; the rows' raw timings,
    and okuri's store requests per round of each surface."""
    okuri_t: list[Timings] = []
    hello_t: list[Timings] = []
    skipped: dict[str, str] = {}
    per_round: dict[str, dict[str, float] | None] = {}

    def probe() -> NodeCounters | None:
        return scrape(node.health_url)

    for surface, drive in SURFACES:
        try:
            hello = drive(hello_endpoint, HELLO_KEY, budget, None)
            okuri = drive(node.endpoint, key, budget, probe)
        except (BenchError, Unavailable) as err:
            for row in ROWS:
                if row.key.startswith(surface + "."):
                    skipped[row.label] = str(err)
            continue
        hello_t.append(hello)
        okuri_t.append(okuri)
        per_round[surface] = _per(okuri.store_requests, okuri.rounds)
    return {
        "okuri": okuri_t,
        "hello": hello_t,
        "skipped": skipped,
        "store_requests_per_round": per_round,
    }


def _cpu(budget: Budget, node: Node, hello_endpoint: str, hello_pid: int) -> dict[str, Any]:
    cpu_budget = Budget(max(budget.calls, CPU_CALLS_MIN), budget.seconds)
    hello = sqs_cpu_per_call(hello_endpoint, hello_pid, cpu_budget)
    okuri = sqs_cpu_per_call(
        node.endpoint, node.pid or 0, cpu_budget, lambda: scrape(node.health_url)
    )
    ratio = None
    if okuri.cpu_ms_per_call is not None and hello.cpu_ms_per_call:
        ratio = round(okuri.cpu_ms_per_call / hello.cpu_ms_per_call, 2)
    return {
        "calls": min(okuri.calls, hello.calls),
        "okuri_ms_per_call": rounded(okuri.cpu_ms_per_call, 4),
        "hello_ms_per_call": rounded(hello.cpu_ms_per_call, 4),
        "ratio": ratio,
        "okuri_store_requests_per_call": _per(okuri.store_requests, okuri.calls),
    }


# Times `budget`'s store writes, of new keys numbered from the int given.
WriteProbe = Callable[[Budget, int], StoreWrites]


def _write_halves(opts: Options) -> tuple[Budget, Budget]:
    first = (opts.calls + 1) // 2
    return Budget(first, opts.seconds / 2), Budget(opts.calls - first, opts.seconds / 2)


def _measure(opts: Options, store: StoreSpec, workdir: Path, probe: WriteProbe) -> dict[str, Any]:
    """The store's writes (half before the calls, half after), the calls, the CPU loop."""
    budget = Budget(opts.calls, opts.seconds)
    before, after = _write_halves(opts)
    writes = probe(before, 0)
    key = secrets.token_urlsafe(24)
    extra = {"OKURI_ADMIN_KEY": key}
    if opts.linger_ms is not None:
        extra["OKURI_LINGER_MS"] = str(opts.linger_ms)
    with hello_server(workdir) as hello, cluster(1, store, workdir, extra) as [node]:
        calls = _calls(budget, node, hello.endpoint, key)
        try:
            cpu: dict[str, Any] | None = _cpu(budget, node, hello.endpoint, hello.pid)
        except BenchError as err:
            cpu, calls["skipped"]["server CPU per request"] = None, str(err)
        writes = writes.plus(probe(after, before.calls))
    okuri_seconds = {k: v for t in calls["okuri"] for k, v in t.seconds.items()}
    hello_seconds = {k: v for t in calls["hello"] for k, v in t.seconds.items()}
    misses = {k: v for t in calls["okuri"] for k, v in t.misses.items()}
    write_p50 = writes.put_if_absent_p50_ms
    rows = [
        row_figures(
            row,
            okuri_seconds.get(row.key, []),
            hello_seconds.get(row.key, []),
            write_p50,
            misses.get(row.key, 0),
        )
        for row in ROWS
        if row.label not in calls["skipped"]
    ]
    code = node.exit_codes[-1] if node.exit_codes else None
    server: dict[str, Any] = {"exit_code": code}
    if code != 0:
        server["log_tail"] = tail(node.log_path)
    return {
        "store_writes": _writes_figures(writes),
        "write_p50_ms": rounded(write_p50, 3),
        "rows": rows,
        "skipped": calls["skipped"],
        "store_requests_per_round": calls["store_requests_per_round"],
        "cpu": cpu,
        "errors": {"okuri": _errors(calls["okuri"]), "hello-world": _errors(calls["hello"])},
        "server": server,
    }


def _writes_figures(writes: StoreWrites) -> dict[str, Any]:
    return {
        "samples": writes.samples,
        "put_if_absent_p50_ms": rounded(writes.put_if_absent_p50_ms, 3),
        "put_if_match_p50_ms": rounded(writes.put_if_match_p50_ms, 3),
    }


def run_store(kind: str, opts: Options, workdir: Path) -> dict[str, Any]:
    """One store's run: a fresh store and its write probe, okuri and the hello-world server."""
    latency_ms = 0.0
    probe: WriteProbe
    with contextlib.ExitStack() as stack:
        if kind == "s3":
            latency_ms = S3_LATENCY_MS_DEFAULT if opts.latency_ms is None else opts.latency_ms
            moto = stack.enter_context(moto_server(workdir, "moto-s3"))
            proxy = stack.enter_context(
                latency_proxy(workdir, moto.endpoint, latency_ms, "/moto-api/")
            )
            bucket = f"okuri-floor-{os.getpid()}"
            store = bucket_store(proxy.endpoint, bucket)
            endpoint = proxy.endpoint

            def probe(budget: Budget, first: int) -> StoreWrites:
                return s3_writes(endpoint, bucket, budget, first)

            described = "S3 on moto behind a latency proxy (a fresh bucket)"
            default_linger = limits.linger_ms_default
        else:
            store = StoreSpec(data_dir=workdir / "data")

            def probe(budget: Budget, first: int) -> StoreWrites:
                return local_writes(workdir / "store-probe", budget, first)

            described = "a local directory (a fresh tmp)"
            default_linger = limits.linger_ms_local_default
        figures = _measure(opts, store, workdir, probe)
    return {
        "store": kind,
        "described": described,
        "latency_added_ms": latency_ms,
        "linger_ms": default_linger if opts.linger_ms is None else opts.linger_ms,
        "linger_given": opts.linger_ms is not None,
        **figures,
    }


def measure(opts: Options) -> dict[str, Any]:
    loop_s = machine_loop_s()
    runs = []
    with tempfile.TemporaryDirectory(prefix="okuri-bench-floor-") as tmp:
        for kind in opts.stores:
            workdir = Path(tmp) / kind
            workdir.mkdir()
            runs.append(run_store(kind, opts, workdir))
    return {
        "config": {
            "calls": opts.calls,
            "seconds": opts.seconds,
            "stores": list(opts.stores),
            "store_latency_ms": opts.latency_ms,
            "linger_ms": opts.linger_ms,
        },
        "machine": {"cpus": os.cpu_count(), "python_loop_10m_s": round(loop_s, 3)},
        "runs": runs,
    }


# --- the command ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench floor",
        description="One sequential caller: each call's p50 beside its floor (a hello-world "
        "server's p50 for the same call, plus the store writes the call waits for).",
    )
    add = p.add_argument
    add("--store", choices=STORES, default="local",
        help="the server's store: a fresh directory, moto's S3 behind a latency proxy, or both "
        "one after the other")  # fmt: skip
    add("--store-latency-ms", dest="latency_ms", metavar="MS",
        type=bounded(float, 0, LATENCY_MS_MAX), default=None,
        help=f"added to every S3 request (default {S3_LATENCY_MS_DEFAULT:g}; --store s3 only)",
    )
    add("--calls", type=bounded(int, 1, CALLS_MAX), default=300,
        help="rounds of each loop (and store writes timed)")  # fmt: skip
    add("--seconds", type=bounded(float, 0.5, SECONDS_MAX), default=20.0,
        help="at most this long for each loop, whatever --calls says")  # fmt: skip
    add("--linger-ms", metavar="MS", type=bounded(int, 0, limits.linger_ms_max), default=None,
        help="OKURI_LINGER_MS for the server (default: its own for its store)")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object")
    return p


def cli_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    stores = ("local", "s3") if args.store == "both" else (args.store,)
    opts = Options(stores, args.calls, args.seconds, args.latency_ms, args.linger_ms)
    try:
        result = measure(opts)
    except BenchError as err:
        print(f"python -m bench floor: error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else render(result))
    return 0
