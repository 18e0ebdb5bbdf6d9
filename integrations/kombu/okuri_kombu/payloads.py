"""A kombu message as an okuri item, and back: pure.

As in kombu's other virtual transports, the whole message (body, already encoded by kombu's
`body_encoding`, with its headers and properties) is one JSON document, the item's body. An
item leased back is that document with its delivery fields filled in: the delivery tag is the
lease's handle (unique per lease, as SQS's receipt handle is the SQS transport's tag), and the
delivery info names the okuri queue, the item's id and its attempts (leases so far).

An item that is not such a document (produced by something other than kombu, over the native
API or SQS) is wrapped as kombu's SQS transport wraps one: its body the item's text (base64 with
`body_encoding` base64 when it is not UTF-8), its headers the item's headers.
"""

from __future__ import annotations

import base64
from typing import Any

from kombu.utils.json import dumps, loads

from okuri.client import LeasedItem

Payload = dict[str, Any]


def item_text(message: Payload) -> str:
    """The okuri item body of the kombu message `message` (as basic_publish prepared it)."""
    text: str = dumps(message)
    return text


def payload_of(item: LeasedItem, queue: str) -> Payload:
    """The kombu message that leased `item` of okuri queue `queue` carries."""
    payload = _kombu_message(item.body)
    if payload is None:
        payload = _wrapped(item)
    props: dict[str, Any] = payload["properties"]
    info = props.get("delivery_info")
    if not isinstance(info, dict):
        info = props["delivery_info"] = {}
    info.update(okuri_queue=queue, okuri_id=item.id, okuri_attempts=item.attempts)
    props["delivery_tag"] = item.handle
    return payload


def message_expired(payload: Payload, enqueued_at_s: float, now_s: float) -> bool:
    """Whether `payload` is past its own TTL: kombu's `expiration` property (publish's
    `expiration` seconds, as AMQP's milliseconds text), counted from when okuri enqueued it.
    A property that is not a number of milliseconds never expires the message."""
    expiration = payload["properties"].get("expiration")
    if expiration is None or isinstance(expiration, bool):
        return False
    try:
        ttl_ms = float(expiration)
    except (TypeError, ValueError):
        return False
    return ttl_ms >= 0 and (now_s - enqueued_at_s) * 1000 > ttl_ms


def _kombu_message(body: bytes) -> Payload | None:
    try:
        doc = loads(body)
    except (ValueError, UnicodeDecodeError, TypeError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("properties"), dict):
        return None
    return doc


def _wrapped(item: LeasedItem) -> Payload:
    try:
        body, encoding = item.body.decode(), None
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(item.body).decode("ascii"), "base64"
    return {
        "body": body,
        "headers": dict(item.headers),
        "content-type": None,
        "content-encoding": None,
        "properties": {"delivery_info": {}, "body_encoding": encoding},
    }
