"""`python -m bench sqs`: end-to-end SQS throughput and latency of `okuri serve` nodes, beside an
in-memory SQS emulator's.

Why: the issue asks for 5,000 messages/s end to end from one server process with the local
store, and how that scales over nodes sharing one store; a number is only meaningful next to a
peer measured the same way in the same run. So this starts real `okuri serve` processes (free
127.0.0.1 ports, one fresh store per node count: a temporary directory, or a bucket on moto's
S3 with `--store s3`), drives them through the public SQS API as an application would, then
does the same against the peer (`--peer`): ministack by default, the fastest emulator
installable here (bench.ministack installs it into a virtualenv of its own on first use,
and the peer is skipped with one line when it cannot be), or moto's SQS server; and prints both.

The window is `--seconds` long, or `--messages N`: producers send N messages in all into an
empty queue and the rate is N over the time to receive and delete them (bench.load).

`--nodes 1,2,3` measures each count in turn; producers and consumers are spread over the nodes
(bench.load), and each node's manifest commits, manifest conflicts (412s on the manifest,
"n/a" on engines that do not count them) and object-store requests by class over the window
are read from its own /metrics (bench.metrics).

`--client light` (the default) speaks JSON 1.0 with a minimal SigV4 client
(bench.sqs_client) costing a fraction of aiobotocore's ~1.4 ms of client CPU per call,
which on a shared machine would otherwise hide the server; `--client aiobotocore` is kept to
measure what an application built on it would see. moto is driven by the same client.

This module parses the flags and prints; a run is bench.sqs_runs', the load and its
phases bench.load's, the servers bench.servers', the text bench.sqs_report's.
Caveat, printed with the figures: the load generator runs on the same machine and competes for
the same cores, so the end-to-end rate is a lower bound for dedicated servers. The CPU figures
(server CPU seconds per message, from /proc) say what one server core could carry on its own.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.flags import bounded
from bench.load import BATCH_ENTRIES, Workload, default_backlog
from bench.measure import BODY_BYTES
from bench.servers import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    REGION,
    BenchError,
    Unavailable,
)
from bench.sqs_report import render
from bench.sqs_runs import PEERS, Options, run_okuri, run_peer

# Flag bounds: a limit on everything.
PRODUCERS_MAX = 256
WORKERS_DEFAULT = 8  # producers, and consumers
CONSUMERS_MAX = 256
SECONDS_MAX = 3600.0
SECONDS_DEFAULT = 20.0
COUNTED_SECONDS_DEFAULT = 600.0  # the bound on a --messages window when --seconds is not given
MESSAGES_MAX = 10_000_000
WARMUP_S_MAX = 600.0
DRAIN_S_MAX = 120.0
WAIT_S_MAX = 20
LINGER_MS_MAX = 10_000
BACKLOG_MAX = 1_000_000
FIFO_GROUPS_MAX = 100_000
NODES_MAX = 8  # okuri serve processes at once
NODE_COUNTS_MAX = 8  # entries in --nodes
ROUNDS_MAX = 10  # passes over --nodes

CLIENTS = ("light", "aiobotocore")
STORES = ("local", "s3")


def _peer(opts: Options, workdir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The peer's figures, or why it was skipped (it cannot be installed here)."""
    if opts.peer is None:
        return None, None
    try:
        return run_peer(opts, workdir), None
    except Unavailable as why:
        print(f"python -m bench sqs: skipping the peer: {why}", file=sys.stderr)
        return None, str(why)


def measure(opts: Options) -> dict[str, Any]:
    w = opts.workload
    with tempfile.TemporaryDirectory(prefix="okuri-bench-sqs-") as tmp:
        workdir = Path(tmp)
        okuri = run_okuri(opts, workdir)
        peer, skipped = _peer(opts, workdir)
    for run in okuri:
        run["ratio_to_peer"] = (
            round(run["messages_per_s"] / peer["messages_per_s"], 2)
            if peer is not None and peer["messages_per_s"] > 0
            else None
        )
    if opts.endpoint is not None:
        store = "external endpoint"
    elif opts.store == "s3":
        store = "S3 on moto (a fresh bucket per node count)"
    else:
        store = "local directory (a fresh tmp per node count)"
    return {
        "rounds": summarize_rounds(okuri, opts.rounds),
        "config": {
            "producers": w.producers,
            "consumers": w.consumers,
            "seconds": w.seconds,
            "messages": w.messages,
            "warmup_s": w.warmup_s,
            "drain_s": w.drain_s,
            "wait_s": w.wait_s,
            "backlog_max": w.backlog_max,
            "fifo_groups": w.fifo_groups,
            "sequential": w.sequential,
            "batch_entries": BATCH_ENTRIES,
            "body_bytes": BODY_BYTES,
            "linger_ms": opts.linger_ms,
            "nodes": list(opts.nodes) if opts.endpoint is None else [1],
            "rounds": opts.rounds,
            "client": opts.client,
            "store": store,
            "peer": opts.peer,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_generator": f"this process (asyncio + the {opts.client} client), on the "
            "same CPUs as the servers under test",
        },
        "okuri": okuri,
        "peer": peer,
        "peer_skipped": skipped,
    }


def summarize_rounds(runs: list[dict[str, Any]], rounds: int) -> dict[str, Any] | None:
    """With several rounds: each node count's median rate, and each count's rate over the
    first count's, round by round (measured minutes apart on the same machine, so a ratio
    taken within a round is fairer than one between medians when the machine's speed drifts).

    None with one round: the runs' own columns say it all."""
    if rounds < 2 or not runs:
        return None
    rates: dict[int, list[float]] = {}
    for run in runs:
        rates.setdefault(run["nodes"], []).append(float(run["messages_per_s"]))
    base_count = runs[0]["nodes"]
    ratios: dict[int, list[float | None]] = {}
    for count, rate_list in rates.items():
        if count == base_count:
            continue
        ratios[count] = [
            round(rate / base, 2) if base > 0 else None
            for rate, base in zip(rate_list, rates[base_count], strict=False)
        ]
    return {
        "base_nodes": base_count,
        "messages_per_s": {str(c): r for c, r in rates.items()},
        "median_messages_per_s": {str(c): round(statistics.median(r), 1) for c, r in rates.items()},
        "ratio_to_base": {str(c): r for c, r in ratios.items()},
        "median_ratio_to_base": {
            str(c): round(statistics.median(known), 2) if known else None
            for c, r in ratios.items()
            for known in [[x for x in r if x is not None]]
        },
    }


# --- the command ------------------------------------------------------------------------------


def node_counts(text: str) -> tuple[int, ...]:
    """'1,2,3' -> (1, 2, 3): each from 1 to NODES_MAX, at most NODE_COUNTS_MAX of them."""
    one = bounded(int, 1, NODES_MAX)
    counts = tuple(one(part.strip()) for part in text.split(","))
    if len(counts) > NODE_COUNTS_MAX:
        raise argparse.ArgumentTypeError(f"at most {NODE_COUNTS_MAX} node counts")
    return counts


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench sqs",
        description="Closed-loop SQS throughput and latency of `okuri serve` nodes, beside an "
        "in-memory SQS emulator's.",
    )
    add = p.add_argument
    add("--producers", type=bounded(int, 1, PRODUCERS_MAX), default=None, help="default 8")
    add("--consumers", type=bounded(int, 1, CONSUMERS_MAX), default=None, help="default 8")
    add(
        "--seconds",
        type=bounded(float, 0.5, SECONDS_MAX),
        default=None,
        help=f"measured window (default {SECONDS_DEFAULT:g}); with --messages, its bound "
        f"(default {COUNTED_SECONDS_DEFAULT:g})",
    )
    add(
        "--messages",
        type=bounded(int, 1, MESSAGES_MAX),
        default=None,
        metavar="N",
        help="a counted window instead: after the warm-up and an empty queue, producers send N "
        "messages in all; the rate is N over the time until all are deleted",
    )
    add("--warmup-seconds", dest="warmup_s", type=bounded(float, 0, WARMUP_S_MAX), default=3.0)
    add(
        "--drain-seconds",
        dest="drain_s",
        type=bounded(float, 0, DRAIN_S_MAX),
        default=10.0,
        help="at most this long to empty the queue after the window",
    )
    add(
        "--wait-seconds",
        dest="wait_s",
        type=bounded(int, 0, WAIT_S_MAX),
        default=1,
        help="ReceiveMessage WaitTimeSeconds",
    )
    add(
        "--backlog-max",
        type=bounded(int, 0, BACKLOG_MAX),
        default=None,
        help="producers pause while this many messages are sent but not deleted (0: never; "
        "default 2 batches per producer or consumer, at least 200)",
    )
    add(
        "--nodes",
        type=node_counts,
        default=None,
        metavar="N[,N...]",
        help=f"okuri serve processes on one store, measured per count (default 1; each at most "
        f"{NODES_MAX})",
    )
    add("--store", choices=STORES, default="local", help="what the nodes share: a directory, or "
        "a bucket on a moto S3 server started here")  # fmt: skip
    add("--client", choices=CLIENTS, default="light",
        help="light: minimal signed JSON client; aiobotocore: what an SDK app pays")  # fmt: skip
    add(
        "--linger-ms",
        type=bounded(int, 0, LINGER_MS_MAX),
        default=None,
        help="OKURI_LINGER_MS for the servers started here (default: the server's own)",
    )
    add(
        "--peer",
        choices=(*PEERS, "none"),
        default=PEERS[0],
        help="also measure this in-memory SQS emulator with the same workload and client "
        f"(default {PEERS[0]}, the fastest installable here; installed on first use)",
    )
    add("--no-peer", dest="peer", action="store_const", const="none", help="as --peer none")
    add("--endpoint", default=None, help="drive this okuri endpoint instead of starting one")
    add("--access-key-id", default=None, help="with --endpoint (env OKURI_ACCESS_KEY_ID)")
    add("--secret-access-key", default=None, help="with --endpoint (env OKURI_SECRET_ACCESS_KEY)")
    add("--region", default=REGION)
    add(
        "--server-pid",
        type=bounded(int, 1, 2**22),
        default=None,
        help="with --endpoint: that server's pid on this machine, for CPU figures and --profile",
    )
    add(
        "--profile",
        default=None,
        metavar="FILE",
        help="py-spy the (first) node over the window, collapsed stacks to FILE",
    )
    add(
        "--fifo-groups",
        type=bounded(int, 0, FIFO_GROUPS_MAX),
        default=0,
        metavar="N",
        help="run on a FIFO queue with N message groups (default 0: a standard queue)",
    )
    add(
        "--rounds",
        type=bounded(int, 1, ROUNDS_MAX),
        default=1,
        help="measure the node counts this many times, alternating (1,3,1,3,...), and print "
        "medians and each round's ratio to the first count: on a noisy machine one run each "
        "says little",
    )
    add(
        "--sequential",
        type=bounded(int, 1, PRODUCERS_MAX),
        default=0,
        metavar="N",
        help="N clients each sending a batch, receiving and deleting in turn, one call at a "
        "time (an application's round trip; in place of --producers and --consumers)",
    )
    add("--json", action="store_true", help="print one JSON object")
    return p


def options(args: argparse.Namespace) -> Options:
    producers = args.producers or WORKERS_DEFAULT
    consumers = args.consumers or WORKERS_DEFAULT
    return Options(
        workload=Workload(
            producers=args.sequential or producers,
            consumers=0 if args.sequential else consumers,
            seconds=args.seconds
            or (COUNTED_SECONDS_DEFAULT if args.messages else SECONDS_DEFAULT),
            warmup_s=args.warmup_s,
            drain_s=args.drain_s,
            wait_s=args.wait_s,
            backlog_max=(
                0
                if args.sequential  # each client holds one batch at most
                else default_backlog(producers, consumers)
                if args.backlog_max is None
                else args.backlog_max
            ),
            fifo_groups=args.fifo_groups,
            sequential=args.sequential > 0,
            messages=args.messages or 0,
        ),
        linger_ms=args.linger_ms,
        peer=None if args.peer == "none" else args.peer,
        nodes=args.nodes or (1,),
        rounds=args.rounds,
        store=args.store,
        client=args.client,
        endpoint=args.endpoint.rstrip("/") if args.endpoint else None,
        access_key_id=args.access_key_id
        or os.environ.get("OKURI_ACCESS_KEY_ID")
        or DEV_ACCESS_KEY_ID,
        secret_access_key=args.secret_access_key
        or os.environ.get("OKURI_SECRET_ACCESS_KEY")
        or DEV_SECRET_ACCESS_KEY,
        region=args.region,
        profile=args.profile,
        server_pid=args.server_pid,
    )


def _usage_errors(args: argparse.Namespace) -> str | None:
    external = args.endpoint is not None
    if not external and args.server_pid is not None:
        return "--server-pid goes with --endpoint"
    if external and args.linger_ms is not None:
        return "--linger-ms applies only to servers this command starts"
    if external and (args.nodes is not None or args.store != "local"):
        return "--nodes and --store apply only to servers this command starts"
    if external and args.profile is not None and args.server_pid is None:
        return "--profile with --endpoint needs --server-pid"
    if args.profile is not None and args.nodes is not None and len(args.nodes) > 1:
        return "--profile samples the first node of one run: give one node count"
    if args.sequential and not all(
        v is None for v in (args.producers, args.consumers, args.backlog_max)
    ):
        return "--sequential N replaces --producers, --consumers and --backlog-max"
    if args.rounds > 1 and (external or args.profile is not None):
        return "--rounds applies only to servers this command starts, unprofiled"
    return None


def cli_main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    problem = _usage_errors(args)
    if problem is not None:
        parser.error(problem)
    try:
        result = measure(options(args))
    except BenchError as err:
        print(f"python -m bench sqs: error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else render(result))
    return 0
