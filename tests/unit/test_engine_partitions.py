"""A high-throughput FIFO queue's partitions (okuri/engine/partitions.py): its groups spread over
a fixed number of lanes by a hash of the group's id, each group's order and deduplication kept
whichever nodes send and receive, sends written by each partition's leader
(okuri/engine/peer_sends.py). Virtual time, one memory store, engines forwarding in process."""

from __future__ import annotations

import asyncio
import random
from collections import defaultdict
from dataclasses import replace

import pytest

from okuri import limits
from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core.fifo import PARTITIONS_IN_FORCE, partition_of, partitions
from okuri.core.invariants import InvariantViolation, check_state, check_step
from okuri.core.lane_ops import AddLane, DropLane, lane_partition, partition_lane
from okuri.core.message import Message
from okuri.core.receipts import Receipt
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import apply
from okuri.engine import Engine, PeerRequestInvalid, PeerUnreachable, SendRequest
from okuri.engine.manifest_codec import ManifestCodec
from okuri.engine.peer_sends import decode_send, decode_send_reply, encode_send
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.memory import MemoryStore
from tests.unit.test_engine_lanes import close, drain_deliveries

Q = "orders.fifo"
HIGH = {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
LINGER_MS = 20


class Wire:
    """The hop between engines, in process; `lose_send_replies`: a forwarded send reaches the
    leader, which writes it, and its answer is lost."""

    def __init__(self) -> None:
        self.nodes: dict[str, Engine] = {}
        self.lose_send_replies = False
        self.sends = 0

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        await asyncio.sleep(0.001)
        reply = await self.nodes[url].commit_for_peer(body)
        if body[:1] == b"S":
            self.sends += 1
            if self.lose_send_replies:
                raise PeerUnreachable("the answer was lost")
        return reply


def cluster(store: MemoryStore, n: int = 3) -> tuple[list[Engine], Wire]:
    wire = Wire()
    out = []
    for i in range(n):
        clock = LoopClock(EPOCH_MS, random.Random(i))
        e = Engine(store, clock, LINGER_MS, f"n{i}", fifo_partitions=limits.fifo_partitions)
        e.peering.client, e.peering.url = wire, f"sim://n{i}"
        wire.nodes[e.peering.url] = e
        out.append(e)
    return out, wire


def send(group: str, dedup: str, body: str | None = None) -> SendRequest:
    return SendRequest((body or dedup).encode(), group_id=group, dedup_id=dedup)


async def drain(nodes: list[Engine], queue: str = Q) -> list[tuple[str, bytes]]:
    """(group, body) of every message received, in order, until two rounds find nothing."""
    return [
        (d.message.group_id or "", d.message.body) for d in await drain_deliveries(nodes, queue)
    ]


def test_groups_spread_over_partitions_each_in_order_and_once_whichever_nodes_send() -> None:
    async def scenario() -> tuple[QueueState, list[tuple[str, bytes]], int, int]:
        store = MemoryStore()
        nodes, wire = cluster(store)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        groups = [f"g{i}" for i in range(24)]
        # Each group's messages one after another, each through the next node: every send is
        # answered before the next of its group begins, so their order is promised.
        for n in range(5):
            await asyncio.gather(
                *(nodes[(n + i) % 3].send(Q, [send(g, f"{g}-{n}")]) for i, g in enumerate(groups))
            )
        st = await nodes[0].read_manifest(Q)
        got = await drain(nodes)
        root_segments = len((await nodes[0].read_manifest(Q)).segments)
        await close(nodes)
        return st, got, wire.sends, root_segments

    st, got, forwarded, root_segments = run_virtual(scenario())
    assert partitions(st.attrs.extra) == limits.fifo_partitions
    assert sorted(lane_partition(lane) for lane in st.lanes) == list(range(8))
    assert root_segments == 0  # every message lives in its group's partition
    by_group: dict[str, list[bytes]] = defaultdict(list)
    for group, body in got:
        by_group[group].append(body)
    assert len(got) == 24 * 5
    assert all(bodies == [f"{g}-{n}".encode() for n in range(5)] for g, bodies in by_group.items())
    assert forwarded > 0  # sends into a partition another node leads went there


def test_a_message_lives_in_the_lane_of_its_groups_partition() -> None:
    async def scenario() -> tuple[list[str], dict[str, str]]:
        store = MemoryStore()
        nodes, _ = cluster(store, 1)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        await nodes[0].send(Q, [send(f"g{i}", f"d{i}") for i in range(10)])
        lanes = (await nodes[0].read_manifest(Q)).lanes
        where: dict[str, str] = {}
        for lane in lanes:
            q = nodes[0].lanes(Q).lane(keys.lane_name(Q, lane))
            for d in await q.receive(10, 30, 0, False):
                where[d.message.group_id or ""] = lane
        await close(nodes)
        return lanes, where

    _, where = run_virtual(scenario())
    assert len(where) == 10
    assert all(lane_partition(lane) == partition_of(g, 8) for g, lane in where.items())


def test_only_both_high_throughput_settings_at_creation_partition_a_queue() -> None:
    async def scenario() -> list[tuple[int, list[str]]]:
        store = MemoryStore()
        nodes, _ = cluster(store, 1)
        (e,) = nodes
        made = {
            "a.fifo": {"DeduplicationScope": "messageGroup"},
            "b.fifo": {},
            "c.fifo": HIGH,
        }
        for name, extra in made.items():
            await e.create_queue(name, QueueAttrs(fifo=True, extra=dict(extra)))
        # Settings changed later leave the partitions as they were, either way.
        await e.set_attributes("a.fifo", QueueAttrs(fifo=True, extra=dict(HIGH)))
        await e.set_attributes("c.fifo", QueueAttrs(fifo=True, extra={}))
        out = []
        for name in made:
            st = await e.read_manifest(name)
            out.append((partitions(st.attrs.extra), st.lanes))
        await close(nodes)
        return out

    (a, a_lanes), (b, b_lanes), (c, c_lanes) = run_virtual(scenario())
    assert (a, a_lanes, b, b_lanes) == (0, [], 0, [])
    assert c == 8 and len(c_lanes) == 8


def test_a_queue_made_before_partitions_is_declared_again_unchanged() -> None:
    async def scenario() -> int:
        store = MemoryStore()
        # As a version without partitions wrote it: no partitions in force, no lanes.
        codec = ManifestCodec(Q)
        old = QueueState(Q, "inc0", EPOCH_MS, QueueAttrs(fifo=True, extra=dict(HIGH)))
        old.version = 1
        await store.put_if_absent(keys.manifest(Q), codec.encode(old))
        nodes, _ = cluster(store, 1)
        (e,) = nodes
        await e.create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))  # no QueueAlreadyExists
        await e.send(Q, [send("g", "1")])
        got = await e.receive(Q, 10, 30, 1)
        st = await e.read_manifest(Q)
        await close(nodes)
        assert st.lanes == [] and partitions(st.attrs.extra) == 0
        return [Receipt.decode(d.receipt_handle).queue for d in got]  # never a lane's

    assert run_virtual(scenario()) == [Q]  # it keeps its one log


def test_a_copy_within_the_window_is_caught_whichever_node_takes_it() -> None:
    async def scenario() -> tuple[list[object], list[tuple[str, bytes]]]:
        store = MemoryStore()
        nodes, _ = cluster(store)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        results = []
        for e in nodes:
            results += await e.send(Q, [send("g", "same", f"from {e.node_id}")])
        results += await nodes[1].send(Q, [send("h", "same", "other group")])
        got = await drain(nodes)
        await close(nodes)
        return results, got

    results, got = run_virtual(scenario())
    first, again, third, other = results
    assert not isinstance(first, Exception) and not isinstance(other, Exception)
    assert [r.message_id for r in (again, third)] == [first.message_id] * 2  # type: ignore[union-attr]
    assert sorted(got) == [("g", b"from n0"), ("h", b"other group")]


def test_a_forward_whose_answer_is_lost_is_written_here_and_delivered_once() -> None:
    async def scenario() -> tuple[list[object], list[tuple[str, bytes]], int]:
        store = MemoryStore()
        nodes, wire = cluster(store, 2)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        groups = [f"g{i}" for i in range(16)]
        await nodes[0].send(Q, [send(g, f"{g}-0") for g in groups[:10]])
        await nodes[0].send(Q, [send(g, f"{g}-0") for g in groups[10:]])
        for _ in range(3):  # node 0 leads every partition: its commits took the lead
            await nodes[0].receive(Q, 1, 0, 0)
        wire.lose_send_replies = True
        results = await nodes[1].send(Q, [send(g, f"{g}-1") for g in groups[:10]])
        lost = wire.sends
        got = await drain(nodes)
        await close(nodes)
        return results, got, lost

    results, got, lost = run_virtual(scenario())
    assert lost > 0
    assert not any(isinstance(r, Exception) for r in results)
    bodies = [b for _, b in got]
    assert len(bodies) == len(set(bodies)) == 26  # the copies written twice: delivered once


def test_a_partitions_lane_is_never_retired() -> None:
    async def scenario() -> list[str]:
        store = MemoryStore()
        clock = LoopClock(EPOCH_MS, random.Random(1))
        e = Engine(store, clock, LINGER_MS, "n0", lane_quiet_s=1, fifo_partitions=8)
        await e.create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        await e.send(Q, [send("g", "1")])
        for _ in range(40):  # well past the quiet time and a freed slot's keep
            for d in await e.receive(Q, 10, 30, 5):
                await e.ack(Q, [d.receipt_handle])
        lanes = (await e.read_manifest(Q)).lanes
        await e.close()
        return lanes

    assert len(run_virtual(scenario())) == 8


def test_a_retried_receive_gets_its_messages_again_from_every_partition() -> None:
    async def scenario() -> tuple[set[bytes], set[bytes] | None]:
        store = MemoryStore()
        nodes, _ = cluster(store, 2)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        await nodes[0].send(Q, [send(f"g{i}", f"m{i}") for i in range(10)])
        got: list = []
        for _ in range(10):
            got += await nodes[0].receive(Q, 10, 60, 0)
        await nodes[0].remember_receive(Q, "attempt-1", got, 300)
        again = await nodes[1].recall_receive(Q, "attempt-1")
        await close(nodes)
        return {d.message.body for d in got}, (
            None if again is None else {d.message.body for d in again}
        )

    first, again = run_virtual(scenario())
    assert len(first) == 10 and again == first


def test_dead_letters_and_moves_into_a_partitioned_queue_go_to_their_groups_partition() -> None:
    async def scenario() -> tuple[int, list[tuple[str, bytes]]]:
        store = MemoryStore()
        nodes, _ = cluster(store, 1)
        (e,) = nodes
        await e.create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        made = [
            Message(
                f"id{i}",
                f"m{i}".encode(),
                EPOCH_MS,
                EPOCH_MS,
                group_id=f"g{i % 3}",
                dedup_key=f"g{i % 3}:d{i}",
            )
            for i in range(6)
        ]
        await e.send_raw(Q, made)
        root = len((await e.read_manifest(Q)).segments)
        got = await drain(nodes)
        await close(nodes)
        return root, got

    root, got = run_virtual(scenario())
    assert root == 0
    assert sorted(got) == sorted((f"g{i % 3}", f"m{i}".encode()) for i in range(6))


def test_deleting_the_queue_deletes_its_partitions() -> None:
    async def scenario() -> list[str]:
        store = MemoryStore()
        nodes, _ = cluster(store, 2)
        await nodes[0].create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        await nodes[1].send(Q, [send(f"g{i}", f"m{i}") for i in range(5)])
        await nodes[0].delete_queue(Q)
        await close(nodes)
        return [k for k in store.objects if k.startswith(keys.lanes_of_queue(Q))]

    assert run_virtual(scenario()) == []


# --- pure rules ------------------------------------------------------------------------------


def test_a_group_s_partition_is_the_same_everywhere_and_spread() -> None:
    spread = {partition_of(f"g{i}", 8) for i in range(100)}
    assert spread == set(range(8))
    assert partition_of("orders-42", 8) == partition_of("orders-42", 8)


def test_the_queue_lists_one_lane_a_partition_and_keeps_it() -> None:
    st = QueueState(Q, "inc", 0, QueueAttrs(fifo=True))
    st.version = 1
    first, second = partition_lane(3, "aa"), partition_lane(3, "bb")
    out = apply(st, 1, [AddLane(first, "inc"), AddLane(second, "inc")], "t")
    assert out.results == [True, False] and out.state.lanes == [first]
    two = replace(out.state, lanes=[first, second])
    with pytest.raises(InvariantViolation, match="one_lane_a_partition"):
        check_state(two)
    dropped = apply(out.state, 2, [DropLane(first)], "t2").state
    with pytest.raises(InvariantViolation, match="partitions_stay"):
        check_step(out.state, dropped)
    assert lane_partition("0123abcd4567") is None  # a standard queue's lane


def test_partitions_in_force_are_kept_when_settings_are_replaced() -> None:
    st = QueueState(Q, "inc", 0, QueueAttrs(fifo=True, extra={**HIGH, PARTITIONS_IN_FORCE: "8"}))
    st.version = 1
    changed = apply(st, 1, [_set({"FifoThroughputLimit": "perQueue"})], "t").state
    assert partitions(changed.attrs.extra) == 8
    assert changed.attrs.extra["FifoThroughputLimit"] == "perQueue"


def _set(extra: dict[str, str]) -> object:
    from okuri.core.transitions import SetAttributes

    return SetAttributes(QueueAttrs(fifo=True, extra=extra))


def test_a_forwarded_send_decodes_as_it_was_sent_and_nothing_else_does() -> None:
    m = Message(
        "id1",
        b"body",
        5,
        5,
        {"k": {"DataType": "String", "StringValue": "v"}},
        group_id="g",
        dedup_key="g:d",
    )
    q, inc, (back,) = decode_send(encode_send("orders.fifo~p1xab", "inc1", [m]))
    assert (q, inc, back) == ("orders.fifo~p1xab", "inc1", m)
    for body in (b"S", b"S{}\n", b'S{"q":"x","inc":"i"}\nnot a segment', b"Sjunk"):
        with pytest.raises(PeerRequestInvalid):
            decode_send(body)
    no_group = replace(m, group_id=None)
    with pytest.raises(PeerRequestInvalid):
        decode_send(encode_send("q", "i", [no_group]))
    for reply in (b"[]", b"{}", b"[[1, 2]]", b"not json"):
        with pytest.raises(PeerUnreachable):
            decode_send_reply(reply, 1)


def test_partitions_are_made_only_where_turned_on_and_served_everywhere() -> None:
    """OKURI_FIFO_PARTITIONS=off (the default) creates high-throughput FIFO queues with one log;
    a node with it off still sends each group of a queue made partitioned to its partition."""

    async def scenario() -> tuple[int, int, list[tuple[str, bytes]]]:
        store = MemoryStore()
        (on,), _ = cluster(store, 1)
        off = Engine(store, LoopClock(EPOCH_MS, random.Random(9)), LINGER_MS, "off")
        await off.create_queue("plain.fifo", QueueAttrs(fifo=True, extra=HIGH))
        await on.create_queue(Q, QueueAttrs(fifo=True, extra=HIGH))
        await off.send(Q, [send(f"g{i}", f"m{i}") for i in range(6)])
        plain = partitions((await off.read_manifest("plain.fifo")).attrs.extra)
        root = len((await on.read_manifest(Q)).segments)
        got = await drain([on, off])
        await close([on, off])
        return plain, root, got

    plain, root, got = run_virtual(scenario())
    assert plain == 0 and root == 0
    assert sorted(got) == [(f"g{i}", f"m{i}".encode()) for i in range(6)]
