"""`okuri bench cluster`: real `okuri serve` processes on one store, SIGKILLed under load.

Why: the simulator (okuri.sim) checks the engine against faults it models; this checks the
shipped program against a fault it cannot model away: whole processes dying mid-request, on a
real local directory or a real S3 API (moto's server). N nodes (default 3) share one store,
each configured only by environment variables as a container would be. Producer threads send
SendMessageBatch(10) and consumer threads loop ReceiveMessage(10, short wait) +
DeleteMessageBatch, each request to a random live node, failing over to another when a node
does not answer (okuri.bench.failover). A chaos thread SIGKILLs a random node every
--kill-every-s seconds and starts it again on the same ports (okuri.bench.chaos).

Phases: a fault phase of --fault-seconds; then every node is up again, producers stop, and
consumers drain until every acknowledged send has been delivered and at least the queue's
visibility timeout (plus slack) has passed, so that messages leased by a dead node come back and
any message delivered again after its delete shows up; at most --drain-seconds.

Checks (okuri.bench.ledger): 0 acknowledged sends lost, and 0 deliveries of a message in a
ReceiveMessage sent after a delete of it had answered Successful. With --fifo-groups N the queue
is a FIFO queue whose messages spread over N message groups, and two more checks hold
(okuri.bench.fifo_ledger): one deduplication id answers and delivers one message, and within
a group first deliveries follow sequence-number order. Exit code 0 when both hold,
1 when a check fails, 2 for usage errors, 3 when the run itself could not be made (a server
would not start). Everything is bounded: flags by range, the messages a run may send
(--messages-max), each phase and each wait by a timeout. Servers bind 127.0.0.1 only, and every
process started here is stopped by its pid.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from okuri.bench.chaos import RESPAWNS_MAX, Chaos
from okuri.bench.cluster_load import (
    REPLY_SLACK_S,
    SETTLE_SLACK_S,
    Load,
    Plan,
    dev_caller,
    producer,
)
from okuri.bench.cluster_report import render
from okuri.bench.failover import CALL_S_MAX, Exhausted, NodeSet, Tally
from okuri.bench.fifo_ledger import FifoLedger, FifoVerdict
from okuri.bench.flags import bounded
from okuri.bench.ledger import Ledger, Verdict
from okuri.bench.load import BATCH_ENTRIES
from okuri.bench.measure import rate
from okuri.bench.metrics import scrape
from okuri.bench.servers import (
    START_S,
    BenchError,
    Node,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
    tail,
)
from okuri.bench.sqs_client import SqsCallError

__all__ = ["Plan", "build_parser", "cli_main", "render", "run"]

QUEUE_NAME = "okuri-bench-cluster"
SETUP_ATTEMPTS = 5
JOIN_SLACK_S = 10.0  # past the longest request a thread may be in

# Flag bounds: a limit on everything.
NODES_MAX = 8
PRODUCERS_MAX = 32
CONSUMERS_MAX = 32
FAULT_S_MAX = 3600.0
KILL_EVERY_S_MIN = 0.5
KILL_EVERY_S_MAX = 3600.0
DRAIN_S_MAX = 600.0
VISIBILITY_S_MIN = 2
VISIBILITY_S_MAX = 300
WAIT_S_MAX = 20
MESSAGES_MAX = 1_000_000
BACKLOG_MAX = 100_000
SEED_MAX = 2**32
FIFO_GROUPS_MAX = 10_000


# --- the store ---------------------------------------------------------------------------------


@contextlib.contextmanager
def shared_store(plan: Plan, workdir: Path) -> Iterator[StoreSpec]:
    if plan.store == "local":
        yield StoreSpec(data_dir=workdir / "data")
        return
    bucket = f"okuri-bench-cluster-{os.getpid()}-{plan.seed}"
    if plan.s3_endpoint is not None:
        yield bucket_store(plan.s3_endpoint, bucket)
        return
    with moto_server(workdir, "moto-s3") as moto:
        yield bucket_store(moto.endpoint, bucket)


def _create_queue(nodes: NodeSet, plan: Plan) -> str:
    name = QUEUE_NAME + (".fifo" if plan.fifo_groups else "")
    attributes = {"VisibilityTimeout": str(plan.visibility_s)}
    if plan.fifo_groups:
        attributes["FifoQueue"] = "true"
    caller = dev_caller(nodes, plan.seed, REPLY_SLACK_S)
    try:
        for _ in range(SETUP_ATTEMPTS):
            try:
                answer, _, _ = caller.call(
                    "CreateQueue", {"QueueName": name, "Attributes": attributes}
                )
                return str(answer["QueueUrl"])
            except (Exhausted, SqsCallError) as err:
                last = err
        raise BenchError(f"cannot create queue {name!r}: {last}")
    finally:
        caller.close()


def _join(threads: list[threading.Thread], timeout_s: float) -> list[str]:
    deadline_s = time.monotonic() + timeout_s
    for t in threads:
        t.join(max(0.0, deadline_s - time.monotonic()))
    return [t.name for t in threads if t.is_alive()]


def _wait(until: Callable[[], bool], timeout_s: float, tick_s: float = 0.1) -> bool:
    deadline_s = time.monotonic() + timeout_s
    while not until():
        if time.monotonic() >= deadline_s:
            return False
        time.sleep(tick_s)
    return True


# --- the run ------------------------------------------------------------------------------------


def run(plan: Plan) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="okuri-bench-cluster-") as tmp:
        workdir = Path(tmp)
        env = {"OKURI_ACK_LOGS": plan.ack_logs}
        with (
            shared_store(plan, workdir) as store,
            cluster(plan.nodes, store, workdir, env) as nodes,
        ):
            result = _run_on(plan, NodeSet(nodes), store)
            result["ack_logs"] = _ack_log_events(nodes)
            stop_codes = [n.stop() for n in nodes]
            result["nodes"]["exit_codes_at_stop"] = stop_codes
            if any(code != 0 for code in stop_codes):
                result["nodes"]["log_tails"] = {
                    n.index: tail(n.log_path)
                    for n, code in zip(nodes, stop_codes, strict=True)
                    if code != 0
                }
    return result


def _ack_log_events(nodes: Sequence[Node]) -> dict[str, int]:
    """How the nodes used ack logs, summed over each node's life since its last start (a
    killed node's counts die with it): deletes answered from logs, logs closed by committers."""
    total = {"deletes_answered": 0, "closed_by_committers": 0}
    for node in nodes:
        counters = scrape(node.health_url)
        if counters is not None:
            total["deletes_answered"] += int(counters.events.get("ack_log_acks", 0))
            total["closed_by_committers"] += int(counters.events.get("ack_logs_closed", 0))
    return total


def _run_on(plan: Plan, nodes: NodeSet, store: StoreSpec) -> dict[str, Any]:
    rng = random.Random(plan.seed)
    stuck: list[str] = []
    queue_url = _create_queue(nodes, plan)
    start_s = time.monotonic()
    fifo = FifoLedger(start_s) if plan.fifo_groups else None
    load = Load(plan, nodes, Ledger(start_s), queue_url, f"r{rng.randrange(10**6):06d}", fifo)
    load.producing.set()
    load.consuming.set()
    producers = [load.thread(f"producer-{p}", producer(load, p)) for p in range(plan.producers)]
    consumers = [load.thread(f"consumer-{c}", load.consume) for c in range(plan.consumers)]
    chaos = Chaos(nodes, plan.kill_every_s, start_s + plan.fault_s, rng)
    for t in [*producers, *consumers, chaos]:
        t.start()
    try:
        time.sleep(plan.fault_s)
        fault_end_s = time.monotonic()
        load.producing.clear()
        chaos.join(START_S * (RESPAWNS_MAX + 1) + JOIN_SLACK_S)  # restarts under way end first
        chaos.stop()
        all_up_s = time.monotonic()
        stuck = _join(producers, REPLY_SLACK_S + CALL_S_MAX + JOIN_SLACK_S)
        settle_until_s = all_up_s + plan.settle_s
        drained = _wait(
            lambda: load.ledger.outstanding == 0 and time.monotonic() >= settle_until_s,
            max(plan.drain_s, plan.settle_s),
        )
        drain_end_s = time.monotonic()
    finally:
        load.producing.clear()
        load.consuming.clear()
        chaos.stop()
        stuck += _join(consumers, CALL_S_MAX + JOIN_SLACK_S)
    verdict = load.ledger.verdict()
    fifo_verdict = None if load.fifo is None else load.fifo.verdict()
    tally = Tally()
    for seen in load.tallies:
        tally.merge(seen)
    return _figures(
        plan, store, nodes, load, verdict, fifo_verdict, tally, chaos,
        phases={
            "fault_s": fault_end_s - start_s,
            "restart_wait_s": all_up_s - fault_end_s,
            "drain_s": drain_end_s - all_up_s,
            "total_s": drain_end_s - start_s,
        },
        drained=drained,
        stuck=stuck,
    )  # fmt: skip


def _figures(
    plan: Plan,
    store: StoreSpec,
    nodes: NodeSet,
    load: Load,
    verdict: Verdict,
    fifo: FifoVerdict | None,
    tally: Tally,
    chaos: Chaos,
    phases: dict[str, float],
    drained: bool,
    stuck: list[str],
) -> dict[str, Any]:
    total_s = phases["total_s"]
    kills = chaos.log.kills_by_node(len(nodes))
    per_node = []
    for i in range(len(nodes)):
        requests = sum(n for (node, _), n in tally.answered.items() if node == i)
        per_node.append(
            {
                "node": i,
                "kills": kills[i],
                "requests_per_s": rate(requests, total_s),
                "acknowledged_per_s": rate(tally.messages[(i, "acknowledged")], total_s),
                "received_per_s": rate(tally.messages[(i, "received")], total_s),
                "deleted_per_s": rate(tally.messages[(i, "deleted")], total_s),
                "failovers": tally.failovers[i],
                "server_faults": tally.server_faults[i],
            }
        )
    restarts = sorted(chaos.log.restart_s)
    checks = {
        "no_loss": verdict.lost == 0,
        "no_delivery_after_delete": verdict.after_delete == 0,
        "nodes_restarted": not chaos.log.failed,
        "clients_ran": not load.crashed and not stuck,
    }
    if fifo is not None:
        checks["fifo_group_order"] = fifo.order_violations == 0 and fifo.unsequenced == 0
        checks["fifo_deduplication"] = fifo.dedup_violations == 0
    return {
        "plan": {**asdict(plan), "store": store.describe()},
        "checks": checks,
        "ok": all(checks.values()),
        **verdict.figures(),
        "fifo": None if fifo is None else {"groups": plan.fifo_groups, **fifo.figures()},
        "sends_abandoned": load.sends_abandoned,
        "drained": drained,
        "kills": len(chaos.log.kills),
        "kill_log": [
            {"at_s": round(at_s - load.ledger.start_s, 3), "node": node}
            for at_s, node in chaos.log.kills
        ],
        "restart_s": {
            "p50": round(restarts[len(restarts) // 2], 2) if restarts else None,
            "max": round(restarts[-1], 2) if restarts else None,
        },
        "duration_s": {k: round(v, 2) for k, v in phases.items()},
        "nodes": {"per_node": per_node, "restart_failures": chaos.log.failed},
        "errors": {
            "failovers": sum(tally.failovers.values()),
            "server_faults": sum(tally.server_faults.values()),
            "refused_entries": dict(tally.refused_entries),
            "refused_calls": dict(tally.refused_calls),
            "unanswered_attempts": dict(tally.unanswered),
            "exhausted_calls": tally.exhausted,
            "first_error": tally.first_error,
            "client_crashes": load.crashed,
            "stuck_threads": stuck,
        },
    }


# --- the command --------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="okuri bench cluster",
        description="Several okuri serve processes on one store, SIGKILLed under load; checks "
        "that no acknowledged send is lost and no message is delivered after its delete.",
    )
    add = p.add_argument
    add("--nodes", type=bounded(int, 1, NODES_MAX), default=3)
    add("--store", choices=("local", "s3"), default="local",
        help="a temporary directory, or a bucket on moto's S3 server started here")  # fmt: skip
    add("--s3-endpoint", default=None, metavar="URL",
        help="with --store s3: a running moto (or other test S3) server instead")  # fmt: skip
    add("--fault-seconds", dest="fault_s", type=bounded(float, 1, FAULT_S_MAX), default=20.0)
    add("--kill-every-s", type=bounded(float, KILL_EVERY_S_MIN, KILL_EVERY_S_MAX), default=4.0)
    add("--producers", type=bounded(int, 1, PRODUCERS_MAX), default=2)
    add("--consumers", type=bounded(int, 1, CONSUMERS_MAX), default=2)
    add("--visibility-s", type=bounded(int, VISIBILITY_S_MIN, VISIBILITY_S_MAX), default=10,
        help="the queue's VisibilityTimeout; the drain lasts at least this plus "
        f"{SETTLE_SLACK_S:g} s")  # fmt: skip
    add("--wait-seconds", dest="wait_s", type=bounded(int, 0, WAIT_S_MAX), default=1,
        help="ReceiveMessage WaitTimeSeconds")  # fmt: skip
    add("--drain-seconds", dest="drain_s", type=bounded(float, 1, DRAIN_S_MAX), default=60.0,
        help="at most this long for consumers to receive every acknowledged send")  # fmt: skip
    add("--messages-max", type=bounded(int, BATCH_ENTRIES, MESSAGES_MAX), default=200_000,
        help="producers stop after sending this many")  # fmt: skip
    add("--backlog-max", type=bounded(int, BATCH_ENTRIES, BACKLOG_MAX), default=2_000,
        help="producers pause while this many acknowledged sends are not deleted")  # fmt: skip
    add("--fifo-groups", type=bounded(int, 0, FIFO_GROUPS_MAX), default=0, metavar="N",
        help="a FIFO queue whose messages spread over N message groups; also checks "
        "deduplication and group order (default 0: a standard queue)")  # fmt: skip
    add(
        "--seed",
        type=bounded(int, 0, SEED_MAX),
        default=None,
        help="which nodes die when, and which node each request goes to (default: random)",
    )
    add("--ack-logs", choices=("auto", "on", "off"), default="auto",
        help="the nodes' OKURI_ACK_LOGS (auto: on for a local directory, off on S3)")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object")
    return p


def plan_from(args: argparse.Namespace) -> Plan:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(SEED_MAX)
    return Plan(
        nodes=args.nodes,
        store=args.store,
        s3_endpoint=args.s3_endpoint.rstrip("/") if args.s3_endpoint else None,
        fault_s=args.fault_s,
        kill_every_s=args.kill_every_s,
        producers=args.producers,
        consumers=args.consumers,
        visibility_s=args.visibility_s,
        wait_s=args.wait_s,
        drain_s=args.drain_s,
        messages_max=args.messages_max,
        backlog_max=args.backlog_max,
        seed=seed,
        fifo_groups=args.fifo_groups,
        ack_logs=args.ack_logs,
    )


def cli_main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.s3_endpoint is not None and args.store != "s3":
        parser.error("--s3-endpoint goes with --store s3")
    try:
        result = run(plan_from(args))
    except BenchError as err:
        print(f"okuri bench cluster: error: {err}", file=sys.stderr)
        return 3
    print(json.dumps(result) if args.json else render(result))
    return 0 if result["ok"] else 1
