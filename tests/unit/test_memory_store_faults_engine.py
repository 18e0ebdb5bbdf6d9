"""The engine stays correct over a store that fails: transient errors, 409 conflicts and ambiguous
writes (landed or not, the caller cannot tell), injected by the in-memory store from a seeded rng.

Each scenario has a fault phase (producers and consumers run while the store misbehaves) and a
liveness phase (faults off) that must converge: every send that was acknowledged to its caller is
received, and a message is never received again after an ack answered "acked". Latency is zero,
so the only real waiting is the engine's own linger and backoff; every loop is bounded in count and
in time, and a failure names the seed, the fault mix and what went missing.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

import pytest

from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core.message import SegmentCorrupt, decode_segment
from okuri.core.state import QueueAttrs, decode_state
from okuri.engine import Delivery, Engine, SendRequest, SendResult
from okuri.errors import Conflict, QueueDoesNotExist, Unavailable
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import Faults, MemoryStore
from okuri.store.port import ObjectStore

EPOCH_MS = 1_700_000_000_000
Q = "work"
LINGER_MS = 5
SEND_ROUNDS = 15  # per producer; each round sends a batch of 1..4 messages
# Upper bounds only: each phase ends as soon as its work is done (well under a second here). Real
# time on a shared CI machine under coverage once took a fault phase past 4 s.
FAULT_PHASE_S = 20.0
LIVENESS_S = 20.0
RECEIVE_CALLS_MAX = 2_000


MIXES: dict[str, Faults] = {
    "transient": Faults(p_transient=0.2),
    "conflict": Faults(p_conflict=0.25),
    "ambiguous": Faults(p_ambiguous=0.2),
    "all": Faults(p_transient=0.08, p_conflict=0.08, p_ambiguous=0.08),
}


@dataclass
class Ledger:
    """What clients were told, in the order they were told it."""

    sent: dict[str, bytes] = field(default_factory=dict)  # acknowledged sends: id -> body
    received: dict[str, int] = field(default_factory=dict)  # id -> deliveries
    acked: set[str] = field(default_factory=set)  # ids whose ack answered "acked"
    violations: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, err: Exception) -> None:
        name = type(err).__name__
        self.errors[name] = self.errors.get(name, 0) + 1

    def delivered(self, who: str, batch: list[Delivery]) -> None:
        for d in batch:
            mid = d.message.id
            if mid in self.acked:
                self.violations.append(f"{who} received {mid} after an ack answered 'acked'")
            expected = self.sent.get(mid)
            if expected is not None and expected != d.message.body:
                self.violations.append(f"{who} received {mid} with a body it was not sent with")
            self.received[mid] = self.received.get(mid, 0) + 1


def node(store: ObjectStore, rng: random.Random) -> Engine:
    clock = LoopClock(EPOCH_MS, random.Random(rng.getrandbits(64)))
    return Engine(store, clock, linger_ms=LINGER_MS, node_id=clock.new_id()[:8])


def loop_time() -> float:
    return asyncio.get_running_loop().time()


async def produce(engine: Engine, rng: random.Random, ledger: Ledger, tag: str) -> None:
    for round_no in range(SEND_ROUNDS):
        reqs = [
            SendRequest(f"{tag}-{round_no}-{i}-{rng.getrandbits(32):08x}".encode())
            for i in range(rng.randint(1, 4))
        ]
        try:
            results = await engine.send(Q, reqs)
        except (Unavailable, QueueDoesNotExist) as err:
            ledger.error(err)
            continue
        for req, res in zip(reqs, results, strict=True):
            if isinstance(res, SendResult):
                ledger.sent[res.message_id] = req.body
            else:
                ledger.error(res)
        await asyncio.sleep(rng.uniform(0, 0.01))


async def consume(
    engine: Engine, rng: random.Random, ledger: Ledger, who: str, stop: asyncio.Event
) -> None:
    for _ in range(RECEIVE_CALLS_MAX):
        if stop.is_set():
            return
        try:
            batch = await engine.receive(Q, max_messages=rng.randint(1, 10), wait_s=0)
        except (Unavailable, QueueDoesNotExist) as err:
            ledger.error(err)
            await asyncio.sleep(0.005)
            continue
        ledger.delivered(who, batch)
        if not batch:
            await asyncio.sleep(0.01)
            continue
        try:
            results = await engine.ack(Q, [d.receipt_handle for d in batch])
        except (Unavailable, QueueDoesNotExist) as err:
            ledger.error(err)
            continue
        for d, res in zip(batch, results, strict=True):
            if res == "acked":
                ledger.acked.add(d.message.id)


def describe_bucket(store: MemoryStore, missing: set[str]) -> str:
    """Where the missing messages sit, against the manifest's cursor: for the failure message."""
    lines = []
    blob = store.objects.get(keys.manifest(Q))
    if blob is not None:
        st = decode_state(blob.data)
        lines.append(f"manifest v{st.version} next_seq={st.next_seq} adopted={sorted(st.segments)}")
    for key in sorted(k for k in store.objects if k.startswith(keys.segments_of_queue(Q))):
        try:
            seg = decode_segment(store.objects[key].data)
        except SegmentCorrupt:
            lines.append(f"{key}: undecodable")
            continue
        lost = [m.id[:8] for m in seg.messages if m.id in missing]
        lines.append(f"{key}: {len(seg.messages)} msgs" + (f", missing {lost}" if lost else ""))
    return "\n".join(lines)


async def run_scenario(seed: int, mix: str, producers: int) -> tuple[Ledger, MemoryStore]:
    root = random.Random(f"{seed}/{mix}/{producers}")
    template = MIXES[mix]
    faults = Faults(
        enabled=False,
        p_transient=template.p_transient,
        p_conflict=template.p_conflict,
        p_ambiguous=template.p_ambiguous,
    )
    store = MemoryStore(rng=random.Random(root.getrandbits(64)), faults=faults)
    senders = [node(store, root) for _ in range(producers)]
    receivers = [node(store, root) for _ in range(2)]
    ledger = Ledger()
    await senders[0].create_queue(Q, QueueAttrs(visibility_timeout_s=1))

    stop = asyncio.Event()
    faults.enabled = True
    consumers = [
        asyncio.create_task(
            consume(r, random.Random(root.getrandbits(64)), ledger, f"consumer{i}", stop)
        )
        for i, r in enumerate(receivers)
    ]
    try:
        await asyncio.wait_for(
            asyncio.gather(
                *(
                    produce(s, random.Random(root.getrandbits(64)), ledger, f"p{i}")
                    for i, s in enumerate(senders)
                )
            ),
            FAULT_PHASE_S,
        )
    except TimeoutError:
        ledger.violations.append(f"producers did not finish within {FAULT_PHASE_S} s")

    faults.enabled = False  # liveness: with a healthy store everything must converge
    deadline = loop_time() + LIVENESS_S
    while loop_time() < deadline and not set(ledger.sent) <= set(ledger.received):
        await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*consumers), 5)
    for engine in senders + receivers:
        await asyncio.wait_for(engine.close(), 5)
    return ledger, store


@pytest.mark.parametrize("producers", [1, 2], ids=["one-producer", "two-producers"])
@pytest.mark.parametrize("mix", list(MIXES))
@pytest.mark.parametrize("seed", [1, 2])
async def test_faulty_store_loses_no_acknowledged_send_and_never_redelivers_an_acked_message(
    seed: int, mix: str, producers: int
) -> None:
    ledger, store = await run_scenario(seed, mix, producers)
    label = f"seed={seed} mix={mix} producers={producers} errors={ledger.errors}"
    assert ledger.sent, f"no send succeeded ({label})"
    assert not ledger.violations, f"{label}\n" + "\n".join(ledger.violations[:10])
    missing = set(ledger.sent) - set(ledger.received)
    assert not missing, (
        f"{len(missing)} of {len(ledger.sent)} acknowledged sends never received ({label})\n"
        + describe_bucket(store, missing)
    )


@pytest.mark.parametrize("seed", [3, 4, 5])
async def test_queue_admin_survives_a_flaky_store(seed: int) -> None:
    rng = random.Random(seed)
    faults = Faults(enabled=True, p_transient=0.3, p_conflict=0.2, p_ambiguous=0.3)
    store = MemoryStore(rng=random.Random(rng.getrandbits(64)), faults=faults)
    a, b = node(store, rng), node(store, rng)
    try:
        await a.create_queue(Q, QueueAttrs(visibility_timeout_s=7))
        created = await a.read_manifest(Q)
        await b.create_queue(Q, QueueAttrs(visibility_timeout_s=7))
        assert (await b.read_manifest(Q)).incarnation == created.incarnation
        assert (await b.read_manifest(Q)).attrs.visibility_timeout_s == 7
        await a.create_queue("other")
        assert await b.list_queues() == ["other", Q]
        await b.delete_queue(Q)
        assert await a.list_queues() == ["other"]
        with pytest.raises(QueueDoesNotExist):
            await a.read_manifest(Q)
    finally:
        faults.enabled = False
        await a.close()
        await b.close()


class ConflictOnFirstSegmentCreate(ForwardingStore):
    """Answers the first create-only PUT of a segment with 409, without writing (as S3 may)."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner)
        self.armed = True

    async def put_if_absent(self, key: str, data: bytes) -> str:
        if self.armed and key.startswith(keys.SEGMENTS):
            self.armed = False
            raise Conflict("injected 409 ConditionalRequestConflict")
        return await self.inner.put_if_absent(key, data)


async def test_a_409_on_a_segment_create_leaves_no_gap_in_the_slot_log() -> None:
    store = MemoryStore()
    flaky = ConflictOnFirstSegmentCreate(store)
    rng = random.Random(7)
    producer, consumer = node(flaky, rng), node(store, rng)
    try:
        await producer.create_queue(Q)
        inc = (await producer.read_manifest(Q)).incarnation
        sent = await producer.send_one(Q, SendRequest(b"after a 409"))
        assert not flaky.armed
        assert keys.segment(Q, inc, 0) in store.objects, "the retried write skipped slot 0"
        got: list[Delivery] = []
        for _ in range(50):
            got = await consumer.receive(Q, wait_s=0)
            if got:
                break
            await asyncio.sleep(0.01)
        assert [d.message.id for d in got] == [sent.message_id]
    finally:
        await producer.close()
        await consumer.close()


async def test_same_seed_same_fault_sequence() -> None:
    """The store's faults come from its own rng: one seed, one sequence of injected failures."""

    async def outcomes(seed: int) -> list[str]:
        store = MemoryStore(
            rng=random.Random(seed), faults=Faults(enabled=True, p_transient=0.3, p_conflict=0.3)
        )
        out = []
        for i in range(40):
            try:
                await store.put_if_absent(f"k{i % 5}", b"x")
                out.append("ok")
            except Exception as err:
                out.append(type(err).__name__)
        return out

    first = await outcomes(11)
    assert first == await outcomes(11)
    assert {"Transient", "Conflict", "ok"} <= set(first)
