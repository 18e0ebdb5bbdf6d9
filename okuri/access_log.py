"""One access-log record per request, with the same fields on every surface.

The surfaces (SQS, native HTTP, native gRPC, health) sit side by side and may not import each
other, so the record's shape lives here, below them: each surface fills an `Entry` while it
handles a request and calls `emit` once it has the answer. The record goes to the logger
`okuri.access` with its fields in `record.access`; okuri/server/logs.py decides how it is
written (one JSON object per line with OKURI_LOG_FORMAT=json; in text mode the logger is off,
as before). Cheap when off: `on()` is one cached level check, and a surface that sees it off
reads no clock for the duration. Nothing here ever holds a secret: a key *id* only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

ACCESS = logging.getLogger("okuri.access")
# Off unless asked for: `okuri serve` turns it on with OKURI_LOG_FORMAT=json; a program that
# embeds okuri sets the logger's level itself (logging.getLogger("okuri.access").setLevel).
OFF = logging.CRITICAL + 10
ACCESS.setLevel(OFF)

# The request id header on the native HTTP and gRPC surfaces (SQS has its own, x-amzn-RequestId).
REQUEST_ID_HEADER = "x-request-id"
CLIENT_REQUEST_ID_CHARS_MAX = 128
_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.:")


def on(level: int = logging.INFO) -> bool:
    """Whether a record at `level` would be written (cached by logging until levels change)."""
    return ACCESS.isEnabledFor(level)


class Entry:
    """What a surface learns about a request as it handles it; any field may stay unknown."""

    __slots__ = ("action", "client_request_id", "key_id", "params", "queue")

    def __init__(self, action: str = "") -> None:
        self.action = action
        self.queue = ""
        self.key_id = ""
        self.client_request_id = ""
        # The SQS members once decoded: the queue's name is read out of them only when the
        # record is written, so a request pays nothing for it while the log is off.
        self.params: Mapping[str, Any] | None = None


def client_request_id(value: str | None) -> str:
    """A client's own request id (its x-request-id), kept only when it is short and plain,
    so that it cannot forge log lines; "" otherwise. Logged beside okuri's own id, never
    instead of it: okuri's ids are unique, a client's need not be."""
    if not value or len(value) > CLIENT_REQUEST_ID_CHARS_MAX or not set(value) <= _ID_CHARS:
        return ""
    return value


def _queue_of(params: Mapping[str, Any]) -> str:
    url = params.get("QueueUrl")
    if isinstance(url, str) and url:
        return url.rstrip("/").rpartition("/")[2]
    name = params.get("QueueName")
    return name if isinstance(name, str) else ""


def emit(
    surface: str,
    request_id: str,
    entry: Entry,
    status: int | str,
    duration_ms: float,
    level: int = logging.INFO,
) -> None:
    """Write the request's record: `status` is the HTTP status, or the gRPC code's name."""
    queue = entry.queue or (_queue_of(entry.params) if entry.params else "")
    fields: dict[str, Any] = {
        "request_id": request_id,
        "surface": surface,
        "action": entry.action,
        "queue": queue or None,  # every record has every field: null when not known
        "key_id": entry.key_id or None,
        "status": status,
        "duration_ms": round(duration_ms, 3),
    }
    if entry.client_request_id:
        fields["client_request_id"] = entry.client_request_id
    ACCESS.log(
        level,
        "%s %s %s %s",
        surface,
        entry.action,
        status,
        request_id,
        extra={"access": fields},
    )
