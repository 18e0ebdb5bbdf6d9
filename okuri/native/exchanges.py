"""The native API's exchange operations: declare, get, list, delete, bind, unbind, publish.

An exchange routes what is published to it to the queues bound to it (`direct`, `topic`,
`fanout`; okuri/core/exchanges.py has the rules). A publish takes exactly the items of a
produce (okuri/native/items.py) and produces them to every queue it reaches, each once; a
queue's own rules (FIFO, size) apply there as for a produce to it.

Namespaces: the exchange's name must lie in the key's namespace, and a bind or unbind's queue
too, so a key can only route into queues of its own namespace. A publish is refused whole (403,
nothing sent) when the routing key reaches a queue the key may not produce to, whoever bound it:
an admin of every queue may bind a namespace's exchange to any queue, and the namespace, not the
binding, is the security boundary. Refusing whole rather than skipping that queue keeps a
publish's meaning ("every bound queue gets it") and names the binding to fix.
"""

from __future__ import annotations

from typing import Any

from okuri import limits
from okuri.clock import Clock
from okuri.engine import (
    Binding,
    Engine,
    ExchangeState,
    QueueView,
    SendRequest,
    validate_exchange_name,
    validate_routing_key,
    validate_type,
)
from okuri.errors import InvalidArgument
from okuri.native import codec
from okuri.native.access import Access
from okuri.native.errors import bad_request
from okuri.native.items import read_item
from okuri.native.messages import produced, refuse_oversize, sends_for
from okuri.native.queues import list_limit, queue_name


def exchange_name(name: object, field: str = "name") -> str:
    try:
        return validate_exchange_name(name)
    except InvalidArgument:
        raise bad_request(
            f"{field!r} must be an exchange name: 1 to {limits.exchange_name_chars_max} "
            "letters, digits, '-' or '_'.",
            "invalid_exchange_name",
        ) from None


def _routing_key(doc: codec.Obj) -> str:
    key = doc.get("routing_key", "")
    try:
        return validate_routing_key(key)
    except InvalidArgument as err:
        code = "wrong_type" if not isinstance(key, str) else "out_of_range"
        raise bad_request(str(err), code) from None


def render(st: ExchangeState) -> dict[str, Any]:
    """The exchange itself, not wrapped: one resource answers as itself, as a queue does."""
    return {
        "name": st.name,
        "type": st.type,
        "bindings": [{"queue": b.queue, "routing_key": b.routing_key} for b in st.bindings],
        "created_at": codec.rfc3339(st.created_ms),
    }


class Exchanges:
    def __init__(self, engine: Engine, clock: Clock) -> None:
        self.engine = engine
        self.clock = clock

    async def create(self, access: Access, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("name", "type"))
        name = exchange_name(doc.get("name"))
        if doc.get("type") is None:
            raise bad_request("'type' is required: direct, topic or fanout.", "missing_field")
        try:
            kind = validate_type(doc["type"])
        except InvalidArgument as err:
            code = "wrong_type" if not isinstance(doc["type"], str) else "invalid_argument"
            raise bad_request(str(err), code) from None
        access.require("create_exchange", name, "Exchange")
        return render(await self.engine.exchanges.declare(name, kind))

    async def get(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        access.require("get_exchange", name, "Exchange")
        return render(await self.engine.exchanges.get(name))

    async def list(self, access: Access, query: codec.Obj) -> dict[str, Any]:
        codec.fields(query, ("prefix", "limit", "after"), "query")
        prefix = codec.text(query, "prefix", most=limits.exchange_name_chars_max) or ""
        after = codec.text(query, "after", most=limits.exchange_name_chars_max) or ""
        limit = list_limit(query)
        access.require("list_exchanges", prefix, "Exchange")
        prefix = access.namespace_prefix(prefix)
        names = await self.engine.exchanges.names(prefix, limit + 1, after)
        page = names[:limit]
        return {"exchanges": page, "next": page[-1] if len(names) > limit else None}

    async def delete(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        access.require("delete_exchange", name, "Exchange")
        await self.engine.exchanges.delete(name)
        return {}

    async def bind(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        binding = self._binding(access, "bind", name, doc)
        return render(await self.engine.exchanges.bind(name, binding))

    async def unbind(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        binding = self._binding(access, "unbind", name, doc)
        return render(await self.engine.exchanges.unbind(name, binding))

    def _binding(self, access: Access, op: Any, name: str, doc: codec.Obj) -> Binding:
        codec.fields(doc, ("queue", "routing_key"))
        if doc.get("queue") is None:
            raise bad_request("'queue' is required.", "missing_field")
        queue = queue_name(doc["queue"], "queue")
        key = _routing_key(doc)
        access.require(op, name, "Exchange")
        access.require(op, queue)
        return Binding(queue, key)

    async def publish(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("routing_key", "items"))
        key = _routing_key(doc)
        access.require("publish", name, "Exchange")
        entries = codec.items(doc, "items", limits.native_items_max)
        now_ms = self.clock.now_ms()
        items = [read_item(e, i, now_ms) for i, e in enumerate(entries)]
        # Refused whether or not the key reaches a queue (each queue's own bound is checked there).
        refuse_oversize(items, limits.message_bytes_max)
        fifo: dict[str, bool] = {}

        def requests_for(queue: str, st: QueueView) -> list[SendRequest]:
            access.require_route(name, queue)  # before anything is sent to any queue
            fifo[queue] = st.attrs.fifo
            return sends_for(items, queue, st.attrs)

        routed = await self.engine.exchanges.publish(name, key, requests_for)
        return {
            "routed": [
                {"queue": r.queue, **produced(r.results, fifo[r.queue], whole=False)}
                for r in routed
            ]
        }
