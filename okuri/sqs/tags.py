"""Queue tags: TagQueue, UntagQueue, ListQueueTags, and the tags CreateQueue is given.

A tag is kept in the queue's attribute extras as `tag:<key>` (`TAG_PREFIX`), which the engine
stores and never reads. TagQueue and UntagQueue change them in one atomic read-modify-write of
the manifest (`Engine.update_attributes`), so concurrent taggers never lose each other's tags and
the bound of 50 tags holds against the tags the queue really has.

Limits as SQS documents them: at most 50 tags per queue, keys 1-128 characters, values 0-256,
and a key may not start with the reserved prefix "aws:" (any case). TagQueue with an empty Tags
map is MissingParameter ("The request must contain the parameter Tags.") and an empty TagKeys
list InvalidParameterValue, with the codes and texts moto copies from SQS, as is the one for too
many tags; the other refusal texts are okuri's. CreateQueue's `tags` are optional and an empty
map is no tags: over the query protocol an empty map is no parameters at all, so SQS cannot
tell it from an absent one, and its JSON front end reads an empty map as those absent
parameters (an empty SetQueueAttributes map is refused naming the query parameter
`Attribute.Name`: pulumi/pulumi-aws#5959).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from okuri.engine import QueueAttrs
from okuri.sqs import queue_attributes as qa
from okuri.sqs.errors import invalid, missing

if TYPE_CHECKING:
    from okuri.sqs.actions import SqsActions

TAG_PREFIX = "tag:"
RESERVED_PREFIX = "aws:"


def check_tags(
    tags: Any, existing: Mapping[str, str] | None = None, queue: str = ""
) -> dict[str, str]:
    """Validate tags to add to `existing` (CreateQueue: none) of `queue`; the validated new
    tags."""
    if isinstance(tags, Mapping):
        for key in tags:
            if isinstance(key, str) and key.lower().startswith(RESERVED_PREFIX):
                raise invalid(
                    f"Tag key {key[:128]!r} is invalid: the prefix {RESERVED_PREFIX!r} "
                    "is reserved for AWS."
                )
    return qa.validate_tags(tags, existing, queue)


def check_create_tags(tags: Any, queue: str) -> dict[str, str]:
    """CreateQueue's `tags`: absent or empty is none (boto3's `tags={}` sends no tag at all
    over the query protocol, so SQS creates the queue untagged)."""
    if tags is None:
        return {}
    return check_tags(tags, None, queue)


def tags_of(attrs: QueueAttrs) -> dict[str, str]:
    return {
        k.removeprefix(TAG_PREFIX): v for k, v in attrs.extra.items() if k.startswith(TAG_PREFIX)
    }


def with_tags(attrs: QueueAttrs, add: Mapping[str, str], remove: Iterable[str] = ()) -> QueueAttrs:
    extra = dict(attrs.extra)
    for key in remove:
        extra.pop(TAG_PREFIX + key, None)
    extra.update({TAG_PREFIX + k: v for k, v in add.items()})
    return replace(attrs, extra=extra)


async def tag_queue(sqs: SqsActions, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
    name = sqs.queue_name(p["QueueUrl"])
    tags = p["Tags"]
    if not tags:
        raise missing("Tags")
    check_tags(tags, None, name)  # refuse a malformed request before reading the queue

    def change(attrs: QueueAttrs) -> QueueAttrs:
        return with_tags(attrs, check_tags(tags, tags_of(attrs), name))

    await sqs.engine.update_attributes(name, change)
    return {}


async def untag_queue(sqs: SqsActions, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
    name = sqs.queue_name(p["QueueUrl"])
    keys = p["TagKeys"]
    if not keys:
        raise invalid(
            f"Tag keys must be between 1 and {qa.tag_key_chars_max} characters in length."
        )
    await sqs.engine.update_attributes(name, lambda attrs: with_tags(attrs, {}, keys))
    return {}


async def list_queue_tags(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    st = await sqs.engine.get_queue(sqs.queue_name(p["QueueUrl"]))
    tags = tags_of(st.attrs)
    return {"Tags": tags} if tags else {}
