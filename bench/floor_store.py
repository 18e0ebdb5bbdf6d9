"""The store's own write time, the unit of a floor: what one durable write costs on its own.

Why apart: a call's floor adds, for each write its answer waits for, the store's median write,
measured here without okuri around it.

- a local directory: the store okuri serve gives a fresh directory (okuri/store/directory.py:
  the journal) on the same filesystem as the server's, writing OBJECT_BYTES objects one at a
  time: put_if_absent (a new object, as a segment is written) then put_if_match of it (a
  compare-and-swap, as a manifest commit is). Its syncs are the write's cost.
- S3: a conditional PUT (If-None-Match: *) of an OBJECT_BYTES object through botocore, then an
  If-Match PUT of it, through the same latency proxy okuri's server talks through, so the
  proxy's added latency is in the floor.

The median of the put_if_absent writes is the "write" of the floor; both are reported. A
store's speed drifts (a disk shared with other work, a busy moto), so the bench times half the
writes before the calls and half after (`StoreWrites.plus`), not all of them at one moment.
"""

from __future__ import annotations

import asyncio
import statistics
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter
from typing import Any

from bench.daemon import loop_factory
from bench.floor_calls import Budget
from bench.servers import MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY, botocore_client

OBJECT_BYTES = 1024
KEY_PREFIX = "okuri-floor-probe/"


@dataclass(frozen=True)
class StoreWrites:
    """Seconds each write took: new objects (put_if_absent), then swaps (put_if_match)."""

    absent_s: tuple[float, ...] = ()
    match_s: tuple[float, ...] = ()

    @property
    def samples(self) -> int:
        return len(self.absent_s)

    @property
    def put_if_absent_p50_ms(self) -> float | None:
        return _p50_ms(self.absent_s)

    @property
    def put_if_match_p50_ms(self) -> float | None:
        return _p50_ms(self.match_s)

    def plus(self, other: StoreWrites) -> StoreWrites:
        return StoreWrites(self.absent_s + other.absent_s, self.match_s + other.match_s)


def _p50_ms(seconds: tuple[float, ...]) -> float | None:
    return statistics.median(seconds) * 1000 if seconds else None


async def _local(root: Path, budget: Budget, first: int) -> StoreWrites:
    from okuri.store.directory import open_local

    store = open_local(str(root))
    data = b"w" * OBJECT_BYTES
    absent_s: list[float] = []
    match_s: list[float] = []
    try:
        for i in budget.rounds():
            key = f"{KEY_PREFIX}{first + i:08d}"
            start = perf_counter()
            etag = await store.put_if_absent(key, data)
            absent_s.append(perf_counter() - start)
            start = perf_counter()
            await store.put_if_match(key, data, etag)
            match_s.append(perf_counter() - start)
    finally:
        await store.close()
    return StoreWrites(tuple(absent_s), tuple(match_s))


def local_writes(root: Path, budget: Budget, first: int = 0) -> StoreWrites:
    """The local store's writes on a new directory `root` (on the server's filesystem), of new keys
    numbered from `first`."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:  # okuri serve's loop
        return runner.run(_local(root, budget, first))


def s3_writes(endpoint: str, bucket: str, budget: Budget, first: int = 0) -> StoreWrites:
    """Conditional PUTs into `bucket` at `endpoint` (the latency proxy), through botocore, of
    new keys numbered from `first`."""
    client: Any = botocore_client(
        "s3", endpoint, MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY, attempts=1, connections_max=1
    )
    data = b"w" * OBJECT_BYTES
    absent_s: list[float] = []
    match_s: list[float] = []
    try:
        client.head_bucket(Bucket=bucket)  # the connection opened before the first write
        for i in budget.rounds():
            key = f"{KEY_PREFIX}{first + i:08d}"
            start = perf_counter()
            etag = client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")["ETag"]
            absent_s.append(perf_counter() - start)
            start = perf_counter()
            client.put_object(Bucket=bucket, Key=key, Body=data, IfMatch=etag)
            match_s.append(perf_counter() - start)
    finally:
        client.close()
    return StoreWrites(tuple(absent_s), tuple(match_s))
