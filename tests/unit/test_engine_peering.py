"""Commits forwarded to a queue's leader: the lead's rules, the wire format, and two engines on
one store where one commits for the other (the real HTTP hop is in tests/surface/test_peers.py).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from okuri import limits
from okuri.clock import LoopClock, SystemClock
from okuri.core.leadership import leader, take_lead
from okuri.core.state import QueueAttrs, QueueState, decode_state, encode_state
from okuri.core.transitions import (
    Ack,
    Adopt,
    ChangeVisibility,
    Grant,
    Lease,
    LeaseResult,
    MarkDead,
    Release,
    Result,
    SetAttributes,
)
from okuri.engine import Engine, PeerRequestInvalid, PeerUnreachable, SendRequest
from okuri.engine.peering import (
    CommitReply,
    CommitRequest,
    decode_reply,
    decode_request,
    encode_reply,
    encode_request,
    forwardable,
    leased_slots,
)
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.forwarding import ForwardingStore
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob

Q = "jobs"


def _state() -> QueueState:
    return QueueState(Q, "inc1", 0, QueueAttrs())


# --- the lead ----------------------------------------------------------------------------------


def test_a_committing_node_takes_a_free_lead_and_renews_only_its_own() -> None:
    st = _state()
    take_lead(st, "a", "http://a", 1_000)
    assert leader(st, 1_000) == ("a", "http://a")
    assert st.lead == ("a", "http://a", 1_000 + limits.commit_lead_ms)
    take_lead(st, "b", "http://b", 2_000)  # a's lead is in force: b does not take it
    assert leader(st, 2_000) == ("a", "http://a")
    take_lead(st, "a", "http://a", 2_000)
    assert st.lead == ("a", "http://a", 2_000 + limits.commit_lead_ms)


def test_a_lead_lapses_and_an_unreachable_leader_is_passed_over() -> None:
    st = _state()
    take_lead(st, "a", "http://a", 0)
    assert leader(st, limits.commit_lead_ms) is None  # lapsed: nobody leads
    take_lead(st, "b", "http://b", limits.commit_lead_ms)
    assert leader(st, limits.commit_lead_ms) == ("b", "http://b")
    take_lead(st, "c", "http://c", limits.commit_lead_ms + 1, passed_over="b")
    assert leader(st, limits.commit_lead_ms + 1) == ("c", "http://c")


def test_the_lead_survives_the_manifest_codec_and_is_absent_when_unset() -> None:
    st = _state()
    assert b"lead" not in encode_state(st)
    take_lead(st, "a", "http://127.0.0.1:1", 5)
    assert decode_state(encode_state(st)).lead == st.lead


# --- the wire ------------------------------------------------------------------------------------


def test_forwarded_operations_and_results_round_trip() -> None:
    ops = [
        Lease(10, 30_000),
        Ack(3, 1, 2, "inc1"),
        ChangeVisibility(3, 2, 1, 5_000, "inc1"),
        MarkDead(4, 0, 5, "inc1"),
        Release(5, 9, 1, "inc1"),
        Release(5, 8, 2, "inc1", until_ms=70_000),
    ]
    hints = [Adopt(7, "sid7", 10, 123, ((2, 999),)), Adopt(8, "sid8", 1, 124)]
    req = decode_request(encode_request(CommitRequest(Q, "inc1", ops, hints)))
    assert req == CommitRequest(Q, "inc1", ops, hints)
    results = [
        LeaseResult((Grant(1, 0, 1, 50),), (Grant(2, 3, 4, 60),)),
        "acked",
        "stale",
        True,
        False,
    ]
    reply = CommitReply(results, "etag1", b'{"f":1}')
    assert decode_reply(encode_reply(reply)) == reply
    assert req.ops[-1].until_ms == 70_000  # type: ignore[union-attr]
    lease = LeaseResult((Grant(1, 0, 1, 50, 80),), ())
    assert decode_reply(encode_reply(CommitReply([lease], "e", b"{}"))).results == [lease]


def test_a_release_from_a_node_that_predates_its_lease_end_still_decodes() -> None:
    body = encode_request(CommitRequest(Q, "inc1", [Ack(3, 1, 2, "inc1")], []))
    older = body.replace(b'["A",3,1,2,"inc1"]', b'["R",3,1,2,"inc1"]')
    assert decode_request(older).ops == [Release(3, 1, 2, "inc1")]


def test_only_a_standard_queues_per_message_operations_travel() -> None:
    assert forwardable([Lease(1, 1), Ack(0, 0, 1)])
    assert not forwardable([Lease(1, 1), SetAttributes(QueueAttrs())])


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"{}",
        b'{"q":"jobs","inc":"i","ops":[],"slots":[]}',
        b'{"q":"jobs","inc":"i","ops":[["X",1]],"slots":[]}',
        b'{"q":"jobs","inc":"i","ops":[["L",0,5]],"slots":[]}',
        b'{"q":"jobs","inc":"i","ops":[["A",1,2,-3,"i"]],"slots":[]}',
        b'{"q":"jobs","inc":"i","ops":[["L",1,5]],"slots":[[1,"s"]]}',
    ],
)
def test_a_forwarded_commit_that_does_not_decode_is_refused(body: bytes) -> None:
    with pytest.raises(PeerRequestInvalid):
        decode_request(body)


def test_a_lease_asks_for_its_segments_and_the_answer_carries_them_after_the_manifest() -> None:
    req = decode_request(encode_request(CommitRequest(Q, "inc1", [Lease(10, 5)], [], True)))
    assert req.segments
    assert not decode_request(encode_request(CommitRequest(Q, "i", [Lease(1, 5)], []))).segments
    grants = (Grant(4, 0, 1, 50), Grant(4, 1, 1, 50), Grant(6, 0, 1, 50))
    results: list[Result] = [LeaseResult(grants, ())]
    assert leased_slots(results) == [4, 6]
    segments = [(4, b"seg four"), (6, b"\nsix\n")]
    reply = CommitReply(results, "e", b'{"m":"\\n"}', segments)
    assert decode_reply(encode_reply(reply)) == reply


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{}\n",
        b'{"results":[],"etag":"e"}',
        b"nope\nmanifest",
        b'{"results":[],"etag":"e","mlen":2,"segs":[[1,5]]}\n{}abc',  # cut short
        b'{"results":[],"etag":"e","mlen":2,"segs":[[1,2]]}\n{}abc',  # bytes after them
        b'{"results":[],"etag":"e","mlen":0,"segs":[]}\n{}',  # no manifest
        b'{"results":[],"etag":"e","mlen":2,"segs":[[1]]}\n{}a',
    ],
)
def test_a_reply_that_is_not_one_counts_as_no_answer(body: bytes) -> None:
    with pytest.raises(PeerUnreachable):
        decode_reply(body)


# --- two engines, one committing for the other -------------------------------------------------


class Wire:
    """The hop between engines, in process: a POST becomes the peer's `commit_for_peer`."""

    def __init__(self) -> None:
        self.nodes: dict[str, Engine] = {}
        self.down: set[str] = set()
        self.calls = 0

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        self.calls += 1
        if url in self.down:
            raise PeerUnreachable("connection refused")
        await asyncio.sleep(0.001)  # the hop: both nodes' forwards are out at once
        return await self.nodes[url].commit_for_peer(body)


@pytest.fixture
async def pair() -> AsyncIterator[tuple[Engine, Engine, Wire]]:
    store, wire = MemoryStore(), Wire()
    a = Engine(store, SystemClock(), linger_ms=2, node_id="a")
    b = Engine(store, SystemClock(), linger_ms=2, node_id="b")
    for node, url in ((a, "http://a"), (b, "http://b")):
        node.peering.client, node.peering.url = wire, url
        wire.nodes[url] = node
    yield a, b, wire
    await a.close()
    await b.close()


async def test_a_follower_commits_through_the_leader_and_sees_what_it_wrote(
    pair: tuple[Engine, Engine, Wire],
) -> None:
    a, b, wire = pair
    await a.create_queue(Q)
    await a.send(Q, [SendRequest(body=b"lead")])
    assert len(await a.receive(Q, 1, 30, 0)) == 1  # a commits, and so takes the lead
    assert (await b.read_manifest(Q)).lead is not None
    sent = await b.send(Q, [SendRequest(body=f"m{i}".encode()) for i in range(5)])
    got = await b.receive(Q, 10, 30, 0, lease_ahead=False)
    assert sorted(d.message.body for d in got) == [f"m{i}".encode() for i in range(5)]
    assert {d.message.id for d in got} == {r.message_id for r in sent}  # type: ignore[union-attr]
    assert await b.ack(Q, [d.receipt_handle for d in got]) == ["acked"] * 5
    assert b.stats["manifest_forwards"] >= 2 and b.stats["manifest_cas_attempts"] == 0
    assert a.stats["peer_commit_ops"] >= 6
    # A forward writes nothing: the follower's next one waits for no window nor gathering.
    follower, leader = b.runtime(Q).manifest.committer, a.runtime(Q).manifest.committer
    assert (follower.linger_s, follower.gather_s) == (0.0, 0.0)
    assert (leader.linger_s, leader.gather_s) == (0.002, limits.flush_gather_ms / 1000)
    # a adopted b's slots from the hints b sent along, and leased them for b
    counts = await a.counts(Q)
    assert (counts.visible, counts.in_flight) == (0, 1)
    assert wire.calls >= 2


async def test_a_follower_commits_by_itself_and_takes_the_lead_when_the_leader_is_gone(
    pair: tuple[Engine, Engine, Wire],
) -> None:
    a, b, wire = pair
    await a.create_queue(Q)
    await a.send(Q, [SendRequest(body=b"x"), SendRequest(body=b"y")])
    await a.receive(Q, 1, 30, 0, lease_ahead=False)
    wire.down.add("http://a")
    got = await b.receive(Q, 10, 30, 0, lease_ahead=False)
    assert [d.message.body for d in got] == [b"y"]
    assert b.stats["manifest_forward_failures"] == 1
    st = await b.read_manifest(Q)
    assert st.lead is not None and st.lead[0] == "b"
    assert await b.ack(Q, [got[0].receipt_handle]) == ["acked"]
    committer = b.runtime(Q).manifest.committer  # b writes now: its window and gathering hold
    assert (committer.linger_s, committer.gather_s) == (0.002, limits.flush_gather_ms / 1000)


async def test_a_commit_forwarded_for_another_life_of_the_queue_is_refused(
    pair: tuple[Engine, Engine, Wire],
) -> None:
    a, _, _ = pair
    await a.create_queue(Q)
    body = encode_request(CommitRequest(Q, "not-this-one", [Lease(1, 1_000)], []))
    with pytest.raises(PeerRequestInvalid):
        await a.commit_for_peer(body)


async def test_two_nodes_that_take_each_other_for_the_leader_do_not_wait_on_each_other(
    pair: tuple[Engine, Engine, Wire],
) -> None:
    """Caches apart, a names b the leader and b names a: each forwards to the other while its
    own forward is out. Queued behind those forwards, both would wait for the timeout."""
    a, b, _ = pair
    await a.create_queue(Q)
    await a.send(Q, [SendRequest(body=b"x"), SendRequest(body=b"y")])
    await b.read_manifest(Q)
    for node, other in ((a, "b"), (b, "a")):
        st = node.runtime(Q).state
        assert st is not None
        st.lead = (other, f"http://{other}", 2**62)
    got = await asyncio.wait_for(
        asyncio.gather(
            a.receive(Q, 1, 30, 0, lease_ahead=False), b.receive(Q, 1, 30, 0, lease_ahead=False)
        ),
        limits.peer_timeout_s / 2,
    )
    assert sorted(d.message.body for batch in got for d in batch) == [b"x", b"y"]


async def test_a_fifo_follower_sends_and_receives_through_the_leader_in_order_and_deduplicated(
    pair: tuple[Engine, Engine, Wire],
) -> None:
    a, b, _ = pair
    name = "jobs.fifo"
    await a.create_queue(name)
    await a.send(name, [SendRequest(body=b"lead", group_id="g0", dedup_id="lead")])
    assert len(await a.receive(name, 1, 30, 0)) == 1  # a commits, and so takes the lead
    batch = [SendRequest(body=f"m{i}".encode(), group_id="g1", dedup_id=f"d{i}") for i in range(4)]
    first = await b.send(name, batch)
    again = await b.send(name, [SendRequest(body=b"m0 again", group_id="g1", dedup_id="d0")])
    assert not isinstance(again[0], Exception) and not isinstance(first[0], Exception)
    assert again[0].duplicate and again[0].message_id == first[0].message_id
    got = await b.receive(name, 10, 30, 0)
    assert [d.message.body for d in got] == [b"m0", b"m1", b"m2", b"m3"]
    assert await b.ack(name, [d.receipt_handle for d in got]) == ["acked"] * 4
    assert b.stats["manifest_forwards"] >= 3 and b.stats["manifest_cas_attempts"] == 0


class SegmentReads(ForwardingStore):
    """Counts one node's reads that found a segment (a probe of the slot past the log's end
    finds none)."""

    def __init__(self, inner: MemoryStore) -> None:
        super().__init__(inner)
        self.reads = 0

    async def get(self, key: str) -> Blob:
        blob = await super().get(key)
        self.reads += key.startswith("s/")
        return blob


class Tampering(Wire):
    """A wire whose replies carry segments that do not decode, each as long as the one sent."""

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        reply = await super().commit(url, scope, body)
        r = decode_reply(reply)
        segments = [(s, b"x" * len(d)) for s, d in r.segments]
        return encode_reply(CommitReply(r.results, r.etag, r.manifest, segments))


@pytest.mark.parametrize("wire", [Wire(), Tampering()], ids=["sent", "tampered"])
async def test_a_forwarded_lease_brings_back_the_segments_the_leader_wrote(wire: Wire) -> None:
    """The leader wrote the segment its lease takes from: sent with the answer, the follower
    delivers without reading it; a segment that arrives wrong is read from the store."""
    memory = MemoryStore()
    stores = {"a": SegmentReads(memory), "b": SegmentReads(memory)}
    nodes = {n: Engine(stores[n], SystemClock(), linger_ms=2, node_id=n) for n in "ab"}
    for n, node in nodes.items():
        node.peering.client, node.peering.url = wire, f"http://{n}"
        wire.nodes[f"http://{n}"] = node
    a, b = nodes["a"], nodes["b"]
    try:
        await a.create_queue(Q)
        await a.send(Q, [SendRequest(body=f"m{i}".encode()) for i in range(6)])
        assert len(await a.receive(Q, 1, 30, 0, lease_ahead=False)) == 1  # a leads
        got = await b.receive(Q, 10, 30, 0, lease_ahead=False)
        assert sorted(d.message.body for d in got) == [f"m{i}".encode() for i in range(1, 6)]
        assert b.stats["manifest_forwards"] >= 1
        assert stores["b"].reads == (1 if isinstance(wire, Tampering) else 0)
        assert await b.ack(Q, [d.receipt_handle for d in got]) == ["acked"] * 5
    finally:
        await a.close()
        await b.close()


class LosingReplies(Wire):
    """A wire whose answers are lost while `lose` is set: the leader commits what it was
    forwarded, and the follower never hears of it."""

    lose = False

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        reply = await super().commit(url, scope, body)
        if self.lose:
            raise PeerUnreachable("the answer was lost")
        return reply


def test_a_forwarded_lease_that_finds_a_dead_letter_moves_it_though_the_answer_is_lost() -> None:
    """The leader moves what a forwarded lease found past maxReceiveCount: a follower whose
    answer was lost never hears of it, and it would stay held for the dead-letter hold, with
    the rest of its FIFO group behind it (simulator, seed 9335), not for a visibility."""
    fifo, dlq = "jobs.fifo", "jobs-dlq.fifo"

    async def scenario() -> tuple[list[bytes], list[bytes], int]:
        store, wire = MemoryStore(), LosingReplies()
        a, b = (
            Engine(store, LoopClock(EPOCH_MS, random.Random(i)), 20, n) for i, n in enumerate("ab")
        )
        for node in (a, b):
            node.peering.client, node.peering.url = wire, f"http://{node.node_id}"
            wire.nodes[node.peering.url] = node
        await a.create_queue(dlq)
        await a.create_queue(
            fifo, QueueAttrs(fifo=True, max_receive_count=2, dead_letter_queue=dlq)
        )
        await a.send(
            fifo, [SendRequest(f"m{i}".encode(), group_id="g", dedup_id=f"m{i}") for i in range(2)]
        )
        for _ in range(2):  # a leads; m0's lease runs out twice: its next receive finds it dead
            assert len(await a.receive(fifo, 1, 1, 0, lease_ahead=False)) == 1
            await asyncio.sleep(1.5)
        wire.lose = True
        assert await b.receive(fifo, 10, 2, 0, lease_ahead=False) == []
        wire.lose = False
        await asyncio.sleep(3)  # m1's lease, whose answer was lost, runs out
        dead = [d.message.body for d in await b.receive(dlq, 10, 30, 1)]
        got = [d.message.body for d in await b.receive(fifo, 10, 30, 1)]
        moved = a.stats["dead_lettered"]
        await a.close()
        await b.close()
        return dead, got, moved

    assert run_virtual(scenario()) == ([b"m0"], [b"m1"], 1)
