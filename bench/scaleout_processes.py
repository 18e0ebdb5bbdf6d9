"""`python -m bench scaleout --processes`: one queue on real `okuri serve` processes, 1 node
beside N, under the same offered load.

Why: the simulator (bench/scaleout_open.py) says what one queue carries on 1..16 nodes, but
it models the store and charges no CPU; issue 42 asks that real processes agree with it. Here
N real nodes share one store (a fresh local directory, or a fresh bucket on moto's S3 behind
the bench's latency proxy, bench/latency_proxy.py, 30 ms an answer by default) and serve one
queue, and this process offers them a fixed rate, the same whatever N is:
`PRODUCERS_PER_NODE` producers per node each send SendMessageBatch(10) on schedule, whether
or not earlier sends were answered (at most `SENDS_IN_FLIGHT_MAX` each; a batch offered
beyond that is dropped and counted), and `--consumers-per-node` consumers on every node loop
ReceiveMessage(10, short wait) then DeleteMessageBatch. After a warm-up, the window's figures:
messages deleted per second (and per node, so a client on a follower is seen beside one on
the leader, which the queue's manifest names), send latency, every refused request by its
code (a 5xx, ServiceUnavailable above all, is a node refusing work it should carry), each
node's CPU seconds (/proc), and the same bounds the simulator judges a rate by
(scaleout_open.refused_by). The simulator's run at the same rate and shape is printed below.

Caveat, printed with the figures: the load generator, the nodes, moto and the proxy share
this machine's cores, so the rates are this machine's; its speed (a 10-million-step Python
loop) is printed beside them. Every process is started by bench/launch.py (through
bench/servers.py) on 127.0.0.1 and stopped by its pid; every wait and loop is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster_watch import Reader, local_reader, s3_reader
from bench.floor import machine_loop_s
from bench.latency_proxy import latency_proxy
from bench.load import ERROR_PAUSE_S
from bench.measure import LatencyHistogram, error_line, make_body, process_cpu_s, sent_ns
from bench.scaleout import BATCH_MESSAGES, PRODUCERS_PER_NODE
from bench.scaleout_open import refused_by, run_once
from bench.servers import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    MOTO_ACCESS_KEY_ID,
    MOTO_SECRET_ACCESS_KEY,
    REGION,
    Node,
    Process,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
)
from bench.sqs_client import LightSqs, SqsCallError
from bench.sqs_runs import run_async

STORES = ("local", "s3")
NODE_COUNTS = (1, 3)
NODES_MAX = 8  # okuri serve processes at once
NODE_COUNTS_MAX = 4
RATE_DEFAULT = (
    1200.0  # messages/s offered in all: about twice what the simulator has one node carry
)
RATE_MIN = 10.0
RATE_MAX = 20_000.0
SECONDS_DEFAULT = 20.0
SECONDS_MAX = 600.0
WARMUP_S = 2.0  # offered but not counted: connections open, a leader is chosen
GRACE_S = 3.0  # after the window, for the last sends to be received and deleted
CONSUMERS_PER_NODE = 8  # as the simulator's open loop
CONSUMERS_PER_NODE_MAX = 64
WAIT_S = 1  # ReceiveMessage WaitTimeSeconds: a short wait
SENDS_IN_FLIGHT_MAX = 32  # per producer; a batch offered beyond this is dropped
LATENCY_MS_DEFAULT = 30.0
CONNECTIONS_SLACK = 4
REPLY_SLACK_S = 30.0  # a reply's timeout, past the receive's wait
SETUP_S = 20.0
QUEUE = "okuri-bench-scaleout"


@dataclass(frozen=True)
class Options:
    """What `python -m bench scaleout --processes` was asked to measure."""

    node_counts: tuple[int, ...] = NODE_COUNTS
    stores: tuple[str, ...] = ("s3",)
    rate_per_s: float = RATE_DEFAULT
    seconds: float = SECONDS_DEFAULT
    consumers_per_node: int = CONSUMERS_PER_NODE
    latency_ms: float = LATENCY_MS_DEFAULT
    warmup_s: float = WARMUP_S
    grace_s: float = GRACE_S
    seed: int = 1  # the simulator's run beside
    simulate: bool = True

    def check(self) -> None:
        """ValueError unless every figure is within its bound."""
        if not self.node_counts or len(self.node_counts) > NODE_COUNTS_MAX:
            raise ValueError(f"give 1 to {NODE_COUNTS_MAX} node counts")
        if not all(0 < n <= NODES_MAX for n in self.node_counts):
            raise ValueError(f"real node counts must be 1 to {NODES_MAX}")
        if not self.stores or not set(self.stores) <= set(STORES):
            raise ValueError(f"stores are {', '.join(STORES)}")
        if not RATE_MIN <= self.rate_per_s <= RATE_MAX:
            raise ValueError(f"rate must be {RATE_MIN:.0f} to {RATE_MAX:.0f} messages/s")
        if not 0 < self.seconds <= SECONDS_MAX:
            raise ValueError(f"window must be in (0, {SECONDS_MAX:.0f}] seconds")
        if not 0 < self.consumers_per_node <= CONSUMERS_PER_NODE_MAX:
            raise ValueError(f"consumers per node must be 1 to {CONSUMERS_PER_NODE_MAX}")


@dataclass
class _PerNode:
    """What the clients of one node saw inside the window."""

    deleted: int = 0  # by this node's consumers
    send: LatencyHistogram = field(default_factory=LatencyHistogram)


@dataclass
class _Tally:
    """The window's counts; `refused` over the whole run (a refusal is one whenever it comes)."""

    nodes: list[_PerNode]
    offered: int = 0  # messages offered in the window
    dropped: int = 0  # of those, dropped at a producer's cap
    offered_deleted: int = 0  # of those, deleted by the end of the grace
    deleted: int = 0  # delete answers inside the window, whenever offered
    to_receive: LatencyHistogram = field(default_factory=LatencyHistogram)
    send: LatencyHistogram = field(default_factory=LatencyHistogram)
    receive: LatencyHistogram = field(default_factory=LatencyHistogram)
    delete: LatencyHistogram = field(default_factory=LatencyHistogram)
    refused: Counter[str] = field(default_factory=Counter)
    server_faults: int = 0  # 5xx answers, and batch entries failed as the server's fault
    first_error: str | None = None

    def failed(self, action: str, err: Exception) -> None:
        """A request refused (an SQS error) or unanswered: counted by its code."""
        if isinstance(err, SqsCallError):
            kind = f"{err.status} {err.code}"
            self.server_faults += err.server_fault
        else:
            kind = f"no answer ({type(err).__name__})"
        self.refused[kind] += 1
        if self.first_error is None:
            self.first_error = error_line(f"{action}: {err}")

    def entries_failed(self, action: str, reply: dict[str, Any]) -> None:
        """A batch's failed entries, by code; SenderFault false is the server refusing work."""
        for failed in reply.get("Failed") or ():
            self.refused[f"entry {failed.get('Code')}"] += 1
            self.server_faults += not failed.get("SenderFault", True)
            if self.first_error is None:
                self.first_error = error_line(f"{action} entry: {failed}")


def _ms(hist: LatencyHistogram, q: float) -> float | None:
    ms = hist.percentile_ms(q)
    return None if ms is None else round(ms, 1)


def offer_p99_s(hist: LatencyHistogram, never: int) -> float:
    """The 99th percentile offer-to-receive, counting `never` messages slower than any (as the
    simulator does); inf when those are more than the last 1%."""
    total = hist.samples + max(0, never)
    if total == 0:
        return math.inf
    rank = math.ceil(0.99 * total)
    if rank > hist.samples:
        return math.inf
    ms = hist.percentile_ms(rank / hist.samples)
    return math.inf if ms is None else ms / 1000


async def drive(endpoints: Sequence[str], pids: Sequence[int], opts: Options) -> dict[str, Any]:
    """Create the queue, offer `opts.rate_per_s` over `endpoints` for warm-up, window and
    grace, and return the window's figures (CPU of `pids`, one per endpoint)."""
    nodes = len(endpoints)
    producers = nodes * PRODUCERS_PER_NODE
    connections = opts.consumers_per_node + PRODUCERS_PER_NODE * SENDS_IN_FLIGHT_MAX
    clients = [
        LightSqs(
            e,
            DEV_ACCESS_KEY_ID,
            DEV_SECRET_ACCESS_KEY,
            REGION,
            connections + CONNECTIONS_SLACK,
            WAIT_S + REPLY_SLACK_S,
        )
        for e in endpoints
    ]
    tally = _Tally([_PerNode() for _ in endpoints])
    loop = asyncio.get_running_loop()
    try:
        created = await asyncio.wait_for(clients[0].create_queue(QueueName=QUEUE), SETUP_S)
        queue_url = created["QueueUrl"]
        start = loop.time()
        t0 = start + opts.warmup_s
        t1 = t0 + opts.seconds
        end = t1 + opts.grace_s
        # The window on time.monotonic_ns(), which the bodies carry.
        t0_ns = time.monotonic_ns() + int(opts.warmup_s * 1e9)
        t1_ns = t0_ns + int(opts.seconds * 1e9)
        interval_s = BATCH_MESSAGES * producers / opts.rate_per_s

        def in_window(offered_ns: int | None) -> bool:
            return offered_ns is not None and t0_ns <= offered_ns < t1_ns

        async def send(node: int, entries: list[dict[str, Any]]) -> None:
            began = loop.time()
            try:
                reply = await clients[node].send_message_batch(QueueUrl=queue_url, Entries=entries)
            except Exception as err:  # counted and reported, never fatal
                tally.failed("SendMessageBatch", err)
                return
            took = loop.time() - began
            if t0 <= began < t1:
                tally.send.add(took)
                tally.nodes[node].send.add(took)
            tally.entries_failed("SendMessageBatch", reply)

        async def produce(node: int, producer: int) -> None:
            """A batch every `interval_s` on schedule; in the window when its bodies' stamp is."""
            in_flight: set[asyncio.Task[None]] = set()
            at = start + interval_s * producer / producers
            seq = 0
            while at < t1:
                await asyncio.sleep(max(0.0, at - loop.time()))
                entries = [
                    {"Id": str(k), "MessageBody": make_body(producer, seq + k)}
                    for k in range(BATCH_MESSAGES)
                ]
                counted = in_window(sent_ns(entries[0]["MessageBody"]))
                tally.offered += BATCH_MESSAGES if counted else 0
                if len(in_flight) >= SENDS_IN_FLIGHT_MAX:
                    tally.dropped += BATCH_MESSAGES if counted else 0
                else:
                    task = asyncio.ensure_future(send(node, entries))
                    in_flight.add(task)
                    task.add_done_callback(in_flight.discard)
                seq += BATCH_MESSAGES
                at += interval_s
            if in_flight:
                await asyncio.wait(in_flight, timeout=WAIT_S + REPLY_SLACK_S)

        async def consume(node: int) -> None:
            client = clients[node]
            while loop.time() < end:
                began = loop.time()
                try:
                    reply = await client.receive_message(
                        QueueUrl=queue_url,
                        MaxNumberOfMessages=BATCH_MESSAGES,
                        WaitTimeSeconds=WAIT_S,
                    )
                except Exception as err:
                    tally.failed("ReceiveMessage", err)
                    await asyncio.sleep(ERROR_PAUSE_S)
                    continue
                messages = reply.get("Messages") or []
                if not messages:
                    continue
                now_ns = time.monotonic_ns()
                stamps = [sent_ns(m.get("Body", "")) for m in messages]
                if t0 <= began < t1:
                    tally.receive.add(loop.time() - began)
                for stamp in stamps:
                    if stamp is not None and in_window(stamp):
                        tally.to_receive.add((now_ns - stamp) / 1e9)
                entries = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages)
                ]
                deleting = loop.time()
                try:
                    reply = await client.delete_message_batch(QueueUrl=queue_url, Entries=entries)
                except Exception as err:
                    tally.failed("DeleteMessageBatch", err)
                    await asyncio.sleep(ERROR_PAUSE_S)
                    continue
                answered = loop.time()
                ok = [int(e["Id"]) for e in reply.get("Successful") or ()]
                tally.entries_failed("DeleteMessageBatch", reply)
                tally.offered_deleted += sum(1 for i in ok if in_window(stamps[i]))
                if t0 <= answered < t1:
                    tally.delete.add(answered - deleting)
                    tally.deleted += len(ok)
                    tally.nodes[node].deleted += len(ok)

        cpu: dict[str, list[float | None]] = {}

        async def read_cpu() -> None:
            await asyncio.sleep(max(0.0, t0 - loop.time()))
            cpu["t0"] = [process_cpu_s(p) for p in pids]
            client0 = time.process_time()
            await asyncio.sleep(max(0.0, t1 - loop.time()))
            cpu["t1"] = [process_cpu_s(p) for p in pids]
            cpu["client"] = [time.process_time() - client0]

        tasks = [
            *(
                asyncio.ensure_future(produce(n, n * PRODUCERS_PER_NODE + j))
                for n in range(nodes)
                for j in range(PRODUCERS_PER_NODE)
            ),
            *(
                asyncio.ensure_future(consume(n))
                for n in range(nodes)
                for _ in range(opts.consumers_per_node)
            ),
            asyncio.ensure_future(read_cpu()),
        ]
        bound_s = opts.warmup_s + opts.seconds + opts.grace_s + WAIT_S + 2 * REPLY_SLACK_S
        _, late = await asyncio.wait(tasks, timeout=bound_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for client in clients:
            await client.close()
    return _figures(tally, opts, cpu)


def _figures(tally: _Tally, opts: Options, cpu: dict[str, list[float | None]]) -> dict[str, Any]:
    window_s = opts.seconds
    never = tally.offered - tally.offered_deleted
    p99_s = offer_p99_s(tally.to_receive, never)
    broken = refused_by(tally.offered, tally.offered_deleted, tally.dropped, p99_s)
    before, after = cpu.get("t0", []), cpu.get("t1", [])
    per_node = []
    for i, node in enumerate(tally.nodes):
        c0 = before[i] if i < len(before) else None
        c1 = after[i] if i < len(after) else None
        per_node.append(
            {
                "node": i,
                "deleted_per_s": round(node.deleted / window_s, 1),
                "send_p50_ms": _ms(node.send, 0.5),
                "cpu_s": None if c0 is None or c1 is None else round(c1 - c0, 2),
            }
        )
    rates = [node.deleted / window_s for node in tally.nodes]
    return {
        "offered_per_s": round(tally.offered / window_s, 1),
        "deleted_per_s": round(tally.deleted / window_s, 1),
        "messages_offered": tally.offered,
        "messages_dropped": tally.dropped,
        "offered_deleted": tally.offered_deleted,
        "p99_ms": None if math.isinf(p99_s) else round(p99_s * 1000),
        "carried": not broken,
        "refused_by": broken,
        "ops_ms": {
            op: {"p50": _ms(h, 0.5), "p90": _ms(h, 0.9), "p99": _ms(h, 0.99)}
            for op, h in (("send", tally.send), ("receive", tally.receive), ("ack", tally.delete))
        },
        "refused": dict(sorted(tally.refused.items())),
        "server_faults": tally.server_faults,
        "first_error": tally.first_error,
        "per_node": per_node,
        "node_rate_min_over_max": (
            round(min(rates) / max(rates), 2) if rates and max(rates) > 0 else None
        ),
        "client_cpu_s": round(cpu["client"][0] or 0.0, 2) if "client" in cpu else None,
    }


def lead_of(manifest: bytes | None, nodes: Sequence[Node]) -> int | None:
    """The node whose address the queue's manifest names as its lead (None: none, or unknown)."""
    if manifest is None:
        return None
    try:
        lead = json.loads(manifest).get("lead")
    except (ValueError, AttributeError):
        return None
    if not lead or len(lead) < 2:
        return None
    port = str(lead[1]).rstrip("/").rsplit(":", 1)[-1]
    return next((n.index for n in nodes if port.isdigit() and n.port == int(port)), None)


def run_count(count: int, store: StoreSpec, read_manifest: Reader, opts: Options,
              workdir: Path, store_pids: Sequence[int]) -> dict[str, Any]:  # fmt: skip
    """`count` fresh nodes on `store` under the offered load, then who leads."""
    rundir = Path(tempfile.mkdtemp(prefix=f"nodes-{count}-", dir=workdir))
    store_cpu0 = [process_cpu_s(p) for p in store_pids]
    with cluster(count, store, rundir) as nodes:
        pids = [n.pid or 0 for n in nodes]
        figures = run_async(drive([n.endpoint for n in nodes], pids, opts))
        lead = lead_of(read_manifest(), nodes)
    store_cpu1 = [process_cpu_s(p) for p in store_pids]
    store_cpu = [
        None if a is None or b is None else round(b - a, 1)
        for a, b in zip(store_cpu0, store_cpu1, strict=True)
    ]
    exit_codes = [n.exit_codes[-1] if n.exit_codes else None for n in nodes]
    return {"nodes": count, **figures, "lead": lead, "exit_codes": exit_codes,
            "store_cpu_s_run": store_cpu}  # fmt: skip


@contextlib.contextmanager
def _store(kind: str, opts: Options, workdir: Path) -> Iterator[tuple[str, list[int], Any]]:
    """(what it is, the pids serving it, a maker of (StoreSpec, manifest reader) per count)."""
    if kind == "local":

        def fresh_dir(count: int) -> tuple[StoreSpec, Reader]:
            data = Path(tempfile.mkdtemp(prefix=f"data-{count}-", dir=workdir))
            return StoreSpec(data_dir=data), local_reader(data, QUEUE)

        yield "a local directory (a fresh one per node count)", [], fresh_dir
        return
    with contextlib.ExitStack() as stack:
        moto = stack.enter_context(moto_server(workdir, "moto-s3"))
        proxy = stack.enter_context(
            latency_proxy(workdir, moto.endpoint, opts.latency_ms, "/moto-api/")
        )
        procs: list[Process] = [moto.process, proxy.process]

        def fresh_bucket(count: int) -> tuple[StoreSpec, Reader]:
            name = f"okuri-scaleout-{os.getpid()}-{count}"
            reader = s3_reader(
                moto.endpoint, name, MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY, REGION, QUEUE
            )
            return bucket_store(proxy.endpoint, name), reader

        described = (
            f"S3 on moto behind the latency proxy ({opts.latency_ms:g} ms an answer; a fresh "
            "bucket per node count)"
        )
        yield described, [p.pid for p in procs], fresh_bucket


def run_store(kind: str, opts: Options, workdir: Path) -> dict[str, Any]:
    with _store(kind, opts, workdir) as (described, store_pids, fresh):
        runs = []
        for count in opts.node_counts:
            spec, reader = fresh(count)
            runs.append(run_count(count, spec, reader, opts, workdir, store_pids))
    base = runs[0]["deleted_per_s"] if runs else 0
    for run in runs:
        run["x_first"] = round(run["deleted_per_s"] / base, 2) if base > 0 else None
    return {"store": kind, "described": described, "runs": runs}


def simulated(opts: Options) -> list[dict[str, Any]]:
    """The simulator's open-loop run at the same offered rate, window and consumers per node."""
    return [
        {
            "nodes": n,
            **run_once(n, opts.rate_per_s, opts.seconds, opts.consumers_per_node, opts.seed),
        }
        for n in opts.node_counts
    ]


def measure(opts: Options) -> dict[str, Any]:
    opts.check()
    loop_s = machine_loop_s()
    with tempfile.TemporaryDirectory(prefix="okuri-bench-scaleout-") as tmp:
        stores = []
        for kind in opts.stores:
            workdir = Path(tmp) / kind
            workdir.mkdir()
            stores.append(run_store(kind, opts, workdir))
    return {
        "workload": {
            "rate_per_s": opts.rate_per_s,
            "batch_messages": BATCH_MESSAGES,
            "producers_per_node": PRODUCERS_PER_NODE,
            "sends_in_flight_max": SENDS_IN_FLIGHT_MAX,
            "consumers_per_node": opts.consumers_per_node,
            "wait_s": WAIT_S,
            "window_s": opts.seconds,
            "warmup_s": opts.warmup_s,
            "grace_s": opts.grace_s,
            "node_counts": list(opts.node_counts),
        },
        "machine": {"cpus": os.cpu_count(), "python_loop_10m_s": round(loop_s, 3)},
        "stores": stores,
        "simulated": simulated(opts) if opts.simulate else None,
        "seed": opts.seed,
    }


# --- the text -------------------------------------------------------------------------------------


def _pair(ms: dict[str, float | None]) -> str:
    p50, p99 = ms["p50"], ms["p99"]
    return "-" if p50 is None or p99 is None else f"{p50:.0f}/{p99:.0f}"


def _ops(ops: dict[str, dict[str, float | None]]) -> str:
    return " ".join(_pair(ops[op]) for op in ("send", "receive", "ack"))


def _verdict(run: dict[str, Any]) -> str:
    return "yes" if run["carried"] else "no: " + "+".join(run["refused_by"])


def _or_dash(value: Any) -> str:
    return "-" if value is None else str(value)


def _per_node(run: dict[str, Any]) -> str:
    cells = [
        f"n{n['node']}{'*' if n['node'] == run['lead'] else ''} {n['deleted_per_s']:.0f}/s, "
        f"send {_or_dash(n['send_p50_ms'])} ms, cpu {_or_dash(n['cpu_s'])} s"
        for n in run["per_node"]
    ]
    ratio = run["node_rate_min_over_max"]
    spread = f"  (min/max {ratio:.2f})" if ratio is not None and run["nodes"] > 1 else ""
    return f"{run['nodes']:5d}  " + "; ".join(cells) + spread


def render(result: dict[str, Any]) -> str:
    w = result["workload"]
    lines = [
        f"one queue on real okuri serve processes: {w['rate_per_s']:.0f} messages/s offered in "
        f"all, batches of {w['batch_messages']} over {w['producers_per_node']} producers per "
        f"node; {w['consumers_per_node']} consumers per node (ReceiveMessage 10, wait "
        f"{w['wait_s']} s, DeleteMessageBatch); {w['window_s']:.0f} s window after "
        f"{w['warmup_s']:.0f} s of warm-up (+{w['grace_s']:.0f} s to drain)",
    ]
    header = (
        "nodes  offered/s  deleted/s  x first  p99 ms  send/receive/ack p50/p99 ms  refused  "
        "server faults  carried"
    )
    for store in result["stores"]:
        lines += ["", f"store: {store['described']}", header]
        for r in store["runs"]:
            x = "-" if r["x_first"] is None else f"{r['x_first']:.2f}"
            lines.append(
                f"{r['nodes']:5d} {r['offered_per_s']:10.0f} {r['deleted_per_s']:10.0f} {x:>8}"
                f" {_or_dash(r['p99_ms']):>7}  {_ops(r['ops_ms']):<27}"
                f" {sum(r['refused'].values()):>8} {r['server_faults']:>14}  {_verdict(r)}"
            )
        lines.append("per node: deleted/s by its consumers, send p50, server CPU in the window")
        for r in store["runs"]:
            lines.append(_per_node(r))
            if r["refused"]:
                lines.append(f"       refused: {r['refused']}; first: {r['first_error']}")
    sim = result["simulated"]
    if sim:
        lines += [
            "",
            f"the simulator at the same rate and shape (`python -m bench scaleout --open-loop`'s "
            f"run, seed {result['seed']}, S3 latency model, long poll 5 s; deleted/s counts "
            "the drain too)",
            "nodes  offered/s  deleted/s  p99 ms  send/receive/ack p50/p99 ms  carried",
        ]
        for row in sim:
            lines.append(
                f"{row['nodes']:5d} {row['messages_offered'] / w['window_s']:10.0f}"
                f" {row['messages_deleted'] / w['window_s']:10.0f} {_or_dash(row['p99_ms']):>7}"
                f"  {_ops(row['ops_ms']):<27}  {_verdict(row)}"
            )
    lines += [
        "",
        "deleted/s: delete answers inside the window; x first: over the first node count's; "
        "receive: those that got messages; carried: the simulator's bounds over the messages "
        "offered in the window (deleted, p99 offer-to-first-receive, dropped at a producer's "
        "cap); server faults: 5xx answers and batch entries failed as the server's fault; "
        "*: the node the queue's manifest names as lead",
        f"machine: {result['machine']['cpus']} cores, a 10-million-step Python loop takes "
        f"{result['machine']['python_loop_10m_s']:.3f} s; the load generator, the nodes and the "
        "store share them",
    ]
    return "\n".join(lines)
