"""Queue expiry in the engine (okuri/engine/expiry.py): a used queue lives, an abandoned one is
deleted by any node's sweeper with no further access, one past expiry is deleted when read,
producing keeps nobody alive, and a use racing the deletion is never lost.

Real time on the in-memory store; each node's clock can jump (wall and monotonic), so a minute
passes without waiting for it, and two nodes can disagree about the time (skew).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.expiry import tombstone
from okuri.core.invariants import InvariantViolation
from okuri.core.state import QueueAttrs, decode_state, encode_state
from okuri.engine import Engine, SendRequest
from okuri.engine.expiry import Expiry
from okuri.errors import (
    Ambiguous,
    InvalidArgument,
    NotFound,
    PreconditionFailed,
    QueueDoesNotExist,
    Unavailable,
)
from okuri.store.counting import CountingStore
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob, ObjectStore

Q = "replies"
EXPIRES_S = 60


class JumpClock(SystemClock):
    """Real time, plus however far a test has jumped it."""

    def __init__(self) -> None:
        super().__init__()
        self.jumped_s = 0.0

    def jump(self, seconds: float) -> None:
        self.jumped_s += seconds

    def now_ms(self) -> int:
        return super().now_ms() + int(self.jumped_s * 1000)

    def monotonic_s(self) -> float:
        return super().monotonic_s() + self.jumped_s


class HookedStore:
    """The store, with a hook run once before the next compare-and-swap of a manifest."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner
        self.before_cas: Callable[[], Awaitable[None]] | None = None

    async def get(self, key: str) -> Blob:
        return await self.inner.get(key)

    async def put_if_absent(self, key: str, data: bytes) -> str:
        return await self.inner.put_if_absent(key, data)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        hook, self.before_cas = self.before_cas, None
        if hook is not None and key.startswith(keys.MANIFESTS):
            await hook()
        return await self.inner.put_if_match(key, data, etag)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        return await self.inner.list(prefix, start_after, limit)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)

    async def close(self) -> None:
        await self.inner.close()


class ScriptedCas(HookedStore):
    """The next manifest compare-and-swaps answer `errors` in turn, having landed first when
    `land` (a write whose reply was lost), after the hook; `cas_tries` counts them all."""

    def __init__(self, inner: ObjectStore, errors: list[type[Exception]], land: bool = False):
        super().__init__(inner)
        self.errors = errors
        self.land = land
        self.cas_tries = 0

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if not key.startswith(keys.MANIFESTS):
            return await self.inner.put_if_match(key, data, etag)
        self.cas_tries += 1
        hook, self.before_cas = self.before_cas, None
        if hook is not None:
            await hook()
        if not self.errors:
            return await self.inner.put_if_match(key, data, etag)
        error = self.errors.pop(0)
        if self.land:
            await self.inner.put_if_match(key, data, etag)
        raise error(key)


class NoSleepClock(JumpClock):
    """Backoffs are jumped over, not slept."""

    async def sleep(self, seconds: float) -> None:
        self.jump(seconds)


async def expired_queue(store: ObjectStore, clock: JumpClock) -> None:
    """Queue Q, created by another node and left alone past its expiry."""
    node = Engine(store, clock, linger_ms=5, node_id="creator")
    await make_queue(node)
    await node.close()
    clock.jump(EXPIRES_S + 1)


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def clocks() -> tuple[JumpClock, JumpClock]:
    return JumpClock(), JumpClock()


@pytest.fixture
async def nodes(
    store: MemoryStore, clocks: tuple[JumpClock, JumpClock]
) -> AsyncIterator[tuple[Engine, Engine]]:
    a = Engine(store, clocks[0], linger_ms=5, node_id="node-a")
    b = Engine(store, clocks[1], linger_ms=5, node_id="node-b")
    yield a, b
    await a.close()
    await b.close()


def jump(clocks: tuple[JumpClock, ...], seconds: float) -> None:
    for clock in clocks:
        clock.jump(seconds)


async def all_keys(store: ObjectStore) -> list[str]:
    found: list[str] = []
    while page := await store.list("", found[-1] if found else ""):
        found += page
    return found


async def exists(store: ObjectStore, key: str) -> bool:
    try:
        await store.get(key)
    except NotFound:
        return False
    return True


async def make_queue(node: Engine, expires_s: int | None = EXPIRES_S) -> None:
    await node.create_queue(Q, QueueAttrs(expires_s=expires_s))


async def test_a_queue_that_expires_is_marked_for_every_nodes_sweeper(
    nodes: tuple[Engine, Engine], store: MemoryStore
) -> None:
    a, _ = nodes
    await make_queue(a)
    await a.create_queue("forever")
    assert await exists(store, keys.expiry_marker(Q))
    assert not await exists(store, keys.expiry_marker("forever"))
    assert (await a.read_manifest(Q)).attrs.expires_s == EXPIRES_S


async def test_a_queue_leased_from_keeps_living(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock], store: MemoryStore
) -> None:
    a, b = nodes
    await make_queue(a)
    for _ in range(10):  # 200 s, more than three times its expiry, polled every 20 s
        jump(clocks, 20)
        assert await a.receive(Q, wait_s=0) == []
        assert await b.sweep_expired() == 0
    assert (await b.read_manifest(Q)).name == Q


async def test_an_abandoned_queue_is_deleted_by_a_sweeper_with_its_items(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock], store: MemoryStore
) -> None:
    a, b = nodes
    await make_queue(a)
    await a.send(Q, [SendRequest(b"left behind %d" % i) for i in range(3)])
    assert await b.sweep_expired() == 0  # not yet
    jump(clocks, EXPIRES_S + 1)
    assert await b.sweep_expired() == 1  # node b never touched the queue otherwise
    await b.close()  # waits for the sweep of its segments
    assert await all_keys(store) == []
    with pytest.raises(QueueDoesNotExist):
        await a.read_manifest(Q)


async def test_a_queue_past_its_expiry_is_deleted_when_read(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock], store: MemoryStore
) -> None:
    a, b = nodes
    await make_queue(a)
    await a.send(Q, [SendRequest(b"x")])
    jump(clocks, EXPIRES_S + 1)
    with pytest.raises(QueueDoesNotExist):
        await b.receive(Q, wait_s=0)
    assert not await exists(store, keys.manifest(Q))
    assert not await exists(store, keys.expiry_marker(Q))
    with pytest.raises(QueueDoesNotExist):
        await a.read_manifest(Q)
    await b.close()
    assert await all_keys(store) == []


async def test_producing_does_not_keep_a_queue_alive(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock]
) -> None:
    a, b = nodes
    await make_queue(a)
    for i in range(3):  # 45 s of sends (a send past its expiry would find it gone)
        jump(clocks, 15)
        await a.send(Q, [SendRequest(b"%d" % i)])
    jump(clocks, 16)
    assert await b.sweep_expired() == 1


async def test_get_and_redeclare_count_as_use(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock]
) -> None:
    a, b = nodes
    await make_queue(a)
    for i in range(6):
        jump(clocks, 20)
        if i % 2:
            await b.read_manifest(Q)
        else:
            await b.create_queue(Q, QueueAttrs(expires_s=EXPIRES_S))
    assert await a.sweep_expired() == 0
    jump(clocks, EXPIRES_S + 1)
    assert await a.sweep_expired() == 1


async def test_an_expired_queue_declared_again_is_a_new_empty_queue(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock]
) -> None:
    a, _ = nodes
    await make_queue(a)
    await a.send(Q, [SendRequest(b"old")])
    old = (await a.read_manifest(Q)).incarnation
    jump(clocks, EXPIRES_S + 1)
    await a.create_queue(Q, QueueAttrs(expires_s=EXPIRES_S))
    st = await a.read_manifest(Q)
    assert st.incarnation != old
    assert await a.receive(Q, wait_s=0) == []


async def test_a_use_racing_the_deletion_keeps_the_queue(
    store: MemoryStore, clocks: tuple[JumpClock, JumpClock]
) -> None:
    """Node b (its clock ahead) finds the queue expired; node a leases from it between b's
    read and b's tombstone: the tombstone loses its compare-and-swap and the queue lives."""
    hooked = HookedStore(store)
    a = Engine(store, clocks[0], linger_ms=5, node_id="node-a")
    b = Engine(hooked, clocks[1], linger_ms=5, node_id="node-b")
    try:
        await make_queue(a)
        clocks[0].jump(EXPIRES_S - 10)  # node a: not expired, a use is due
        clocks[1].jump(EXPIRES_S + 1)  # node b: expired

        async def lease_on_a() -> None:
            assert await a.receive(Q, wait_s=0) == []

        hooked.before_cas = lease_on_a
        assert await b.sweep_expired() == 0
        st = await b.read_manifest(Q)
        assert st.used_ms >= clocks[0].now_ms() - 1_000
    finally:
        await a.close()
        await b.close()


async def test_a_tombstone_reads_as_missing_and_a_sweeper_clears_one_left_behind(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock], store: MemoryStore
) -> None:
    """A node that died between its tombstone and the DELETE leaves the tombstone: every node
    reads it as no queue, and a sweeper deletes it once it is older than the grace."""
    a, b = nodes
    await make_queue(a)
    jump(clocks, EXPIRES_S + 1)
    blob = await store.get(keys.manifest(Q))
    st = decode_state(blob.data)
    await store.put_if_match(
        keys.manifest(Q), encode_state(tombstone(st, clocks[0].now_ms())), blob.etag
    )
    with pytest.raises(QueueDoesNotExist):
        await b.read_manifest(Q)
    assert await a.sweep_expired() == 0  # young: its node may still be deleting it
    assert await exists(store, keys.manifest(Q))
    jump(clocks, 61)
    assert await a.sweep_expired() == 1
    assert not await exists(store, keys.manifest(Q))
    await a.create_queue(Q)  # the name is free again


async def test_the_sweeper_reads_a_manifest_only_when_its_queue_may_have_expired(
    clocks: tuple[JumpClock, JumpClock],
) -> None:
    counting = CountingStore(MemoryStore())
    a = Engine(counting, clocks[0], linger_ms=5, node_id="node-a")
    try:
        await make_queue(a)
        assert await a.sweep_expired() == 0  # first look: reads the manifest once
        before = counting.counts.snapshot()
        for _ in range(5):
            jump(clocks, 10)
            assert await a.sweep_expired() == 0
        after = counting.counts.snapshot()
        assert after["list"] - before["list"] == 5
        assert after["get"] == before["get"]  # 50 s < 60 s: no manifest read
        jump(clocks, 11)
        assert await a.sweep_expired() == 1
    finally:
        await a.close()


async def test_a_waiting_lease_records_its_use_while_it_waits(
    nodes: tuple[Engine, Engine], store: MemoryStore
) -> None:
    a, _ = nodes
    await make_queue(a, expires_s=4)  # a use is recorded at most every second
    created = decode_state((await store.get(keys.manifest(Q))).data).used_ms
    waiting = asyncio.create_task(a.receive(Q, wait_s=20))
    try:
        for _ in range(200):  # up to 10 s; the use is due after 1 s
            await asyncio.sleep(0.05)
            if decode_state((await store.get(keys.manifest(Q))).data).used_ms > created:
                break
        else:
            pytest.fail("a receive waiting on an empty queue never recorded its use")
        assert not waiting.done()
    finally:
        waiting.cancel()


async def test_clearing_expires_s_keeps_the_queue_forever(
    nodes: tuple[Engine, Engine], clocks: tuple[JumpClock, JumpClock]
) -> None:
    a, b = nodes
    await make_queue(a)
    await a.update_attributes(Q, lambda attrs: QueueAttrs(**{**_fields(attrs), "expires_s": None}))
    jump(clocks, 10 * EXPIRES_S)
    assert await b.sweep_expired() == 0
    assert (await b.read_manifest(Q)).attrs.expires_s is None


def _fields(attrs: QueueAttrs) -> dict[str, object]:
    return {f: getattr(attrs, f) for f in QueueAttrs.__slots__}


@pytest.mark.parametrize("bad", [0, -1, 366 * 24 * 3600 + 1])
async def test_the_engine_refuses_an_expiry_out_of_range(
    nodes: tuple[Engine, Engine], bad: int
) -> None:
    a, _ = nodes
    with pytest.raises(InvalidArgument):
        await a.create_queue(Q, QueueAttrs(expires_s=bad))


async def test_a_tombstone_that_keeps_losing_gives_up_after_put_attempts_max_tries(
    store: MemoryStore,
) -> None:
    """Each lost compare-and-swap (a use since the read) re-reads and judges again, as many
    times as before the tombstone went through `CasObject`, not a commit's hundred."""
    clock = NoSleepClock()
    await expired_queue(store, clock)
    before = await store.get(keys.manifest(Q))
    racing = ScriptedCas(store, [PreconditionFailed] * 1000)
    with pytest.raises(Unavailable):
        await Expiry(racing, clock, Counter(), "node-b").expire_if_due(Q)
    assert racing.cas_tries == limits.put_attempts_max
    assert (await store.get(keys.manifest(Q))).etag == before.etag


async def test_an_ambiguous_tombstone_that_landed_deletes_the_queue(store: MemoryStore) -> None:
    clock = NoSleepClock()
    await expired_queue(store, clock)
    lost_reply = ScriptedCas(store, [Ambiguous], land=True)
    stats: Counter[str] = Counter()
    verdict = await Expiry(lost_reply, clock, stats, "node-b").expire_if_due(Q)
    assert verdict.fate == "expired"
    assert lost_reply.cas_tries == 1  # the re-read found its tombstone: not written again
    assert stats["queues_expired"] == 1
    assert not await exists(store, keys.manifest(Q))
    assert not await exists(store, keys.expiry_marker(Q))


async def test_a_queue_deleted_under_the_tombstone_reads_missing(store: MemoryStore) -> None:
    clock = NoSleepClock()
    await expired_queue(store, clock)
    deleted = ScriptedCas(store, [NotFound])

    async def delete_it() -> None:
        await store.delete(keys.manifest(Q))

    deleted.before_cas = delete_it
    verdict = await Expiry(deleted, clock, Counter(), "node-b").expire_if_due(Q)
    assert verdict.fate == "missing"


async def test_a_manifest_breaking_an_invariant_is_never_tombstoned(store: MemoryStore) -> None:
    """Expiry reads and writes the manifest as every rewrite does (`CasObject`): the named
    invariants are checked after the read and before the tombstone, so a manifest a foreign
    writer broke is reported, not deleted."""
    clock = NoSleepClock()
    await expired_queue(store, clock)
    blob = await store.get(keys.manifest(Q))
    st = decode_state(blob.data)
    st.version += 1
    st.recent = [(st.next_seq + 5, "from-the-future")]  # breaks recent_below_cursor
    await store.put_if_match(keys.manifest(Q), encode_state(st), blob.etag)
    with pytest.raises(InvariantViolation):
        await Expiry(store, clock, Counter(), "node-b").expire_if_due(Q)
    assert not decode_state((await store.get(keys.manifest(Q))).data).gone_ms


async def test_a_broken_manifest_does_not_stop_the_sweep_of_other_queues(
    store: MemoryStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A manifest that breaks an invariant is reported and left alone; the sweeper still
    deletes the other queues that expired."""
    clock = NoSleepClock()
    creator = Engine(store, clock, linger_ms=5, node_id="creator")
    await creator.create_queue("a-broken", QueueAttrs(expires_s=EXPIRES_S))
    await creator.create_queue("b-healthy", QueueAttrs(expires_s=EXPIRES_S))
    await creator.close()
    clock.jump(EXPIRES_S + 1)
    blob = await store.get(keys.manifest("a-broken"))
    st = decode_state(blob.data)
    st.version += 1
    st.recent = [(st.next_seq + 5, "from-the-future")]  # breaks recent_below_cursor
    await store.put_if_match(keys.manifest("a-broken"), encode_state(st), blob.etag)
    sweeper = Engine(store, clock, linger_ms=5, node_id="sweeper")
    assert await sweeper.sweep_expired() == 1
    await sweeper.close()
    assert await exists(store, keys.manifest("a-broken"))
    assert not await exists(store, keys.manifest("b-healthy"))
    assert "a-broken" in caplog.text and "broken" in caplog.text
