"""Every operation of the client as a pure pair: the `Request` to send and how to read its
answer. `Client` and `AsyncClient` are thin shells that send one and apply the other, so the
two cannot differ in what they ask or how they understand the answer.

Arguments a caller gets wrong in a way the server would refuse anyway are left to the server
(one source of truth for bounds); only what cannot be sent at all raises here (a naive
datetime, `at` together with `dead`).
"""

from __future__ import annotations

import base64
import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from okuri.client.errors import PartialProduceError, bad_answer
from okuri.client.models import (
    BrowsePage,
    Exchange,
    ExchangePage,
    Item,
    LeasedItem,
    Queue,
    QueuePage,
)
from okuri.client.transport import Doc, Operation, Request

T = TypeVar("T")


class Unset(enum.Enum):
    """An attribute not given: the server's default on create, unchanged on update."""

    UNSET = "UNSET"


UNSET = Unset.UNSET

Handles = Iterable[str | LeasedItem] | str | LeasedItem
Items = Iterable[bytes | str | Item] | bytes | str | Item


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    request: Request
    parse: Callable[[Doc], T]


def _call(
    operation: Operation,
    queue: str,
    doc: Mapping[str, Any],
    parse: Callable[[Doc], T],
    wait_s: float = 0.0,
) -> Call[T]:
    return Call(Request(operation, queue, dict(doc), wait_s), parse)


def _none(doc: Doc) -> None:
    return None


# --- queues ----------------------------------------------------------------------------------


def attributes(
    lease_timeout_s: int | Unset,
    max_attempts: int | Unset | None,
    dead_letter_queue: str | Unset | None,
    retention_s: int | Unset,
    delay_s: int | Unset,
    content_based_dedup: bool | Unset = UNSET,
    expires_s: int | Unset | None = UNSET,
) -> Doc:
    """The attributes given (None clears max_attempts or dead_letter_queue)."""
    given = {
        "lease_timeout_s": lease_timeout_s,
        "max_attempts": max_attempts,
        "dead_letter_queue": dead_letter_queue,
        "retention_s": retention_s,
        "delay_s": delay_s,
        "content_based_dedup": content_based_dedup,
        "expires_s": expires_s,
    }
    return {k: v for k, v in given.items() if v is not UNSET}


def create_queue(name: str, attrs: Doc) -> Call[Queue]:
    doc: Doc = {"name": name, "attributes": attrs} if attrs else {"name": name}
    return _call("create_queue", "", doc, Queue.from_doc)


def get_queue(name: str) -> Call[Queue]:
    return _call("get_queue", name, {}, Queue.from_doc)


def update_queue(name: str, attrs: Doc) -> Call[Queue]:
    return _call("update_queue", name, {"attributes": attrs}, Queue.from_doc)


def list_queues(
    prefix: str = "", limit: int | None = None, after: str | None = None
) -> Call[QueuePage]:
    doc = {"prefix": prefix, "limit": limit, "after": after}
    given = {k: v for k, v in doc.items() if v is not None and v != ""}
    return _call("list_queues", "", given, QueuePage.from_doc)


def next_after(page: QueuePage, after: str | None) -> str | None:
    """Where the page after `page` starts (None: `page` was the last), refusing a server that
    would page in a circle."""
    if page.next is not None and page.next == after:
        raise bad_answer("the next page starts where this one did")
    return page.next


def delete_queue(name: str) -> Call[None]:
    return _call("delete_queue", name, {}, _none)


def purge_queue(name: str) -> Call[None]:
    return _call("purge_queue", name, {}, _none)


# --- messages --------------------------------------------------------------------------------


def produce(queue: str, items: Items) -> Call[list[str]]:
    if isinstance(items, bytes | str | Item):
        items = [items]
    return _call("produce", queue, {"items": [_item(i) for i in items]}, _ids)


def _item(item: bytes | str | Item) -> Doc:
    if not isinstance(item, Item):
        item = Item(item)
    if isinstance(item.body, bytes):
        doc: Doc = {"body_base64": base64.b64encode(item.body).decode("ascii")}
    elif isinstance(item.body, str):
        doc = {"body": item.body}
    else:
        raise TypeError(f"an item's body is bytes or str, not {type(item.body).__name__}")
    if item.headers:
        doc["headers"] = dict(item.headers)
    if item.group is not None:
        doc["group"] = item.group
    if item.dedup_id is not None:
        doc["dedup_id"] = item.dedup_id
    if item.enqueue_at is not None:
        doc["enqueue_at"] = rfc3339(item.enqueue_at, "enqueue_at")
    return doc


def _ids(doc: Doc) -> list[str]:
    ids = doc.get("ids")
    if not isinstance(ids, list) or not all(i is None or isinstance(i, str) for i in ids):
        raise bad_answer("'ids' is not a list of ids")
    errors = doc.get("errors") or []
    if not isinstance(errors, list) or not all(isinstance(e, dict) for e in errors):
        raise bad_answer("'errors' is not a list of errors")
    if errors or None in ids:
        refused = [
            (int(e.get("index", -1)), str(e.get("code", "")), str(e.get("message", "")))
            for e in errors
        ] or [(ids.index(None), "refused", "refused")]
        raise PartialProduceError(ids, refused)
    return [str(i) for i in ids]


def lease(
    queue: str, max_items: int = 1, lease_s: int | None = None, request_timeout_s: int = 0
) -> Call[list[LeasedItem]]:
    doc: Doc = {"max_items": max_items, "request_timeout_s": request_timeout_s}
    if lease_s is not None:
        doc["lease_s"] = lease_s
    return _call("lease", queue, doc, _leased, wait_s=request_timeout_s)


def _leased(doc: Doc) -> list[LeasedItem]:
    items = doc.get("items")
    if not isinstance(items, list):
        raise bad_answer("'items' is not a list")
    return [LeasedItem.from_doc(i) for i in items]


def complete(queue: str, handles: Handles) -> Call[list[str]]:
    return _call("complete", queue, {"handles": _handles(handles)}, _results)


def extend(queue: str, handles: Handles, lease_s: int) -> Call[list[str]]:
    return _call("extend", queue, {"handles": _handles(handles), "lease_s": lease_s}, _results)


def retry(
    queue: str, handles: Handles, at: datetime | None = None, dead: bool = False
) -> Call[list[str]]:
    if at is not None and dead:
        raise ValueError("retry takes `at` or `dead`, not both")
    extra: Doc = {"dead": True} if dead else {}
    if at is not None:
        extra["retry_at"] = rfc3339(at, "at")
    items = [{"handle": h, **extra} for h in _handles(handles)]
    return _call("retry", queue, {"items": items}, _results)


def redrive(queue: str, target: str | None = None, max_items: int | None = None) -> Call[int]:
    doc = {"target": target, "max_items": max_items}
    return _call("redrive", queue, {k: v for k, v in doc.items() if v is not None}, _moved)


def browse(queue: str, limit: int | None = None, after: str | None = None) -> Call[BrowsePage]:
    doc = {"limit": limit, "after": after}
    given = {k: v for k, v in doc.items() if v is not None}
    return _call("browse", queue, given, BrowsePage.from_doc)


def _moved(doc: Doc) -> int:
    moved = doc.get("moved")
    if not isinstance(moved, int) or isinstance(moved, bool):
        raise bad_answer("'moved' is not a count")
    return moved


def _handles(handles: Handles) -> list[str]:
    if isinstance(handles, str | LeasedItem):
        handles = [handles]
    return [h.handle if isinstance(h, LeasedItem) else h for h in handles]


def _results(doc: Doc) -> list[str]:
    results = doc.get("results")
    if not isinstance(results, list) or not all(isinstance(r, str) for r in results):
        raise bad_answer("'results' is not a list of outcomes")
    return results


# --- exchanges -------------------------------------------------------------------------------


def create_exchange(name: str, type: str) -> Call[Exchange]:
    return _call("create_exchange", "", {"name": name, "type": type}, Exchange.from_doc)


def get_exchange(name: str) -> Call[Exchange]:
    return _call("get_exchange", name, {}, Exchange.from_doc)


def list_exchanges(
    prefix: str = "", limit: int | None = None, after: str | None = None
) -> Call[ExchangePage]:
    doc = {"prefix": prefix, "limit": limit, "after": after}
    given = {k: v for k, v in doc.items() if v is not None and v != ""}
    return _call("list_exchanges", "", given, ExchangePage.from_doc)


def delete_exchange(name: str) -> Call[None]:
    return _call("delete_exchange", name, {}, _none)


def bind(exchange: str, queue: str, routing_key: str = "") -> Call[Exchange]:
    doc = {"queue": queue, "routing_key": routing_key}
    return _call("bind", exchange, doc, Exchange.from_doc)


def unbind(exchange: str, queue: str, routing_key: str = "") -> Call[Exchange]:
    doc = {"queue": queue, "routing_key": routing_key}
    return _call("unbind", exchange, doc, Exchange.from_doc)


def publish(exchange: str, routing_key: str, items: Items) -> Call[dict[str, list[str]]]:
    if isinstance(items, bytes | str | Item):
        items = [items]
    doc = {"routing_key": routing_key, "items": [_item(i) for i in items]}
    return _call("publish", exchange, doc, _routed)


def _routed(doc: Doc) -> dict[str, list[str]]:
    """Queue name -> the ids of the items produced there, in the server's order; raises
    PartialProduceError (for the first queue that refused some) as produce does."""
    routed = doc.get("routed")
    if not isinstance(routed, list) or not all(isinstance(r, dict) for r in routed):
        raise bad_answer("'routed' is not a list of queues")
    out: dict[str, list[str]] = {}
    for r in routed:
        queue = r.get("queue")
        if not isinstance(queue, str):
            raise bad_answer("a routed entry has no queue")
        out[queue] = _ids(r)
    return out


def rfc3339(when: datetime, name: str) -> str:
    if when.tzinfo is None or when.utcoffset() is None:
        raise ValueError(f"{name} must be a timezone-aware datetime (e.g. datetime.now(UTC))")
    return when.isoformat(timespec="milliseconds")
