"""Values crossing the engine's public surface."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from okuri.core.message import Message


@dataclass(frozen=True, slots=True)
class SendRequest:
    body: bytes
    delay_s: int | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    system_attributes: dict[str, Any] = field(default_factory=dict)
    group_id: str | None = None
    dedup_id: str | None = None
    # When the message becomes receivable, in place of a delay; beyond the longest delay it
    # waits outside the queue until then (okuri/engine/schedule.py). The native API's enqueue_at.
    enqueue_at_ms: int | None = None


@dataclass(frozen=True, slots=True)
class SendResult:
    message_id: str
    sent_ms: int
    duplicate: bool = False
    sequence_number: str | None = None  # FIFO queues


@dataclass(frozen=True, slots=True)
class Delivery:
    message: Message
    receipt_handle: str
    receive_count: int
    first_receive_ms: int
    sequence_number: str | None = None  # FIFO queues
