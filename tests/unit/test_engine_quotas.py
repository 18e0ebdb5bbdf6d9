"""The operator's quotas in the engine (okuri/engine/quotas.py): queues in all and per key
namespace, counted from the bucket so they hold across nodes, and the bytes of a queue's
stored attributes. Real time on the in-memory store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from okuri.clock import SystemClock
from okuri.core.state import QueueAttrs
from okuri.engine import Engine, Quotas
from okuri.errors import QuotaExceeded
from okuri.store.memory import MemoryStore

MakeNode = Callable[[Quotas], Engine]


@pytest.fixture
async def make_node() -> AsyncIterator[MakeNode]:
    """Nodes on one shared bucket, each with the quotas given."""
    store = MemoryStore()
    made: list[Engine] = []

    def make(quotas: Quotas) -> Engine:
        engine = Engine(store, SystemClock(), linger_ms=0, quotas=quotas)
        made.append(engine)
        return engine

    yield make
    for engine in made:
        await engine.close()


async def test_a_namespace_and_the_whole_region_hold_no_more_queues_than_their_bounds(
    make_node: MakeNode,
) -> None:
    node = make_node(Quotas(queues_max=4, namespace_queues_max=2))
    await node.create_queue("team-a", namespace="team-")
    await node.create_queue("team-b", namespace="team-")
    with pytest.raises(QuotaExceeded) as caught:
        await node.create_queue("team-c", namespace="team-")
    assert caught.value.quota == "namespace_queues"
    assert "'team-c'" in str(caught.value) and "'team-'" in str(caught.value)
    # Re-declaring a queue that exists is never refused, nor counted.
    await node.create_queue("team-a", namespace="team-")
    # A key of every queue counts them all: two more fit, then none, whatever the namespace.
    await node.create_queue("other-a", namespace="")
    await node.create_queue("ops-a", namespace="ops-")
    for name, namespace in (("other-b", ""), ("ops-b", "ops-")):
        with pytest.raises(QuotaExceeded) as caught:
            await node.create_queue(name, namespace=namespace)
        assert caught.value.quota == "queues"
    assert await node.list_queues() == ["ops-a", "other-a", "team-a", "team-b"]
    # Room again once a queue is deleted.
    await node.delete_queue("team-b")
    await node.create_queue("team-c", namespace="team-")


async def test_a_queue_the_engine_creates_itself_is_never_refused(make_node: MakeNode) -> None:
    """A dead-letter queue made on first use: the message must have somewhere to go."""
    node = make_node(Quotas(queues_max=1, namespace_queues_max=1))
    await node.create_queue("team-a", namespace="team-")
    await node.ensure_queue("team-a-dlq")
    assert await node.list_queues() == ["team-a", "team-a-dlq"]


async def test_concurrent_creates_on_one_node_never_pass_the_bound(make_node: MakeNode) -> None:
    node = make_node(Quotas(queues_max=5))
    got = await asyncio.gather(
        *(node.create_queue(f"q-{i:02}", namespace="") for i in range(12)), return_exceptions=True
    )
    assert sum(isinstance(r, QuotaExceeded) for r in got) == 7
    assert len(await node.list_queues()) == 5


async def test_concurrent_creates_on_several_nodes_pass_the_bound_by_one_per_other_node_at_most(
    make_node: MakeNode,
) -> None:
    nodes = [make_node(Quotas(queues_max=5)) for _ in range(3)]
    creates = [
        node.create_queue(f"n{n}-q-{i:02}", namespace="")
        for i in range(10)
        for n, node in enumerate(nodes)
    ]
    got = await asyncio.gather(*creates, return_exceptions=True)
    assert all(isinstance(r, QuotaExceeded) for r in got if isinstance(r, BaseException))
    assert 5 <= len(await nodes[0].list_queues()) <= 5 + len(nodes) - 1


def _tagged(n: int, value_chars: int = 100) -> QueueAttrs:
    return QueueAttrs(extra={f"tag:k{i}": "v" * value_chars for i in range(n)})


async def test_stored_attributes_past_their_bound_are_refused_but_may_always_shrink(
    make_node: MakeNode,
) -> None:
    node = make_node(Quotas(queue_attributes_bytes_max=1024))
    assert _tagged(9).extra_bytes() == 9 * (6 + 100)
    await node.create_queue("fits", _tagged(9), namespace="")
    with pytest.raises(QuotaExceeded) as caught:
        await node.create_queue("too-big", _tagged(10), namespace="")
    assert caught.value.quota == "queue_attributes_bytes"
    assert await node.list_queues() == ["fits"]
    with pytest.raises(QuotaExceeded):
        await node.update_attributes("fits", lambda a: _tagged(10))
    with pytest.raises(QuotaExceeded):
        await node.set_attributes("fits", _tagged(10))

    # A queue over a bound lowered later keeps what it has and may shed it, never grow.
    lower = make_node(Quotas(queue_attributes_bytes_max=1024 - 500))
    with pytest.raises(QuotaExceeded):
        await lower.update_attributes("fits", lambda a: _tagged(9, 101))
    shrunk = await lower.update_attributes("fits", lambda a: _tagged(8))
    assert shrunk.attrs.extra_bytes() == 8 * 106
