"""Lanes (okuri/engine/lanes.py): a node that meets another's segments in a queue's slot log
opens a slot log and manifest of its own, listed in the queue's manifest; receives, deletes,
counts, browsing, attributes, purge and deletion span them all. Virtual time, one memory store,
engines that forward commits to each other in process."""

from __future__ import annotations

import asyncio
import contextlib
import random
from typing import Any

import pytest

from okuri import limits
from okuri.clock import LoopClock
from okuri.core import keys
from okuri.core.invariants import InvariantViolation, check_step
from okuri.core.lane_ops import AddLane, CloseLane, DropLane
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import apply
from okuri.engine import Delivery, Engine, SendRequest
from okuri.engine.queue import Queue
from okuri.errors import QueueDoesNotExist, ReceiptHandleInvalid, Unavailable
from okuri.sim.loop import run_virtual
from okuri.sim.world import EPOCH_MS
from okuri.store.counting import CountingStore
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob

Q = "jobs"
LINGER_MS = 20


class Wire:
    """The hop between engines, in process."""

    def __init__(self) -> None:
        self.nodes: dict[str, Engine] = {}

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        await asyncio.sleep(0.001)
        return await self.nodes[url].commit_for_peer(body)


def cluster(store: MemoryStore, n: int = 2, lanes_off: int = 0) -> list[Engine]:
    """`n` nodes on `store`, the last `lanes_off` of them never opening a lane."""
    wire = Wire()
    out = []
    for i in range(n):
        on = i < n - lanes_off
        e = Engine(store, LoopClock(EPOCH_MS, random.Random(i)), LINGER_MS, f"n{i}", lanes=on)
        e.peering.client, e.peering.url = wire, f"sim://n{i}"
        wire.nodes[e.peering.url] = e
        out.append(e)
    return out


def batch(tag: str, n: int = 10) -> list[SendRequest]:
    return [SendRequest(f"{tag}-{i}".encode()) for i in range(n)]


async def send_together(
    nodes: list[Engine], rounds: int, queue: str = Q, first: int = 0
) -> set[bytes]:
    """Every node sends a batch at once, `rounds` times: they race for the same slots."""
    sent: set[bytes] = set()
    for r in range(first, first + rounds):
        results = await asyncio.gather(*(e.send(queue, batch(f"{e.node_id}-{r}")) for e in nodes))
        for e, res in zip(nodes, results, strict=True):
            assert not any(isinstance(x, Exception) for x in res), res
            sent.update(f"{e.node_id}-{r}-{i}".encode() for i in range(10))
    return sent


async def drain(nodes: list[Engine], queue: str = Q) -> list[bytes]:
    """Receive and delete until two rounds in a row find nothing; every body received."""
    return [d.message.body for d in await drain_deliveries(nodes, queue)]


async def drain_deliveries(nodes: list[Engine], queue: str) -> list[Delivery]:
    """Receive and delete through the nodes in turn until two rounds in a row find nothing;
    every delivery, in the order received."""
    got: list[Delivery] = []
    empty = 0
    while empty < 2:
        moved = 0
        for e in nodes:
            ds = await e.receive(queue, 10, 30, 1)
            assert all(r == "acked" for r in await e.ack(queue, [d.receipt_handle for d in ds]))
            got += ds
            moved += len(ds)
        empty = empty + 1 if moved == 0 else 0
    return got


async def close(nodes: list[Engine]) -> None:
    for e in nodes:
        await e.close()


def test_producers_on_two_nodes_open_a_lane_and_every_message_is_delivered_once() -> None:
    async def scenario() -> tuple[QueueState, set[bytes], list[bytes], int]:
        store = MemoryStore()
        nodes = cluster(store)
        await nodes[0].create_queue(Q)
        sent = await send_together(nodes, 6)
        sent |= await send_together(nodes, 4, first=6)  # sent once the lane is open
        st = await nodes[0].read_manifest(Q)
        got = await drain(nodes)
        lane_keys = sum(1 for k in store.objects if k.startswith(keys.lanes_of_queue(Q)))
        await close(nodes)
        return st, sent, got, lane_keys

    st, sent, got, lane_keys = run_virtual(scenario())
    assert 1 <= len(st.lanes) <= 2 and lane_keys == len(st.lanes)  # one per node that lost a race
    assert sorted(got) == sorted(sent)  # each once


def test_a_node_alone_never_opens_a_lane() -> None:
    async def scenario() -> QueueState:
        store = MemoryStore()
        (a,) = cluster(store, 1)
        await a.create_queue(Q)
        for r in range(20):
            await asyncio.gather(*(a.send(Q, batch(f"{r}-{k}")) for k in range(3)))
        st = await a.read_manifest(Q)
        await a.close()
        return st

    assert run_virtual(scenario()).lanes == []


def test_a_node_with_lanes_off_keeps_the_shared_log_and_still_serves_lanes() -> None:
    async def scenario() -> tuple[list[str], list[bytes], set[bytes]]:
        store = MemoryStore()
        a, b, off = cluster(store, 3, lanes_off=1)
        await a.create_queue(Q)
        sent = await send_together([a, b], 6)
        lanes = (await a.read_manifest(Q)).lanes
        # Racing the node that kept the shared log (if one did), it opens no lane of its own.
        keeper = [e for e in (a, b) if e.lanes(Q).own is None]
        more = await send_together([*keeper, off], 6, first=6)
        more |= await send_together([off], 1, first=12)
        lanes_after = (await a.read_manifest(Q)).lanes
        got = await drain([off])
        await close([a, b, off])
        assert off.lanes(Q).own is None
        assert len(lanes_after) == len(lanes) + len(keeper)  # the keeper may open one
        return lanes, got, sent | more

    lanes, got, sent = run_virtual(scenario())
    assert 1 <= len(lanes) <= 2
    assert sorted(got) == sorted(sent)


def test_fifo_and_expiring_queues_never_open_lanes() -> None:
    async def scenario() -> list[list[str]]:
        store = MemoryStore()
        nodes = cluster(store)
        await nodes[0].create_queue("q.fifo", QueueAttrs(fifo=True))
        await nodes[0].create_queue("exp", QueueAttrs(expires_s=3600))
        for r in range(6):
            await asyncio.gather(
                *(
                    e.send("q.fifo", [SendRequest(b"x", group_id="g", dedup_id=f"{e.node_id}{r}")])
                    for e in nodes
                )
            )
        await send_together(nodes, 6, "exp")
        out = [(await nodes[0].read_manifest(q)).lanes for q in ("q.fifo", "exp")]
        await close(nodes)
        return out

    assert run_virtual(scenario()) == [[], []]


def test_receipts_of_a_lane_delete_and_change_visibility_through_any_node() -> None:
    async def scenario() -> tuple[list[object], list[object], list[object], int]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        await a.create_queue("other")
        await send_together([a, b], 6)
        received = []
        for _ in range(20):
            received += await b.receive(Q, 10, 30, 0)
        in_lane = [d for d in received if keys.LANE_SEP in _receipt_queue(d.receipt_handle)]
        assert in_lane, "no message came from the lane"
        handles = [d.receipt_handle for d in in_lane[:3]]
        vis = await a.change_visibility(Q, [(h, 60) for h in handles])
        acks = await a.ack(Q, handles)
        elsewhere = await a.ack("other", handles[:1])
        counts = await a.counts(Q)
        await close([a, b])
        return vis, acks, elsewhere, counts.in_flight

    vis, acks, elsewhere, in_flight = run_virtual(scenario())
    assert vis == ["ok"] * 3
    assert acks == ["acked"] * 3
    assert isinstance(elsewhere[0], ReceiptHandleInvalid)
    assert in_flight > 0  # the rest stay in flight, counted across the queue and its lanes


def _receipt_queue(handle: str) -> str:
    from okuri.core.receipts import Receipt

    return Receipt.decode(handle).queue


def test_counts_browse_attributes_and_purge_span_the_lanes() -> None:
    async def scenario() -> tuple[int, int, int, list[int], int]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        sent = await send_together([a, b], 6)
        st = await a.read_manifest(Q)
        assert st.lanes
        visible = (await b.counts(Q)).visible
        seen, after, pages = 0, None, 0
        while True:
            page = await b.browse(Q, after, 7)
            seen += len(page.messages)
            pages += 1
            if page.next is None:
                break
            after = page.next
        await a.set_attributes(Q, QueueAttrs(visibility_timeout_s=77))
        lane_vis = [
            (await a.lanes(Q).lane(keys.lane_name(Q, lane)).refresh()).attrs.visibility_timeout_s
            for lane in st.lanes
        ]
        await a.purge(Q)
        left = (await b.counts(Q)).visible
        await close([a, b])
        assert visible == len(sent)
        return seen, pages, visible, lane_vis, left

    seen, pages, visible, lane_vis, left = run_virtual(scenario())
    assert seen == visible and pages > 1
    assert lane_vis == [77] * len(lane_vis)
    assert left == 0


def test_deleting_the_queue_deletes_its_lanes_and_sends_then_fail() -> None:
    async def scenario() -> tuple[list[str], BaseException | list[object]]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        await send_together([a, b], 6)
        await a.delete_queue(Q)
        await asyncio.sleep(limits.freed_slot_keep_s + 5)
        left = sorted(k for k in store.objects if k.startswith(("l/", "s/", "m/")))
        try:
            after: BaseException | list[object] = list(await b.send(Q, batch("late")))
        except QueueDoesNotExist as err:
            after = err
        await close([a, b])
        return left, after

    left, after = run_virtual(scenario())
    assert left == []
    assert isinstance(after, QueueDoesNotExist) or all(
        isinstance(r, QueueDoesNotExist)
        for r in after  # type: ignore[union-attr]
    )


# --- the pure rules ---------------------------------------------------------------------------


def test_add_lane_lists_once_within_the_bound_and_only_for_its_incarnation() -> None:
    st = QueueState(Q, "inc", 0, QueueAttrs())
    out = apply(st, 1, [AddLane("a", "inc"), AddLane("a", "inc"), AddLane("b", "old")], "t")
    assert out.results == [True, True, False] and out.state.lanes == ["a"]
    full = QueueState(Q, "inc", 0, QueueAttrs(), lanes=[f"l{i}" for i in range(limits.lanes_max)])
    assert apply(full, 1, [AddLane("x", "inc")], "t").results == [False]


def test_a_lane_closes_only_while_empty_stays_closed_and_drops_from_the_queue_once() -> None:
    lane = QueueState(keys.lane_name(Q, "a"), "inc", 0, QueueAttrs(), next_seq=5)
    assert apply(lane, 1, [CloseLane(4)], "t").results == [False]  # a slot came since
    closed = apply(lane, 7, [CloseLane(5)], "t").state
    assert closed.closed_ms == 7
    reopened = closed.copy()
    reopened.version += 1
    reopened.closed_ms = 0
    with pytest.raises(InvariantViolation, match="closed_stays_closed"):
        check_step(closed, reopened)
    root = QueueState(Q, "inc", 0, QueueAttrs(), lanes=["a", "b"])
    out = apply(root, 1, [DropLane("a"), DropLane("a")], "t")
    assert out.results == [True, False] and out.state.lanes == ["b"]
    assert apply(root, 1, [CloseLane(0)], "t").results == [False]  # the queue is no lane


def test_a_lane_left_by_a_deletion_that_died_midway_stops_taking_sends() -> None:
    """DeleteQueue died after deleting the queue's manifest, before finding a lane opened
    meanwhile: the lane's producer, reading the queue's manifest every few seconds, deletes
    its lane, and its sends fail rather than land where no one reads."""

    async def scenario() -> tuple[bool, list[object]]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        await send_together([a, b], 6)
        owner = next(e for e in (a, b) if e.lanes(Q).own is not None)
        lane = owner.lanes(Q).own
        assert lane is not None
        await store.delete(keys.manifest(Q))  # the deletion's first step, and nothing after
        await asyncio.sleep(6)
        with contextlib.suppress(QueueDoesNotExist):
            await owner.send(Q, batch("noticed"))  # may land: the check runs beside it
        await asyncio.sleep(1)
        lane_left = keys.manifest(lane.name) in store.objects
        try:
            late: list[object] = list(await owner.send(Q, batch("late")))
        except QueueDoesNotExist as err:
            late = [err]
        await close([a, b])
        return lane_left, late

    lane_left, late = run_virtual(scenario())
    assert not lane_left
    assert late and all(isinstance(r, QueueDoesNotExist) for r in late)


def test_a_quiet_lane_is_retired_and_the_queue_then_costs_what_one_log_does() -> None:
    """Producers back on one node: the lanes they opened go quiet, are closed, wait out a
    freed slot's keep, and are dropped; receives then look into the queue's own log only."""

    async def scenario() -> tuple[int, list[str], int, set[bytes], list[bytes]]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        sent = await send_together([a, b], 6)
        opened = len((await a.read_manifest(Q)).lanes)
        got = await drain([a, b])
        loop = asyncio.get_running_loop()
        end = loop.time() + 400 + limits.freed_slot_keep_s
        while loop.time() < end:  # a consumer long-polling an idle queue
            assert await b.receive(Q, 10, 30, 20) == []
        lanes = (await a.read_manifest(Q)).lanes
        left = sum(1 for k in store.objects if k.startswith(keys.lanes_of_queue(Q)))
        sent |= await send_together([a], 2, first=50)  # a node alone again: the queue's log
        got += await drain([a, b])
        await close([a, b])
        return opened, lanes, left, sent, got

    opened, lanes, left, sent, got = run_virtual(scenario())
    assert opened >= 1
    assert lanes == [] and left == 0
    assert sorted(got) == sorted(sent)


def test_a_send_scheduled_beyond_the_longest_delay_waits_beside_the_queue_not_a_lane() -> None:
    """Found by the simulator: a node sending into its own lane scheduled a message an hour
    ahead; the lane went quiet and was dropped, its scheduled items swept with it, and the
    message never came. Such a send goes to the queue itself, which outlives any lane."""

    async def scenario() -> tuple[int, list[str], list[bytes]]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        await send_together([a, b], 6)
        opened = len((await a.read_manifest(Q)).lanes)
        owner = next(e for e in (a, b) if e.lanes(Q).own is not None)
        due_ms = owner.clock.now_ms() + 3600_000
        (res,) = await owner.send(Q, [SendRequest(b"later", enqueue_at_ms=due_ms)])
        assert not isinstance(res, Exception)
        await drain([a, b])
        loop = asyncio.get_running_loop()
        end = loop.time() + 3600 + 60
        got: list[bytes] = []
        while loop.time() < end and not got:
            ds = await b.receive(Q, 10, 30, 20)
            got += [d.message.body for d in ds]
            await b.ack(Q, [d.receipt_handle for d in ds])
        lanes = (await a.read_manifest(Q)).lanes
        await close([a, b])
        return opened, lanes, got

    opened, lanes, got = run_virtual(scenario())
    assert opened >= 1 and lanes == []  # the lanes were retired meanwhile
    assert got == [b"later"]


def test_a_receive_leaves_out_a_listed_lane_whose_manifest_is_gone() -> None:
    """Found by the simulator: a lane dropped through a leader in another node, still listed
    in this node's copy of the queue's manifest. Its discovery failed at once and woke the
    waiting receive, which looked again at once: a loop that never let time pass. The receive
    now reads the queue's manifest again and waits its time out."""

    class Gets(MemoryStore):
        count = 0

        async def get(self, key: str) -> Blob:
            self.count += 1
            if self.count > 5_000:
                raise RuntimeError("a receive that never waits")
            return await super().get(key)

    async def scenario() -> tuple[float, list[str]]:
        store = Gets()
        a, b = cluster(store)
        await a.create_queue(Q)
        await send_together([a, b], 6)
        await drain([a, b])
        st = await a.read_manifest(Q)
        for lane in st.lanes:  # gone under this node's feet, still listed in its copy
            await store.delete(keys.manifest(keys.lane_name(Q, lane)))
        loop = asyncio.get_running_loop()
        began = loop.time()
        assert await a.receive(Q, 10, 30, 5) == []
        waited = loop.time() - began
        await close([a, b])
        return waited, st.lanes

    waited, lanes = run_virtual(scenario())
    assert lanes and 4.5 <= waited <= 6.0


def test_a_node_with_a_lane_of_its_own_looks_into_one_other_lane_a_second() -> None:
    """Six nodes, each with its lane: a consumer long-polling the idle queue on one of them
    reads its own lane and one other lane a second, not all six (on sixteen nodes, looking
    into every lane each second cost more GETs than the messages)."""

    async def scenario() -> tuple[int, int, float]:
        store = MemoryStore()
        counted = CountingStore(store)
        wire = Wire()
        nodes = []
        for i in range(6):
            clock = LoopClock(EPOCH_MS, random.Random(i))
            e = Engine(counted if i == 0 else store, clock, LINGER_MS, f"n{i}")
            e.peering.client, e.peering.url = wire, f"sim://n{i}"
            wire.nodes[e.peering.url] = e
            nodes.append(e)
        await nodes[0].create_queue(Q)
        for _ in range(4):
            if all(e.lanes(Q).own is not None for e in nodes):
                break
            await send_together(nodes, 4)
        await drain(nodes)
        lanes = len((await nodes[0].read_manifest(Q)).lanes)
        assert nodes[0].lanes(Q).own is not None
        loop = asyncio.get_running_loop()
        before = counted.counts["get"]
        began = loop.time()
        while loop.time() - began < 30:
            assert await nodes[0].receive(Q, 10, 30, 20) == []
        seconds = loop.time() - began
        gets = counted.counts["get"] - before
        await close(nodes)
        return lanes, gets, seconds

    lanes, gets, seconds = run_virtual(scenario())
    assert lanes >= 4
    # Its own lane: a probe a second once idle, and its manifest read at times; one other
    # lane a second: its manifest and a probe. Every lane a second was over 2 GETs a lane.
    assert gets <= 4 * seconds, (gets, seconds)


def test_each_node_leads_the_lane_it_produces_into() -> None:
    """Left to whichever node committed first, one node of two led both lanes and the other
    forwarded nearly every lease and delete to it; the producer of a lane claims its lead."""

    async def scenario() -> tuple[dict[str, str], dict[str, str]]:
        store = MemoryStore()
        nodes = cluster(store)
        await nodes[0].create_queue(Q)
        await send_together(nodes, 8)
        await drain(nodes[:1])  # node 0 leases and deletes in node 1's lane first: it leads it
        await send_together(nodes, 4, first=20)
        await drain(nodes[::-1])
        owners = {e.node_id: own.name for e in nodes if (own := e.lanes(Q).own) is not None}
        leads = {}
        for node, lane in owners.items():
            st = await nodes[0].lanes(Q).lane(lane).refresh()  # as stored
            assert st.lead is not None
            leads[node] = st.lead[0]
        await close(nodes)
        return owners, leads

    owners, leads = run_virtual(scenario())
    assert len(owners) == 2
    assert leads == {node: node for node in owners}


def test_a_busy_node_still_drains_a_lane_whose_own_consumers_are_gone() -> None:
    """Node b's producers sent into its lane and its consumers left; node a keeps sending into
    its own lane and receiving. Own lane first, always, left b's messages waiting until a's
    load ended; one receive in a few looks first at a lane holding late messages."""

    async def scenario() -> tuple[set[bytes], float | None]:
        store = MemoryStore()
        a, b = cluster(store)
        await a.create_queue(Q)
        await send_together([a, b], 6)
        await drain([a, b])
        assert a.lanes(Q).own is not None and b.lanes(Q).own is not None
        stranded = {f"b-late-{i}".encode() for i in range(10)}
        loop = asyncio.get_running_loop()
        began = loop.time() + 2
        end = began + 20
        seen: set[bytes] = set()
        drained_at: float | None = None

        async def produce() -> None:  # more than two consumers take: a's lane never empties
            i = 0
            while loop.time() < end:
                for _ in range(3):
                    await a.send(Q, batch(f"a-busy-{i}"))
                    i += 1
                await asyncio.sleep(0.01)

        async def consume() -> None:
            nonlocal drained_at
            while loop.time() < end:
                got = await a.receive(Q, 10, 30, 1)
                await a.ack(Q, [d.receipt_handle for d in got])
                seen.update(d.message.body for d in got if d.message.body in stranded)
                if drained_at is None and seen == stranded:
                    drained_at = loop.time() - began

        async def strand() -> None:  # once a's lane holds a backlog
            await asyncio.sleep(began - loop.time())
            await b.send(Q, [SendRequest(body) for body in sorted(stranded)])

        await asyncio.gather(produce(), consume(), consume(), strand())
        await close([a, b])
        return seen, drained_at

    seen, drained_at = run_virtual(scenario())
    # late after 5 s, then one of a few receives looks there first
    assert drained_at is not None and drained_at <= 8.0, (len(seen), drained_at)


class _Reads(MemoryStore):
    """A memory store that remembers the key of every GET."""

    def __init__(self) -> None:
        super().__init__()
        self.got: list[str] = []

    async def get(self, key: str) -> Blob:
        self.got.append(key)
        return await super().get(key)


async def _own_lane(store: MemoryStore) -> tuple[Engine, Engine, Queue]:
    """Two nodes whose producers met, each with a lane of its own, and the first one's lane."""
    a, b = cluster(store)
    await a.create_queue(Q)
    await send_together([a, b], 6)
    await drain([a, b])
    own = a.lanes(Q).own
    assert own is not None and own.slots.sole_writer
    return a, b, own


def test_a_node_reads_no_slot_of_its_own_lane_past_what_it_wrote() -> None:
    """Only the node that opened a lane writes its log, so the end of what it wrote is the end
    of the log: its consumers wait on its own writes, not on GETs of the slot after them (on
    sixteen nodes those probes were 2 GETs a thousand messages, each answered 404)."""

    async def scenario() -> tuple[list[str], int, int]:
        store = _Reads()
        a, b, own = await _own_lane(store)
        mine = keys.segment(own.name, (await own.current()).incarnation, 0).rsplit("/", 1)[0]
        store.got.clear()
        loop = asyncio.get_running_loop()
        sent = got = 0
        end = loop.time() + 10

        async def produce() -> None:
            nonlocal sent
            i = 0
            while loop.time() < end:
                await a.send(Q, batch(f"own-{i}"))
                sent += 10
                i += 1
                await asyncio.sleep(0.05)

        async def consume() -> None:
            nonlocal got
            while loop.time() < end + 2:
                ds = await a.receive(Q, 10, 30, 1)
                await a.ack(Q, [d.receipt_handle for d in ds])
                got += len(ds)

        await asyncio.gather(produce(), consume(), consume())
        await close([a, b])
        return [k for k in store.got if k.startswith(mine + "/")], sent, got

    own_reads, sent, got = run_virtual(scenario())
    assert got == sent > 0
    assert own_reads == []


def test_a_failed_write_makes_a_node_read_its_own_lane_again() -> None:
    """A write that fails may still have left its segment in a slot past `head_hint`: from then
    on the node's discovery reads its own lane as it reads any log, and finds that segment."""

    async def scenario() -> tuple[bool, int]:
        store = MemoryStore()
        a, b, own = await _own_lane(store)
        st = await own.current()
        slot = own.slots.known_end()
        real = own.slots._write

        async def lost(segment: Any, data: bytes, arrived_s: float) -> int:
            await store.put_if_absent(keys.segment(own.name, st.incarnation, slot), data)
            raise Unavailable("the answer was lost")

        own.slots._write = lost  # type: ignore[method-assign]
        results = await a.send(Q, batch("lost", 1))
        own.slots._write = real  # type: ignore[method-assign]
        assert isinstance(results[0], Unavailable)
        got = await drain([a])
        await close([a, b])
        return own.slots.sole_writer, len(got)

    sole, got = run_virtual(scenario())
    assert not sole
    assert got == 1  # written though its send failed: delivered, as SQS may after an error
