"""Scheduling beyond the longest delay, as pure decisions: which minute an item is due in,
which batches are due to move into the queue, what a moved item looks like, and claims.

An item due in more than `limits.delay_s_max` cannot be a delayed message: the manifest would
carry it in its working set for days. It waits instead in a batch object of its own, keyed by
the minute it is due (okuri/core/keys.py), and moves into the queue as an ordinary delayed
message once its whole minute is within the longest delay, so however many items wait for next
week, the manifest and the receives of immediate messages never see them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import orjson

from okuri import limits
from okuri.core.message import Message

HORIZON_MS = limits.delay_s_max * 1000


def bucket_of(at_ms: int) -> int:
    """The start of the minute an item due at `at_ms` waits in."""
    return at_ms - at_ms % limits.schedule_bucket_ms


def beyond_delay(at_ms: int, now_ms: int) -> bool:
    """Whether an item due at `at_ms` must wait in a batch, not as a delayed message."""
    return at_ms - now_ms > HORIZON_MS


def is_due(due_ms: int, now_ms: int) -> bool:
    """Whether the batch of minute `due_ms` may move in: all of it is within the longest delay."""
    return due_ms + limits.schedule_bucket_ms <= now_ms + HORIZON_MS


def moved_in(message: Message, now_ms: int) -> Message:
    """The message a scheduled item becomes in the queue: the same id and content, sent now
    (the queue's retention period counts from here, at most `HORIZON_MS` before it is due)
    and delayed until it is due."""
    return replace(message, sent_ms=now_ms, visible_at_ms=max(message.visible_at_ms, now_ms))


def retention_too_short(retention_s: int) -> bool:
    """Whether a queue keeps items too briefly to schedule beyond the longest delay: an item
    moves in up to `HORIZON_MS` before it is due, and must not expire before it shows."""
    return retention_s < 2 * limits.delay_s_max


@dataclass(frozen=True, slots=True)
class Claim:
    """A node moving a batch in; once `until_ms` passes, another node may take over."""

    node: str
    until_ms: int

    def encode(self) -> bytes:
        return orjson.dumps({"node": self.node, "until": self.until_ms})

    @staticmethod
    def decode(data: bytes) -> Claim | None:
        try:
            doc = orjson.loads(data)
            node, until = doc["node"], doc["until"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return None
        if not isinstance(node, str) or not isinstance(until, int):
            return None
        return Claim(node, until)
