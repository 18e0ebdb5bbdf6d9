"""The client's values: what it sends (`Item`) and the typed answers it returns.

Each answer type has a `from_doc` that reads the server's JSON document strictly: a field
missing or of the wrong type raises a `ServerError` (code `bad_answer`) rather than handing the
caller a half-filled value. What a document holds is the API's shape of the same name
(okuri/api/shapes.py): `from_doc` reads its fields by it, so a model's attributes are the
shape's fields (a `payload` is `body`), which tests/unit/test_api_agreement.py checks.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, TypeVar, cast

from okuri.api.shapes import SHAPES, Field
from okuri.client.errors import bad_answer

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Item:
    """One item to produce: `body` as bytes (sent exactly) or text (sent as UTF-8), with
    optional string `headers`, a `dedup_id` (a repeat within five minutes gets the first
    item's id and is not enqueued again: on a standard queue on the same node, on a FIFO queue
    on any node and over SQS too) and `enqueue_at` (a timezone-aware time; standard queues
    only). On a FIFO queue `group` is required: items of a group are leased in order."""

    body: bytes | str
    headers: Mapping[str, str] | None = None
    dedup_id: str | None = None
    enqueue_at: datetime | None = None
    group: str | None = None


@dataclass(frozen=True, slots=True)
class QueueAttributes:
    lease_timeout_s: int
    max_attempts: int | None
    dead_letter_queue: str | None
    retention_s: int
    delay_s: int
    content_based_dedup: bool | None = None  # FIFO queues only
    expires_s: int | None = None  # deleted after this long unused; None: never

    @classmethod
    def from_doc(cls, doc: Any) -> QueueAttributes:
        return _read(cls, "QueueAttributes", doc, "attributes")


@dataclass(frozen=True, slots=True)
class QueueStats:
    visible: int
    leased: int
    delayed: int
    dead_lettered: int = 0  # waiting in the queue's dead-letter queue

    @classmethod
    def from_doc(cls, doc: Any) -> QueueStats:
        return _read(cls, "QueueStats", doc, "stats")


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    fifo: bool
    attributes: QueueAttributes
    stats: QueueStats
    created_at: datetime

    @classmethod
    def from_doc(cls, doc: Any) -> Queue:
        return _read(cls, "Queue", doc, "queue")


@dataclass(frozen=True, slots=True)
class QueuePage:
    """One page of queue names; `next` is passed as `after` for the next page (None: last)."""

    queues: tuple[str, ...]
    next: str | None

    @classmethod
    def from_doc(cls, doc: Any) -> QueuePage:
        return _read(cls, "ListQueuesResponse", doc, "queue list")


@dataclass(frozen=True, slots=True)
class Binding:
    """Queue `queue` receives what is published under keys matching `routing_key`."""

    queue: str
    routing_key: str


@dataclass(frozen=True, slots=True)
class Exchange:
    """An exchange: its type ("direct", "topic" or "fanout") and its bindings."""

    name: str
    type: str
    bindings: tuple[Binding, ...]
    created_at: datetime

    @classmethod
    def from_doc(cls, doc: Any) -> Exchange:
        return _read(cls, "Exchange", doc, "exchange")


@dataclass(frozen=True, slots=True)
class ExchangePage:
    """One page of exchange names; `next` is passed as `after` for the next page (None: last)."""

    exchanges: tuple[str, ...]
    next: str | None

    @classmethod
    def from_doc(cls, doc: Any) -> ExchangePage:
        return _read(cls, "ListExchangesResponse", doc, "exchange list")


@dataclass(frozen=True, slots=True)
class LeasedItem:
    """One leased item. `handle` names this lease (complete, retry and extend take it, or the
    item itself); `attempts` counts leases, this one included; the lease ends no earlier than
    `lease_deadline`. `body` is the payload's exact bytes. On a FIFO queue `group` and
    `sequence_number` say where the item stands."""

    id: str
    handle: str
    attempts: int
    lease_deadline: datetime
    enqueued_at: datetime
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)
    group: str | None = None
    sequence_number: str | None = None

    @property
    def text(self) -> str:
        """The body as UTF-8 text (raises UnicodeDecodeError for a binary payload)."""
        return self.body.decode()

    @classmethod
    def from_doc(cls, doc: Any) -> LeasedItem:
        return _read(cls, "LeasedItem", doc, "item")


@dataclass(frozen=True, slots=True)
class BrowsedItem:
    """One item as a browse shows it, without leasing it. `state` is "visible", "leased" (a
    consumer holds it until `until`) or "delayed" (visible at `until`); `attempts` counts its
    leases so far; `dead_letter_source`, in a dead-letter queue, is the queue it came from."""

    id: str
    state: str
    attempts: int
    enqueued_at: datetime
    body: bytes
    until: datetime | None = None
    first_leased_at: datetime | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    group: str | None = None
    sequence_number: str | None = None
    dead_letter_source: str | None = None

    @property
    def text(self) -> str:
        """The body as UTF-8 text (raises UnicodeDecodeError for a binary payload)."""
        return self.body.decode()

    @classmethod
    def from_doc(cls, doc: Any) -> BrowsedItem:
        return _read(cls, "BrowsedItem", doc, "item")


@dataclass(frozen=True, slots=True)
class BrowsePage:
    """One page of a browse, oldest first; `next` is passed as `after` for the next page (None:
    the queue had no more)."""

    items: tuple[BrowsedItem, ...]
    next: str | None

    @classmethod
    def from_doc(cls, doc: Any) -> BrowsePage:
        return _read(cls, "BrowseResponse", doc, "browse page")


# --- strict reading, by the API's shapes -------------------------------------------------------

# The shapes read into a model of their own when another shape holds them.
_NESTED: Mapping[str, type[Any]] = {
    "QueueAttributes": QueueAttributes,
    "QueueStats": QueueStats,
    "Binding": Binding,
    "BrowsedItem": BrowsedItem,
}
_KINDS: Mapping[str, type[Any]] = {"string": str, "integer": int, "boolean": bool}


def _read(cls: type[T], shape: str, doc: Any, what: str) -> T:
    """A `cls` from `doc`, read field by field as okuri/api/shapes.py describes `shape`: a
    field missing or of the wrong type is a `bad_answer`, unless the answer may leave it out
    (or an older server's did, where `cls` has a default for it)."""
    d = _obj(doc, what)
    defaults = {
        a.name
        for a in fields(cast(Any, cls))
        if a.default is not MISSING or a.default_factory is not MISSING
    }
    values: dict[str, Any] = {}
    for f in SHAPES[shape].fields:
        name = "body" if f.type == "payload" else f.name
        value = _value(f, d, name in defaults)
        if value is not None or name not in defaults:
            values[name] = value
    return cls(**values)


def _value(f: Field, d: dict[str, Any], has_default: bool) -> Any:
    if f.type == "payload":
        return _payload(d)
    if f.type == "headers":
        headers = _opt(d, f.name, dict) or {}
        if not all(isinstance(v, str) for v in headers.values()):
            raise bad_answer("a header is not a string")
        return headers
    if f.type == "time":
        if (f.absent != "never" or has_default) and d.get(f.name) is None:
            return None
        return _time(d, f.name)
    if f.repeated:
        entries = _get(d, f.name, list)
        if f.type in _NESTED:
            return tuple(_read(_NESTED[f.type], f.type, e, f.name) for e in entries)
        if not all(isinstance(e, _KINDS[f.type]) for e in entries):
            raise bad_answer(f"{f.name!r} holds something other than {f.type}s")
        return tuple(entries)
    if f.type in _NESTED:
        return _read(_NESTED[f.type], f.type, d.get(f.name), f.name)
    if f.nullable or f.absent != "never" or has_default:
        return _opt(d, f.name, _KINDS[f.type])
    return _get(d, f.name, _KINDS[f.type])


def _payload(d: dict[str, Any]) -> bytes:
    if isinstance(d.get("body"), str):
        return str(d["body"]).encode()
    try:
        return base64.b64decode(_get(d, "body_base64", str), validate=True)
    except (binascii.Error, ValueError):
        raise bad_answer("'body_base64' is not base64") from None


def _obj(doc: Any, what: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise bad_answer(f"the {what} is not an object")
    return doc


def _get(doc: dict[str, Any], name: str, kind: type[T]) -> T:
    value = doc.get(name)
    # bool is an int in Python, never in JSON's sense.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise bad_answer(f"{name!r} is missing or not a {kind.__name__}")
    return value


def _opt(doc: dict[str, Any], name: str, kind: type[T]) -> T | None:
    return None if doc.get(name) is None else _get(doc, name, kind)


def _time(doc: dict[str, Any], name: str) -> datetime:
    try:
        return datetime.fromisoformat(_get(doc, name, str))
    except ValueError:
        raise bad_answer(f"{name!r} is not an RFC 3339 time") from None
