"""MemoryStore's fault injection: every kind happens, and a seed replays the same run exactly.

The simulator's value rests on both: a failure found under one seed must recur under it.
"""

from __future__ import annotations

import random

from okuri.clock import LoopClock
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    Transient,
)
from okuri.store.memory import Faults, MemoryStore

OPS = 300


def _faulty(seed: int, enabled: bool = True) -> MemoryStore:
    clock = LoopClock(epoch_ms=1_700_000_000_000, rng=random.Random(seed))
    faults = Faults(enabled=enabled, p_transient=0.15, p_conflict=0.15, p_ambiguous=0.25)
    return MemoryStore(clock=clock, rng=random.Random(seed), faults=faults)


async def _run(store: MemoryStore) -> list[tuple[str, str, str]]:
    """A fixed workload; returns (op, outcome, whether an ambiguous write landed) per request."""
    trace: list[tuple[str, str, str]] = []
    for i in range(OPS):
        key = f"q/{i % 7}"
        op = ("create", "cas", "get", "list", "delete")[i % 5]
        before = store.objects.get(key)
        data = f"v{i}".encode()
        try:
            if op == "create":
                await store.put_if_absent(key, data)
            elif op == "cas":
                await store.put_if_match(key, data, before.etag if before else '"none"')
            elif op == "get":
                await store.get(key)
            elif op == "list":
                await store.list("q/")
            else:
                await store.delete(key)
            outcome = "ok"
        except StoreError as err:
            outcome = type(err).__name__
        after = store.objects.get(key)
        landed = ""
        if outcome == "Ambiguous" and op in ("create", "cas"):
            landed = "landed" if after is not None and after.data == data else "lost"
        trace.append((op, outcome, landed))
    return trace


async def test_every_fault_kind_occurs() -> None:
    trace = await _run(_faulty(seed=1))
    outcomes = {outcome for _, outcome, _ in trace}
    assert {"ok", "Transient", "Conflict", "Ambiguous"} <= outcomes
    assert {landed for _, _, landed in trace} >= {"landed", "lost"}
    # faults only where the fault model puts them
    assert all(op in ("create", "cas") for op, outcome, _ in trace if outcome == "Conflict")
    assert all(op != "get" for op, outcome, _ in trace if outcome == "Ambiguous")
    # the real answers still come through between faults
    assert {"NotFound", "PreconditionFailed"} <= outcomes


async def test_a_seed_replays_exactly() -> None:
    first = await _run(_faulty(seed=42))
    second = await _run(_faulty(seed=42))
    assert first == second
    others = [await _run(_faulty(seed=s)) for s in (43, 44, 45)]
    assert any(other != first for other in others)


async def test_final_contents_replay_too() -> None:
    a, b = _faulty(seed=7), _faulty(seed=7)
    await _run(a)
    await _run(b)
    assert a.objects == b.objects
    assert await a.list("") == await b.list("")


async def test_no_faults_when_disabled() -> None:
    trace = await _run(_faulty(seed=1, enabled=False))
    assert {outcome for _, outcome, _ in trace} <= {"ok", "NotFound", "PreconditionFailed"}


def test_the_kinds_say_whether_to_retry() -> None:
    assert Transient.retryable and Conflict.retryable and Ambiguous.retryable
    assert not NotFound.retryable and not PreconditionFailed.retryable
