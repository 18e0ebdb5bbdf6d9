"""The native API's queue operations: create, get (with live counts), update, list, delete,
purge. Attributes have native names; they are the same queue attributes SQS shows, so a queue
made here has the RedrivePolicy, VisibilityTimeout, ... its SQS clients expect.

A queue is FIFO when its name ends in .fifo (SQS's rule; `"fifo": true` may say so too, and
must then agree with the name). A FIFO queue's `content_based_dedup` is SQS's
ContentBasedDeduplication; its DeduplicationScope and FifoThroughputLimit are set over SQS and
honoured by native producing alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from okuri import limits
from okuri.engine import (
    QUEUE_NAME,
    Engine,
    QueueAttrs,
    QueueView,
    fifo_setting,
    is_fifo_name,
)
from okuri.errors import InvalidArgument, QueueDoesNotExist
from okuri.native import codec
from okuri.native.access import Access
from okuri.native.errors import bad_request

ATTRIBUTES = (
    "lease_timeout_s",
    "max_attempts",
    "dead_letter_queue",
    "retention_s",
    "delay_s",
    "content_based_dedup",
    "expires_s",
)
CONTENT_BASED = "ContentBasedDeduplication"  # the SQS attribute content_based_dedup is


def queue_name(name: object, field: str = "name") -> str:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise bad_request(
            f"{field!r} must be a queue name: 1 to {limits.queue_name_chars_max} letters, digits, "
            "'-' or '_'.",
            "invalid_queue_name",
        )
    return name


def parse_attributes(doc: codec.Obj, base: QueueAttrs, name: str, access: Access) -> QueueAttrs:
    """`base` with the attributes `doc` gives (null clears max_attempts or dead_letter_queue)."""
    codec.fields(doc, ATTRIBUTES, "attributes")
    attrs = base
    if "lease_timeout_s" in doc:
        vis = codec.integer(doc, "lease_timeout_s", 0, limits.visibility_s_max)
        attrs = replace(
            attrs, visibility_timeout_s=limits.visibility_s_default if vis is None else vis
        )
    if "retention_s" in doc:
        ret = codec.integer(doc, "retention_s", limits.retention_s_min, limits.retention_s_max)
        attrs = replace(attrs, retention_s=limits.retention_s_default if ret is None else ret)
    if "delay_s" in doc:
        attrs = replace(attrs, delay_s=codec.integer(doc, "delay_s", 0, limits.delay_s_max) or 0)
    if "max_attempts" in doc:
        most = codec.integer(doc, "max_attempts", 1, limits.max_receive_count_max)
        attrs = replace(attrs, max_receive_count=most)
    if "dead_letter_queue" in doc:
        dlq = doc["dead_letter_queue"]
        if dlq is not None:
            dlq = queue_name(dlq, "dead_letter_queue")
            if dlq == name:
                raise bad_request(
                    "A queue cannot be its own dead-letter queue.", "invalid_argument"
                )
            if is_fifo_name(dlq) != is_fifo_name(name):
                raise bad_request(
                    "A queue and its dead-letter queue must both be FIFO or both standard.",
                    "invalid_argument",
                )
            access.require("create_queue", dlq)
        attrs = replace(attrs, dead_letter_queue=dlq)
    if "expires_s" in doc:  # null: never
        attrs = replace(
            attrs,
            expires_s=codec.integer(doc, "expires_s", limits.expires_s_min, limits.expires_s_max),
        )
    if "content_based_dedup" in doc:
        if not is_fifo_name(name):
            raise bad_request(
                f"content_based_dedup is a FIFO queue's attribute; {name!r} is a standard "
                "queue (a FIFO queue's name ends in .fifo).",
                "invalid_argument",
            )
        extra = {k: v for k, v in attrs.extra.items() if k != CONTENT_BASED}
        if codec.flag(doc, "content_based_dedup"):
            extra[CONTENT_BASED] = "true"  # false is the default, kept as no value
        attrs = replace(attrs, extra=extra)
    return attrs


def render_attributes(attrs: QueueAttrs) -> dict[str, Any]:
    out: dict[str, Any] = {
        "lease_timeout_s": attrs.visibility_timeout_s,
        "max_attempts": attrs.max_receive_count,
        "dead_letter_queue": attrs.dead_letter_queue,
        "retention_s": attrs.retention_s,
        "delay_s": attrs.delay_s,
        "expires_s": attrs.expires_s,
    }
    if attrs.fifo:
        out["content_based_dedup"] = fifo_setting(attrs.extra, CONTENT_BASED) == "true"
    return out


class Queues:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def describe(self, name: str, st: QueueView | None = None) -> dict[str, Any]:
        counts = await self.engine.counts(name)  # reads the manifest fresh
        st = st or await self.engine.cached_queue(name)
        return {
            "name": name,
            "fifo": st.attrs.fifo,
            "attributes": render_attributes(st.attrs),
            "stats": {
                "visible": counts.visible,
                "leased": counts.in_flight,
                "delayed": counts.delayed,
                "dead_lettered": await self._dead_lettered(name, st),
            },
            "created_at": codec.rfc3339(st.created_ms),
        }

    async def _dead_lettered(self, name: str, st: QueueView) -> int:
        """Items waiting in the queue's dead-letter queue (where `dead: true` and items past
        `max_attempts` go: its `dead_letter_queue`, else `{name}-dlq`), from any source that
        shares it; 0 while that queue does not exist."""
        target = st.attrs.dead_letter_queue or f"{name}-dlq"
        try:
            c = await self.engine.counts(target)
        except (QueueDoesNotExist, InvalidArgument):
            return 0
        return c.visible + c.in_flight + c.delayed

    async def create(self, access: Access, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("name", "fifo", "attributes"))
        name = queue_name(doc.get("name"))
        if "fifo" in doc and codec.flag(doc, "fifo") != is_fifo_name(name):
            raise bad_request(
                "A FIFO queue's name ends in .fifo, and only a FIFO queue's does: 'fifo' is "
                f"{str(doc['fifo']).lower()} but the name is {name!r}.",
                "invalid_argument",
            )
        access.require("create_queue", name)
        given = codec.obj(doc, "attributes") or {}
        attrs = parse_attributes(given, QueueAttrs(fifo=is_fifo_name(name)), name, access)
        st = await self.engine.create_queue(name, attrs, access.principal.namespace)
        return await self.describe(name, st)

    async def get(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        access.require("get_queue", name)
        st = await self.engine.get_queue(name)
        return await self.describe(name, st)

    async def update(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ("attributes",))
        access.require("update_queue", name)
        given = codec.obj(doc, "attributes", required=True) or {}
        parse_attributes(given, QueueAttrs(), name, access)  # refuse bad input before any read
        st = await self.engine.update_attributes(
            name, lambda attrs: parse_attributes(given, attrs, name, access), touch=True
        )
        return await self.describe(name, st)

    async def list(self, access: Access, query: codec.Obj) -> dict[str, Any]:
        """A page of names; `query` holds typed values (a number for `limit`)."""
        codec.fields(query, ("prefix", "limit", "after"), "query")
        prefix = codec.text(query, "prefix", most=limits.queue_name_chars_max) or ""
        after = codec.text(query, "after", most=limits.queue_name_chars_max) or ""
        limit = list_limit(query)
        prefix = access.list_prefix(prefix)
        names = await self.engine.list_queues(prefix, limit + 1, after)
        page = names[:limit]
        return {"queues": page, "next": page[-1] if len(names) > limit else None}

    async def delete(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        access.require("delete_queue", name)
        await self.engine.delete_queue(name)
        return {}

    async def purge(self, access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        codec.fields(doc, ())
        access.require("purge_queue", name)
        await self.engine.get_queue(name)  # 404 for a queue that is not there
        await self.engine.purge(name)
        return {}


def list_limit(query: codec.Obj) -> int:
    """A listing's page size, 1 to `native_list_max` (the default)."""
    most = limits.native_list_max
    return codec.integer(query, "limit", 1, most, most) or most
