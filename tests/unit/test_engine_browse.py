"""Browsing a queue (`Engine.browse`) over the in-memory store: it shows every message with
its state, pages oldest first, and writes nothing (the manifest object stays byte-equal, so no
receive count, lease or expiry mark moved)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.core import keys
from okuri.core.state import QueueAttrs
from okuri.engine import BrowsePage, Engine, MessageView, SendRequest
from okuri.errors import InvalidArgument, QueueDoesNotExist
from okuri.store.memory import MemoryStore

Q = "jobs"


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
async def node(store: MemoryStore) -> AsyncIterator[Engine]:
    engine = Engine(store, SystemClock(), linger_ms=5)
    yield engine
    await asyncio.wait_for(engine.close(), 5)


async def browse_all(node: Engine, queue: str, limit: int) -> tuple[list[MessageView], int]:
    """Every message, page by page; and how many pages it took."""
    seen: list[MessageView] = []
    after: str | None = None
    for pages in range(1, 100):
        page: BrowsePage = await node.browse(queue, after, limit)
        seen.extend(page.messages)
        if page.next is None:
            return seen, pages
        assert page.next != after
        after = page.next
    raise AssertionError("browse never reached the end")


async def test_browse_shows_visible_leased_and_delayed_and_writes_nothing(
    node: Engine, store: MemoryStore
) -> None:
    await node.create_queue(Q, QueueAttrs(expires_s=3600))
    first = await node.send_one(Q, SendRequest(b"one", attributes={"k": "v"}))
    await node.send_one(Q, SendRequest(b"two"))
    late = await node.send_one(Q, SendRequest(b"later", delay_s=600))
    (leased,) = await node.receive(Q, 1, visibility_s=300, lease_ahead=False)
    manifest_before = (await store.get(keys.manifest(Q))).data
    counts_before = await node.counts(Q)

    page = await node.browse(Q)
    now_ms = node.clock.now_ms()

    assert page.next is None
    assert [v.body for v in page.messages] == [b"one", b"two", b"later"]  # oldest first
    by_id = {v.id: v for v in page.messages}
    held = by_id[leased.message.id]
    assert held.state == "in_flight"
    assert held.receives == 1
    assert now_ms < held.until_ms <= now_ms + 300_000
    assert held.first_receive_ms == leased.first_receive_ms
    delayed = by_id[late.message_id]
    assert delayed.state == "delayed"
    assert delayed.receives == 0
    assert delayed.until_ms > now_ms + 500_000
    visible = [v for v in page.messages if v.id not in (leased.message.id, late.message_id)]
    assert [(v.state, v.receives, v.until_ms, v.first_receive_ms) for v in visible] == [
        ("visible", 0, 0, 0)
    ]
    assert by_id[first.message_id].attributes == {"k": "v"}
    assert by_id[first.message_id].sent_ms == first.sent_ms

    # Browsing again changes nothing either: no lease taken, no count moved, no mark written.
    await node.browse(Q, limit=limits.browse_items_max)
    assert (await store.get(keys.manifest(Q))).data == manifest_before
    assert await node.counts(Q) == counts_before


async def test_browse_pages_through_every_message_once_in_order(node: Engine) -> None:
    await node.create_queue(Q)
    sent: list[bytes] = []
    for batch in range(3):  # three segments, in order
        bodies = [f"{batch}-{i}".encode() for i in range(9)]
        await node.send(Q, [SendRequest(b) for b in bodies])
        sent.extend(bodies)

    seen, pages = await browse_all(node, Q, 10)

    assert [v.body for v in seen] == sent
    assert pages == 3
    with pytest.raises(InvalidArgument):
        await node.browse(Q, limit=0)
    with pytest.raises(InvalidArgument):
        await node.browse(Q, limit=limits.browse_items_max + 1)
    with pytest.raises(InvalidArgument):
        await node.browse(Q, after="not-a-cursor")


async def test_a_page_reads_a_bounded_number_of_segments(
    node: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    await node.create_queue(Q)
    for i in range(5):
        await node.send_one(Q, SendRequest(f"m{i}".encode()))
    monkeypatch.setattr(limits, "browse_segments_max", 2)

    first = await node.browse(Q, limit=100)
    seen, _ = await browse_all(node, Q, 100)

    assert len(first.messages) <= 2 and first.next is not None
    assert [v.body for v in seen] == [f"m{i}".encode() for i in range(5)]


async def test_a_dead_letter_shows_the_queue_it_came_from(node: Engine) -> None:
    await node.create_queue(Q, QueueAttrs(max_receive_count=5, dead_letter_queue="graveyard"))
    sent = await node.send_one(Q, SendRequest(b"poison"))
    (d,) = await node.receive(Q, lease_ahead=False)
    assert await node.dead_letter(Q, [d.receipt_handle]) == ["dead"]

    page = await node.browse("graveyard")

    (dead,) = page.messages
    assert dead.id == sent.message_id
    assert dead.dead_letter_source == Q
    assert dead.state == "visible"
    assert dead.receives == 1
    assert (await node.browse(Q)).messages == ()


async def test_browsing_a_missing_queue_says_so(node: Engine) -> None:
    with pytest.raises(QueueDoesNotExist):
        await node.browse("nowhere")


async def test_a_fifo_queue_browses_in_order_with_groups_and_sequence_numbers(
    node: Engine,
) -> None:
    q = "jobs.fifo"
    await node.create_queue(q, QueueAttrs(fifo=True))
    sent = [
        await node.send_one(q, SendRequest(f"m{i}".encode(), group_id=f"g{i % 2}", dedup_id=str(i)))
        for i in range(4)
    ]
    duplicate = await node.send_one(q, SendRequest(b"m0 again", group_id="g0", dedup_id="0"))
    assert duplicate.duplicate
    (leased,) = await node.receive(q, 1, visibility_s=60, lease_ahead=False)

    seen, _ = await browse_all(node, q, 3)

    assert [v.body for v in seen] == [b"m0", b"m1", b"m2", b"m3"]  # the duplicate is not there
    assert [v.group for v in seen] == ["g0", "g1", "g0", "g1"]
    assert [v.sequence_number for v in seen] == [s.sequence_number for s in sent]
    assert [v.state for v in seen if v.id == leased.message.id] == ["in_flight"]
