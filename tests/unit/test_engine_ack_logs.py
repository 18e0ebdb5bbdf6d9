"""Ack logs between two engines on one store: a follower answers deletes from a log object of
its own, a committer closes a log before leasing its messages again, and the sweep clears
what is left (the real processes are in tests/cluster)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.transitions import Lease
from okuri.engine import Engine, SendRequest
from okuri.engine.ack_logs import decode_log
from okuri.store.memory import MemoryStore
from tests.unit.test_engine_peering import Q, Wire


@pytest.fixture
async def nodes() -> AsyncIterator[tuple[Engine, Engine, MemoryStore]]:
    """a leads; b follows and keeps ack logs."""
    store, wire = MemoryStore(), Wire()
    a = Engine(store, SystemClock(), linger_ms=2, node_id="a", ack_logs=True)
    b = Engine(store, SystemClock(), linger_ms=2, node_id="b", ack_logs=True)
    for node, url in ((a, "http://a"), (b, "http://b")):
        node.peering.client, node.peering.url = wire, url
        wire.nodes[url] = node
    await a.create_queue(Q)
    await a.send(Q, [SendRequest(body=b"lead")])
    [first] = await a.receive(Q, 1, 30, 0, lease_ahead=False)  # a commits: it leads
    await a.ack(Q, [first.receipt_handle])
    yield a, b, store
    await a.close()
    await b.close()


def _logs(store: MemoryStore) -> dict[str, tuple[list[tuple[int, int, int]], bool]]:
    return {k: decode_log(v.data) for k, v in store.objects.items() if k.startswith(keys.ACK_LOGS)}


async def _eventually(check: object, seconds: float = 2.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within the time allowed")


async def test_a_follower_answers_deletes_from_its_log_and_the_leader_commits_them(
    nodes: tuple[Engine, Engine, MemoryStore],
) -> None:
    a, b, store = nodes
    await b.send(Q, [SendRequest(body=f"m{i}".encode()) for i in range(4)])
    got = await b.receive(Q, 10, 30, 0, lease_ahead=False)
    assert len(got) == 4
    [(key, (acks, closed))] = _logs(store).items()  # made beside the lease, before any delete
    assert acks == [] and not closed and key.startswith(keys.ack_logs_of_queue(Q))
    st = await a.read_manifest(Q)
    assert len(st.logs) == 1  # the manifest lists what was leased under it
    assert await b.ack(Q, [d.receipt_handle for d in got]) == ["logged"] * 4
    assert b.stats["ack_log_acks"] == 4 and b.stats["ack_log_writes"] == 1
    # In the background the deletes reach the leader; the log, done with, goes.
    await _eventually(lambda: not store.objects.keys() & set(_logs(store)))
    st = await a.read_manifest(Q)
    assert st.logs == {} and (await a.counts(Q)).in_flight == 0
    assert await a.receive(Q, 10, 30, 0) == []  # nothing comes back


async def test_a_committer_closes_a_log_and_applies_its_deletes_before_leasing_again(
    nodes: tuple[Engine, Engine, MemoryStore],
) -> None:
    """The follower answered two deletes from its log and died before they reached the
    leader: once the lease runs out, the leader reads the log, closes it, applies them, and
    only the message nobody deleted comes back."""
    a, b, store = nodes
    await b.send(Q, [SendRequest(body=f"m{i}".encode()) for i in range(3)])
    got = await b.receive(Q, 10, 1, 0, lease_ahead=False)
    folds: list[object] = []
    b.runtime(Q).ack_logs._fold = lambda inc, places: asyncio.sleep(0, folds.append(places))  # type: ignore[method-assign]
    assert await b.ack(Q, [d.receipt_handle for d in got[:2]]) == ["logged"] * 2
    b.crash()
    assert folds  # the deletes were never committed
    await asyncio.sleep(1.1)  # the lease ran out
    again = await a.receive(Q, 10, 30, 0, lease_ahead=False)
    assert [d.message.body for d in again] == [got[2].message.body]
    assert a.stats["ack_logs_closed"] == 1
    [(acks, closed)] = _logs(store).values()
    assert closed and len(acks) == 2
    assert (await a.read_manifest(Q)).logs == {}


async def test_a_delete_after_its_log_was_closed_commits_as_before(
    nodes: tuple[Engine, Engine, MemoryStore],
) -> None:
    a, b, _ = nodes
    await b.send(Q, [SendRequest(body=b"x")])
    [d] = await b.receive(Q, 1, 30, 0, lease_ahead=False)
    # Made visible through the leader: the log is due, and the leader's next lease closes it.
    assert await a.change_visibility(Q, [(d.receipt_handle, 0)]) == ["ok"]
    [again] = await a.receive(Q, 1, 30, 0, lease_ahead=False)
    assert again.message.body == b"x" and again.receipt_handle != d.receipt_handle
    # b's append fails its If-Match on the closed log: the delete goes to the leader, and a
    # receipt from an earlier receive still deletes, as on SQS.
    assert await b.ack(Q, [d.receipt_handle]) == ["acked"]
    assert b.stats["ack_log_acks"] == 0
    assert (await a.counts(Q)).in_flight == 0


async def test_the_sweep_deletes_logs_no_manifest_lists_and_keeps_open_ones(
    nodes: tuple[Engine, Engine, MemoryStore],
) -> None:
    a, b, store = nodes
    await b.send(Q, [SendRequest(body=b"x"), SendRequest(body=b"y")])
    got = await b.receive(Q, 2, 30, 0, lease_ahead=False)
    st = await a.read_manifest(Q)
    stray = keys.ack_log(Q, st.incarnation, "stray")  # a lease that never committed
    await store.put_if_absent(stray, b'{"acks": [], "closed": false}')
    await a.sweep(Q)
    assert set(_logs(store)) == {keys.ack_log(Q, st.incarnation, next(iter(st.logs)))}
    assert await b.ack(Q, [d.receipt_handle for d in got]) == ["logged"] * 2


async def test_a_lease_forwarded_with_a_log_names_it_on_the_wire() -> None:
    from okuri.engine.peering import CommitRequest, decode_request, encode_request

    req = CommitRequest(Q, "inc", [Lease(10, 30_000, "b-1-x"), Lease(5, 1_000)], [])
    assert decode_request(encode_request(req)).ops == req.ops
