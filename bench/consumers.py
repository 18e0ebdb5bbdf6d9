"""`python -m bench consumers`: what an SQS consumer loop carries on its own on S3 latency.

Why: a consumer that receives 10 and deletes them (boto3, kombu's sqs://) is bounded by the
round trips each turn waits for, not by the node's CPU. This runs 1, 2, 4 and 8 such consumers
on one node (the engine on the in-memory store with bench/cost.py's S3 latency model, on
virtual time, so a run takes seconds and prints the same figures every time) while producers
on the same node keep the queue full, and prints messages/s per consumer and where each turn's
time goes:

- receive: waiting for a commit (the linger window, a flush already in flight, the flush's
  compare-and-swap and its manifest reads), the re-check read of leases taken ahead
  (`_still_ours`), and the rest (segments, discovery);
- delete: the same split of its commit.

Each consumer names itself as the engine's caller (`okuri.engine.caller`), as a server names a
client's connection, so one consumer is a lone caller and several share the flushes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
from collections import defaultdict
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from bench.cost import LatencyModel
from okuri import limits
from okuri.clock import LoopClock
from okuri.engine import Engine, SendRequest, caller
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.forwarding import ForwardingStore
from okuri.store.port import Blob, ObjectStore

CONSUMER_COUNTS = (1, 2, 4, 8)
LATENCY = LatencyModel(read_ms_median=15.0, write_ms_median=30.0)  # bench/cost.py's
QUEUE = "consumers"
BATCH = limits.batch_entries_max
WAIT_S = 20
BACKLOG_MESSAGES = 2000  # producers keep at least this many waiting
PRODUCERS = 16
DURATION_S = 60.0
DURATION_S_MAX = 3600.0


@dataclass
class Split:
    """Seconds one kind of call spent, by what it waited on."""

    calls: int = 0
    total_s: float = 0.0
    parts: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    def per_call_ms(self) -> dict[str, float]:
        n = max(self.calls, 1)
        out = {"total": round(self.total_s * 1000 / n, 1)}
        out.update({k: round(v * 1000 / n, 1) for k, v in sorted(self.parts.items())})
        return out


@dataclass
class Account:
    receive: Split = field(default_factory=Split)
    delete: Split = field(default_factory=Split)
    messages: int = 0


@dataclass
class Flush:
    start_s: float
    end_s: float = -1.0
    reads_s: float = 0.0  # manifest GETs inside it
    cas_s: float = 0.0  # manifest compare-and-swaps inside it


_account: ContextVar[Split | None] = ContextVar("bench_consumers_account", default=None)


class ManifestTimer(ForwardingStore):
    """Charges the time of each manifest request made inside a flush to that flush."""

    def __init__(self, inner: ObjectStore, now: Callable[[], float]) -> None:
        super().__init__(inner)
        self._now = now
        self.manifest = ""  # the queue's manifest key, once the queue exists
        self.flush: Flush | None = None
        self.manifest_gets = 0

    async def get(self, key: str) -> Blob:
        start, flush = self._now(), self.flush
        if key == self.manifest:
            self.manifest_gets += 1
        try:
            return await super().get(key)
        finally:
            if flush is not None and key == self.manifest:
                flush.reads_s += self._now() - start

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        start, flush = self._now(), self.flush
        try:
            return await super().put_if_match(key, data, etag)
        finally:
            if flush is not None:
                flush.cas_s += self._now() - start


async def _run(consumers: int, linger_ms: int, duration_s: float, seed: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    now = loop.time
    memory = LATENCY.store("consumers", seed)
    store = ManifestTimer(memory, now)
    engine = Engine(
        store, LoopClock(EPOCH_MS, random.Random(f"consumers-{seed}")), linger_ms, node_id="n1"
    )
    await engine.create_queue(QUEUE)
    queue = engine.runtime(QUEUE)
    manifest, committer = queue.manifest, queue.manifest.committer
    store.manifest = manifest.cell.key
    flushes: list[Flush] = []
    inner_flush = committer._flush

    async def timed_flush(batches: list[Any]) -> list[Any]:
        flush = Flush(now())
        flushes.append(flush)
        store.flush = flush
        try:
            return await inner_flush(batches)
        finally:
            store.flush = None
            flush.end_s = now()

    committer._flush = timed_flush
    inner_commit, inner_refresh = manifest.commit, manifest.refresh

    async def timed_commit(ops: Any) -> Any:
        split, began = _account.get(), now()
        in_flight = flushes[-1] if flushes and flushes[-1].end_s < 0 else None
        result = await inner_commit(ops)
        if split is not None:
            ended = now()
            served = next(
                (f for f in reversed(flushes) if f.end_s == ended and f.start_s >= began), None
            )
            if served is None:
                split.parts["commit (unmatched)"] += ended - began
            else:
                behind = (
                    max(0.0, min(in_flight.end_s, served.start_s) - began) if in_flight else 0.0
                )
                split.parts["commit: behind a flush"] += behind
                split.parts["commit: window"] += served.start_s - began - behind
                split.parts["commit: CAS"] += served.cas_s
                split.parts["commit: manifest reads"] += served.reads_s
                rest = served.end_s - served.start_s - served.cas_s - served.reads_s
                split.parts["commit: other"] += max(0.0, rest)
        return result

    async def timed_refresh() -> Any:
        split, began = _account.get(), now()
        result = await inner_refresh()
        if split is not None:
            split.parts["manifest re-read"] += now() - began
        return result

    manifest.commit = timed_commit  # type: ignore[method-assign]
    manifest.refresh = timed_refresh  # type: ignore[method-assign]

    stop = now() + duration_s
    sent = deleted = 0
    accounts = [Account() for _ in range(consumers)]

    async def produce(k: int) -> None:
        nonlocal sent
        caller.set(f"producer {k}")
        i = 0
        while now() < stop:
            if sent - deleted >= BACKLOG_MESSAGES:
                await asyncio.sleep(0.005)
                continue
            batch = [SendRequest(b"p%d-%d" % (k, i + j)) for j in range(BATCH)]
            i += BATCH
            await engine.send(QUEUE, batch)
            sent += BATCH

    async def timed(split: Split, call: Awaitable[Any]) -> Any:
        token = _account.set(split)
        began = now()
        try:
            return await call
        finally:
            split.calls += 1
            split.total_s += now() - began
            _account.reset(token)

    async def consume(k: int) -> None:
        nonlocal deleted
        caller.set(f"consumer {k}")  # its connection, as a server names it
        account = accounts[k]
        while now() < stop:
            got = await timed(account.receive, engine.receive(QUEUE, BATCH, None, WAIT_S))
            if got:
                await timed(account.delete, engine.ack(QUEUE, [d.receipt_handle for d in got]))
                account.messages += len(got)
                deleted += len(got)

    producers = [asyncio.ensure_future(produce(k)) for k in range(PRODUCERS)]
    await asyncio.sleep(2.0)  # a backlog first
    began = now()
    stop = began + duration_s
    for a in accounts:
        a.receive, a.delete, a.messages = Split(), Split(), 0
    commits_before = engine.stats["manifest_commits"]
    reads_before = store.manifest_gets
    await asyncio.gather(*(consume(k) for k in range(consumers)))
    for task in producers:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*producers)
    elapsed = now() - began
    await engine.close()
    total = sum(a.messages for a in accounts)
    receive, delete = Split(), Split()
    for a in accounts:
        for mine, theirs in ((receive, a.receive), (delete, a.delete)):
            mine.calls += theirs.calls
            mine.total_s += theirs.total_s
            for part, took_s in theirs.parts.items():
                mine.parts[part] += took_s
    return {
        "consumers": consumers,
        "linger_ms": linger_ms,
        "messages_per_s": round(total / elapsed, 1),
        "per_consumer_per_s": round(total / elapsed / consumers, 1),
        "messages_per_receive": round(total / max(receive.calls, 1), 2),
        "commits_per_s": round((engine.stats["manifest_commits"] - commits_before) / elapsed, 1),
        "manifest_gets_per_s": round((store.manifest_gets - reads_before) / elapsed, 1),
        "backlog_at_end": sent - deleted,
        "receive_ms": receive.per_call_ms(),
        "delete_ms": delete.per_call_ms(),
    }


def measure(counts: tuple[int, ...], linger_ms: int, duration_s: float, seed: int) -> list[Any]:
    return [run_virtual(_run(n, linger_ms, duration_s, seed)) for n in counts]


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"one node, S3 latency model (median {LATENCY.read_ms_median:.0f} ms reads / "
        f"{LATENCY.write_ms_median:.0f} ms writes), linger {rows[0]['linger_ms']} ms, "
        "consumers looping ReceiveMessage(10, wait 20 s) then DeleteMessageBatch(10)",
        "consumers  msgs/s  per consumer  msgs/receive  commits/s",
    ]
    for r in rows:
        lines.append(
            f"{r['consumers']:9d}  {r['messages_per_s']:6.0f}  {r['per_consumer_per_s']:12.1f}"
            f"  {r['messages_per_receive']:12.2f}  {r['commits_per_s']:9.1f}"
        )
    for r in rows:
        lines.append(f"\n{r['consumers']} consumer(s): ms per call, by what it waited on")
        for kind in ("receive_ms", "delete_ms"):
            parts = ", ".join(f"{k} {v:.1f}" for k, v in r[kind].items() if k != "total")
            lines.append(f"  {kind[:-3]:<8} {r[kind]['total']:6.1f}: {parts}")
    return "\n".join(lines)


def cli_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench consumers")
    p.add_argument("--consumers", type=int, nargs="*", default=list(CONSUMER_COUNTS))
    p.add_argument("--linger-ms", type=int, default=limits.linger_ms_default)
    p.add_argument("--seconds", type=float, default=DURATION_S)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    seconds = min(max(args.seconds, 1.0), DURATION_S_MAX)
    rows = measure(tuple(args.consumers), args.linger_ms, seconds, args.seed)
    print(json.dumps(rows) if args.json else render(rows))
    return 0
