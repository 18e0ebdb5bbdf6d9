"""Dead-lettering on a consumer's word (`Engine.dead_letter`, the native API's `dead: true`).

Real time on the in-memory store, as tests/unit/test_engine.py; no test waits for a lease to
run out except the one that says so (one second).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from okuri.clock import SystemClock
from okuri.core.views import Counts
from okuri.engine import Engine, QueueAttrs, SendRequest
from okuri.errors import ReceiptHandleInvalid
from okuri.store.memory import MemoryStore
from tests.unit.test_engine import receive_until

Q = "jobs"


@pytest.fixture
async def node() -> AsyncIterator[Engine]:
    engine = Engine(MemoryStore(), SystemClock(), linger_ms=5)
    yield engine
    await engine.close()


async def test_a_leased_message_goes_to_the_configured_dlq_with_its_id_body_and_count(
    node: Engine,
) -> None:
    await node.create_queue("graveyard")
    await node.create_queue(Q, QueueAttrs(max_receive_count=5, dead_letter_queue="graveyard"))
    sent = await node.send_one(Q, SendRequest(b"poison", attributes={"k": "v"}))
    (d,) = await node.receive(Q, visibility_s=30)
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["dead"]
    assert await node.counts(Q) == Counts()
    (dead,) = await receive_until(node, "graveyard", 1)
    assert (dead.message.id, dead.message.body) == (sent.message_id, b"poison")
    assert dead.message.attributes == {"k": "v"}
    assert dead.message.dead_letter_source == Q
    assert dead.receive_count == 2  # the delivery that was refused counts, then this one
    assert node.stats["dead_lettered"] == 1
    # Done once: the same receipt again finds the message finished.
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["gone"]


async def test_without_a_target_it_goes_to_the_dash_dlq_queue_created_for_it(node: Engine) -> None:
    await node.create_queue(Q)
    await node.send_one(Q, SendRequest(b"x"))
    (d,) = await node.receive(Q, visibility_s=30)
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["dead"]
    (dead,) = await receive_until(node, f"{Q}-dlq", 1)
    assert dead.message.body == b"x"


async def test_each_receipt_is_answered_in_order_and_bad_ones_leave_the_rest_working(
    node: Engine,
) -> None:
    await node.create_queue(Q)
    await node.send(Q, [SendRequest(b"a"), SendRequest(b"b")])
    got = await receive_until(node, Q, 2, visibility_s=30)
    results = await node.dead_letter(Q, ["nonsense", got[0].receipt_handle, got[1].receipt_handle])
    assert isinstance(results[0], ReceiptHandleInvalid)
    assert results[1:] == ["dead", "dead"]
    assert sorted(d.message.body for d in await receive_until(node, f"{Q}-dlq", 2)) == [b"a", b"b"]


async def test_a_receipt_whose_lease_ran_out_is_stale_and_copies_nothing(node: Engine) -> None:
    await node.create_queue(Q)
    await node.send_one(Q, SendRequest(b"late"))
    (d,) = await node.receive(Q, visibility_s=1)
    await asyncio.sleep(1.1)  # the lease runs out (one second, real time)
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["stale"]
    (again,) = await receive_until(node, Q, 1, visibility_s=30)
    assert again.message.body == b"late"
    # An older receipt of a message leased again is stale too.
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["stale"]
    assert await node.list_queues(f"{Q}-dlq") == []
