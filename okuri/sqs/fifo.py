"""FIFO sends as SQS checks them: group and deduplication ids, and the key duplicates match on.

Pure. The engine orders and deduplicates (okuri/engine/dedup.py); this module says what a FIFO
SendMessage must carry and turns the queue's ContentBasedDeduplication and DeduplicationScope
into the one key the engine compares.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from okuri.engine import QueueAttrs
from okuri.sqs.errors import SqsError
from okuri.sqs.messages import check_printable_id
from okuri.sqs.queue_attributes import fifo_setting


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
        raise SqsError(
            "MissingParameter", "The request must contain the parameter MessageGroupId."
        )
    check_printable_id("MessageGroupId", group)
    dedup = entry.get("MessageDeduplicationId")
    if dedup is None:
        if fifo_setting(attrs.extra, "ContentBasedDeduplication") != "true":
            raise SqsError(
                "InvalidParameterValue",
                "The queue should either have ContentBasedDeduplication enabled or "
                "MessageDeduplicationId provided explicitly",
            )
        dedup = hashlib.sha256(str(entry["MessageBody"]).encode()).hexdigest()
    check_printable_id("MessageDeduplicationId", dedup)
    return group, dedup


def dedup_key(attrs: QueueAttrs, group: str, dedup: str) -> str:
    """What a duplicate must match: the id, within its group when the scope is messageGroup."""
    if fifo_setting(attrs.extra, "DeduplicationScope") == "messageGroup":
        return f"{group}\n{dedup}"
    return dedup
