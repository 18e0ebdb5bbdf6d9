"""A change that writes nothing rests only on a state shown current after it was asked for.

Found by the simulator (issue 28): node 1's compare-and-swap landed, and while its reply was on
the way node 0 read that state, leased a message in it and handed it to a client, who deleted
it through node 1. Node 1's cache, installed when its reply arrived (the same moment the delete
was asked for), was taken as current: the delete found no lease of that epoch ("stale", which
SQS answers as success), wrote nothing, and the message came back after its delete had been
answered. A state is current somewhere between the sending of the request that showed it and
its reply, so what counts is when that request was sent.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from okuri.engine.cas import CasObject, Change
from okuri.errors import QueueDoesNotExist
from okuri.store.memory import MemoryStore
from okuri.store.port import Blob
from tests.unit.test_engine_retry import Doc, DocCodec, RecordingClock


class FrozenClock(RecordingClock):
    """Monotonic time that never moves: everything here happens at one instant, as it can
    within one instant of the simulator's clock, so only the order of requests tells."""

    def monotonic_s(self) -> float:
        return 100.0


class SlowReplies(MemoryStore):
    """A compare-and-swap lands at once, but its reply waits until `reply` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.reply = asyncio.Event()
        self.landed = asyncio.Event()

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        etag = await super().put_if_match(key, data, etag)
        self.landed.set()
        await self.reply.wait()
        return etag


def cell(store: MemoryStore, clock: FrozenClock) -> CasObject[Doc]:
    return CasObject(
        store, clock, "doc", DocCodec(), QueueDoesNotExist, "gone",
        lambda old, new: None, Counter(), "doc",
    )  # fmt: skip


def bump(doc: Doc) -> Change[Doc, int]:
    return Change(Doc(doc.version + 1), doc.version + 1)


def judge(doc: Doc) -> Change[Doc, int]:
    """Writes nothing; its verdict is the version it was judged on."""
    return Change(None, doc.version)


async def test_a_state_replaced_while_its_own_write_reply_travelled_is_read_again() -> None:
    store = SlowReplies()
    await MemoryStore.put_if_absent(store, "doc", DocCodec().encode(Doc(1)))
    clock = FrozenClock()
    one, zero = cell(store, clock), cell(store, clock)
    assert await one.read() == Doc(1)

    writing = asyncio.create_task(one.update(bump, "n1.1"))  # lands v2; its reply waits
    await store.landed.wait()
    store.reply.set()  # node 0's write below goes through at once
    store.landed.clear()
    assert await zero.update(bump, "n0.1") == 3  # read v2, wrote v3: what a client saw
    assert await writing == 2  # node 1's reply arrives now, at the same instant
    assert one.state == Doc(2)

    # Asked for after node 0's write: judged on v3, not on node 1's cached v2.
    assert await one.update(judge, "n1.2") == 3


async def test_a_state_read_after_the_change_was_asked_for_is_trusted_without_another_read() -> (
    None
):
    store = MemoryStore()
    await store.put_if_absent("doc", DocCodec().encode(Doc(1)))
    clock = FrozenClock()
    one = cell(store, clock)
    gets = 0
    get = store.get

    async def counting_get(key: str) -> object:
        nonlocal gets
        gets += 1
        return await get(key)

    store.get = counting_get  # type: ignore[method-assign,assignment]
    assert await one.update(judge, "n1.1", read_first=True) == 1
    assert gets == 1  # its own read: no second one
    assert await one.update(judge, "n1.2", trust_cached_s=1.0) == 1
    assert gets == 1  # within the trusted age (a lease that found nothing)
    assert await one.update(judge, "n1.3") == 1
    assert gets == 2  # anything else that writes nothing reads again


class SlowReads(MemoryStore):
    """A read is served at once, but its reply waits until `reply` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.reply = asyncio.Event()
        self.served = asyncio.Event()

    async def get(self, key: str) -> Blob:
        blob = await super().get(key)
        self.served.set()
        await self.reply.wait()
        return blob


async def test_a_write_answered_after_the_object_was_deleted_here_is_not_cached() -> None:
    """A queue deleted through this node stays deleted in its cache, even when a commit sent
    before the delete is answered after it (a GetQueueUrl trusting that cache answered the URL
    of a queue DeleteQueue had just deleted)."""
    store = SlowReplies()
    await MemoryStore.put_if_absent(store, "doc", DocCodec().encode(Doc(1)))
    one = cell(store, FrozenClock())
    assert await one.read() == Doc(1)
    writing = asyncio.create_task(one.update(bump, "n1.1"))  # lands v2; its reply waits
    await store.landed.wait()
    await store.delete("doc")
    one.forget()
    store.reply.set()
    assert await writing == 2  # it landed before the delete: its answer stands
    assert one.state is None
    with pytest.raises(QueueDoesNotExist):
        await one.cached()


async def test_a_read_answered_after_the_object_was_deleted_here_reads_as_missing() -> None:
    store = SlowReads()
    await MemoryStore.put_if_absent(store, "doc", DocCodec().encode(Doc(1)))
    one = cell(store, FrozenClock())
    reading = asyncio.create_task(one.read())  # served v1; its reply waits
    await store.served.wait()
    await store.delete("doc")
    one.forget()
    store.reply.set()
    with pytest.raises(QueueDoesNotExist):
        await reading
    assert one.state is None
