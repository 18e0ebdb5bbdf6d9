"""kombu's exchanges as okuri's: declared, bound and published to on the server, so that every
process sees the same bindings (Celery's remote control and events need this: a worker binds its
pidbox queue, `celery inspect` in another process publishes to the fanout exchange).

| kombu | okuri native API |
| --- | --- |
| `exchange_declare` (direct, topic, fanout) | create the exchange; `headers` is refused |
| `queue_bind`, `queue_unbind` | bind, unbind |
| `basic_publish` to a named exchange | publish: one request; okuri routes |
| `exchange_delete` | delete the exchange (its queues stay) |

Exchange names are translated as queue names are (okuri_kombu/names.py). okuri routes a publish
to every matching bound queue, each once. kombu's default exchange ("") is no okuri exchange: a
message to it is produced to the queue its routing key names, as before.

A key without the right to create exchanges (okuri's producer and consumer roles) uses one that
exists. A **direct** exchange such a key cannot find on okuri stays kombu's own, kept in the
process (as in kombu's other virtual transports): a publish routes wherever the process bound
its queues, which kombu's `Producer(declare=[queue])`, `SimpleQueue` and Celery do. A topic or
fanout exchange it cannot find is refused (ForbiddenError), as it could route nowhere useful.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from okuri.client import Client, ForbiddenError, Item, NotFoundError

from .names import okuri_exchange_name

logger = logging.getLogger("okuri_kombu.exchanges")

EXCHANGE_TYPES = ("direct", "topic", "fanout")


class ExchangeTypeError(ValueError):
    """An exchange type okuri:// does not route (kombu's `headers`)."""


class Exchanges:
    """The exchanges one connection declared: which are okuri's, which are kept in-process."""

    def __init__(self, client: Callable[[], Client], prefix: str = "") -> None:
        self._client = client
        self._prefix = prefix
        self._local: set[str] = set()  # direct exchanges this key could neither make nor find

    def okuri_name(self, exchange: str) -> str | None:
        """The okuri exchange of kombu exchange `exchange`; None when it is kept in-process."""
        if exchange in self._local:
            return None
        return okuri_exchange_name(exchange, self._prefix)

    def declare(self, exchange: str, type: str, passive: bool = False) -> None:
        if type not in EXCHANGE_TYPES:
            raise ExchangeTypeError(
                f"Exchange {exchange!r} is a {type!r} exchange: okuri:// routes direct, topic "
                f"and fanout exchanges only."
            )
        name = okuri_exchange_name(exchange, self._prefix)
        okuri = self._client()
        if passive:
            okuri.get_exchange(name)  # NotFoundError: kombu's passive declare of a missing one
            return
        try:
            okuri.create_exchange(name, type)
        except ForbiddenError as refused:
            try:
                okuri.get_exchange(name)
            except NotFoundError:
                if type != "direct":
                    raise refused from None
                self._local.add(exchange)
                return
        self._local.discard(exchange)

    def bind(self, exchange: str, queue: str, routing_key: str) -> None:
        """Bind okuri queue `queue` on okuri (nothing for an exchange kept in-process)."""
        name = self.okuri_name(exchange)
        if name is None:
            return
        okuri = self._client()
        try:
            okuri.bind(name, queue, routing_key)
        except ForbiddenError as refused:
            # A producer key may not bind; it may use a binding that exists.
            bindings = okuri.get_exchange(name).bindings
            if not any(b.queue == queue and b.routing_key == routing_key for b in bindings):
                raise refused from None

    def unbind(self, exchange: str, queue: str, routing_key: str) -> None:
        name = self.okuri_name(exchange)
        if name is None:
            return
        with contextlib.suppress(NotFoundError):  # the exchange is gone, its bindings with it
            self._client().unbind(name, queue, routing_key)

    def publish(self, exchange: str, routing_key: str, text: str) -> dict[str, list[str]] | None:
        """Publish one message through the okuri exchange of `exchange`: the queues okuri
        routed it to (none: it matched no binding and is dropped, as kombu's virtual
        transports drop an unroutable message; so is one to a missing exchange); None when the
        exchange is kept in-process (the caller routes it)."""
        name = self.okuri_name(exchange)
        if name is None:
            return None
        try:
            return self._client().publish(name, routing_key, [Item(text)])
        except NotFoundError:
            logger.debug("okuri: exchange %s does not exist; message dropped", name)
            return {}

    def delete(self, exchange: str) -> None:
        name = self.okuri_name(exchange)
        self._local.discard(exchange)
        if name is None:
            return
        with contextlib.suppress(NotFoundError):
            self._client().delete_exchange(name)

    def clear(self) -> None:
        self._local.clear()
