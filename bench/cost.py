"""`python -m bench cost`: what a message costs in object-store requests, from a seeded simulation.

The workload runs on virtual time against the in-memory store with an S3-like latency model, so
ten simulated minutes take seconds and every run prints the same numbers. Each node counts its
own requests: node 1 only produces, node 2 only consumes, which splits the bill cleanly into
"per message produced" and "per message consumed".

Two request shapes, one per surface. The SQS rows send each message with its own SendMessage
and consume with ReceiveMessage and DeleteMessageBatch of 10; the native rows ("native ...")
produce 100 items per request and lease and complete 100 at a time (one engine receive, one
engine ack), as the native HTTP API allows. Each native row is printed beside the SQS row of
the same linger and rate, when there is one, with the ratio and the requests by class.

Latency model (S3 Standard-like): every request takes a lognormal time, median 15 ms for reads
and 30 ms for writes, sigma 0.5 (p99 about 3.2x the median). The model, the prices and the
arithmetic from request counts to dollars are shared with bench/scaleout.py, which prices
a queue on many nodes the same way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench import scaleout_fifo
from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Engine, QueueAttrs, SendRequest
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.counting import CountingStore
from okuri.store.memory import Faults, MemoryStore

PUT_CLASS_USD_PER_MILLION = 5.00
GET_CLASS_USD_PER_MILLION = 0.40
QUEUE = "bench"
IDLE_FIFO_QUEUE = "bench.fifo"


@dataclass(frozen=True)
class LatencyModel:
    """S3 Standard-like request times: lognormal around these medians (sigma 0.5: the p99 is
    about 3.2 times the median)."""

    read_ms_median: float
    write_ms_median: float
    sigma: float = 0.5

    def store(self, name: str, seed: int) -> MemoryStore:
        """A fresh in-memory bucket answering in this time; its clock and its latency draws are
        seeded by `name` and `seed`, so a run prints the same figures every time."""
        return MemoryStore(
            clock=LoopClock(EPOCH_MS, random.Random(f"{name}-store-{seed}")),
            rng=random.Random(f"{name}-latency-{seed}"),
            faults=Faults(
                enabled=True,
                latency_ms_median=self.read_ms_median,
                write_latency_ms_median=self.write_ms_median,
                latency_sigma=self.sigma,
            ),
        )

    def figures(self) -> dict[str, float]:
        return {
            "read_ms_median": self.read_ms_median,
            "write_ms_median": self.write_ms_median,
            "lognormal_sigma": self.sigma,
        }


IDLE_HOURS = 1.0
LATENCY = LatencyModel(read_ms_median=15.0, write_ms_median=30.0)


SQS_BATCH = 10  # ReceiveMessage and DeleteMessageBatch take at most 10 messages
NATIVE_BATCH = 100  # a native produce, lease or complete takes up to 100 items


@dataclass(frozen=True)
class Scenario:
    linger_ms: int
    rate_per_s: int
    duration_s: float
    fifo_groups: int = 0  # 0: a standard queue; N: a FIFO queue, messages over N groups
    # The surface's request shape. SQS: each message its own SendMessage, consumers receive
    # and delete 10 at a time. Native: producers send 100 items per request, consumers lease
    # 100 (one engine receive) and complete them in one request.
    native: bool = False

    @property
    def queue(self) -> str:
        return QUEUE + ".fifo" if self.fifo_groups else QUEUE

    @property
    def produce_batch(self) -> int:
        """Messages per produce request."""
        return NATIVE_BATCH if self.native else 1

    @property
    def lease_batch(self) -> int:
        """Messages per receive (lease) and per delete (complete) request, at most."""
        return NATIVE_BATCH if self.native else SQS_BATCH

    def label(self) -> str:
        """The row's name in the table: `linger 100ms @1000/s FIFO/100`, `native 100ms @1000/s`."""
        label = f"native {self.linger_ms}ms" if self.native else f"linger {self.linger_ms}ms"
        if self.rate_per_s != 100:
            label += f" @{self.rate_per_s}/s"
        if self.fifo_groups:
            label += f" FIFO/{self.fifo_groups}"
        return label

    @classmethod
    def of_row(cls, row: dict[str, Any]) -> Scenario:
        """The scenario a row of `measure()` was run with (its duration aside)."""
        return cls(
            row["linger_ms"],
            row["rate_per_s"],
            0.0,
            row.get("fifo_groups", 0),
            row.get("surface") == "native",
        )

    def request(self, i: int) -> SendRequest:
        body = b"m%d" % i
        if not self.fifo_groups:
            return SendRequest(body)
        return SendRequest(body, group_id=f"g{i % self.fifo_groups}", dedup_id=f"d{i}")


SCENARIOS = (
    Scenario(20, 100, 600.0),
    Scenario(100, 100, 600.0),
    Scenario(500, 100, 600.0),
    Scenario(100, 1000, 600.0),
    Scenario(100, 100, 600.0, fifo_groups=100),
    Scenario(20, 1000, 600.0, native=True),
    Scenario(100, 1000, 600.0, native=True),
    Scenario(500, 1000, 600.0, native=True),
)
# Request classes as the comparison of surfaces prices them: segments are create-only PUTs,
# commits the manifest's compare-and-swaps, both at the PUT-class rate like LISTs.
CLASS_PRICES = (
    ("segment PUT", "plain", PUT_CLASS_USD_PER_MILLION),
    ("CAS commit", "cas", PUT_CLASS_USD_PER_MILLION),
    ("GET", "get", GET_CLASS_USD_PER_MILLION),
    ("LIST", "list", PUT_CLASS_USD_PER_MILLION),
)


def prices() -> dict[str, float]:
    return {"put_class": PUT_CLASS_USD_PER_MILLION, "get_class": GET_CLASS_USD_PER_MILLION}


def pricing_note(latency: dict[str, float], latency_label: str) -> str:
    """The closing line of a table: the prices, and the latency model from its `figures()`."""
    return (
        f"prices: ${PUT_CLASS_USD_PER_MILLION:.2f}/M PUT/LIST-class, "
        f"${GET_CLASS_USD_PER_MILLION:.2f}/M GET-class, DELETE free; {latency_label}: lognormal, "
        f"median {latency['read_ms_median']:.0f} ms reads / {latency['write_ms_median']:.0f} ms "
        f"writes, sigma {latency['lognormal_sigma']}"
    )


def per_message(counts: dict[str, int], messages: int) -> dict[str, float]:
    n = max(messages, 1)
    plain, cas = counts["put"] / n, counts["cas"] / n
    return {
        "plain": plain,
        "cas": cas,
        "write": plain + cas,
        "get": counts["get"] / n,
        "list": counts["list"] / n,
    }


def usd_per_million(produced: dict[str, float], consumed: dict[str, float]) -> float:
    return requests_usd_per_million(produced) + requests_usd_per_million(consumed)


def requests_usd_per_million(requests: dict[str, float]) -> float:
    """Dollars per million messages for `requests` per message (as `per_message` gives them):
    writes and LISTs at the PUT-class rate, GETs at the GET-class rate, DELETEs free."""
    put_class = requests["write"] + requests["list"]
    return put_class * PUT_CLASS_USD_PER_MILLION + requests["get"] * GET_CLASS_USD_PER_MILLION


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _run(scenario: Scenario, seed: int) -> dict[str, Any]:
    memory = LATENCY.store("bench", seed)
    producer_store, consumer_store = CountingStore(memory), CountingStore(memory)
    loop = asyncio.get_running_loop()
    node1 = Engine(
        producer_store,
        LoopClock(EPOCH_MS, random.Random(f"bench-n1-{seed}")),
        scenario.linger_ms,
        node_id="n1",
    )
    node2 = Engine(
        consumer_store,
        LoopClock(EPOCH_MS, random.Random(f"bench-n2-{seed}")),
        scenario.linger_ms,
        node_id="n2",
    )
    queue = scenario.queue
    await node1.create_queue(queue, QueueAttrs(fifo=bool(scenario.fifo_groups)))
    producer_store.counts.by_class = dict.fromkeys(producer_store.counts.by_class, 0)
    sent_at: dict[bytes, float] = {}
    latencies: list[float] = []
    consumed = 0
    stop = loop.time() + scenario.duration_s
    inflight: set[asyncio.Task[Any]] = set()

    produced = 0

    async def send(first: int) -> None:
        requests = [scenario.request(i) for i in range(first, first + scenario.produce_batch)]
        for request in requests:
            sent_at[request.body] = loop.time()
        results = await node1.send(queue, requests)
        failed = next((r for r in results if isinstance(r, Exception)), None)
        if failed is not None:
            raise failed

    async def produce() -> None:
        nonlocal produced
        interval = scenario.produce_batch / scenario.rate_per_s
        while loop.time() < stop:
            task = asyncio.ensure_future(send(produced))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
            produced += scenario.produce_batch
            await asyncio.sleep(interval)

    async def consume() -> None:
        nonlocal consumed
        while loop.time() < stop:
            got = await node2.receive(queue, scenario.lease_batch, None, 20)
            now = loop.time()
            for d in got:
                start = sent_at.pop(d.message.body, None)
                if start is not None:
                    latencies.append(now - start)
            if got:
                await node2.ack(queue, [d.receipt_handle for d in got])
                consumed += len(got)

    tasks = [asyncio.ensure_future(produce())] + [
        asyncio.ensure_future(consume()) for _ in range(2)
    ]
    await asyncio.gather(*tasks)
    if inflight:
        await asyncio.gather(*inflight, return_exceptions=True)
    prod = per_message(producer_store.counts.snapshot(), produced)
    cons = per_message(consumer_store.counts.snapshot(), consumed)
    await node1.close()
    await node2.close()
    return {
        "linger_ms": scenario.linger_ms,
        "rate_per_s": scenario.rate_per_s,
        "fifo_groups": scenario.fifo_groups,
        "surface": "native" if scenario.native else "sqs",
        "produce_batch": scenario.produce_batch,
        "lease_batch": scenario.lease_batch,
        "produced_messages": produced,
        "consumed_messages": consumed,
        "consumed_per_s": round(consumed / scenario.duration_s, 1),
        "produced": prod,
        "consumed": cons,
        "usd_per_million": round(usd_per_million(prod, cons), 4),
        "send_to_receive_ms": {
            "p50": round(_percentile(latencies, 0.50) * 1000, 1),
            "p99": round(_percentile(latencies, 0.99) * 1000, 1),
        },
    }


async def _idle(seed: int, hours: float = IDLE_HOURS, partitioned: bool = False) -> float:
    """Dollars per hour of one empty queue with two long-polling consumers on one node.
    `partitioned`: a high-throughput FIFO queue (its groups over partitions, each probed),
    after ten messages went through it."""
    memory = LATENCY.store("bench", seed)
    store = CountingStore(memory)
    clock = LoopClock(EPOCH_MS, random.Random(f"bench-idle-{seed}"))
    node = Engine(store, clock, 100, "idle", fifo_partitions=limits.fifo_partitions)
    name = IDLE_FIFO_QUEUE if partitioned else QUEUE
    await node.create_queue(name, scaleout_fifo.ATTRS if partitioned else None)
    if partitioned:
        await node.send(
            name, [SendRequest(b"x", group_id=f"g{i}", dedup_id=str(i)) for i in range(10)]
        )
        while got := await node.receive(name, 10, None, 1):
            await node.ack(name, [d.receipt_handle for d in got])
    store.counts.by_class = dict.fromkeys(store.counts.by_class, 0)
    loop = asyncio.get_running_loop()
    stop = loop.time() + hours * 3600

    async def poller() -> None:
        while loop.time() < stop:
            await node.receive(name, 10, None, 20)

    await asyncio.gather(poller(), poller())
    usd = requests_usd_per_million(per_message(store.counts.snapshot(), 1)) / 1e6
    await node.close()
    return usd / hours


def measure(seed: int = 1, progress: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """Every scenario's row and the idle figure; `progress` hears of each run as it starts,
    since the whole takes a few minutes of real time."""
    rows = []
    steps = len(SCENARIOS) + 1
    for i, scenario in enumerate(SCENARIOS, 1):
        progress(f"{i}/{steps}: {scenario.label()}, {scenario.duration_s:.0f} simulated s")
        rows.append(run_virtual(_run(scenario, seed)))
    progress(f"{steps}/{steps}: one idle queue, {IDLE_HOURS:g} simulated hours, twice")
    idle = run_virtual(_idle(seed))
    idle_partitioned = run_virtual(_idle(seed, partitioned=True))
    return {
        "prices_usd_per_million": prices(),
        "latency_model": LATENCY.figures(),
        "rows": rows,
        "native_vs_sqs": compare_surfaces(rows),
        "idle_usd_per_queue_hour": round(idle, 6),
        "idle_partitioned_fifo_usd_per_queue_hour": round(idle_partitioned, 6),
    }


def by_class(row: dict[str, Any]) -> dict[str, dict[str, float]]:
    """A row's requests per message and dollars per million messages, by request class,
    producer and consumer sides added."""
    out: dict[str, dict[str, float]] = {}
    for name, key, usd in CLASS_PRICES:
        per_message = row["produced"][key] + row["consumed"][key]
        out[name] = {
            "per_message": round(per_message, 4),
            "usd_per_million": round(per_message * usd, 4),
        }
    return out


def compare_surfaces(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each native row beside the SQS row of the same linger, rate and queue kind, if any."""
    sqs = {
        (r["linger_ms"], r["rate_per_s"], r.get("fifo_groups", 0)): r
        for r in rows
        if r.get("surface", "sqs") == "sqs"
    }
    pairs = []
    for native in rows:
        if native.get("surface") != "native":
            continue
        peer = sqs.get((native["linger_ms"], native["rate_per_s"], native.get("fifo_groups", 0)))
        if peer is None:
            continue
        pairs.append(
            {
                "native": Scenario.of_row(native).label(),
                "sqs": Scenario.of_row(peer).label(),
                "native_usd_per_million": native["usd_per_million"],
                "sqs_usd_per_million": peer["usd_per_million"],
                "ratio": round(native["usd_per_million"] / peer["usd_per_million"], 2)
                if peer["usd_per_million"] > 0
                else None,
                "native_by_class": by_class(native),
                "sqs_by_class": by_class(peer),
            }
        )
    return pairs


def render_comparison(pair: dict[str, Any]) -> list[str]:
    """Lines of one native-vs-SQS comparison: the ratio, then requests and dollars by class."""
    ratio = "-" if pair["ratio"] is None else f"{pair['ratio']:.2f}x"
    lines = [
        f"native surface ({pair['native']}) against SQS surface ({pair['sqs']}): "
        f"${pair['native_usd_per_million']:.2f} against ${pair['sqs_usd_per_million']:.2f} "
        f"per million messages, native/SQS {ratio}",
        "  requests per message (produced + consumed)    native     sqs   native $/M   sqs $/M",
    ]
    for name, _, _ in CLASS_PRICES:
        n, q = pair["native_by_class"][name], pair["sqs_by_class"][name]
        lines.append(
            f"  {name:<44}{n['per_message']:7.3f} {q['per_message']:7.3f}"
            f"   {n['usd_per_million']:10.3f} {q['usd_per_million']:9.3f}"
        )
    return lines


def render(result: dict[str, Any]) -> str:
    cols = ("plain", "cas", "write", "get", "list")
    head = "per message produced".ljust(31) + "per message consumed"
    lines = [
        " " * 24 + head,
        "setting".ljust(24)
        + " ".join(c.rjust(5) for c in cols)
        + "  "
        + " ".join(c.rjust(5) for c in cols)
        + "   $/M msgs   p50 ms   p99 ms   consumed/s",
    ]
    for r in result["rows"]:
        label = Scenario.of_row(r).label()
        lines.append(
            label.ljust(24)
            + " ".join(f"{r['produced'][c]:5.2f}" for c in cols)
            + "  "
            + " ".join(f"{r['consumed'][c]:5.2f}" for c in cols)
            + f"   {r['usd_per_million']:8.2f}"
            + f"   {r['send_to_receive_ms']['p50']:6.0f}   {r['send_to_receive_ms']['p99']:6.0f}"
            + f"   {r['consumed_per_s']:10.0f}"
        )
    for pair in result.get("native_vs_sqs", ()):
        lines += ["", *render_comparison(pair)]
    lines.append("")
    lines.append(
        f"idle: one empty queue, two long-polling consumers: "
        f"${result['idle_usd_per_queue_hour']:.5f} per queue-hour; a high-throughput FIFO "
        f"queue (8 partitions, each probed): "
        f"${result['idle_partitioned_fifo_usd_per_queue_hour']:.5f}"
    )
    lines.append(pricing_note(result["latency_model"], "latency model"))
    return "\n".join(lines)


def cli_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cost")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    started = time.monotonic()

    def progress(line: str) -> None:
        elapsed = time.monotonic() - started
        print(f"python -m bench cost: [{elapsed:5.1f} s] {line}", file=sys.stderr, flush=True)

    result = measure(args.seed, progress)
    print(json.dumps(result) if args.json else render(result))
    return 0
