"""`python -m bench.scaleout`: one queue served by 1 to 16 nodes, on paper.

Why: nodes share nothing but the bucket, and every commit of a queue (leases, deletes, adopting
new slots) is a compare-and-swap on that queue's one manifest. Adding nodes adds producers and
consumers, and also contention for that one key. This table says where a queue's throughput
stops growing, how many commits each node lands and loses, and what a message then costs,
without running sixteen real nodes against S3. It runs the simulator's cluster (okuri.sim's
virtual-time loop, the in-memory store), so a run takes seconds and prints the same figures
every time for a seed.

Workload: every node sits behind a load balancer and serves `PRODUCERS_PER_NODE` producers and
`CONSUMERS_PER_NODE` consumers, each client talking to one node and looping as fast as it is
answered (closed loop): a producer sends batches of ten, a consumer receives up to ten (long
poll) and deletes them. Offered load therefore grows with the node count. Producers stop after
`DURATION_S` of simulated time (and `MESSAGES_PER_PRODUCER_MAX` messages), consumers once
everything sent was deleted (at most `DRAIN_S_MAX` later), so every message is billed for its
whole life. No faults; every clock is true; linger is the S3 default. Nodes forward their
commits to the queue's leader (okuri/core/leadership.py) over a network of 0.5 ms hops.

Latency model (S3 Standard-like): lognormal, median 20 ms for reads and 35 ms for writes, sigma
0.5 (p99 about 3.2 times the median, so the tail reaches 60 to 110 ms).

Measured, on the store side of each node: requests by price class (okuri.store.counting), and
its manifest compare-and-swaps that landed (commits) or found the manifest changed (conflicts,
a 412). Priced as bench/cost.py prices (PUT/COPY/POST/LIST $5.00, GET $0.40 per million,
DELETE free).

Two more modes share this command: `--open-loop` (bench/scaleout_open.py) offers fixed rates
and searches each node count's capacity, saying which bound refused each rate tried;
`--processes` (bench/scaleout_processes.py) runs real `okuri serve` nodes under one offered
rate, 1 node beside N, with the simulator's run at that rate beside them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bench.cost import (
    LatencyModel,
    per_message,
    prices,
    pricing_note,
    requests_usd_per_million,
)
from bench.flags import bounded
from bench.latency_proxy import LATENCY_MS_MAX
from bench.servers import BenchError
from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Engine, SendRequest
from okuri.errors import PreconditionFailed
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.counting import CLASSES, CountingStore
from okuri.store.forwarding import ForwardingStore
from okuri.store.port import ObjectStore

NODE_COUNTS = (1, 2, 4, 8, 16)
NODE_COUNT_MAX = 64
PRODUCERS_PER_NODE = 2
CONSUMERS_PER_NODE = 4
BATCH_MESSAGES = limits.batch_entries_max
BODY_BYTES = 100
WAIT_S = 5  # consumers' long poll
DURATION_S = 20.0  # of simulated time, per node count
DURATION_S_MAX = 600.0
MESSAGES_PER_PRODUCER_MAX = 50_000
DRAIN_S_MAX = 60.0
LATENCY = LatencyModel(read_ms_median=20.0, write_ms_median=35.0)
QUEUE = "scaleout"
PEER_HOP_S = 0.0005  # a request between nodes in one region, each way


class CasTally(ForwardingStore):
    """Wraps a store; counts compare-and-swaps that landed and those refused with a 412, in all
    and per object.

    Only a manifest is ever written by compare-and-swap (segments are create-only), so these are
    the node's manifest commits and its lost races for the manifest. Per object, because S3
    lands conditional writes made one after another on one key about 15 times a second: a
    cluster that leans on more than that for one manifest is bound by it, whatever the nodes.
    """

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.commits = 0
        self.conflicts = 0
        self.by_key: Counter[str] = Counter()

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        self.by_key[key] += 1
        try:
            etag = await self.inner.put_if_match(key, data, etag)
        except PreconditionFailed:
            self.conflicts += 1
            raise
        self.commits += 1
        return etag

    def reset(self) -> None:
        self.commits = self.conflicts = 0
        self.by_key.clear()


def busiest_object_per_s(tallies: Sequence[CasTally], seconds: float) -> float:
    """The cluster's conditional writes (landed or refused) on its busiest object, per second."""
    total: Counter[str] = Counter()
    for tally in tallies:
        total.update(tally.by_key)
    return round(max(total.values(), default=0) / seconds, 1)


class _Wire:
    """The network between the simulated nodes: a commit forwarded to a queue's leader
    (okuri/engine/peering.py) reaches it after one hop each way."""

    def __init__(self) -> None:
        self.nodes: dict[str, Engine] = {}

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        await asyncio.sleep(PEER_HOP_S)
        reply = await self.nodes[url].commit_for_peer(body)
        await asyncio.sleep(PEER_HOP_S)
        return reply


@dataclass
class _Node:
    counting: CountingStore
    tally: CasTally
    engine: Engine


@dataclass
class _Totals:
    sent: int = 0
    deleted: int = 0
    deleted_in_window: int = 0


async def _run(nodes: int, duration_s: float, seed: int) -> dict[str, Any]:
    memory = LATENCY.store("scaleout", seed)
    cluster = []
    wire = _Wire()
    for i in range(nodes):
        counting = CountingStore(memory)
        tally = CasTally(counting)
        clock = LoopClock(EPOCH_MS, random.Random(f"scaleout-{seed}-n{i}"))
        engine = Engine(tally, clock, limits.linger_ms_default, node_id=f"n{i}")
        engine.peering.client, engine.peering.url = wire, f"sim://n{i}"
        wire.nodes[engine.peering.url] = engine
        cluster.append(_Node(counting, tally, engine))
    await cluster[0].engine.create_queue(QUEUE)
    for node in cluster:
        node.counting.counts.by_class = dict.fromkeys(CLASSES, 0)
        node.tally.reset()
    loop = asyncio.get_running_loop()
    start = loop.time()
    stop = start + duration_s
    totals = _Totals()
    producing = [True]
    drained = asyncio.Event()
    body = b"x" * BODY_BYTES

    async def produce(engine: Engine) -> None:
        sent = 0
        while loop.time() < stop and sent < MESSAGES_PER_PRODUCER_MAX:
            results = await engine.send(QUEUE, [SendRequest(body)] * BATCH_MESSAGES)
            ok = sum(1 for r in results if not isinstance(r, Exception))
            sent += ok
            totals.sent += ok

    async def consume(engine: Engine) -> None:
        while producing[0] or totals.deleted < totals.sent:
            got = await engine.receive(QUEUE, limits.receive_messages_max, None, WAIT_S)
            if not got:
                continue
            results = await engine.ack(QUEUE, [d.receipt_handle for d in got])
            done = sum(1 for r in results if r == "acked")
            totals.deleted += done
            if loop.time() <= stop:
                totals.deleted_in_window += done
            if not producing[0] and totals.deleted >= totals.sent:
                drained.set()

    producers = [
        asyncio.ensure_future(produce(node.engine))
        for node in cluster
        for _ in range(PRODUCERS_PER_NODE)
    ]
    consumers = [
        asyncio.ensure_future(consume(node.engine))
        for node in cluster
        for _ in range(CONSUMERS_PER_NODE)
    ]
    await asyncio.gather(*producers)
    producing[0] = False
    if totals.deleted < totals.sent:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drained.wait(), DRAIN_S_MAX)
    backlog = totals.sent - totals.deleted
    for task in consumers:
        task.cancel()
    await asyncio.gather(*consumers, return_exceptions=True)
    counts = dict.fromkeys(CLASSES, 0)
    for node in cluster:
        for cls, n in node.counting.counts.snapshot().items():
            counts[cls] += n
    for node in cluster:
        await node.engine.close()
    requests = per_message(counts, totals.deleted)
    requests["delete"] = counts["delete"] / max(totals.deleted, 1)
    return {
        "nodes": nodes,
        "messages_sent": totals.sent,
        "messages_deleted": totals.deleted,
        "backlog_left": backlog,
        "sent_per_s": round(totals.sent / duration_s, 1),
        "deleted_per_s": round(totals.deleted_in_window / duration_s, 1),
        "commits_per_node_per_s": round(
            sum(n.tally.commits for n in cluster) / nodes / duration_s, 2
        ),
        "conflicts_per_node_per_s": round(
            sum(n.tally.conflicts for n in cluster) / nodes / duration_s, 2
        ),
        "cas_per_s_busiest_object": busiest_object_per_s([n.tally for n in cluster], duration_s),
        "requests_per_message": {cls: round(v, 4) for cls, v in requests.items()},
        "usd_per_million": round(requests_usd_per_million(requests), 4),
    }


def measure(
    node_counts: Sequence[int] = NODE_COUNTS, duration_s: float = DURATION_S, seed: int = 1
) -> dict[str, Any]:
    if not 0 < duration_s <= DURATION_S_MAX:
        raise ValueError(f"duration must be in (0, {DURATION_S_MAX}] seconds")
    if not node_counts or not all(0 < n <= NODE_COUNT_MAX for n in node_counts):
        raise ValueError(f"node counts must be 1 to {NODE_COUNT_MAX}")
    return {
        "workload": {
            "producers_per_node": PRODUCERS_PER_NODE,
            "consumers_per_node": CONSUMERS_PER_NODE,
            "batch_messages": BATCH_MESSAGES,
            "linger_ms": limits.linger_ms_default,
            "duration_s": duration_s,
        },
        "latency_model": LATENCY.figures(),
        "prices_usd_per_million": prices(),
        "rows": [run_virtual(_run(n, duration_s, seed)) for n in node_counts],
    }


COLUMNS = ("plain", "cas", "get", "list", "delete")


def render(result: dict[str, Any]) -> str:
    w = result["workload"]
    lines = [
        f"one queue, {w['producers_per_node']} producers and {w['consumers_per_node']} consumers "
        f"per node (closed loop, batches of {w['batch_messages']}), linger {w['linger_ms']} ms, "
        f"{w['duration_s']:.0f} s of simulated time per row",
        " " * 66 + "requests per message",
        "nodes   sent/s  deleted/s  commits/node/s  conflicts/node/s  cas/s/object "
        + " ".join(c.rjust(6) for c in COLUMNS)
        + "   $/M msgs",
    ]
    for r in result["rows"]:
        per = r["requests_per_message"]
        lines.append(
            f"{r['nodes']:5d} {r['sent_per_s']:8.0f} {r['deleted_per_s']:10.0f}"
            f" {r['commits_per_node_per_s']:15.1f} {r['conflicts_per_node_per_s']:17.1f}"
            f" {r['cas_per_s_busiest_object']:12.1f} "
            + " ".join(f"{per[c]:6.3f}" for c in COLUMNS)
            + f"   {r['usd_per_million']:8.2f}"
            + (f"   ({r['backlog_left']} left undeleted)" if r["backlog_left"] else "")
        )
    lines += [
        "",
        "plain: create-only PUTs (segments), cas: manifest compare-and-swaps (commits and "
        "conflicts), per message deleted",
        "cas/s/object: the cluster's compare-and-swaps on its busiest manifest, per second",
        pricing_note(result["latency_model"], "latency"),
    ]
    return "\n".join(lines)


STORE_CHOICES = ("local", "s3", "both")
OPEN_LOOP_FLAGS = ("window_s", "steps", "consumers_per_node", "start_rate", "fifo_groups")
PROCESS_FLAGS = ("store", "rate", "latency_ms")


def build_parser() -> argparse.ArgumentParser:
    # Imported here: the open-loop and process modules build on this one's constants.
    from bench import scaleout_fifo, scaleout_open, scaleout_processes

    parser = argparse.ArgumentParser(
        prog="python -m bench scaleout",
        description="one queue on 1 to 16 simulated nodes: throughput, contention and cost",
    )
    add = parser.add_argument
    add(
        "--nodes",
        type=lambda s: tuple(int(n) for n in s.split(",")),
        default=None,
        help="node counts, comma-separated (default 1,2,4,8,16; with --processes 1,3)",
    )
    add("--duration", type=float, default=DURATION_S, help="simulated seconds of load per row")
    add("--seed", type=int, default=1)
    add("--json", action="store_true", help="print one JSON object")
    add(
        "--open-loop",
        action="store_true",
        help="offer fixed rates instead: each node count's capacity (bench/scaleout_open.py)",
    )
    add(
        "--processes",
        action="store_true",
        help="real okuri serve processes under one offered rate, 1 node beside N, with the "
        "simulator's run beside them (bench/scaleout_processes.py)",
    )
    add(
        "--window-s",
        type=bounded(float, 0.1, max(scaleout_open.WINDOW_S_MAX, scaleout_processes.SECONDS_MAX)),
        default=None,
        help="open loop: simulated seconds per rate (60); processes: the measured window (20)",
    )
    add("--steps", type=int, default=None, help="open loop: runs per node count")
    add(
        "--consumers-per-node",
        type=int,
        default=None,
        help="open loop and processes: consumers per node (open loop 32, processes 8)",
    )
    add(
        "--start-rate",
        type=bounded(float, scaleout_open.RATE_MIN, scaleout_open.RATE_MAX),
        default=None,
        metavar="PER_NODE",
        help=f"open loop: messages/s per node the search starts from "
        f"({scaleout_open.START_RATE_PER_NODE:g})",
    )
    add(
        "--fifo-groups",
        type=bounded(int, 1, scaleout_fifo.GROUPS_MAX),
        default=None,
        help="open loop: a high-throughput FIFO queue whose messages spread over so many "
        "groups; a rate counts only with order in each group and no duplicate delivered",
    )
    add(
        "--store",
        choices=STORE_CHOICES,
        default=None,
        help="processes: what the nodes share: a directory, a bucket on moto's S3 behind the "
        "latency proxy, or both in turn (s3)",
    )
    add(
        "--rate",
        type=bounded(float, scaleout_processes.RATE_MIN, scaleout_processes.RATE_MAX),
        default=None,
        help=f"processes: messages/s offered in all, the same on every node count "
        f"({scaleout_processes.RATE_DEFAULT:g})",
    )
    add(
        "--latency-ms",
        type=bounded(float, 0, LATENCY_MS_MAX),
        default=None,
        help=f"processes: the proxy's delay of each S3 answer "
        f"({scaleout_processes.LATENCY_MS_DEFAULT:g})",
    )
    return parser


def _given(args: argparse.Namespace, names: Sequence[str]) -> bool:
    return any(getattr(args, name) is not None for name in names)


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def cli_main(argv: list[str]) -> int:
    from bench import scaleout_open, scaleout_processes

    parser = build_parser()
    args = parser.parse_args(argv)
    if args.open_loop and args.processes:
        parser.error("--open-loop and --processes are two modes: give one")
    if not args.processes and _given(args, PROCESS_FLAGS):
        parser.error("--store, --rate and --latency-ms need --processes")
    if args.processes and _given(args, ("steps", "start_rate", "fifo_groups")):
        parser.error("--steps, --start-rate and --fifo-groups need --open-loop")
    if not args.open_loop and not args.processes and _given(args, OPEN_LOOP_FLAGS):
        parser.error(
            "--window-s, --steps, --consumers-per-node, --start-rate and --fifo-groups need "
            "--open-loop"
        )
    if args.processes:
        store = _or(args.store, "s3")
        opts = scaleout_processes.Options(
            node_counts=_or(args.nodes, scaleout_processes.NODE_COUNTS),
            stores=scaleout_processes.STORES if store == "both" else (store,),
            rate_per_s=_or(args.rate, scaleout_processes.RATE_DEFAULT),
            seconds=_or(args.window_s, scaleout_processes.SECONDS_DEFAULT),
            consumers_per_node=_or(args.consumers_per_node, scaleout_processes.CONSUMERS_PER_NODE),
            latency_ms=_or(args.latency_ms, scaleout_processes.LATENCY_MS_DEFAULT),
            seed=args.seed,
        )
        try:
            opts.check()
        except ValueError as err:
            parser.error(str(err))
        try:
            real = scaleout_processes.measure(opts)
        except BenchError as err:
            print(f"python -m bench scaleout: error: {err}", file=sys.stderr)
            return 1
        print(json.dumps(real) if args.json else scaleout_processes.render(real))
        return 0
    nodes = _or(args.nodes, NODE_COUNTS)
    if not args.open_loop:
        try:
            result = measure(nodes, args.duration, args.seed)
        except ValueError as err:
            parser.error(str(err))
        print(json.dumps(result) if args.json else render(result))
        return 0
    try:
        opened = scaleout_open.measure(
            nodes,
            _or(args.window_s, scaleout_open.WINDOW_S),
            args.seed,
            _or(args.steps, scaleout_open.STEPS),
            _or(args.consumers_per_node, scaleout_open.CONSUMERS_PER_NODE),
            _or(args.start_rate, scaleout_open.START_RATE_PER_NODE),
            _or(args.fifo_groups, 0),
        )
    except ValueError as err:
        parser.error(str(err))
    print(json.dumps(opened) if args.json else scaleout_open.render(opened))
    return 0


if __name__ == "__main__":
    sys.exit(cli_main(sys.argv[1:]))
