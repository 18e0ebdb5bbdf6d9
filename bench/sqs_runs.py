"""The runs of `python -m bench sqs`: start servers, open clients, drive the load, read the nodes.

Why apart from the command: this is what one measurement is (N fresh `okuri serve` nodes on a
fresh store, or a server someone else started, or an in-memory emulator's SQS as the peer:
ministack or moto), while bench.sqs only parses flags and prints. Each run opens one
client per endpoint (the light client or aiobotocore), creates a queue through the first, runs
bench.load's closed loop spread over all of them, and deletes the queue. With nodes
started here, a window hook (`NodeProbe`) reads every node's /metrics and CPU as the measured
window opens and closes, so the per-node figures cover the window only. Every process is
stopped by its pid when the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.load import Driver, SqsClient, WindowHook, Workload
from bench.measure import process_cpu_s
from bench.metrics import NodeCounters, scrape
from bench.ministack import ACCESS_KEY_ID as MINISTACK_ACCESS_KEY_ID
from bench.ministack import SECRET_ACCESS_KEY as MINISTACK_SECRET_ACCESS_KEY
from bench.ministack import ministack_server
from bench.profiler import Profiler
from bench.servers import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    MOTO_ACCESS_KEY_ID,
    MOTO_SECRET_ACCESS_KEY,
    REGION,
    BenchError,
    Node,
    Process,
    StoreSpec,
    bucket_store,
    cluster,
    moto_server,
    tail,
)
from bench.sqs_client import LightSqs

PEERS = ("ministack", "moto")  # in-memory SQS emulators; ministack is the faster one here
SETUP_S = 20.0  # create and delete the queue
CLIENT_SLACK_CONNECTIONS = 4
CLIENT_REPLY_SLACK_S = 30


@dataclass(frozen=True)
class Target:
    """SQS endpoints serving one queue; `cpu_s` reads their CPU seconds so far (None: unknown)."""

    name: str
    endpoints: tuple[str, ...]
    access_key_id: str
    secret_access_key: str
    region: str = REGION
    cpu_s: Callable[[], float | None] = lambda: None


@dataclass(frozen=True)
class Options:
    """What `python -m bench sqs` was asked to measure (bench.sqs builds it from the flags)."""

    workload: Workload
    linger_ms: int | None
    peer: str | None  # one of PEERS, measured after okuri with the same workload; None: none
    nodes: tuple[int, ...] = (1,)
    rounds: int = 1  # passes over `nodes`, alternating
    store: str = "local"
    client: str = "light"
    endpoint: str | None = None
    access_key_id: str = DEV_ACCESS_KEY_ID
    secret_access_key: str = DEV_SECRET_ACCESS_KEY
    region: str = REGION
    profile: str | None = None
    server_pid: int | None = None  # with `endpoint`: the server's pid on this machine, if known


# --- clients ----------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def open_clients(
    target: Target, kind: str, workload: Workload
) -> AsyncIterator[list[SqsClient]]:
    """One client per endpoint, each with connections for the workers that use it."""
    per_endpoint = -(-(workload.producers + workload.consumers) // len(target.endpoints))
    connections = per_endpoint + CLIENT_SLACK_CONNECTIONS
    reply_timeout_s = workload.wait_s + CLIENT_REPLY_SLACK_S
    async with contextlib.AsyncExitStack() as stack:
        clients: list[SqsClient] = []
        for endpoint in target.endpoints:
            if kind == "light":
                light = LightSqs(
                    endpoint,
                    target.access_key_id,
                    target.secret_access_key,
                    target.region,
                    connections,
                    reply_timeout_s,
                )
                clients.append(await stack.enter_async_context(light))
            else:
                clients.append(
                    await stack.enter_async_context(
                        _aiobotocore(target, endpoint, connections, reply_timeout_s)
                    )
                )
        yield clients


def _aiobotocore(
    target: Target, endpoint: str, connections: int, reply_timeout_s: float
) -> contextlib.AbstractAsyncContextManager[Any]:
    from aiobotocore.session import get_session
    from botocore.config import Config

    config = Config(
        max_pool_connections=connections,
        retries={"max_attempts": 1, "mode": "standard"},  # a failure is counted, not hidden
        parameter_validation=False,  # client CPU spent here is CPU the server cannot use
        connect_timeout=5,
        read_timeout=reply_timeout_s,
    )
    client: contextlib.AbstractAsyncContextManager[Any] = get_session().create_client(
        "sqs",
        region_name=target.region,
        endpoint_url=endpoint,
        aws_access_key_id=target.access_key_id,
        aws_secret_access_key=target.secret_access_key,
        config=config,
    )
    return client


async def drive(
    target: Target,
    workload: Workload,
    queue_name: str,
    client: str = "light",
    hooks: Sequence[WindowHook] = (),
) -> dict[str, Any]:
    """Create a queue on `target`, run the workload against it, delete the queue."""
    async with open_clients(target, client, workload) as clients:
        first: Any = clients[0]
        try:
            created = await asyncio.wait_for(
                first.create_queue(**workload.queue_request(queue_name)), SETUP_S
            )
        except Exception as err:
            raise BenchError(f"{target.name}: cannot create queue {queue_name!r}: {err}") from err
        queue_url = created["QueueUrl"]
        figures = await Driver(clients, queue_url, workload).run(target.cpu_s, hooks)
        with contextlib.suppress(Exception):  # best effort: a fresh server is discarded anyway
            await asyncio.wait_for(first.delete_queue(QueueUrl=queue_url), SETUP_S)
    return {"target": target.name, "endpoint": target.endpoints[0], **figures}


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_async(main: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)


# --- per-node counters over the window -----------------------------------------------------------


@dataclass
class NodeProbe:
    """A window hook reading each node's /metrics and CPU as the window opens and closes."""

    nodes: list[Node]
    store_pid: int | None = None  # moto's S3, when the nodes share a bucket on it
    _before: list[tuple[NodeCounters | None, float | None]] = field(default_factory=list)
    _store_cpu0: float | None = None
    per_node: list[dict[str, Any]] = field(default_factory=list)
    store_cpu_s: float | None = None

    def _read(self) -> list[tuple[NodeCounters | None, float | None]]:
        return [
            (scrape(n.health_url), None if n.pid is None else process_cpu_s(n.pid))
            for n in self.nodes
        ]

    def _store_cpu(self) -> float | None:
        return None if self.store_pid is None else process_cpu_s(self.store_pid)

    async def opened(self) -> None:
        self._before = await asyncio.to_thread(self._read)
        self._store_cpu0 = self._store_cpu()

    async def closed(self) -> None:
        store1 = self._store_cpu()
        if store1 is not None and self._store_cpu0 is not None:
            self.store_cpu_s = store1 - self._store_cpu0
        after = await asyncio.to_thread(self._read)
        self.per_node = []
        for node, (c0, cpu0), (c1, cpu1) in zip(self.nodes, self._before, after, strict=True):
            counters = c1.minus(c0) if c0 is not None and c1 is not None else None
            self.per_node.append(
                {
                    "node": node.index,
                    "pid": node.pid,
                    "endpoint": node.endpoint,
                    "cpu_s": None if cpu0 is None or cpu1 is None else round(cpu1 - cpu0, 3),
                    **(counters.figures() if counters is not None else {"metrics": None}),
                }
            )


def _summed_cpu(pids: list[int]) -> Callable[[], float | None]:
    def read() -> float | None:
        readings = [process_cpu_s(pid) for pid in pids]
        if any(r is None for r in readings):
            return None
        return sum(r for r in readings if r is not None)

    return read


# --- the runs -------------------------------------------------------------------------------------


def _queue_name(target: str) -> str:
    return f"okuri-bench-{target}-{os.getpid()}"


def _run_workload(
    target: Target,
    opts: Options,
    queue: str,
    logdir: Path,
    profile_pid: int | None = None,
    hooks: Sequence[WindowHook] = (),
) -> dict[str, Any]:
    """Drive `target` with the workload. With --profile and `profile_pid`, py-spy samples that
    process over the window, opened before the other hooks and closed before them too."""
    profiler = None
    if opts.profile is not None and profile_pid is not None:
        profiler = Profiler(profile_pid, opts.profile, logdir / "py-spy.log")
        hooks = [profiler, *hooks]
    figures = run_async(drive(target, opts.workload, _queue_name(queue), opts.client, hooks))
    if profiler is not None:
        profiler.check()
        figures["profile"] = opts.profile
    return figures


def run_endpoint(opts: Options, workdir: Path) -> dict[str, Any]:
    """Drive a server someone else started (one node; CPU figures only with its pid)."""
    assert opts.endpoint is not None
    pid = opts.server_pid
    target = Target(
        "okuri",
        (opts.endpoint,),
        opts.access_key_id,
        opts.secret_access_key,
        opts.region,
        cpu_s=lambda: None if pid is None else process_cpu_s(pid),
    )
    figures = _run_workload(target, opts, "okuri", workdir, pid)
    return {"nodes": 1, **figures, "per_node": [], "server": {"pid": pid}}


def _core_per_node(figures: dict[str, Any], per_node: list[dict[str, Any]]) -> float | None:
    """What the nodes would carry with a core each: the rate, scaled by the busiest node's CPU.

    On a machine with fewer cores than processes (nodes and the load generator), an end-to-end
    rate says more about the machine than about scale-out; the busiest node is what saturates
    first when each node has a core of its own. A projection: it assumes the rest scales.
    """
    busiest = max((n["cpu_percent"] or 0.0 for n in per_node), default=0.0)
    if busiest <= 0:
        return None
    return round(float(figures["messages_per_s"]) * 100 / busiest, 1)


def run_nodes(
    count: int, store: StoreSpec, opts: Options, workdir: Path, store_pid: int | None = None
) -> dict[str, Any]:
    """`count` fresh nodes on `store`, the load spread over them, each node's counters.

    `store_pid` is the S3 server's process, when the store is a bucket on one started here."""
    extra_env = {} if opts.linger_ms is None else {"OKURI_LINGER_MS": str(opts.linger_ms)}
    rundir = Path(tempfile.mkdtemp(prefix=f"nodes-{count}-", dir=workdir))  # one per round
    with cluster(count, store, rundir, extra_env) as nodes:
        pids = [n.pid for n in nodes if n.pid is not None]
        target = Target(
            "okuri",
            tuple(n.endpoint for n in nodes),
            DEV_ACCESS_KEY_ID,
            DEV_SECRET_ACCESS_KEY,
            cpu_s=_summed_cpu(pids),
        )
        probe = NodeProbe(nodes, store_pid)
        first_pid = pids[0] if pids else None
        figures = _run_workload(target, opts, f"okuri{count}", rundir, first_pid, [probe])
    window_s = figures["window_s"]
    for node in probe.per_node:
        cpu_s = node.pop("cpu_s")
        node["cpu_percent"] = None if cpu_s is None else round(100 * cpu_s / window_s, 1)
    figures["cpu"]["store_percent"] = (
        None if probe.store_cpu_s is None else round(100 * probe.store_cpu_s / window_s, 1)
    )
    figures["cpu"]["core_per_node_messages_per_s"] = _core_per_node(figures, probe.per_node)
    exit_codes = [n.exit_codes[-1] if n.exit_codes else None for n in nodes]
    server: dict[str, Any] = {"pids": pids, "exit_codes": exit_codes}
    server["exit_code"] = next((c for c in exit_codes if c != 0), 0)
    if server["exit_code"] != 0:
        server["log_tail"] = tail(nodes[0].log_path)
    return {"nodes": count, **figures, "per_node": probe.per_node, "server": server}


def run_okuri(opts: Options, workdir: Path) -> list[dict[str, Any]]:
    if opts.endpoint is not None:
        return [run_endpoint(opts, workdir)]
    runs: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        moto = None
        if opts.store == "s3":
            moto = stack.enter_context(moto_server(workdir, "moto-s3"))
        for round_ in range(1, opts.rounds + 1):
            for count in opts.nodes:
                if moto is not None:
                    store = bucket_store(moto.endpoint, f"okuri-bench-{os.getpid()}-{len(runs)}")
                    run = run_nodes(count, store, opts, workdir, moto.process.pid)
                else:
                    data_dir = Path(tempfile.mkdtemp(prefix="data-", dir=workdir))
                    run = run_nodes(count, StoreSpec(data_dir=data_dir), opts, workdir)
                if opts.rounds > 1:
                    run["round"] = round_
                runs.append(run)
    return runs


@contextlib.contextmanager
def peer_server(name: str, workdir: Path) -> Iterator[tuple[Target, Process]]:
    """Emulator `name` started in `workdir`, as a target; servers.Unavailable when it cannot
    be installed here (ministack), BenchError when it will not start."""
    if name == "ministack":
        with ministack_server(workdir) as ministack:
            keys = (MINISTACK_ACCESS_KEY_ID, MINISTACK_SECRET_ACCESS_KEY)
            yield _peer_target(name, ministack.endpoint, keys, ministack.process)
    elif name == "moto":
        with moto_server(workdir) as moto:
            keys = (MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY)
            yield _peer_target(name, moto.endpoint, keys, moto.process)
    else:
        raise BenchError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")


def _peer_target(
    name: str, endpoint: str, keys: tuple[str, str], process: Process
) -> tuple[Target, Process]:
    pid = process.pid
    return Target(name, (endpoint,), *keys, cpu_s=lambda: process_cpu_s(pid)), process


def run_peer(opts: Options, workdir: Path) -> dict[str, Any]:
    """The peer emulator driven as okuri was: the same workload, client and queue kind."""
    assert opts.peer is not None
    with peer_server(opts.peer, workdir) as (target, process):
        figures = _run_workload(target, opts, opts.peer, workdir)
        code = process.stop()
    figures["server"] = {"pid": process.pid, "exit_code": code}
    return figures
