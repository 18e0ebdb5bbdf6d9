"""The client's values: what it sends (`Item`) and the typed answers it returns.

Each answer type has a `from_doc` that reads the server's JSON document strictly: a field
missing or of the wrong type raises a `ServerError` (code `bad_answer`) rather than handing the
caller a half-filled value.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

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
        d = _obj(doc, "attributes")
        return cls(
            lease_timeout_s=_get(d, "lease_timeout_s", int),
            max_attempts=_opt(d, "max_attempts", int),
            dead_letter_queue=_opt(d, "dead_letter_queue", str),
            retention_s=_get(d, "retention_s", int),
            delay_s=_get(d, "delay_s", int),
            content_based_dedup=_opt(d, "content_based_dedup", bool),
            expires_s=_opt(d, "expires_s", int),
        )


@dataclass(frozen=True, slots=True)
class QueueStats:
    visible: int
    leased: int
    delayed: int
    dead_lettered: int = 0  # waiting in the queue's dead-letter queue

    @classmethod
    def from_doc(cls, doc: Any) -> QueueStats:
        d = _obj(doc, "stats")
        return cls(
            _get(d, "visible", int),
            _get(d, "leased", int),
            _get(d, "delayed", int),
            _opt(d, "dead_lettered", int) or 0,  # absent from older servers' answers
        )


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    fifo: bool
    attributes: QueueAttributes
    stats: QueueStats
    created_at: datetime

    @classmethod
    def from_doc(cls, doc: Any) -> Queue:
        d = _obj(doc, "queue")
        return cls(
            name=_get(d, "name", str),
            fifo=_get(d, "fifo", bool),
            attributes=QueueAttributes.from_doc(d.get("attributes")),
            stats=QueueStats.from_doc(d.get("stats")),
            created_at=_time(d, "created_at"),
        )


@dataclass(frozen=True, slots=True)
class QueuePage:
    """One page of queue names; `next` is passed as `after` for the next page (None: last)."""

    queues: tuple[str, ...]
    next: str | None

    @classmethod
    def from_doc(cls, doc: Any) -> QueuePage:
        d = _obj(doc, "queue list")
        names = _get(d, "queues", list)
        if not all(isinstance(n, str) for n in names):
            raise bad_answer("'queues' holds something other than names")
        return cls(tuple(names), _opt(d, "next", str))


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
        d = _obj(doc, "exchange")
        bindings = []
        for b in _get(d, "bindings", list):
            b = _obj(b, "binding")
            bindings.append(Binding(_get(b, "queue", str), _get(b, "routing_key", str)))
        return cls(
            name=_get(d, "name", str),
            type=_get(d, "type", str),
            bindings=tuple(bindings),
            created_at=_time(d, "created_at"),
        )


@dataclass(frozen=True, slots=True)
class ExchangePage:
    """One page of exchange names; `next` is passed as `after` for the next page (None: last)."""

    exchanges: tuple[str, ...]
    next: str | None

    @classmethod
    def from_doc(cls, doc: Any) -> ExchangePage:
        d = _obj(doc, "exchange list")
        names = _get(d, "exchanges", list)
        if not all(isinstance(n, str) for n in names):
            raise bad_answer("'exchanges' holds something other than names")
        return cls(tuple(names), _opt(d, "next", str))


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
        d = _obj(doc, "item")
        if isinstance(d.get("body"), str):
            body = d["body"].encode()
        else:
            try:
                body = base64.b64decode(_get(d, "body_base64", str), validate=True)
            except (binascii.Error, ValueError):
                raise bad_answer("'body_base64' is not base64") from None
        headers = _opt(d, "headers", dict) or {}
        if not all(isinstance(v, str) for v in headers.values()):
            raise bad_answer("a header is not a string")
        return cls(
            id=_get(d, "id", str),
            handle=_get(d, "handle", str),
            attempts=_get(d, "attempts", int),
            lease_deadline=_time(d, "lease_deadline"),
            enqueued_at=_time(d, "enqueued_at"),
            body=body,
            headers=headers,
            group=_opt(d, "group", str),
            sequence_number=_opt(d, "sequence_number", str),
        )


# --- strict reading --------------------------------------------------------------------------


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
