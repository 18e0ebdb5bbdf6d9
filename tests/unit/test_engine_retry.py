"""Backoff after store failures: its window grows with failures, not with lost races.

A compare-and-swap loop or a slot append goes round for reasons that are not the store
failing (another writer won, a slot was taken). When those turns grew the window too, a
single transient failure after eight lost races waited up to the 2 s cap; under two producers
and a flaky store that stalled sends for seconds.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

import orjson
import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.engine.cas import CasObject, Change
from okuri.engine.retry import Backoff
from okuri.errors import PreconditionFailed, QueueDoesNotExist, Transient, Unavailable
from okuri.store.memory import MemoryStore


class WidestDraw(random.Random):
    """Every jittered wait takes the whole window, so a wait says which window it was."""

    def uniform(self, a: float, b: float) -> float:
        return b


class RecordingClock(SystemClock):
    """Real time, but waits are recorded (in ms) instead of slept."""

    def __init__(self) -> None:
        super().__init__()
        self._rng = WidestDraw()
        self.waits_ms: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits_ms.append(round(seconds * 1000, 6))


async def test_the_window_doubles_with_each_failure_up_to_its_cap() -> None:
    clock = RecordingClock()
    failing = Backoff(clock, cap_ms=100)
    for _ in range(6):
        await failing.failed()
    base = limits.backoff_ms_base
    assert clock.waits_ms == [base, 2 * base, 4 * base, 8 * base, 100, 100]


@dataclass(frozen=True)
class Doc:
    version: int


class DocCodec:
    def decode(self, data: bytes) -> Doc:
        return Doc(orjson.loads(data)["v"])

    def encode(self, state: Doc) -> bytes:
        return orjson.dumps({"v": state.version})

    def check(self, state: Doc) -> None:
        pass

    def check_step(self, old: Doc, new: Doc) -> None:
        assert new.version > old.version

    def version(self, state: Doc) -> int:
        return state.version

    def lineage(self, state: Doc) -> str:
        return "one"

    def has_token(self, state: Doc, token: str) -> bool:
        return False

    def gone(self, state: Doc) -> bool:
        return False


class RacedThenFlaky(MemoryStore):
    """Compare-and-swaps lose `races` times to another writer, then fail once, then work."""

    def __init__(self, races: int) -> None:
        super().__init__()
        self.script: list[type[Exception]] = [PreconditionFailed] * races + [Transient]

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if self.script:
            raise self.script.pop(0)(key)
        return await super().put_if_match(key, data, etag)


async def test_a_store_failure_after_lost_races_waits_the_first_window_only() -> None:
    store = RacedThenFlaky(races=8)
    await store.put_if_absent("doc", DocCodec().encode(Doc(1)))
    clock = RecordingClock()
    cell: CasObject[Doc] = CasObject(
        store, clock, "doc", DocCodec(), QueueDoesNotExist, "gone",
        lambda old, new: None, Counter(), "doc",
    )  # fmt: skip

    def bump(doc: Doc) -> Change[Doc, int]:
        return Change(Doc(doc.version + 1), doc.version + 1)

    assert await cell.update(bump, "t1") == 2
    races, failure = clock.waits_ms[:-1], clock.waits_ms[-1]
    assert len(races) == 7  # the first lost race re-reads at once
    assert max(races) <= limits.conflict_backoff_ms_max
    assert failure == limits.backoff_ms_base  # not 2 s: the store had failed once


async def test_a_compare_and_swap_that_keeps_losing_stops_after_its_attempts() -> None:
    """A commit goes round up to `commit_attempts_max` times; a caller with a tighter bound
    (expiry's tombstone: `put_attempts_max`) gives up after its own."""
    store = RacedThenFlaky(races=1000)
    scripted = len(store.script)
    await store.put_if_absent("doc", DocCodec().encode(Doc(1)))
    cell: CasObject[Doc] = CasObject(
        store, RecordingClock(), "doc", DocCodec(), QueueDoesNotExist, "gone",
        lambda old, new: None, Counter(), "doc",
    )  # fmt: skip

    def bump(doc: Doc) -> Change[Doc, int]:
        return Change(Doc(doc.version + 1), doc.version + 1)

    with pytest.raises(Unavailable):
        await cell.update(bump, "t1", attempts_max=3)
    assert scripted - len(store.script) == 3
    with pytest.raises(Unavailable):
        await cell.update(bump, "t2")
    assert scripted - len(store.script) == 3 + limits.commit_attempts_max
