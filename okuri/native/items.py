"""A produced item as the native API reads it, before it knows the queue: its payload, headers,
and the ordering and deduplication fields, each checked for its form.

Reading an item needs no queue, so every item of a request is checked, and a malformed one
refused with a 400 naming it, before anything is read from the bucket. What the fields mean
depends on the queue: a standard queue's item becomes a send in `okuri.native.messages`, a
FIFO queue's in `okuri.native.fifo`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from okuri import limits
from okuri.native import codec
from okuri.native.errors import bad_request

ITEM_FIELDS = ("body", "body_base64", "headers", "group", "dedup_id", "enqueue_at")
# Header names SQS accepts as message attribute names, so SQS clients can read them.
HEADER_NAME = re.compile(r"(?!AWS\.|Amazon\.|\.)(?!.*\.\.)[A-Za-z0-9_.-]{1,256}(?<!\.)", re.I)


@dataclass(frozen=True, slots=True)
class Item:
    """One item of a produce, read. `where` names it in errors (`items[3]`)."""

    where: str
    body: bytes
    attributes: dict[str, Any]  # the headers, as String message attributes
    group: str | None
    dedup_id: str | None
    enqueue_at_ms: int | None


def read_item(entry: object, i: int, now_ms: int) -> Item:
    where = f"items[{i}]"
    if not isinstance(entry, dict):
        raise bad_request(f"{where} must be an object.", "wrong_type")
    codec.fields(entry, ITEM_FIELDS, where)
    text = codec.text(entry, "body", most=limits.request_bytes_max)
    b64 = codec.text(entry, "body_base64", most=limits.request_bytes_max)
    if (text is None) == (b64 is None):
        raise bad_request(f"{where} needs exactly one of 'body' and 'body_base64'.")
    body = text.encode() if text is not None else codec.base64_bytes(b64 or "", "body_base64")
    return Item(
        where=where,
        body=body,
        attributes=_headers(entry, where),
        group=codec.text(entry, "group"),
        dedup_id=codec.text(entry, "dedup_id", most=limits.dedup_id_chars_max),
        enqueue_at_ms=_enqueue_at_ms(entry, now_ms, where),
    )


def _headers(entry: codec.Obj, where: str) -> dict[str, Any]:
    headers = codec.obj(entry, "headers") or {}
    if len(headers) > limits.native_headers_max:
        raise bad_request(f"{where}: at most {limits.native_headers_max} headers.")
    attributes: dict[str, Any] = {}
    for key, value in headers.items():
        if not HEADER_NAME.fullmatch(key):
            raise bad_request(
                f"{where}: header {key[:80]!r} is not a valid name (letters, digits, '-', "
                "'_', '.'; not starting with AWS. or Amazon.).",
                "invalid_argument",
            )
        if not isinstance(value, str) or not value:
            raise bad_request(f"{where}: header {key!r} must be a non-empty string.")
        if len(value) > limits.native_text_chars_max:
            raise bad_request(f"{where}: header {key!r} is too long.", "out_of_range")
        attributes[key] = {"DataType": "String", "StringValue": value}
    return attributes


def _enqueue_at_ms(entry: codec.Obj, now_ms: int, where: str) -> int | None:
    at_ms = codec.timestamp_ms(entry, "enqueue_at")
    if at_ms is not None and at_ms - now_ms > limits.schedule_s_max * 1000:
        raise bad_request(
            f"{where}: enqueue_at is {(at_ms - now_ms) // 1000} s away; at most "
            f"{limits.schedule_s_max} s ({limits.schedule_s_max // 86400} days) ahead.",
            "out_of_range",
        )
    return at_ms


def render_payload(body: bytes, attributes: dict[str, Any]) -> dict[str, Any]:
    """An item's payload and headers as an answer carries them: `body` when it is UTF-8, else
    `body_base64`; `headers` (its String message attributes), left out when there are none."""
    out: dict[str, Any] = {}
    try:
        out["body"] = body.decode()
    except UnicodeDecodeError:
        out["body_base64"] = codec.b64encode(body)
    headers = {
        k: v["StringValue"]
        for k, v in attributes.items()
        if isinstance(v, dict) and isinstance(v.get("StringValue"), str)
    }
    if headers:
        out["headers"] = headers
    return out
