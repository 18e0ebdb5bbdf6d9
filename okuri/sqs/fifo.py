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

MISSING_GROUP = "The request must contain the parameter MessageGroupId."
MISSING_DEDUP = (
    "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId "
    "provided explicitly"
)


def check_batch(entries: list[dict[str, Any]], attrs: QueueAttrs) -> None:
    """A FIFO batch with an entry missing its group or deduplication id fails as a whole, as
    SQS answers it (recorded), where other entry errors fail only their entry; SQS names the
    missing group id InvalidParameterValue here, not MissingParameter as for SendMessage."""
    for entry in entries:
        if entry.get("MessageGroupId") is None:
            raise SqsError("InvalidParameterValue", MISSING_GROUP)
    for entry in entries:
        if entry.get("MessageDeduplicationId") is None and not _content_based(attrs):
            raise SqsError("InvalidParameterValue", MISSING_DEDUP)


def _content_based(attrs: QueueAttrs) -> bool:
    return fifo_setting(attrs.extra, "ContentBasedDeduplication") == "true"


def check_send(entry: Mapping[str, Any], attrs: QueueAttrs) -> tuple[str, str]:
    """(MessageGroupId, MessageDeduplicationId) of a send to a FIFO queue, the latter derived
    from the body when the queue deduplicates by content and the sender gave none.

    A per-message DelaySeconds is refused unless it is 0, which SQS accepts and ignores (the
    queue's delay applies)."""
    if entry.get("DelaySeconds") not in (None, 0):
        raise SqsError(
            "InvalidParameterValue",
            f"Value {entry['DelaySeconds']} for parameter DelaySeconds is invalid. Reason: The "
            "request include parameter that is not valid for this queue type.",
        )
    group = entry.get("MessageGroupId")
    if group is None:
        raise SqsError("MissingParameter", MISSING_GROUP)
    check_printable_id("MessageGroupId", group)
    dedup = entry.get("MessageDeduplicationId")
    if dedup is None:
        if not _content_based(attrs):
            raise SqsError("InvalidParameterValue", MISSING_DEDUP)
        dedup = content_dedup_id(str(entry["MessageBody"]).encode())
    check_printable_id("MessageDeduplicationId", dedup)
    return group, dedup


def dedup_key(attrs: QueueAttrs, group: str, dedup: str) -> str:
    """What a duplicate must match: the id, within its group when the scope is messageGroup."""
    return _dedup_key(attrs.extra, group, dedup)
