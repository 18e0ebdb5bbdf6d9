"""`python -m bench scaleout --open-loop`: the highest rate one queue carries, per node count.

Why: the closed-loop table (bench/scaleout.py) offers whatever its clients manage, so it shows
where throughput levels off but not what a cluster can carry. Here producers offer a fixed rate
(messages/s, in batches of ten, spread evenly over `PRODUCERS_PER_NODE` producers on each node)
whether or not earlier sends were answered, and each node's `consumers_per_node` consumers
receive (long poll, up to ten) and delete as fast as they are answered. A rate is carried when,
after `window_s` of simulated time at that rate and `GRACE_S` more for the last sends to
arrive, at least `DELETED_FRACTION_MIN` of the messages offered were deleted, the p99 from
offer to first receive (a message never received counts as slower than any) is at most
`P99_S_MAX`, and no producer dropped a batch at its in-flight cap: the backlog stayed bounded.
Each run names the bounds that refused it (`refused_by`) and the simulated time each engine
call took (send, a receive that returned messages, ack: p50/p90/p99), so a refused rate says
why. For each node count a bounded search finds the highest carried rate: from a start rate,
double while carried (halve while not), then bisect, at most `steps` runs. The search looks
only at simulated figures, so it is the same on every machine.

CPU: the simulator charges no time for computation, so each node's work is timed in real
seconds (bench/cpu_meter.py says how) and divided by the simulated seconds of the window; a row
counts only while every node stays under `CPU_CORE_FRACTION_MAX` of a core. That figure is the
machine's, and it includes the in-memory store's work in place of an S3 client's.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from time import process_time
from typing import Any

from bench import scaleout_fifo as fifo
from bench.cost import per_message, pricing_note, requests_usd_per_million
from bench.cpu_meter import CpuMeter
from bench.floor import machine_loop_s
from bench.measure import LatencyHistogram
from bench.scaleout import (
    BATCH_MESSAGES,
    BODY_BYTES,
    LATENCY,
    NODE_COUNT_MAX,
    PEER_HOP_S,
    PRODUCERS_PER_NODE,
    QUEUE,
    WAIT_S,
    CasTally,
    busiest_object_per_s,
)
from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Engine, SendRequest
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.counting import CLASSES, CountingStore

WINDOW_S = 60.0  # simulated seconds at each offered rate
WINDOW_S_MAX = 600.0
GRACE_S = 3.0  # after the window, for the last sends to be received and deleted
# A consumer that receives ten and deletes them carries 100 to 200 messages/s on this latency
# model (`python -m bench consumers`): 32 a node carry several thousand, so the search finds what
# the queue carries, not what eight clients do.
CONSUMERS_PER_NODE = 32
CONSUMERS_PER_NODE_MAX = 64
START_RATE_PER_NODE = 800.0  # messages/s: about half what one node carries
RATE_MAX = 100_000.0  # messages/s: the search never offers more
RATE_MIN = 10.0  # one batch a second
STEPS = 8
STEPS_MAX = 16
RESOLUTION = 0.05  # the search stops once the bracket is this narrow, relative to its low end
DELETED_FRACTION_MIN = 0.98
P99_S_MAX = 1.0
CPU_CORE_FRACTION_MAX = 0.7
SENDS_IN_FLIGHT_MAX = 200  # per producer: a batch offered beyond this is dropped (not carried)
# The bounds a run can break, as `refused_by` names them, in this order.
BOUND_DELETED = "deleted"  # under DELETED_FRACTION_MIN of the offered messages deleted
BOUND_P99 = "p99"  # offer to first receive above P99_S_MAX at the 99th percentile
BOUND_DROPPED = "dropped"  # a producer dropped batches at SENDS_IN_FLIGHT_MAX
BOUNDS = (BOUND_DELETED, BOUND_P99, BOUND_DROPPED)
OPERATIONS = ("send", "receive", "ack")  # engine calls timed; a receive only when it got some
QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}
CPU_METHOD = (
    "cpu: each node's engine and store work timed with perf_counter per task step (the "
    "simulated nodes share one process), per simulated second of the window; a row counts only "
    "while every "
    f"node stays under {CPU_CORE_FRACTION_MAX} of a core"
)


@dataclass
class _Tally:
    offered: int = 0
    dropped: int = 0
    deleted: int = 0
    received: set[int] = field(default_factory=set)
    latencies_s: list[float] = field(default_factory=list)
    # Simulated seconds per engine call, by operation (OPERATIONS).
    calls: dict[str, LatencyHistogram] = field(
        default_factory=lambda: {op: LatencyHistogram() for op in OPERATIONS}
    )


class _Wire:
    """The network between the simulated nodes (as bench/scaleout.py's), charging a forwarded
    commit's work to the leader that does it."""

    def __init__(self, meter: CpuMeter) -> None:
        self.meter = meter
        self.nodes: dict[str, tuple[str, Engine]] = {}

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        await asyncio.sleep(PEER_HOP_S)
        label, leader = self.nodes[url]
        reply = await self.meter.on_node(label, leader.commit_for_peer(body))
        await asyncio.sleep(PEER_HOP_S)
        return reply


def _p99_s(latencies_s: list[float], never: int) -> float:
    """The 99th percentile, counting `never` messages as slower than any."""
    ordered = sorted(latencies_s) + [math.inf] * never
    if not ordered:
        return math.inf
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def refused_by(offered: int, deleted: int, dropped: int, p99_s: float) -> list[str]:
    """The bounds a run broke (BOUNDS' order); empty when the rate was carried.

    Pure, and only over simulated figures, so the search it steers is the same everywhere."""
    broken = []
    if deleted < DELETED_FRACTION_MIN * offered:
        broken.append(BOUND_DELETED)
    if p99_s > P99_S_MAX:
        broken.append(BOUND_P99)
    if dropped > 0:
        broken.append(BOUND_DROPPED)
    return broken


def _percentiles_ms(hist: LatencyHistogram) -> dict[str, float | None]:
    """p50/p90/p99 of one operation's calls in ms (None: no call made)."""
    return {
        name: None if (ms := hist.percentile_ms(q)) is None else round(ms, 1)
        for name, q in QUANTILES.items()
    }


async def _run(
    nodes: int, rate: float, window_s: float, consumers_per_node: int, seed: int, fifo_groups: int
) -> dict[str, Any]:
    """One run at `rate` messages/s offered: what was carried, at what cost and CPU.
    `fifo_groups`: 0 for a standard queue, else a FIFO queue's groups (bench/scaleout_fifo.py)."""
    loop = asyncio.get_running_loop()
    meter = CpuMeter()
    meter.install(loop)
    memory = LATENCY.store("scaleout", seed)
    wire = _Wire(meter)
    cluster: list[tuple[str, CountingStore, Engine]] = []
    tallies: list[CasTally] = []
    for i in range(nodes):
        counting = CountingStore(memory)
        tallies.append(CasTally(counting))
        clock = LoopClock(EPOCH_MS, random.Random(f"scaleout-{seed}-n{i}"))
        engine = Engine(
            tallies[-1],
            clock,
            limits.linger_ms_default,
            node_id=f"n{i}",
            fifo_partitions=limits.fifo_partitions,  # OKURI_FIFO_PARTITIONS=on
        )
        engine.peering.client, engine.peering.url = wire, f"sim://n{i}"
        wire.nodes[engine.peering.url] = (f"n{i}", engine)
        cluster.append((f"n{i}", counting, engine))
    queue = fifo.QUEUE if fifo_groups else QUEUE
    await cluster[0][2].create_queue(queue, fifo.ATTRS if fifo_groups else None)
    check = fifo.FifoCheck(fifo_groups) if fifo_groups else None
    for _, counting, _ in cluster:
        counting.counts.by_class = dict.fromkeys(CLASSES, 0)
    for t in tallies:
        t.reset()
    meter.seconds.clear()
    cpu_start = process_time()
    start = loop.time()
    stop = start + window_s
    end = stop + GRACE_S
    producers = nodes * PRODUCERS_PER_NODE
    # A FIFO batch leaves room for a copy of an earlier message (fifo.COPY_EVERY says when).
    fresh = BATCH_MESSAGES - 1 if fifo_groups else BATCH_MESSAGES
    interval_s = fresh * producers / rate
    tally = _Tally()
    pending: set[asyncio.Task[None]] = set()

    def body(offered_s: float, seq: int) -> bytes:
        return f"{offered_s:.6f}/{seq}".encode().ljust(BODY_BYTES, b"x")

    async def send(
        label: str, engine: Engine, offered_s: float, first: int, again: tuple[float, int] | None
    ) -> None:
        seqs = list(range(first, first + fresh))
        if check is None:
            requests = [SendRequest(body(offered_s, s)) for s in seqs]
        else:
            requests = [fifo.request(body(offered_s, s), s, fifo_groups) for s in seqs]
            if again is not None:
                requests.insert(0, fifo.request(body(*again), again[1], fifo_groups))
        began = loop.time()
        await meter.on_node(label, engine.send(queue, requests))
        tally.calls["send"].add(loop.time() - began)
        if check is not None:
            check.sent(seqs, began - start, loop.time() - start)

    async def produce(label: str, engine: Engine, j: int) -> None:
        in_flight: set[asyncio.Task[None]] = set()
        at = start + interval_s * j / producers
        again: tuple[float, int] | None = None
        while at < stop:
            await asyncio.sleep(max(0.0, at - loop.time()))
            first = tally.offered
            tally.offered += fresh
            if len(in_flight) >= SENDS_IN_FLIGHT_MAX:
                tally.dropped += fresh
            else:
                copy = again if (first // fresh) % fifo.COPY_EVERY == 0 else None
                task = asyncio.ensure_future(send(label, engine, at - start, first, copy))
                again = (at - start, first)
                in_flight.add(task)
                pending.add(task)
                task.add_done_callback(in_flight.discard)
            at += interval_s

    async def consume(label: str, engine: Engine) -> None:
        while loop.time() < end:
            wait_s = min(WAIT_S, max(1, math.ceil(end - loop.time())))
            began = loop.time()
            got = await meter.on_node(
                label, engine.receive(queue, limits.receive_messages_max, None, wait_s)
            )
            if got:  # a long poll that waited out its time says nothing of the engine
                tally.calls["receive"].add(loop.time() - began)
            now_s = loop.time() - start
            for d in got:
                offered_s, _, seq = d.message.body.rstrip(b"x").decode().partition("/")
                if check is not None:
                    check.receive(int(seq), d.message.id, int(seq) not in tally.received)
                if int(seq) not in tally.received:
                    tally.received.add(int(seq))
                    tally.latencies_s.append(now_s - float(offered_s))
            if got:
                began = loop.time()
                results = await meter.on_node(
                    label, engine.ack(queue, [d.receipt_handle for d in got])
                )
                tally.calls["ack"].add(loop.time() - began)
                tally.deleted += sum(1 for r in results if r == "acked")

    in_window: dict[str, float] = {}

    async def snapshot() -> None:
        await asyncio.sleep(window_s)
        in_window.update(meter.seconds)

    tasks = (
        [asyncio.ensure_future(snapshot())]
        + [
            asyncio.ensure_future(produce(label, engine, n * PRODUCERS_PER_NODE + j))
            for n, (label, _, engine) in enumerate(cluster)
            for j in range(PRODUCERS_PER_NODE)
        ]
        + [
            asyncio.ensure_future(consume(label, engine))
            for label, _, engine in cluster
            for _ in range(consumers_per_node)
        ]
    )
    await asyncio.gather(*tasks)
    await asyncio.gather(*pending, return_exceptions=True)
    elapsed_s = loop.time() - start
    cpu_process_s = process_time() - cpu_start
    counts = dict.fromkeys(CLASSES, 0)
    for _, counting, _ in cluster:
        for cls, n in counting.counts.snapshot().items():
            counts[cls] += n
    for _, _, engine in cluster:
        await engine.close()
    requests = per_message(counts, tally.deleted)
    p99_s = _p99_s(tally.latencies_s, tally.offered - len(tally.received))
    cpu = [in_window.get(label, 0.0) / window_s for label, _, _ in cluster]
    broken = refused_by(tally.offered, tally.deleted, tally.dropped, p99_s)
    kept: dict[str, Any] = {}
    if check is not None:
        kept = {
            "out_of_order": check.out_of_order(),
            "duplicates_delivered": check.duplicates_delivered(),
        }
        broken += [name for name, n in kept.items() if n]
    return {
        "rate_per_s": rate,
        "messages_offered": tally.offered,
        "messages_dropped": tally.dropped,
        "messages_deleted": tally.deleted,
        "p99_ms": None if math.isinf(p99_s) else round(p99_s * 1000),
        "carried": not broken,
        "refused_by": broken,
        "ops_ms": {op: _percentiles_ms(tally.calls[op]) for op in OPERATIONS},
        "gets_per_message": round(requests["get"], 4),
        "cas_per_s_busiest_object": busiest_object_per_s(tallies, elapsed_s),
        "usd_per_million": round(requests_usd_per_million(requests), 4),
        "cpu_core_per_node": [round(c, 3) for c in cpu],
        "cpu_attributed_s": round(sum(meter.seconds.values()), 3),
        "cpu_process_s": round(cpu_process_s, 3),
        "simulated_s": round(elapsed_s, 3),
        **kept,
    }


def run_once(
    nodes: int,
    rate: float,
    window_s: float,
    consumers_per_node: int,
    seed: int,
    fifo_groups: int = 0,
) -> dict[str, Any]:
    """One simulated run at `rate` messages/s offered (what the search tries at each step)."""
    return run_virtual(_run(nodes, rate, window_s, consumers_per_node, seed, fifo_groups))


def _rounded(rate: float) -> float:
    """`rate` to a whole batch per second, within the search's bounds."""
    return min(RATE_MAX, max(RATE_MIN, BATCH_MESSAGES * round(rate / BATCH_MESSAGES)))


def search(
    run: Callable[[float], dict[str, Any]], start: float, steps: int
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The carried run at the highest rate found in at most `steps` runs, and every run tried.

    Doubles from `start` while carried (halves while not), then bisects between the highest
    carried and the lowest refused rate until the bracket is within `RESOLUTION`."""
    best: dict[str, Any] | None = None
    refused: float | None = None
    tried: list[dict[str, Any]] = []
    rate = _rounded(start)
    for _ in range(steps):
        row = run(rate)
        tried.append(row)
        if row["carried"]:
            best = row if best is None or rate > best["rate_per_s"] else best
            following = rate * 2 if refused is None else (rate + refused) / 2
        else:
            refused = rate if refused is None else min(refused, rate)
            following = rate / 2 if best is None else (best["rate_per_s"] + rate) / 2
        following = _rounded(following)
        low = best["rate_per_s"] if best is not None else 0.0
        narrow = refused is not None and best is not None and refused - low <= RESOLUTION * low
        if narrow or any(following == t["rate_per_s"] for t in tried):
            break
        rate = following
    return best, tried


def measure(
    node_counts: Sequence[int],
    window_s: float = WINDOW_S,
    seed: int = 1,
    steps: int = STEPS,
    consumers_per_node: int = CONSUMERS_PER_NODE,
    start_rate_per_node: float = START_RATE_PER_NODE,
    fifo_groups: int = 0,
) -> dict[str, Any]:
    """For each node count, the highest rate carried (bounded search) and its figures."""
    if not 0 < window_s <= WINDOW_S_MAX:
        raise ValueError(f"window must be in (0, {WINDOW_S_MAX}] seconds")
    if not node_counts or not all(0 < n <= NODE_COUNT_MAX for n in node_counts):
        raise ValueError(f"node counts must be 1 to {NODE_COUNT_MAX}")
    if not 0 < steps <= STEPS_MAX:
        raise ValueError(f"steps must be 1 to {STEPS_MAX}")
    if not 0 < consumers_per_node <= CONSUMERS_PER_NODE_MAX:
        raise ValueError(f"consumers per node must be 1 to {CONSUMERS_PER_NODE_MAX}")
    if not RATE_MIN <= start_rate_per_node <= RATE_MAX:
        raise ValueError(f"start rate must be {RATE_MIN:.0f} to {RATE_MAX:.0f} messages/s")
    if not 0 <= fifo_groups <= fifo.GROUPS_MAX:
        raise ValueError(f"FIFO groups must be 0 (a standard queue) to {fifo.GROUPS_MAX}")
    rows = []
    for n in node_counts:

        def run(rate: float, n: int = n) -> dict[str, Any]:
            return run_once(n, rate, window_s, consumers_per_node, seed, fifo_groups)

        best, tried = search(run, start_rate_per_node * n, steps)
        cpu_max = max(best["cpu_core_per_node"]) if best is not None else None
        rows.append(
            {
                "nodes": n,
                "capacity_per_s": best["rate_per_s"] if best is not None else None,
                "best": best,
                "cpu_core_per_node_max": cpu_max,
                "counts": cpu_max is not None and cpu_max < CPU_CORE_FRACTION_MAX,
                "tried": tried,
            }
        )
    return {
        "workload": {
            "producers_per_node": PRODUCERS_PER_NODE,
            "consumers_per_node": consumers_per_node,
            "batch_messages": BATCH_MESSAGES,
            "linger_ms": limits.linger_ms_default,
            "window_s": window_s,
            "grace_s": GRACE_S,
            "deleted_fraction_min": DELETED_FRACTION_MIN,
            "p99_s_max": P99_S_MAX,
            "steps_max": steps,
            "fifo_groups": fifo_groups,
        },
        "latency_model": LATENCY.figures(),
        "cpu_method": CPU_METHOD,
        "machine": {"python_loop_10m_s": round(machine_loop_s(), 3)},
        "rows": rows,
    }


def tried_text(tried: Sequence[dict[str, Any]]) -> str:
    """Each rate a search tried, in order: `800x(p99)` for one refused by the p99 bound."""
    return ", ".join(
        f"{t['rate_per_s']:.0f}" + ("" if t["carried"] else f"x({'+'.join(t['refused_by'])})")
        for t in tried
    )


def _p50_p99(ms: dict[str, float | None]) -> str:
    p50, p99 = ms["p50"], ms["p99"]
    return "-" if p50 is None or p99 is None else f"{p50:.0f}/{p99:.0f}"


def render(result: dict[str, Any]) -> str:
    w = result["workload"]
    lines = [
        f"one queue, open loop: a fixed offered rate in batches of {w['batch_messages']} over "
        f"{w['producers_per_node']} producers per node, {w['consumers_per_node']} consumers per "
        f"node, linger {w['linger_ms']} ms; each rate offered for {w['window_s']:.0f} s of "
        f"simulated time (+{w['grace_s']:.0f} s to drain)",
        f"capacity: the highest rate found (at most {w['steps_max']} runs) with at least "
        f"{w['deleted_fraction_min']:.0%} of offered deleted and p99 offer-to-receive at most "
        f"{w['p99_s_max']:.0f} s",
        "nodes  capacity/s  x one node  GETs/msg  $/M msgs  cas/s/object  p99 ms  cpu/node max"
        "  counts",
    ]
    one = next((r["capacity_per_s"] for r in result["rows"] if r["capacity_per_s"]), None)
    for r in result["rows"]:
        best = r["best"]
        if best is None:
            lines.append(f"{r['nodes']:5d}  {'-':>10}  (nothing carried: tried {r['tried']})")
            continue
        p99 = best["p99_ms"]
        lines.append(
            f"{r['nodes']:5d} {r['capacity_per_s']:11.0f} {r['capacity_per_s'] / one:11.2f}"
            f" {best['gets_per_message']:9.3f} {best['usd_per_million']:9.2f}"
            f" {best.get('cas_per_s_busiest_object', 0.0):13.1f}"
            f" {p99 if p99 is not None else '-':>7} {r['cpu_core_per_node_max']:13.2f}"
            f"  {'yes' if r['counts'] else 'no'}"
        )
    lines += ["", "rates tried, in order (x: refused, and the bounds that refused it):"]
    lines += [f"{r['nodes']:5d}  {tried_text(r['tried'])}" for r in result["rows"]]
    lines += ["", "engine calls at capacity, simulated ms p50/p99 (receive: those that got some)"]
    lines.append("nodes  " + "  ".join(f"{op:>13}" for op in OPERATIONS))
    for r in result["rows"]:
        if r["best"] is not None:
            ops = r["best"]["ops_ms"]
            lines.append(
                f"{r['nodes']:5d}  " + "  ".join(f"{_p50_p99(ops[op]):>13}" for op in OPERATIONS)
            )
    lines += [
        "",
        f"bounds: {BOUND_DELETED}: under {w['deleted_fraction_min']:.0%} of offered deleted; "
        f"{BOUND_P99}: p99 offer-to-receive over {w['p99_s_max']:.0f} s; {BOUND_DROPPED}: "
        f"a producer dropped batches at its cap of {SENDS_IN_FLIGHT_MAX} sends in flight",
        "cas/s/object: the cluster's compare-and-swaps (landed or refused) on its busiest "
        "manifest, per simulated second, at capacity",
        "x one node: capacity over the first row's; GETs/msg and $/M: per message deleted at "
        "capacity",
        result["cpu_method"],
        f"machine: a 10-million-step Python loop takes "
        f"{result['machine']['python_loop_10m_s']:.3f} s",
        pricing_note(result["latency_model"], "latency"),
    ]
    return "\n".join(lines)
