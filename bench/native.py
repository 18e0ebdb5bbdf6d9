"""`python -m bench native`: the native API's end-to-end throughput beside the SQS surface's,
one run.

Why: the native API takes 100 items per produce, lease and complete where SQS takes 10 per
batch, and a lease of 100 is one engine receive (one manifest commit). How much that buys is
only meaningful measured against the SQS surface of the same server, on the same machine, in
the same run. So this starts one real `okuri serve` (a fresh local directory, or a bucket on
moto's S3 with `--store s3`; an admin bearer key of its own), then drives, one after the other
and each on a fresh queue:

- the native surface (bench.native_load): P producers POSTing 100 items, C consumers
  leasing 100 (`request_timeout_s` = --wait-seconds) and completing them in one request;
- the SQS surface (bench.load): SendMessageBatch(10), ReceiveMessage(10, the same wait),
  DeleteMessageBatch(10), through the light SigV4 client.

Each half has a warm-up, a measured window and a drain; for each it prints messages/s, the
send-to-receive p50/p99, the server's CPU, and the object-store requests per message by class
(the server's own `okuri_store_requests_total` on its health listener, read as the window opens
and closes). Every id acknowledged is tracked to its lease and completion (bench.ledger),
and each half ends with a `lost` count: acknowledged, never received.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import secrets
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.flags import bounded
from bench.ledger import Ledger
from bench.load import BATCH_ENTRIES, ClosedLoop, Driver, Workload, default_backlog
from bench.measure import BODY_BYTES, process_cpu_s
from bench.native_client import LightNative, NativeClient, OkuriNative
from bench.native_load import ITEMS_PER_REQUEST, NativeDriver
from bench.native_report import render
from bench.servers import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    REGION,
    BenchError,
    Node,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
    tail,
)
from bench.sqs_client import LightSqs
from bench.sqs_runs import NodeProbe, run_async

PRODUCERS_MAX = 256
CONSUMERS_MAX = 256
SECONDS_MAX = 3600.0
WARMUP_S_MAX = 600.0
DRAIN_S_MAX = 120.0
WAIT_S_MAX = 20
LINGER_MS_MAX = 10_000
BACKLOG_MAX = 1_000_000

CLIENTS = ("light", "okuri")
STORES = ("local", "s3")
SETUP_S = 20.0  # create and delete a queue
CLIENT_SLACK_CONNECTIONS = 4
CLIENT_REPLY_SLACK_S = 30


@dataclass(frozen=True)
class Options:
    workload: Workload  # backlog_max 0 here means "the default of each surface's batch"
    backlog_given: bool
    linger_ms: int | None
    store: str = "local"
    client: str = "light"
    sqs: bool = True

    def workload_for(self, batch: int) -> Workload:
        """The workload with the backlog cap the flags gave, else two batches per worker."""
        if self.backlog_given:
            return self.workload
        w = self.workload
        return replace(w, backlog_max=default_backlog(w.producers, w.consumers, batch))


# --- one half of the run ----------------------------------------------------------------------


async def _measure(
    driver: ClosedLoop[Any], node: Node, store_pid: int | None, ledger: Ledger
) -> dict[str, Any]:
    """Run `driver`, then add the server's store requests over the window and the ledger."""
    pid = node.pid
    probe = NodeProbe([node], store_pid)
    figures = await driver.run(lambda: None if pid is None else process_cpu_s(pid), [probe])
    counted = probe.per_node[0] if probe.per_node else {}
    requests = counted.get("store_requests")
    moved = figures["messages_deleted"]
    figures["store_requests"] = requests
    figures["store_requests_per_message"] = (
        None if requests is None or not moved else {k: v / moved for k, v in requests.items()}
    )
    figures["manifest_commits"] = counted.get("manifest_commits")
    store_cpu_s, window_s = probe.store_cpu_s, figures["window_s"]
    figures["cpu"]["store_percent"] = (
        None if store_cpu_s is None else round(100 * store_cpu_s / window_s, 1)
    )
    verdict = ledger.verdict()
    figures["ledger"] = {
        "acknowledged": verdict.acknowledged,
        "received": verdict.delivered,
        "completed": verdict.deleted,
        "redeliveries": verdict.redeliveries,
        "lost": verdict.lost,
        "received_after_complete": verdict.after_delete,
        "lost_examples": verdict.lost_examples,
        "drained": figures["drain"]["left_in_queue"] == 0,
    }
    return figures


async def _native(opts: Options, node: Node, key: str, store_pid: int | None) -> dict[str, Any]:
    w = opts.workload_for(ITEMS_PER_REQUEST)
    connections = w.producers + w.consumers + CLIENT_SLACK_CONNECTIONS
    timeout_s = w.wait_s + CLIENT_REPLY_SLACK_S
    kind = OkuriNative if opts.client == "okuri" else LightNative
    client: NativeClient = kind(node.endpoint, key, connections, timeout_s)
    queue = f"okuri-bench-native-{os.getpid()}"
    try:
        try:
            await asyncio.wait_for(client.create_queue(queue), SETUP_S)
        except Exception as err:
            raise BenchError(f"native: cannot create queue {queue!r}: {err}") from err
        ledger = Ledger(time.monotonic())
        figures = await _measure(NativeDriver([client], queue, w, ledger), node, store_pid, ledger)
        with contextlib.suppress(Exception):  # best effort: the server is discarded anyway
            await asyncio.wait_for(client.delete_queue(queue), SETUP_S)
    finally:
        await client.close()
    return {"surface": "native", "backlog_max": w.backlog_max, **figures}


async def _sqs(opts: Options, node: Node, store_pid: int | None) -> dict[str, Any]:
    w = opts.workload_for(BATCH_ENTRIES)
    connections = w.producers + w.consumers + CLIENT_SLACK_CONNECTIONS
    timeout_s = w.wait_s + CLIENT_REPLY_SLACK_S
    queue = f"okuri-bench-sqs-{os.getpid()}"
    light = LightSqs(
        node.endpoint, DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY, REGION, connections, timeout_s
    )
    async with light as client:
        try:
            created = await asyncio.wait_for(client.create_queue(QueueName=queue), SETUP_S)
        except Exception as err:
            raise BenchError(f"sqs: cannot create queue {queue!r}: {err}") from err
        url = created["QueueUrl"]
        ledger = Ledger(time.monotonic())
        figures = await _measure(Driver([client], url, w, ledger), node, store_pid, ledger)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.delete_queue(QueueUrl=url), SETUP_S)
    return {"surface": "sqs", "backlog_max": w.backlog_max, **figures}


async def _both(opts: Options, node: Node, key: str, store_pid: int | None) -> dict[str, Any]:
    native = await _native(opts, node, key, store_pid)
    sqs = await _sqs(opts, node, store_pid) if opts.sqs else None
    return {"native": native, "sqs": sqs}


# --- the whole run ----------------------------------------------------------------------------


def _serve(opts: Options, store: StoreSpec, workdir: Path, store_pid: int | None) -> dict[str, Any]:
    key = secrets.token_urlsafe(24)
    extra = {"OKURI_ADMIN_KEY": key}
    if opts.linger_ms is not None:
        extra["OKURI_LINGER_MS"] = str(opts.linger_ms)
    with cluster(1, store, workdir, extra) as [node]:
        halves = run_async(_both(opts, node, key, store_pid))
    code = node.exit_codes[-1] if node.exit_codes else None
    server: dict[str, Any] = {"pid": node.pid, "exit_code": code}
    if code != 0:
        server["log_tail"] = tail(node.log_path)
    return {**halves, "server": server}


def measure(opts: Options) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="okuri-bench-native-") as tmp:
        workdir = Path(tmp)
        with contextlib.ExitStack() as stack:
            if opts.store == "s3":
                moto = stack.enter_context(moto_server(workdir, "moto-s3"))
                store = bucket_store(moto.endpoint, f"okuri-bench-native-{os.getpid()}")
                figures = _serve(opts, store, workdir, moto.process.pid)
                described = "S3 on moto (a fresh bucket)"
            else:
                store = StoreSpec(data_dir=workdir / "data")
                figures = _serve(opts, store, workdir, None)
                described = "local directory (a fresh tmp)"
    native, sqs = figures["native"], figures["sqs"]
    ratio = None
    if sqs is not None and sqs["messages_per_s"] > 0:
        ratio = round(native["messages_per_s"] / sqs["messages_per_s"], 2)
    w = opts.workload
    return {
        "config": {
            "producers": w.producers,
            "consumers": w.consumers,
            "seconds": w.seconds,
            "warmup_s": w.warmup_s,
            "drain_s": w.drain_s,
            "wait_s": w.wait_s,
            "native_items_per_request": ITEMS_PER_REQUEST,
            "sqs_batch_entries": BATCH_ENTRIES,
            "body_bytes": BODY_BYTES,
            "linger_ms": opts.linger_ms,
            "client": opts.client,
            "store": described,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_generator": "this process (asyncio, aiohttp), on the same CPUs as the server",
        },
        **figures,
        "ratio_native_to_sqs": ratio,
    }


# --- the command ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench native",
        description="Native API throughput (produce 100, lease 100, complete 100) beside the SQS "
        "surface's (batches of 10), on one `okuri serve`, in one run.",
    )
    add = p.add_argument
    add("--producers", type=bounded(int, 1, PRODUCERS_MAX), default=8)
    add("--consumers", type=bounded(int, 1, CONSUMERS_MAX), default=8)
    add("--seconds", type=bounded(float, 0.5, SECONDS_MAX), default=10.0,
        help="measured window of each surface")  # fmt: skip
    add("--warmup-seconds", dest="warmup_s", type=bounded(float, 0, WARMUP_S_MAX), default=2.0)
    add(
        "--drain-seconds",
        dest="drain_s",
        type=bounded(float, 0, DRAIN_S_MAX),
        default=10.0,
        help="at most this long to empty each queue after its window",
    )
    add(
        "--wait-seconds",
        dest="wait_s",
        type=bounded(int, 0, WAIT_S_MAX),
        default=1,
        help="a lease's request_timeout_s, and ReceiveMessage's WaitTimeSeconds",
    )
    add(
        "--backlog-max",
        type=bounded(int, 0, BACKLOG_MAX),
        default=None,
        help="producers pause while this many messages are sent but not completed (0: never; "
        "default two requests' worth per producer or consumer, at least 200)",
    )
    add("--store", choices=STORES, default="local", help="the server's store: a directory, or "
        "a bucket on a moto S3 server started here")  # fmt: skip
    add("--client", choices=CLIENTS, default="light",
        help="native client: light (aiohttp, as the SQS half's) or okuri (okuri.client's "
        "AsyncClient on httpx)")  # fmt: skip
    add(
        "--linger-ms",
        type=bounded(int, 0, LINGER_MS_MAX),
        default=None,
        help="OKURI_LINGER_MS for the server (default: the server's own for its store)",
    )
    add(
        "--sqs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure the SQS surface of the same server",
    )
    add("--json", action="store_true", help="print one JSON object")
    return p


def options(args: argparse.Namespace) -> Options:
    return Options(
        workload=Workload(
            producers=args.producers,
            consumers=args.consumers,
            seconds=args.seconds,
            warmup_s=args.warmup_s,
            drain_s=args.drain_s,
            wait_s=args.wait_s,
            backlog_max=args.backlog_max or 0,
        ),
        backlog_given=args.backlog_max is not None,
        linger_ms=args.linger_ms,
        store=args.store,
        client=args.client,
        sqs=args.sqs,
    )


def cli_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = measure(options(args))
    except BenchError as err:
        print(f"python -m bench native: error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else render(result))
    return 0
