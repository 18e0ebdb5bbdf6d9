"""`python -m bench cluster`: real `okuri serve` processes on one store, SIGKILLed under load.

Why: the simulator (okuri.sim) checks the engine against faults it models; this checks the
shipped program against a fault it cannot model away: whole processes dying mid-request, on a
real local directory or a real S3 API (moto's server). N nodes (default 3) share one store,
each configured only by environment variables as a container would be. Producer threads send
SendMessageBatch(10) and consumer threads loop ReceiveMessage(10, short wait) +
DeleteMessageBatch, each request to a random live node, failing over to another when a node
does not answer (bench.failover). A chaos thread SIGKILLs a random node every
--kill-every-s seconds and starts it again on the same ports (bench.chaos).

Phases: a fault phase of --fault-seconds; then every node is up again, producers stop, and
consumers drain until every acknowledged send has been delivered and at least the queue's
visibility timeout (plus slack, or --drain-min-seconds) has passed, so that messages leased by a
dead node come back and any message delivered again after its delete shows up; at most
--drain-seconds. Clients are the bench's light SQS client (bench.sqs_client), or
boto3's with --client boto3 (bench.cluster_boto).

Shapes (--shape) are presets of the flags; a flag given beside one wins.
- default: the flags' own defaults (2 producers, 2 consumers, 10 s visibility, 20 s of faults,
  a killed node started again at once, clients that only call nodes known to be up).
- failover: the load of issue 28, as an application behind a load balancer applies it: a queue
  with VisibilityTimeout=5; 2 producers (SendMessageBatch of 10) and 3 consumers
  (ReceiveMessage of 10 with WaitTimeSeconds=1, then DeleteMessageBatch of what came back);
  clients that connect within 2 s and wait 25 s for each read of an answer, choose any node
  (up or not: --blind-clients) and move to another on a refused or dropped connection, a read
  timeout or a 5xx, and send each delete first to another node than the receive that returned
  its receipts (--delete-elsewhere); a random node SIGKILLed every 4 s and started again 1 s
  after its kill (--restart-after-s); 40 s of faults, then up to 60 s of drain.

Checks (bench.ledger): 0 acknowledged sends lost, and 0 deliveries of a message in a
ReceiveMessage sent after a delete of it had answered Successful. Each such delivery is
described: the message, the node that served each receive of it and the one that answered the
delete, times relative to the delete's answer, the receipt handles (opaque here; their slots and
epochs are read by bench.cluster_watch), the receive count, and how many messages of the same
delete call came back. A message is known by its MessageId: a SendMessageBatch whose node wrote
its messages and died before answering is sent again by the producer, to another node, which
writes them again under new MessageIds (as SQS may); that second copy may be delivered after
the first one's delete. It is no violation, and is counted apart ("deliveries of a body sent
again"), with the send's attempts that got no answer, since a check that knows messages by body
would count it. With --fifo-groups N the queue is a FIFO queue whose messages spread over N
message groups, and two more checks hold (bench.fifo_ledger): one deduplication id answers and
delivers one message, and within a group first deliveries follow sequence-number order. Exit
code 0 when both hold, 1 when a check fails, 2 for usage errors, 3 when the run itself could not
be made (a server would not start). Everything is bounded: flags by range, the messages a run
may send (--messages-max), each phase and each wait by a timeout. Servers bind 127.0.0.1 only,
and every process started here is stopped by its pid.

Evidence (--keep DIR): the run works in DIR, a new directory, and leaves there the nodes' logs
(okuri-N.log, every life of node N; --node-log-level), the store's final state when local
(data/), the manifest's history as read every --watch-ms (bench.cluster_watch), every
delivery after delete in full (after_delete.json), the nodes' ports and kills (nodes.json) and
the result (result.json). `python -m bench.cluster_watch DIR` tells each late message's
history in the manifest.
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

from bench.chaos import RESPAWNS_MAX, Chaos
from bench.cluster_load import (
    REPLY_SLACK_S,
    SETTLE_SLACK_S,
    Load,
    Plan,
    dev_caller,
    producer,
)
from bench.cluster_report import render
from bench.cluster_watch import (
    AFTER_DELETE_FILE,
    MANIFESTS_FILE,
    NODES_FILE,
    ManifestWatch,
    Reader,
    local_reader,
    s3_reader,
)
from bench.failover import CALL_S_MAX, Exhausted, NodeSet, Tally
from bench.fifo_ledger import FifoLedger, FifoVerdict
from bench.flags import bounded
from bench.ledger import Ledger, Verdict
from bench.load import BATCH_ENTRIES
from bench.measure import rate
from bench.metrics import scrape
from bench.servers import (
    START_S,
    BenchError,
    Node,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
    tail,
)
from bench.sqs_client import SqsCallError

__all__ = ["SHAPES", "Plan", "build_parser", "cli_main", "parse_args", "render", "run"]

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
RESTART_AFTER_S_MAX = 60.0
TIMEOUT_S_MIN = 0.5
TIMEOUT_S_MAX = 120.0
WATCH_MS_MAX = 1000
LOG_LEVELS = ("debug", "info", "warning", "error")

# Presets of the flags (see the module's docstring); a flag given beside one wins.
SHAPES: dict[str, dict[str, Any]] = {
    "default": {},
    "failover": {
        "producers": 2,
        "consumers": 3,
        "visibility_s": 5,
        "wait_s": 1,
        "fault_s": 40.0,
        "kill_every_s": 4.0,
        "restart_after_s": 1.0,
        "drain_s": 60.0,
        "connect_timeout_s": 2.0,
        "read_timeout_s": 25.0,
        "blind_clients": True,
        "delete_elsewhere": True,
    },
}


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
    if plan.fifo_partitions:
        attributes["DeduplicationScope"] = "messageGroup"
        attributes["FifoThroughputLimit"] = "perMessageGroupId"
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


@contextlib.contextmanager
def _workdir(plan: Plan) -> Iterator[Path]:
    """A temporary directory, or the one --keep names (new or empty; left in place)."""
    if plan.keep is None:
        with tempfile.TemporaryDirectory(prefix="okuri-bench-cluster-") as tmp:
            yield Path(tmp)
        return
    keep = Path(plan.keep)
    try:
        keep.mkdir(parents=True, exist_ok=True)
        if any(keep.iterdir()):
            raise BenchError(f"--keep {keep}: not empty")
    except OSError as err:
        raise BenchError(f"--keep {keep}: {err}") from err
    yield keep


def run(plan: Plan) -> dict[str, Any]:
    with _workdir(plan) as workdir:
        env = {"OKURI_ACK_LOGS": plan.ack_logs}
        if plan.fifo_partitions:
            env["OKURI_FIFO_PARTITIONS"] = "on"
        if plan.node_log_level != "info":
            env["OKURI_LOG_LEVEL"] = plan.node_log_level
        with (
            shared_store(plan, workdir) as store,
            cluster(plan.nodes, store, workdir, env) as nodes,
        ):
            result = _run_on(plan, NodeSet(nodes), store, workdir if plan.keep else None)
            result["ack_logs"] = _ack_log_events(nodes)
            stop_codes = [n.stop() for n in nodes]
            result["nodes"]["exit_codes_at_stop"] = stop_codes
            if any(code != 0 for code in stop_codes):
                result["nodes"]["log_tails"] = {
                    n.index: tail(n.log_path)
                    for n, code in zip(nodes, stop_codes, strict=True)
                    if code != 0
                }
            if plan.keep:
                _write_json(workdir / "result.json", result)
                _write_json(
                    workdir / NODES_FILE,
                    {
                        "nodes": {
                            n.index: {"port": n.port, "health_port": n.health_port,
                                      "log": n.log_path.name, "starts": n.starts}
                            for n in nodes
                        },
                        "kill_log": result["kill_log"],
                    },
                )  # fmt: skip
    return result


def _write_json(path: Path, doc: Any) -> None:
    path.write_text(json.dumps(doc, indent=1) + "\n")


def _manifest_reader(store: StoreSpec, queue_url: str) -> Reader | None:
    queue = queue_url.rstrip("/").rsplit("/", 1)[-1]
    if store.data_dir is not None:
        return local_reader(store.data_dir, queue)
    if store.s3 is not None:
        s3 = store.s3
        return s3_reader(
            s3.endpoint, s3.bucket, s3.access_key_id, s3.secret_access_key, s3.region, queue
        )
    return None


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


def _run_on(
    plan: Plan, nodes: NodeSet, store: StoreSpec, keep: Path | None = None
) -> dict[str, Any]:
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
    chaos = Chaos(nodes, plan.kill_every_s, start_s + plan.fault_s, rng, plan.restart_after_s)
    reader = _manifest_reader(store, queue_url) if keep and plan.watch_ms else None
    watch = (
        None
        if keep is None or reader is None
        else ManifestWatch(reader, keep / MANIFESTS_FILE, start_s, plan.watch_ms / 1000)
    )
    for t in [*producers, *consumers, chaos, *([watch] if watch else [])]:
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
        if watch is not None:
            watch.stop()
            watch.join(JOIN_SLACK_S)
    verdict = load.ledger.verdict()
    if keep is not None:
        _write_json(keep / AFTER_DELETE_FILE, load.ledger.after_delete_timelines())
    fifo_verdict = None if load.fifo is None else load.fifo.verdict()
    tally = Tally()
    for seen in load.tallies:
        tally.merge(seen)
    figures = _figures(
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
    if watch is not None:
        figures["manifest_watch"] = {"reads": watch.reads, "versions": watch.versions}
    return figures


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
        "fifo": None
        if fifo is None
        else {"groups": plan.fifo_groups, "partitions": plan.fifo_partitions, **fifo.figures()},
        "sends_abandoned": load.sends_abandoned,
        "backlog": {"peak": load.backlog_peak, "producer_pauses": load.backlog_pauses},
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


def build_parser(shape: str = "default") -> argparse.ArgumentParser:
    """The flags, their defaults those of `shape` (SHAPES)."""
    p = argparse.ArgumentParser(
        prog="python -m bench cluster",
        description="Several okuri serve processes on one store, SIGKILLed under load; checks "
        "that no acknowledged send is lost and no message is delivered after its delete.",
    )
    add = p.add_argument
    add("--shape", choices=tuple(SHAPES), default="default",
        help="a preset of the flags below (a flag given beside it wins). failover: issue 28's "
        "load: visibility 5 s, 2 producers, 3 consumers waiting 1 s, clients with a 2 s connect "
        "and 25 s read timeout that fail over on a refused or dropped connection, a read "
        "timeout or a 5xx, choose any node and send each delete first to another node than "
        "its receive; a kill every 4 s, the restart 1 s after it; 40 s of faults, 60 s of "
        "drain")  # fmt: skip
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
    add("--drain-min-seconds", dest="drain_min_s", type=bounded(float, 0, DRAIN_S_MAX),
        default=0.0, help="consumers drain at least this long, even once every acknowledged "
        f"send was delivered (default: the visibility timeout plus {SETTLE_SLACK_S:g} "
        "s)")  # fmt: skip
    add("--messages-max", type=bounded(int, BATCH_ENTRIES, MESSAGES_MAX), default=200_000,
        help="producers stop after sending this many")  # fmt: skip
    add("--backlog-max", type=bounded(int, BATCH_ENTRIES, BACKLOG_MAX), default=2_000,
        help="producers pause while this many acknowledged sends are not deleted")  # fmt: skip
    add("--fifo-groups", type=bounded(int, 0, FIFO_GROUPS_MAX), default=0, metavar="N",
        help="a FIFO queue whose messages spread over N message groups; also checks "
        "deduplication and group order (default 0: a standard queue)")  # fmt: skip
    add("--fifo-partitions", action="store_true",
        help="with --fifo-groups: the queue in SQS's high-throughput mode on nodes started "
        "with OKURI_FIFO_PARTITIONS=on, its groups over partitions")  # fmt: skip
    add(
        "--seed",
        type=bounded(int, 0, SEED_MAX),
        default=None,
        help="which nodes die when, and which node each request goes to (default: random)",
    )
    add("--ack-logs", choices=("auto", "on", "off"), default="auto",
        help="the nodes' OKURI_ACK_LOGS (auto: on for a local directory, off on S3)")  # fmt: skip
    add("--restart-after-s", type=bounded(float, 0, RESTART_AFTER_S_MAX), default=0.0,
        help="start a killed node again this long after its kill (default 0: at once)")  # fmt: skip
    add("--connect-timeout-s", type=bounded(float, TIMEOUT_S_MIN, TIMEOUT_S_MAX), default=None,
        help="clients' connect timeout (default: the read timeout)")  # fmt: skip
    add("--read-timeout-s", type=bounded(float, TIMEOUT_S_MIN, TIMEOUT_S_MAX), default=None,
        help="clients' timeout for each read of an answer (default: the receive's wait plus "
        f"{REPLY_SLACK_S:g} s); a node that times out is failed over")  # fmt: skip
    add("--blind-clients", action=argparse.BooleanOptionalAction, default=False,
        help="clients choose among all nodes, up or not, and learn of a dead one from the "
        "failed request (default: only among nodes known to be up)")  # fmt: skip
    add("--delete-elsewhere", action=argparse.BooleanOptionalAction, default=False,
        help="send each DeleteMessageBatch first to another node than the receive that "
        "returned its receipts")  # fmt: skip
    add("--node-log-level", choices=LOG_LEVELS, default="info",
        help="the nodes' OKURI_LOG_LEVEL")  # fmt: skip
    add("--keep", default=None, metavar="DIR",
        help="run in DIR (new or empty) and leave there the nodes' logs, the manifest's "
        "history, every delivery after delete in full and the result; read them with "
        "python -m bench.cluster_watch DIR")  # fmt: skip
    add("--watch-ms", type=bounded(int, 0, WATCH_MS_MAX), default=10,
        help="with --keep: read the manifest this often to record its history (0: not at "
        "all)")  # fmt: skip
    add("--client", choices=("light", "boto3"), default="light",
        help="the clients' SQS client: the bench's own (light on CPU), or boto3's, with "
        "retries={'max_attempts': 1}")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object")
    p.set_defaults(**SHAPES[shape])
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The flags, a --shape's preset filling in those not given."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--shape", choices=tuple(SHAPES), default="default")
    known, _ = first.parse_known_args(argv)
    parser = build_parser(known.shape)
    args = parser.parse_args(argv)
    if args.s3_endpoint is not None and args.store != "s3":
        parser.error("--s3-endpoint goes with --store s3")
    if args.fifo_partitions and not args.fifo_groups:
        parser.error("--fifo-partitions goes with --fifo-groups")
    return args


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
        fifo_partitions=args.fifo_partitions,
        ack_logs=args.ack_logs,
        shape=args.shape,
        restart_after_s=args.restart_after_s,
        connect_timeout_s=args.connect_timeout_s,
        read_timeout_s=args.read_timeout_s,
        blind_clients=args.blind_clients,
        delete_elsewhere=args.delete_elsewhere,
        node_log_level=args.node_log_level,
        keep=args.keep,
        watch_ms=args.watch_ms,
        client=args.client,
        drain_min_s=args.drain_min_s,
    )


def cli_main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        result = run(plan_from(args))
    except BenchError as err:
        print(f"python -m bench cluster: error: {err}", file=sys.stderr)
        return 3
    print(json.dumps(result) if args.json else render(result))
    return 0 if result["ok"] else 1
