"""Reading the native API's JSON requests strictly: an unknown field, a wrong type or a value
out of range is a 400 naming the field, never a default silently taken or a 500.

Booleans are not numbers here (JSON's `true` is not `1`), and every text and list is bounded.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any

import orjson

from okuri import limits
from okuri.native.errors import bad_request

Obj = dict[str, Any]


def parse_body(raw: bytes) -> Obj:
    """The request's JSON object (an empty body is `{}`)."""
    if not raw.strip():
        return {}
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise bad_request("The request body is not valid JSON.", "bad_json") from None
    if not isinstance(doc, dict):
        raise bad_request("The request body must be a JSON object.", "bad_json")
    return doc


def fields(doc: Obj, allowed: Collection[str], where: str = "request") -> Obj:
    """`doc`, refused if it has a field outside `allowed`."""
    unknown = sorted(set(doc) - set(allowed))
    if unknown:
        raise bad_request(
            f"Unknown field {unknown[0]!r} in the {where}; allowed: {', '.join(sorted(allowed))}.",
            "unknown_field",
        )
    return doc


def _field(doc: Obj, name: str, required: bool) -> Any:
    """The field's value; None when absent (or null), refused when `required`."""
    value = doc.get(name)
    if value is None and required:
        raise bad_request(f"{name!r} is required.", "missing_field")
    return value


def obj(doc: Obj, name: str, required: bool = False) -> Obj | None:
    value = _field(doc, name, required)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad_request(f"{name!r} must be an object.", "wrong_type")
    return value


def items(doc: Obj, name: str, most: int) -> list[Any]:
    value = doc.get(name)
    if not isinstance(value, list):
        raise bad_request(
            f"{name!r} must be a list.", "missing_field" if value is None else "wrong_type"
        )
    if not 1 <= len(value) <= most:
        raise bad_request(
            f"{name!r} must hold 1 to {most} entries, not {len(value)}.", "out_of_range"
        )
    return value


def integer(doc: Obj, name: str, low: int, high: int, default: int | None = None) -> int | None:
    value = doc.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"{name!r} must be a whole number.", "wrong_type")
    if not low <= value <= high:
        raise bad_request(f"{name!r} must be from {low} to {high}, not {value}.", "out_of_range")
    return value


def text(
    doc: Obj, name: str, required: bool = False, most: int = limits.native_text_chars_max
) -> str | None:
    value = _field(doc, name, required)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request(f"{name!r} must be a string.", "wrong_type")
    if len(value) > most:
        raise bad_request(f"{name!r} must be at most {most} characters.", "out_of_range")
    return value


def flag(doc: Obj, name: str) -> bool:
    value = doc.get(name, False)
    if not isinstance(value, bool):
        raise bad_request(f"{name!r} must be true or false.", "wrong_type")
    return value


def timestamp_ms(doc: Obj, name: str) -> int | None:
    """An RFC 3339 time with its offset (`2026-12-01T10:00:00Z`), as epoch milliseconds."""
    value = text(doc, name, most=64)
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        when = None
    if when is None or when.tzinfo is None or "T" not in value.upper():
        raise bad_request(
            f"{name!r} must be an RFC 3339 time with an offset, e.g. 2026-12-01T10:00:00Z.",
            "wrong_type",
        )
    return int(when.timestamp() * 1000)


def rfc3339(ms: int) -> str:
    """Epoch milliseconds as RFC 3339 in UTC, to the millisecond."""
    seconds, millis = divmod(ms, 1000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"


def base64_bytes(value: str, name: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(f"{name!r} is not valid base64.", "wrong_type") from None


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)
