"""`okuri dst`: run simulation seeds, print what failed and how to replay it.

Why here and not in okuri/sim/world.py: a run picks its workload (okuri/sim/chaos.py or
okuri/sim/steady.py), and both are built on the world, so what composes them sits above all
three and nothing below imports back.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import os
import sys
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from okuri.core import keys
from okuri.core.invariants import InvariantViolation
from okuri.sim.chaos import ChaosLoad
from okuri.sim.checkers import Violation
from okuri.sim.config import SimConfig
from okuri.sim.history import History
from okuri.sim.loop import run_virtual
from okuri.sim.steady import SteadyLoad
from okuri.sim.world import World


@dataclass
class RunResult:
    config: SimConfig
    violations: list[Violation]
    history: History
    requests: dict[str, int]
    lanes: int = 0  # lane manifests in the bucket at the end (okuri/engine/lanes.py)

    @property
    def ok(self) -> bool:
        return not self.violations


async def simulate(config: SimConfig) -> RunResult:
    """One run: the cluster set up, the seed's workload through the fault and liveness phases.

    A manifest write the invariants refused is a bug even when every checker passes: the
    refusal fails the operations of that commit (in a background task, nobody sees it), so it
    fails the run too.
    """
    refused: list[str] = []

    def on_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        err = context.get("exception")
        if isinstance(err, InvariantViolation):
            refused.append(str(err))
        else:
            loop.default_exception_handler(context)

    asyncio.get_running_loop().set_exception_handler(on_error)
    world = World(config)
    await world.setup()
    load = SteadyLoad(world) if config.steady else ChaosLoad(world)
    violations = await load.run()
    gc.collect()  # tasks that failed unobserved report as they are collected
    violations += [Violation("invariant_refused", text) for text in refused[:5]]
    lanes = sum(1 for key in world.memory.objects if key.startswith(keys.LANES))
    return RunResult(config, violations, world.history, world.store.counts.snapshot(), lanes)


def run_seed(seed: int) -> RunResult:
    return run_virtual(simulate(SimConfig.from_seed(seed)))


def seed_verdict(seed: int) -> str | None:
    """None when `seed` keeps every invariant, else what `describe` says of it: a small, picklable
    answer for a worker process."""
    result = run_seed(seed)
    return None if result.ok else describe(result)


def seed_workers(jobs: int) -> Executor:
    """Worker processes for `verdicts`. Spawned, not forked: the caller may hold threads (a test
    run's servers) that a fork would copy mid-flight. Seeds share nothing, so a seed gives the
    same verdict in any worker. A worker drops any tracer it started with (a coverage run
    measuring subprocesses), which would make it several times slower for no verdict's sake."""
    return ProcessPoolExecutor(
        jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=sys.settrace,
        initargs=(None,),
    )


def verdicts(seeds: Iterable[int], workers: Executor | None) -> Iterator[tuple[int, str | None]]:
    """Each seed with its `seed_verdict`, in seed order; in this process when `workers` is None."""
    ordered = list(seeds)
    answers = map(seed_verdict, ordered) if workers is None else workers.map(seed_verdict, ordered)
    return zip(ordered, answers, strict=True)


def default_jobs() -> int:
    """One worker per core this process may run on: seeds are pure CPU."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def describe(result: RunResult) -> str:
    c = result.config
    h = result.history
    lines = [
        f"seed {c.seed}: nodes={c.nodes} linger={c.linger_ms}ms latency={c.latency_ms}ms "
        f"faults(transient={c.p_transient} conflict={c.p_conflict} ambiguous={c.p_ambiguous}) "
        f"skew<={c.skew_ms_max}ms crash_every={c.crash_every_s}s producers={c.producers} "
        f"consumers={c.consumers} visibility={c.visibility_s}s mrc={c.max_receive_count} "
        f"retention={c.retention_s}s purges={c.purges}",
    ]
    if c.steady:
        outage = f", the last {c.outage_s:.0f}s with the consumer nodes down" if c.outage_s else ""
        lines.append(
            f"  steady load: producers on {c.producer_nodes} node(s), consumers on "
            f"{c.nodes - c.producer_nodes}; {c.batches} batches of {c.batch_messages} every "
            f"{c.batch_interval_s * 1000:.0f}ms per producer ({c.send_rate_per_s:.1f} msg/s); "
            f"{c.fault_phase_s:.0f}s of faults{outage}, then {c.steady_phase_s:.0f}s healed"
        )
    if c.failover:
        lines.append(
            f"  failover: nodes forward to a leader (ack logs {'on' if c.ack_logs else 'off'}); "
            "consumers delete what each receive brought through another node"
        )
    if c.fifo:
        dups = sum(1 for s in h.sent if s.duplicate)
        lines.append(
            f"  fifo: {c.groups} group(s), resends on purpose at {c.p_resend}; "
            f"{dups} send(s) answered as duplicates"
        )
    lines += [
        f"  sent={len(h.sent)} delivered={len(h.delivered)} acks={len(h.acked)} "
        f"crashes={h.crashes} lanes={result.lanes} requests={result.requests}",
    ]
    for v in result.violations:
        lines.append(f"  VIOLATION {v}")
    if result.violations:
        lines.append(f"  replay: okuri dst {c.seed}")
    return "\n".join(lines)


def cli_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="okuri dst", description="deterministic simulation")
    parser.add_argument("seed", nargs="?", type=int, help="replay exactly this seed")
    parser.add_argument("--seeds", type=int, default=0, help="run this many seeds")
    parser.add_argument("--start", type=int, default=0, help="first seed of --seeds")
    parser.add_argument(
        "--jobs", type=int, default=0,
        help="worker processes for --seeds (default: one per core; 1 runs them in this process)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.jobs < 0:
        parser.error("--jobs must be 0 (one per core) or more")
    if args.seed is not None:
        result = run_seed(args.seed)
        print(describe(result))
        print("ok" if result.ok else "FAILED")
        return 0 if result.ok else 1
    count = args.seeds or 100
    jobs = min(args.jobs or default_jobs(), count)
    failed = []
    t0 = time.monotonic()
    workers = seed_workers(jobs) if jobs > 1 else None
    try:
        for seed, failure in verdicts(range(args.start, args.start + count), workers):
            if failure is not None:
                failed.append(seed)
                print(failure, flush=True)
    finally:
        if workers is not None:
            workers.shutdown(cancel_futures=True)
    elapsed = time.monotonic() - t0
    print(
        f"dst: {count} seeds from {args.start}, {len(failed)} failing, {elapsed:.1f}s"
        f" ({jobs} worker{'s' if jobs > 1 else ''})"
    )
    if failed:
        print("failing seeds: " + " ".join(map(str, failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(cli_main(sys.argv[1:]))
