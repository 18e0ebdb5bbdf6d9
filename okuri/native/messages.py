"""The native API's message operations: produce, lease, complete, retry, extend, redrive.

Leases are the engine's receives: a lease handle is an SQS receipt handle, the lease timeout is
the visibility timeout, attempts are the receive count. So an item produced here is an SQS
message (a UTF-8 payload is its Body, headers are String message attributes) and the other
way round, and maxReceiveCount dead-letters the same way on both surfaces. On a FIFO queue an
item's `group` is its MessageGroupId and its `dedup_id` its MessageDeduplicationId, in one id
space with SQS's (okuri/native/sends.py).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence
from typing import Any

from okuri import limits
from okuri.clock import Clock
from okuri.engine import Delivery, Engine, Gate, QueueAttrs, SendRequest, SendResult
from okuri.errors import OkuriError, ReceiptHandleInvalid
from okuri.native import codec
from okuri.native.access import Access
from okuri.native.errors import NativeError, bad_request, from_okuri
from okuri.native.items import Item, read_item, render_payload
from okuri.native.queues import queue_name
from okuri.native.sends import fifo_send, standard_send


class Messages:
    def __init__(self, engine: Engine, clock: Clock, gate: Gate | None = None) -> None:
        """`gate` admits each lease that may wait (None: no bound)."""
        self.engine = engine
        self.clock = clock
        self.gate = gate

    # --- produce ---------------------------------------------------------------------------

    async def produce(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("items",))
        access.require("produce", name)
        entries = codec.items(doc, "items", limits.native_items_max)
        now_ms = self.clock.now_ms()
        items = [read_item(e, i, now_ms) for i, e in enumerate(entries)]
        attrs = (await self.engine.cached_queue(name)).attrs
        results = await self.engine.send(name, sends_for(items, name, attrs))
        return produced(results, attrs.fifo)

    # --- lease -----------------------------------------------------------------------------

    async def lease(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("max_items", "lease_s", "request_timeout_s"))
        access.require("lease", name)
        most = codec.integer(doc, "max_items", 1, limits.native_items_max, 1) or 1
        lease_s = codec.integer(doc, "lease_s", 1, limits.visibility_s_max)
        wait_s = codec.integer(doc, "request_timeout_s", 0, limits.wait_s_max, 0) or 0
        if lease_s is None:
            lease_s = (await self.engine.cached_queue(name)).attrs.visibility_timeout_s
        started_ms = self.clock.now_ms()
        waiting = self.gate.enter("long_poll") if self.gate and wait_s > 0 else None
        with waiting or contextlib.nullcontext():
            got = await self.engine.receive(name, most, lease_s, wait_s)
        # A lower bound: the engine's lease starts when its commit lands, after this.
        deadline = codec.rfc3339(started_ms + lease_s * 1000)
        return {"items": [_render(d, deadline) for d in got]}

    # --- finishing -------------------------------------------------------------------------

    async def complete(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("handles",))
        access.require("complete", name)
        handles = [
            _handle(h, i)
            for i, h in enumerate(codec.items(doc, "handles", limits.native_items_max))
        ]
        results = await self.engine.ack(name, handles)
        return {"results": [_status(r, "completed") for r in results]}

    async def extend(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("handles", "lease_s"))
        access.require("extend", name)
        handles = [
            _handle(h, i)
            for i, h in enumerate(codec.items(doc, "handles", limits.native_items_max))
        ]
        lease_s = codec.integer(doc, "lease_s", 1, limits.visibility_s_max)
        if lease_s is None:
            raise bad_request("'lease_s' is required.", "missing_field")
        results = await self.engine.change_visibility(name, [(h, lease_s) for h in handles])
        return {"results": [_status(r, "extended") for r in results]}

    async def retry(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("items",))
        access.require("retry", name)
        entries = codec.items(doc, "items", limits.native_items_max)
        now_ms = self.clock.now_ms()
        later: list[tuple[int, str, int]] = []
        dead: list[tuple[int, str]] = []
        for i, entry in enumerate(entries):
            where = f"items[{i}]"
            if not isinstance(entry, dict):
                raise bad_request(f"{where} must be an object.", "wrong_type")
            codec.fields(entry, ("handle", "retry_at", "dead"), where)
            handle = _handle(entry.get("handle"), i)
            at_ms = codec.timestamp_ms(entry, "retry_at")
            if codec.flag(entry, "dead"):
                if at_ms is not None:
                    raise bad_request(f"{where}: 'dead' and 'retry_at' exclude each other.")
                dead.append((i, handle))
                continue
            delay_s = 0 if at_ms is None else max(0, math.ceil((at_ms - now_ms) / 1000))
            if delay_s > limits.visibility_s_max:
                raise bad_request(
                    f"{where}: retry_at is {delay_s} s away; at most {limits.visibility_s_max} s "
                    f"({limits.visibility_s_max // 3600} hours) ahead.",
                    "out_of_range",
                )
            later.append((i, handle, delay_s))
        out: list[str] = [""] * len(entries)
        if later:
            done = await self.engine.change_visibility(name, [(h, s) for _, h, s in later])
            for (i, _, _), r in zip(later, done, strict=True):
                out[i] = _status(r, "retried")
        if dead:
            moved = await self.engine.dead_letter(name, [h for _, h in dead])
            for (i, _), m in zip(dead, moved, strict=True):
                out[i] = _status(m, "dead")
        return {"results": out}

    # --- redrive ---------------------------------------------------------------------------

    async def redrive(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("target", "max_items"))
        access.require("redrive", name)
        target = doc.get("target")
        if target is not None:
            target = queue_name(target, "target")
            access.require("redrive", target)
        elif access.principal.namespace:
            raise bad_request(
                "A key limited to a namespace must name the 'target' queue of a redrive.",
                "missing_field",
            )
        most = codec.integer(doc, "max_items", 1, 1_000_000, 10_000) or 10_000
        await self.engine.get_queue(name)  # 404 for a queue that is not there
        return {"moved": await self.engine.redrive(name, target, most)}


def _handle(value: object, i: int) -> str:
    if not isinstance(value, str) or not value:
        raise bad_request(f"handle {i} must be a non-empty string.", "wrong_type")
    if len(value) > limits.native_text_chars_max:
        raise bad_request(f"handle {i} is too long to be a lease handle.", "out_of_range")
    return value


def _status(result: object, ok: str) -> str:
    """One finishing result: `ok`, or why not: "stale" (another lease of the item is newer, or
    this one ran out), "gone" (finished already), "invalid" (not a handle of this queue)."""
    if isinstance(result, ReceiptHandleInvalid):
        return "invalid"
    if result in ("acked", "logged", "ok", "dead"):
        return ok
    if result == "expired":
        return "stale"  # a FIFO lease run out: the native API's word for it
    return str(result)


def refuse_oversize(items: Sequence[Item], most: int, whose: str = "") -> None:
    """413 for the first of `items` larger than `most` bytes (`whose`: "queue 'q' takes ")."""
    for item in items:
        if len(item.body) > most:
            raise NativeError(
                413, "too_large", f"{item.where} is {len(item.body)} bytes; {whose}at most {most}."
            )


def sends_for(items: Sequence[Item], name: str, attrs: QueueAttrs) -> list[SendRequest]:
    """The sends that put `items` on queue `name`; 413 when one is larger than it takes."""
    refuse_oversize(items, attrs.max_message_bytes, f"queue {name!r} takes ")
    if attrs.fifo:
        return [fifo_send(item, attrs) for item in items]
    return [standard_send(item, name) for item in items]


def produced(
    results: Sequence[SendResult | Exception], fifo: bool, whole: bool = True
) -> dict[str, Any]:
    """`{"ids": [...]}` in order; an item the engine refused has null and an entry in
    "errors"; when none was enqueued, the first refusal is the answer (when `whole`: the
    request was this one produce). On a FIFO queue also
    `"sequence_numbers"` in order (null for a refused item) and `"duplicates"`: the indexes of
    items that repeated a deduplication id within five minutes, answered with the first item's
    id and sequence number and not enqueued again."""
    ids: list[str | None] = []
    numbers: list[str | None] = []
    duplicates: list[int] = []
    errors: list[tuple[int, NativeError]] = []
    for i, r in enumerate(results):
        if isinstance(r, SendResult):
            ids.append(r.message_id)
            numbers.append(r.sequence_number)
            if r.duplicate:
                duplicates.append(i)
            continue
        ids.append(None)
        numbers.append(None)
        errors.append(
            (
                i,
                from_okuri(r)
                if isinstance(r, OkuriError)
                else NativeError(500, "internal", str(r)),
            )
        )
    if whole and errors and len(errors) == len(results):
        raise errors[0][1]
    out: dict[str, Any] = {"ids": ids}
    if fifo:
        out["sequence_numbers"] = numbers
        out["duplicates"] = duplicates
    if errors:
        out["errors"] = [{"index": i, **e.body()["error"]} for i, e in errors]
    return out


def _render(d: Delivery, deadline: str) -> dict[str, Any]:
    m = d.message
    out: dict[str, Any] = {
        "id": m.id,
        "handle": d.receipt_handle,
        "attempts": d.receive_count,
        "lease_deadline": deadline,
        "enqueued_at": codec.rfc3339(m.sent_ms),
    }
    out.update(render_payload(m.body, m.attributes))
    if m.group_id is not None:
        out["group"] = m.group_id
    if d.sequence_number is not None:
        out["sequence_number"] = d.sequence_number
    return out
