"""In-memory store: the simulator's bucket, with seeded fault injection.

Fault model (each drawn from the store's own seeded rng, per request, only while `faults.enabled`):
- latency: lognormal around `latency_ms_median`; a write takes effect halfway through it, so a
  caller cancelled (a crashed node) in the second half leaves a write that landed unanswered;
- transient: the request fails before doing anything;
- conflict: a conditional write fails with 409 before doing anything;
- ambiguous: the write lands or not (even odds) and the caller hears `Ambiguous` either way
  (a timeout or a lost reply).
Etags are the MD5 of the body, as on S3, so the ABA hazard is real here too.
"""

from __future__ import annotations

import hashlib
import math
import random
from bisect import bisect_left, bisect_right, insort
from dataclasses import dataclass

from okuri.clock import Clock
from okuri.errors import Ambiguous, Conflict, NotFound, PreconditionFailed, Transient
from okuri.store.port import Blob


@dataclass
class Faults:
    enabled: bool = False
    latency_ms_median: float = 0.0
    write_latency_ms_median: float | None = None  # None: writes are as slow as reads
    latency_sigma: float = 0.5
    latency_ms_max: float = 2_000.0
    p_transient: float = 0.0
    p_conflict: float = 0.0
    p_ambiguous: float = 0.0


def list_page(keys: list[str], prefix: str, start_after: str, limit: int) -> list[str]:
    """One LIST page out of `keys`, sorted: those under `prefix` after `start_after`, `limit` at
    most (the stores that keep their keys in memory answer LIST from such a list)."""
    start = max(bisect_left(keys, prefix), bisect_right(keys, start_after))
    out: list[str] = []
    for key in keys[start:]:
        if len(out) >= limit or not key.startswith(prefix):
            break
        out.append(key)
    return out


def md5_etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'


class MemoryStore:
    def __init__(
        self,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        faults: Faults | None = None,
    ) -> None:
        self._clock = clock
        self._rng = rng or random.Random(0)
        self.faults = faults or Faults()
        self.objects: dict[str, Blob] = {}
        self._keys: list[str] = []

    # --- fault plumbing ----------------------------------------------------------------------

    def _latency_s(self, write: bool = False) -> float:
        f = self.faults
        median = f.latency_ms_median
        if write and f.write_latency_ms_median is not None:
            median = f.write_latency_ms_median
        if not f.enabled or median <= 0:
            return 0.0
        ms = median * math.exp(self._rng.gauss(0.0, f.latency_sigma))
        return min(ms, f.latency_ms_max) / 1000.0

    async def _pause(self, seconds: float) -> None:
        if seconds > 0 and self._clock is not None:
            await self._clock.sleep(seconds)

    def _roll(self, p: float) -> bool:
        return self.faults.enabled and p > 0 and self._rng.random() < p

    async def _read(self) -> None:
        if self._roll(self.faults.p_transient):
            await self._pause(self._latency_s())
            raise Transient("injected transient error")
        await self._pause(self._latency_s())

    async def _write(self, conditional: bool, apply: object) -> str:
        """Run `apply` (a zero-arg callable returning the etag) under the fault model."""
        assert callable(apply)
        latency = self._latency_s(write=True)
        if self._roll(self.faults.p_transient):
            await self._pause(latency)
            raise Transient("injected transient error")
        if conditional and self._roll(self.faults.p_conflict):
            await self._pause(latency)
            raise Conflict("injected 409 ConditionalRequestConflict")
        ambiguous = self._roll(self.faults.p_ambiguous)
        lands = not ambiguous or self._rng.random() < 0.5
        await self._pause(latency / 2)
        if not lands:
            await self._pause(latency / 2)
            raise Ambiguous("injected timeout before the write landed")
        try:
            etag: str = apply()
        except (NotFound, PreconditionFailed):
            await self._pause(latency / 2)
            if ambiguous:
                raise Ambiguous("injected lost reply of a refused write") from None
            raise
        await self._pause(latency / 2)
        if ambiguous:
            raise Ambiguous("injected lost reply after the write landed")
        return etag

    # --- the port ----------------------------------------------------------------------------

    def _store(self, key: str, data: bytes) -> str:
        if key not in self.objects:
            insort(self._keys, key)
        blob = Blob(bytes(data), md5_etag(data))
        self.objects[key] = blob
        return blob.etag

    async def get(self, key: str) -> Blob:
        await self._read()
        try:
            return self.objects[key]
        except KeyError:
            raise NotFound(key) from None

    async def put_if_absent(self, key: str, data: bytes) -> str:
        def apply() -> str:
            if key in self.objects:
                raise PreconditionFailed(key)
            return self._store(key, data)

        return await self._write(True, apply)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        def apply() -> str:
            current = self.objects.get(key)
            if current is None:
                raise NotFound(key)
            if current.etag != etag:
                raise PreconditionFailed(key)
            return self._store(key, data)

        return await self._write(True, apply)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        await self._read()
        return list_page(self._keys, prefix, start_after, limit)

    async def delete(self, key: str) -> None:
        def apply() -> str:
            if self.objects.pop(key, None) is not None:
                self._keys.remove(key)
            return ""

        await self._write(False, apply)

    async def close(self) -> None:
        return None
