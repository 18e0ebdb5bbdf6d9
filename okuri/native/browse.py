"""The native API's browse: a page of a queue's items, oldest first, without leasing them.

For an operator (rabbitmqctl's get with requeue, the AWS console's "poll for messages" without
its side effects): the engine reads and commits nothing (`Engine.browse`), so attempts, lease
deadlines and the queue's expiry "last used" mark stay as they were. Allowed to consumer and
admin keys only (okuri/principals/roles.py): item bodies are data a producer or a read-only
key may not see.
"""

from __future__ import annotations

from typing import Any

from okuri import limits
from okuri.engine import Engine, MessageView
from okuri.native import codec
from okuri.native.access import Access
from okuri.native.items import render_payload

# The engine's states in the native API's words (a consumer holds a lease).
_STATES = {"visible": "visible", "in_flight": "leased", "delayed": "delayed"}


class Browse:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def browse(self, access: Access, name: str, query: codec.Obj) -> dict[str, Any]:
        """A page; `query` holds typed values (a number for `limit`)."""
        codec.fields(query, ("limit", "after"), "query")
        access.require("browse", name)
        most = limits.browse_items_max
        limit = codec.integer(query, "limit", 1, most, limits.browse_items_default)
        after = codec.text(query, "after", most=64)
        page = await self.engine.browse(name, after, limit or limits.browse_items_default)
        return {"items": [render(v) for v in page.messages], "next": page.next}


def render(v: MessageView) -> dict[str, Any]:
    out: dict[str, Any] = {"id": v.id, "state": _STATES[v.state]}
    if v.until_ms:
        out["until"] = codec.rfc3339(v.until_ms)
    out["attempts"] = v.receives
    out["enqueued_at"] = codec.rfc3339(v.sent_ms)
    if v.first_receive_ms:
        out["first_leased_at"] = codec.rfc3339(v.first_receive_ms)
    out.update(render_payload(v.body, v.attributes))
    if v.group is not None:
        out["group"] = v.group
    if v.sequence_number is not None:
        out["sequence_number"] = v.sequence_number
    if v.dead_letter_source is not None:
        out["dead_letter_source"] = v.dead_letter_source
    return out
