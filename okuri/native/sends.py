"""A produced item as the send its queue takes: what an item must carry on a standard or a FIFO
queue, and the key its duplicates match on.

On a FIFO queue an item names its `group` (items of one group are leased in order, one lease
of a group at a time) and a `dedup_id`, unless the queue deduplicates by content, when the id
is the SHA-256 of the item's bytes. The rules are the engine's (`okuri.engine`: `is_fifo_id`,
`content_dedup_id`, `dedup_key`), the same ones the SQS surface applies, so the deduplication
id is the queue's one FIFO id space: a native item and an SQS message with the same id (in the
same group, when the queue's DeduplicationScope is messageGroup) within five minutes are
duplicates of each other, whichever surface sent either, on any node. A FIFO queue takes no
per-item time, as SQS takes no per-message DelaySeconds there: the queue's `delay_s` applies to
every item.

On a standard queue `dedup_id` stays what it was: a best-effort window on the node that takes
the item, kept apart from every SQS id.
"""

from __future__ import annotations

from okuri.engine import (
    DEDUP_ID_ATTRIBUTE,
    FIFO_ID_RULE,
    QueueAttrs,
    SendRequest,
    content_dedup_id,
    dedup_key,
    fifo_setting,
    is_fifo_id,
)
from okuri.native.errors import bad_request
from okuri.native.items import Item


def fifo_send(item: Item, attrs: QueueAttrs) -> SendRequest:
    """The send of `item` to a FIFO queue with `attrs`; a 400 naming the item when it lacks
    what a FIFO queue needs or carries what it refuses."""
    where = item.where
    if item.enqueue_at_ms is not None:
        raise bad_request(
            f"{where}: a FIFO queue takes no 'enqueue_at': its items are leased in the order "
            "produced (as SQS takes no per-message delay there); the queue's delay_s applies "
            "to every item.",
            "invalid_argument",
        )
    if item.group is None:
        raise bad_request(
            f"{where}: 'group' is required on a FIFO queue: items of one group are leased in "
            "order.",
            "missing_field",
        )
    if not is_fifo_id(item.group):
        raise bad_request(f"{where}: 'group' must be {FIFO_ID_RULE}.", "invalid_argument")
    dedup_id = item.dedup_id
    if dedup_id is None:
        if fifo_setting(attrs.extra, "ContentBasedDeduplication") != "true":
            raise bad_request(
                f"{where}: 'dedup_id' is required on a FIFO queue without content_based_dedup.",
                "missing_field",
            )
        dedup_id = content_dedup_id(item.body)
    elif not is_fifo_id(dedup_id):
        raise bad_request(f"{where}: 'dedup_id' must be {FIFO_ID_RULE}.", "invalid_argument")
    return SendRequest(
        body=item.body,
        attributes=item.attributes,
        system_attributes={DEDUP_ID_ATTRIBUTE: dedup_id},
        group_id=item.group,
        dedup_id=dedup_key(attrs.extra, item.group, dedup_id),
    )


def standard_send(item: Item, queue: str) -> SendRequest:
    """The send of `item` to the standard queue `queue`. Its `dedup_id` is a best-effort window
    on the node that takes it, kept apart from SQS's ids (SQS standard queues have none)."""
    if item.group is not None:
        raise bad_request(
            f"{item.where}: 'group' orders items on a FIFO queue (a name ending in .fifo); "
            f"{queue!r} is a standard queue.",
            "invalid_argument",
        )
    return SendRequest(
        body=item.body,
        enqueue_at_ms=item.enqueue_at_ms,
        attributes=item.attributes,
        dedup_id=None if item.dedup_id is None else "native\n" + item.dedup_id,
    )
