"""FIFO sends as SQS checks them: group and deduplication ids, and the key duplicates match on.

Pure. The engine orders and deduplicates (okuri/engine/dedup.py); this module says what a FIFO
SendMessage must carry, in SQS's words. The rules themselves (the ids' form, content-based ids,
the deduplication key) are the engine's (`okuri.engine`), shared with the native surface, so a
native item and an SQS message with the same deduplication id are duplicates of each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from okuri.engine import QueueAttrs, content_dedup_id, fifo_setting
from okuri.engine import dedup_key as _dedup_key
from okuri.sqs.errors import SqsError
from okuri.sqs.messages import check_printable_id


def check_send(entry: Mapping[str, Any], attrs: QueueAttrs) -> tuple[str, str]:
    """(MessageGroupId, MessageDeduplicationId) of a send to a FIFO queue, the latter derived
    from the body when the queue deduplicates by content and the sender gave none."""
    if entry.get("DelaySeconds") is not None:
        raise SqsError(
            "InvalidParameterValue",
            f"Value {entry['DelaySeconds']} for parameter DelaySeconds is invalid. Reason: The "
            "request include parameter that is not valid for this queue type.",
        )
    group = entry.get("MessageGroupId")
    if group is None:
        raise SqsError("MissingParameter", "The request must contain the parameter MessageGroupId.")
    check_printable_id("MessageGroupId", group)
    dedup = entry.get("MessageDeduplicationId")
    if dedup is None:
        if fifo_setting(attrs.extra, "ContentBasedDeduplication") != "true":
            raise SqsError(
                "InvalidParameterValue",
                "The queue should either have ContentBasedDeduplication enabled or "
                "MessageDeduplicationId provided explicitly",
            )
        dedup = content_dedup_id(str(entry["MessageBody"]).encode())
    check_printable_id("MessageDeduplicationId", dedup)
    return group, dedup


def dedup_key(attrs: QueueAttrs, group: str, dedup: str) -> str:
    """What a duplicate must match: the id, within its group when the scope is messageGroup."""
    return _dedup_key(attrs.extra, group, dedup)
