"""`AsyncClient`: okuri's native API from asyncio code, method for method as `Client`.

Every method is one line over okuri/client/operations.py, as in okuri/client/sync.py; this
shell only awaits the send, and waits between tries as okuri/client/retries.py decides. It
sleeps with `asyncio.sleep` and draws jitter from `random`, not okuri.clock: a client runs in
its users' processes, outside the server's simulated time (pyproject's ruff exemption says so).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from types import TracebackType
from typing import TypeVar

import httpx

from okuri.client import operations as ops
from okuri.client.errors import OkuriClientError
from okuri.client.http import TIMEOUT_S, AsyncHttpTransport
from okuri.client.models import (
    BrowsePage,
    Exchange,
    ExchangePage,
    LeasedItem,
    Queue,
    QueuePage,
)
from okuri.client.operations import UNSET, Handles, Items, Unset
from okuri.client.retries import RetryPolicy, next_wait_s
from okuri.client.transport import AsyncTransport, is_grpc_url

T = TypeVar("T")


def _transport(
    url: str, key: str | None, timeout_s: float, http: httpx.AsyncClient | None
) -> AsyncTransport:
    """The transport a URL names: gRPC for grpc:// and grpcs://, else HTTP/JSON."""
    if not is_grpc_url(url):
        return AsyncHttpTransport(url, key, timeout_s=timeout_s, http=http)
    if http is not None:
        raise ValueError(
            "http= is for an http(s):// URL; for gRPC pass transport=AsyncGrpcTransport"
        )
    from okuri.client.grpc import AsyncGrpcTransport  # grpc is loaded only by those who speak it

    return AsyncGrpcTransport(url, key, timeout_s=timeout_s)


class AsyncClient:
    """A client of one okuri server's native API, for asyncio; its arguments are `Client`'s
    (an http://, https://, grpc:// or grpcs:// URL), with an httpx.AsyncClient for `http`, an
    `AsyncTransport` (such as `AsyncGrpcTransport`) for `transport` and a coroutine function for
    `sleep`. Use it as an async context manager, or `await aclose()`."""

    def __init__(
        self,
        url: str = "",
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        retries: RetryPolicy | None = None,
        transport: AsyncTransport | None = None,
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.retries = retries or RetryPolicy()
        self._transport = transport or _transport(url, key, timeout_s, http)
        self._sleep = sleep
        self._rng = random.Random()

    async def _run(self, call: ops.Call[T]) -> T:
        tries = 0
        while True:
            tries += 1
            try:
                return call.parse(await self._transport.send(call.request))
            except OkuriClientError as err:
                wait_s = next_wait_s(
                    self.retries, call.request.operation, err, tries, self._rng.random()
                )
                if wait_s is None:
                    raise
            await self._sleep(wait_s)

    # --- queues ------------------------------------------------------------------------------

    async def create_queue(
        self,
        name: str,
        *,
        lease_timeout_s: int | Unset = UNSET,
        max_attempts: int | Unset | None = UNSET,
        dead_letter_queue: str | Unset | None = UNSET,
        retention_s: int | Unset = UNSET,
        delay_s: int | Unset = UNSET,
        content_based_dedup: bool | Unset = UNSET,
        expires_s: int | Unset | None = UNSET,
    ) -> Queue:
        """Create a queue; attributes not given take the server's defaults. Creating it again
        with the same attributes answers the same queue; with others, ConflictError. A name
        ending in .fifo makes a FIFO queue (`content_based_dedup` is for those only)."""
        attrs = ops.attributes(
            lease_timeout_s,
            max_attempts,
            dead_letter_queue,
            retention_s,
            delay_s,
            content_based_dedup,
            expires_s,
        )
        return await self._run(ops.create_queue(name, attrs))

    async def get_queue(self, name: str) -> Queue:
        """The queue's attributes and live counts."""
        return await self._run(ops.get_queue(name))

    async def update_queue(
        self,
        name: str,
        *,
        lease_timeout_s: int | Unset = UNSET,
        max_attempts: int | Unset | None = UNSET,
        dead_letter_queue: str | Unset | None = UNSET,
        retention_s: int | Unset = UNSET,
        delay_s: int | Unset = UNSET,
        content_based_dedup: bool | Unset = UNSET,
        expires_s: int | Unset | None = UNSET,
    ) -> Queue:
        """Change the attributes given (None clears max_attempts or dead_letter_queue)."""
        attrs = ops.attributes(
            lease_timeout_s,
            max_attempts,
            dead_letter_queue,
            retention_s,
            delay_s,
            content_based_dedup,
            expires_s,
        )
        return await self._run(ops.update_queue(name, attrs))

    async def list_queues(
        self, prefix: str = "", *, limit: int | None = None, after: str | None = None
    ) -> QueuePage:
        """One page of queue names starting with `prefix`, after `after` (a page's `next`)."""
        return await self._run(ops.list_queues(prefix, limit, after))

    async def iter_queues(
        self, prefix: str = "", *, page_size: int | None = None
    ) -> AsyncIterator[str]:
        """Every queue name starting with `prefix`, fetching pages as needed."""
        after: str | None = None
        while True:
            page = await self.list_queues(prefix, limit=page_size, after=after)
            for name in page.queues:
                yield name
            after = ops.next_after(page, after)
            if after is None:
                return

    async def delete_queue(self, name: str) -> None:
        await self._run(ops.delete_queue(name))

    async def purge_queue(self, name: str) -> None:
        """Delete every item of the queue."""
        await self._run(ops.purge_queue(name))

    # --- messages ----------------------------------------------------------------------------

    async def produce(self, queue: str, items: Items) -> list[str]:
        """Enqueue `items` (bytes, str or `Item`; or one of them) in order; their ids, in order.
        Raises PartialProduceError (with the ids) when the server refused some of them."""
        return await self._run(ops.produce(queue, items))

    async def lease(
        self,
        queue: str,
        max_items: int = 1,
        *,
        lease_s: int | None = None,
        request_timeout_s: int = 0,
    ) -> list[LeasedItem]:
        """Lease up to `max_items` for `lease_s` (default: the queue's lease_timeout_s), waiting
        up to `request_timeout_s` for the first; possibly none."""
        return await self._run(ops.lease(queue, max_items, lease_s, request_timeout_s))

    async def complete(self, queue: str, handles: Handles) -> list[str]:
        """Finish leased items (handles, or the items); an outcome per handle, in order:
        "completed", or "stale", "gone" (finished already), "invalid"."""
        return await self._run(ops.complete(queue, handles))

    async def retry(
        self, queue: str, handles: Handles, *, at: datetime | None = None, dead: bool = False
    ) -> list[str]:
        """Make leased items visible again now, or `at` a time, or (`dead=True`) move them to
        the dead-letter queue now; an outcome per handle: "retried" / "dead", or as complete."""
        return await self._run(ops.retry(queue, handles, at, dead))

    async def extend(self, queue: str, handles: Handles, lease_s: int) -> list[str]:
        """Make leases end `lease_s` from now; an outcome per handle: "extended", or as
        complete."""
        return await self._run(ops.extend(queue, handles, lease_s))

    async def redrive(
        self, queue: str, *, target: str | None = None, max_items: int | None = None
    ) -> int:
        """Move dead-letter queue `queue`'s items back to `target`, else each to the queue it
        came from; how many moved."""
        return await self._run(ops.redrive(queue, target, max_items))

    async def browse(
        self, queue: str, *, limit: int | None = None, after: str | None = None
    ) -> BrowsePage:
        """A page of `queue`'s items, oldest first (visible, leased and delayed), without
        leasing them or changing any count; pass the page's `next` as `after` for the next.
        For admin and consumer keys."""
        return await self._run(ops.browse(queue, limit, after))

    # --- exchanges ---------------------------------------------------------------------------

    async def create_exchange(self, name: str, type: str) -> Exchange:
        """Declare exchange `name` of `type` ("direct", "topic" or "fanout"); declaring it
        again with the same type answers it, with another raises ConflictError."""
        return await self._run(ops.create_exchange(name, type))

    async def get_exchange(self, name: str) -> Exchange:
        """The exchange and its bindings (NotFoundError when it does not exist)."""
        return await self._run(ops.get_exchange(name))

    async def list_exchanges(
        self, prefix: str = "", limit: int | None = None, after: str | None = None
    ) -> ExchangePage:
        """One page of exchange names starting with `prefix`, after `after` (a page's
        `next`)."""
        return await self._run(ops.list_exchanges(prefix, limit, after))

    async def delete_exchange(self, name: str) -> None:
        """Delete the exchange (its queues stay)."""
        await self._run(ops.delete_exchange(name))

    async def bind(self, exchange: str, queue: str, routing_key: str = "") -> Exchange:
        """Bind `queue` (which must exist) to `exchange` under `routing_key`; binding it again
        changes nothing."""
        return await self._run(ops.bind(exchange, queue, routing_key))

    async def unbind(self, exchange: str, queue: str, routing_key: str = "") -> Exchange:
        """Remove that binding (one that is not there changes nothing)."""
        return await self._run(ops.unbind(exchange, queue, routing_key))

    async def publish(self, exchange: str, routing_key: str, items: Items) -> dict[str, list[str]]:
        """Produce `items` to every queue `routing_key` reaches through `exchange`, each queue
        once: queue name -> the items' ids there, in the server's order (empty: none reached).
        Raises PartialProduceError when a queue refused some of them."""
        return await self._run(ops.publish(exchange, routing_key, items))

    # --- lifetime ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
