"""`Client`: okuri's native API from blocking code.

Every method is one line over okuri/client/operations.py (what to send, how to read the
answer); this shell only sends, and waits between tries as okuri/client/retries.py decides.
It sleeps with `time.sleep` and draws jitter from `random`, not okuri.clock: a client runs in
its users' processes, outside the server's simulated time (pyproject's ruff exemption says so).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from types import TracebackType
from typing import TypeVar

import httpx

from okuri.client import operations as ops
from okuri.client.errors import OkuriClientError
from okuri.client.http import TIMEOUT_S, HttpTransport
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
from okuri.client.stdlib_http import StdlibHttpTransport, proxied
from okuri.client.transport import Transport, is_grpc_url

T = TypeVar("T")


def _transport(url: str, key: str | None, timeout_s: float, http: httpx.Client | None) -> Transport:
    """The transport a URL names: gRPC for grpc:// and grpcs://, else HTTP/JSON: through
    `http.client` (the least CPU per call), or httpx when given one or a proxy is configured."""
    if not is_grpc_url(url):
        if http is None and not proxied(url):
            return StdlibHttpTransport(url, key, timeout_s=timeout_s)
        return HttpTransport(url, key, timeout_s=timeout_s, http=http)
    if http is not None:
        raise ValueError("http= is for an http(s):// URL; for gRPC pass transport=GrpcTransport")
    from okuri.client.grpc import GrpcTransport  # grpc is loaded only by those who speak it

    return GrpcTransport(url, key, timeout_s=timeout_s)


class Client:
    """A client of one okuri server's native API.

    `Client("http://localhost:8080", key)` talks HTTP/JSON with the bearer `key`;
    `Client("grpc://localhost:8080", key)` the same operations over gRPC (`grpcs://` with TLS),
    with the same answers and errors; any transport plugs in as `transport=` (a `GrpcTransport`
    for a channel of your own). `timeout_s` bounds each request (a long poll's wait added);
    `retries` bounds and paces tries (see okuri/client/retries.py for what is retried and why);
    `http` is an httpx.Client to send HTTP through (left open on close); `sleep` is how the
    client waits between tries. Errors are `OkuriClientError`s. Use it as a context manager,
    or `close()` it.
    """

    def __init__(
        self,
        url: str = "",
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        retries: RetryPolicy | None = None,
        transport: Transport | None = None,
        http: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retries = retries or RetryPolicy()
        self._transport = transport or _transport(url, key, timeout_s, http)
        self._sleep = sleep
        self._rng = random.Random()

    def _run(self, call: ops.Call[T]) -> T:
        tries = 0
        while True:
            tries += 1
            try:
                return call.parse(self._transport.send(call.request))
            except OkuriClientError as err:
                wait_s = next_wait_s(
                    self.retries, call.request.operation, err, tries, self._rng.random()
                )
                if wait_s is None:
                    raise
            self._sleep(wait_s)

    # --- queues ------------------------------------------------------------------------------

    def create_queue(
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
        return self._run(ops.create_queue(name, attrs))

    def get_queue(self, name: str) -> Queue:
        """The queue's attributes and live counts."""
        return self._run(ops.get_queue(name))

    def update_queue(
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
        return self._run(ops.update_queue(name, attrs))

    def list_queues(
        self, prefix: str = "", *, limit: int | None = None, after: str | None = None
    ) -> QueuePage:
        """One page of queue names starting with `prefix`, after `after` (a page's `next`)."""
        return self._run(ops.list_queues(prefix, limit, after))

    def iter_queues(self, prefix: str = "", *, page_size: int | None = None) -> Iterator[str]:
        """Every queue name starting with `prefix`, fetching pages as needed."""
        after: str | None = None
        while True:
            page = self.list_queues(prefix, limit=page_size, after=after)
            yield from page.queues
            after = ops.next_after(page, after)
            if after is None:
                return

    def delete_queue(self, name: str) -> None:
        self._run(ops.delete_queue(name))

    def purge_queue(self, name: str) -> None:
        """Delete every item of the queue."""
        self._run(ops.purge_queue(name))

    # --- messages ----------------------------------------------------------------------------

    def produce(self, queue: str, items: Items) -> list[str]:
        """Enqueue `items` (bytes, str or `Item`; or one of them) in order; their ids, in order.
        Raises PartialProduceError (with the ids) when the server refused some of them."""
        return self._run(ops.produce(queue, items))

    def lease(
        self,
        queue: str,
        max_items: int = 1,
        *,
        lease_s: int | None = None,
        request_timeout_s: int = 0,
    ) -> list[LeasedItem]:
        """Lease up to `max_items` for `lease_s` (default: the queue's lease_timeout_s), waiting
        up to `request_timeout_s` for the first; possibly none."""
        return self._run(ops.lease(queue, max_items, lease_s, request_timeout_s))

    def complete(self, queue: str, handles: Handles) -> list[str]:
        """Finish leased items (handles, or the items); an outcome per handle, in order:
        "completed", or "stale", "gone" (finished already), "invalid"."""
        return self._run(ops.complete(queue, handles))

    def retry(
        self, queue: str, handles: Handles, *, at: datetime | None = None, dead: bool = False
    ) -> list[str]:
        """Make leased items visible again now, or `at` a time, or (`dead=True`) move them to
        the dead-letter queue now; an outcome per handle: "retried" / "dead", or as complete."""
        return self._run(ops.retry(queue, handles, at, dead))

    def extend(self, queue: str, handles: Handles, lease_s: int) -> list[str]:
        """Make leases end `lease_s` from now; an outcome per handle: "extended", or as
        complete."""
        return self._run(ops.extend(queue, handles, lease_s))

    def redrive(
        self, queue: str, *, target: str | None = None, max_items: int | None = None
    ) -> int:
        """Move dead-letter queue `queue`'s items back to `target`, else each to the queue it
        came from; how many moved."""
        return self._run(ops.redrive(queue, target, max_items))

    def browse(
        self, queue: str, *, limit: int | None = None, after: str | None = None
    ) -> BrowsePage:
        """A page of `queue`'s items, oldest first (visible, leased and delayed), without
        leasing them or changing any count; pass the page's `next` as `after` for the next.
        For admin and consumer keys."""
        return self._run(ops.browse(queue, limit, after))

    # --- exchanges ---------------------------------------------------------------------------

    def create_exchange(self, name: str, type: str) -> Exchange:
        """Declare exchange `name` of `type` ("direct", "topic" or "fanout"); declaring it
        again with the same type answers it, with another raises ConflictError."""
        return self._run(ops.create_exchange(name, type))

    def get_exchange(self, name: str) -> Exchange:
        """The exchange and its bindings (NotFoundError when it does not exist)."""
        return self._run(ops.get_exchange(name))

    def list_exchanges(
        self, prefix: str = "", limit: int | None = None, after: str | None = None
    ) -> ExchangePage:
        """One page of exchange names starting with `prefix`, after `after` (a page's
        `next`)."""
        return self._run(ops.list_exchanges(prefix, limit, after))

    def delete_exchange(self, name: str) -> None:
        """Delete the exchange (its queues stay)."""
        self._run(ops.delete_exchange(name))

    def bind(self, exchange: str, queue: str, routing_key: str = "") -> Exchange:
        """Bind `queue` (which must exist) to `exchange` under `routing_key`; binding it again
        changes nothing."""
        return self._run(ops.bind(exchange, queue, routing_key))

    def unbind(self, exchange: str, queue: str, routing_key: str = "") -> Exchange:
        """Remove that binding (one that is not there changes nothing)."""
        return self._run(ops.unbind(exchange, queue, routing_key))

    def publish(self, exchange: str, routing_key: str, items: Items) -> dict[str, list[str]]:
        """Produce `items` to every queue `routing_key` reaches through `exchange`, each queue
        once: queue name -> the items' ids there, in the server's order (empty: none reached).
        Raises PartialProduceError when a queue refused some of them."""
        return self._run(ops.publish(exchange, routing_key, items))

    # --- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
