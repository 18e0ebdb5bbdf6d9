"""SQS queue attributes, names and tags: parsing them into the engine's `QueueAttrs` and rendering
them back for GetQueueAttributes.

Pure (no I/O, clock or randomness); every refusal is a `SqsInputError` (re-exported here) whose
`code` is the short AWS error code. Where SQS's behaviour was recorded (mostly LocalStack's
snapshots validated against SQS) this follows it; where it was not, the docstring says so.

What maps where:
- VisibilityTimeout, DelaySeconds, MaximumMessageSize, MessageRetentionPeriod,
  ReceiveMessageWaitTimeSeconds: the typed fields of `QueueAttrs`. A value that is not a base-10
  integer in range answers InvalidAttributeValue "Invalid value for the parameter X." (SQS's text).
  MaximumMessageSize accepts 1,024..1,048,576: SQS raised its bound to 1 MiB in 2025 (the current
  API model says so), and 1 MiB is okuri's own `limits.message_bytes_max`.
- RedrivePolicy (parsed in `okuri.sqs.redrive_policies`): `max_receive_count` and
  `dead_letter_queue` (the queue *name*, the ARN's last component). SQS refuses a bad policy
  with InvalidParameterValue, not InvalidAttributeValue, so okuri does too. An empty string
  removes the policy.
- Policy, RedriveAllowPolicy, KmsMasterKeyId, KmsDataKeyReusePeriodSeconds, SqsManagedSseEnabled:
  stored verbatim (booleans lower-cased) in `QueueAttrs.extra`, which the engine never reads.
  A Policy over SQS's 8,192 bytes (its policy quotas page) answers as SQS answers it: 403
  OverLimit "Submitted policy is over max allowed size." (BishopFox/cloudfoxable#29, 2025;
  Particular/NServiceBus.AmazonSQS#830). All of `extra` together is bounded by the operator's
  OKURI_QUEUE_ATTRIBUTES_BYTES_MAX, checked by the engine (OverLimit too).
  An empty Policy, RedriveAllowPolicy or KmsMasterKeyId removes it; KmsDataKeyReusePeriodSeconds
  set to its default 300 disappears from GetQueueAttributes, as SQS's does (recorded).
- FIFO: FifoQueue=true and a ".fifo" name go together (either alone is InvalidParameterValue);
  `QueueAttrs.fifo` is set at creation and never changes. ContentBasedDeduplication,
  DeduplicationScope (queue | messageGroup) and FifoThroughputLimit (perQueue |
  perMessageGroupId, the latter only with messageGroup scope) live in `extra` and read back with
  SQS's defaults; on a standard queue they answer as SQS answers them there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from okuri import limits
from okuri.digits import whole_number
from okuri.engine import (  # QUEUE_NAME: fullmatch ("$" admits "\n")
    FIFO_SETTINGS,
    QUEUE_NAME,
    QueueAttrs,
    fifo_setting,
)
from okuri.sqs.messages import SqsInputError
from okuri.sqs.redrive_policies import (
    RedrivePolicy,
    check_redrive_allow_policy,
    json_object,
    parse_redrive_policy,
    policy_error,
)

__all__ = [
    "QUEUE_ATTRIBUTE_NAMES",
    "RedrivePolicy",
    "SqsInputError",
    "attrs_equal_for_create",
    "create_conflict",
    "parse_queue_attributes",
    "parse_redrive_policy",
    "render_queue_attributes",
    "validate_queue_name",
    "validate_tags",
]


FIFO_SUFFIX = ".fifo"
# FIFO-only attributes: name -> (allowed values, SQS's default); the engine's table, which the
# native surface reads too.
FIFO_ATTRIBUTES = FIFO_SETTINGS
FIFO_NAME_MISMATCH = (
    "The name of a FIFO queue can only include alphanumeric characters, hyphens, or "
    "underscores, must end with .fifo suffix and be 1 to 80 in length."
)

# QueueAttributeName in the API model, "All" aside.
QUEUE_ATTRIBUTE_NAMES: tuple[str, ...] = (
    "Policy",
    "VisibilityTimeout",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "CreatedTimestamp",
    "LastModifiedTimestamp",
    "QueueArn",
    "ApproximateNumberOfMessagesDelayed",
    "DelaySeconds",
    "ReceiveMessageWaitTimeSeconds",
    "RedrivePolicy",
    "FifoQueue",
    "ContentBasedDeduplication",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "DeduplicationScope",
    "FifoThroughputLimit",
    "RedriveAllowPolicy",
    "SqsManagedSseEnabled",
)

# name -> (QueueAttrs field, lowest, highest)
_INTEGER_ATTRIBUTES: dict[str, tuple[str, int, int]] = {
    "VisibilityTimeout": ("visibility_timeout_s", 0, limits.visibility_s_max),
    "DelaySeconds": ("delay_s", 0, limits.delay_s_max),
    "MaximumMessageSize": ("max_message_bytes", 1024, limits.message_bytes_max),
    "MessageRetentionPeriod": ("retention_s", limits.retention_s_min, limits.retention_s_max),
    "ReceiveMessageWaitTimeSeconds": ("receive_wait_s", 0, limits.wait_s_max),
}
_EXTRA_ATTRIBUTES = (
    "Policy",
    "RedriveAllowPolicy",
    "KmsMasterKeyId",
    "KmsDataKeyReusePeriodSeconds",
    "SqsManagedSseEnabled",
)
_SETTABLE = frozenset({*_INTEGER_ATTRIBUTES, "RedrivePolicy", *_EXTRA_ATTRIBUTES})
_FIFO_SCOPED = ("DeduplicationScope", "FifoThroughputLimit")

kms_reuse_s_min = 60
kms_reuse_s_max = 24 * 60 * 60
kms_reuse_s_default = 300
tags_per_queue_max = 50
policy_bytes_max = 8192  # SQS's policy quota
POLICY_TOO_LARGE = "Submitted policy is over max allowed size."
tag_key_chars_max = 128
tag_value_chars_max = 256

_SSE_CONFLICT = (
    "You can use one type of server-side encryption (SSE) at one time. "
    "You can either enable KMS SSE or SQS SSE."
)


def _bad_value(name: str) -> SqsInputError:
    return SqsInputError("InvalidAttributeValue", f"Invalid value for the parameter {name}.")


def _unknown(name: str) -> SqsInputError:
    return SqsInputError("InvalidAttributeName", f"Unknown Attribute {name}.")


# --- queue names and tags -----------------------------------------------------------------------


def validate_queue_name(name: Any) -> str:
    """CreateQueue's QueueName: 1-80 of [A-Za-z0-9_-], ".fifo" counted for a FIFO queue."""
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise SqsInputError(
            "InvalidParameterValue",
            "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
        )
    return name


def validate_tags(
    tags: Any, existing: Mapping[str, str] | None = None, queue: str = ""
) -> dict[str, str]:
    """CreateQueue's / TagQueue's tags: keys 1-128 characters, values 0-256, at most 50 per queue.

    `existing` holds the queue's current tags for TagQueue, whose new keys add to (and same keys
    overwrite) them; the bound applies to the result. Returns the validated new tags. The
    refusal texts are okuri's (no recording of SQS refusing a tag was found).
    """
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise SqsInputError(
            "InvalidParameterValue", "Value for parameter Tags is invalid. Reason: not a map."
        )
    out: dict[str, str] = {}
    for key, value in tags.items():
        if not isinstance(key, str) or not 1 <= len(key) <= tag_key_chars_max:
            raise SqsInputError(
                "InvalidParameterValue",
                f"Tag keys must be between 1 and {tag_key_chars_max} characters in length.",
            )
        if not isinstance(value, str) or len(value) > tag_value_chars_max:
            raise SqsInputError(
                "InvalidParameterValue",
                f"Tag values must be between 0 and {tag_value_chars_max} characters in length.",
            )
        out[key] = value
    merged = {**(existing or {}), **out}
    if len(merged) > tags_per_queue_max:
        raise SqsInputError(
            "InvalidParameterValue",
            f"Too many tags added for queue {queue}.",
        )
    return out


# --- parsing ------------------------------------------------------------------------------------


def _parse_integer(name: str, raw: str) -> int:
    lowest, highest = _INTEGER_ATTRIBUTES[name][1:]
    value = whole_number(raw, signed=True)
    if value is None or not lowest <= value <= highest:
        raise _bad_value(name)
    return value


def _parse_boolean(name: str, raw: str) -> str:
    lowered = raw.lower()
    if lowered not in ("true", "false"):
        raise _bad_value(name)
    return lowered


def wants_fifo(attributes: Any) -> bool:
    """Does a CreateQueue's Attributes map ask for a FIFO queue (FifoQueue=true)?"""
    if not isinstance(attributes, Mapping) or "FifoQueue" not in attributes:
        return False
    fifo = attributes["FifoQueue"]
    if not isinstance(fifo, str) or fifo.lower() not in ("true", "false"):
        raise _bad_value("FifoQueue")
    return fifo.lower() == "true"


def check_fifo_name(name: str, attributes: Any) -> bool:
    """A ".fifo" name and FifoQueue=true go together, as SQS requires; whether it is FIFO."""
    fifo = wants_fifo(attributes)
    if fifo != name.endswith(FIFO_SUFFIX):
        raise SqsInputError("InvalidParameterValue", FIFO_NAME_MISMATCH)
    return fifo


def _check_names(attributes: Mapping[Any, Any], for_create: bool, fifo: bool) -> None:
    """Refuse names SQS would refuse on this kind of queue."""
    if for_create and "FifoQueue" in attributes and not wants_fifo(attributes):
        raise _unknown("FifoQueue")  # even "false" on a standard queue (recorded)
    for name in attributes:
        if name in _SETTABLE or (name == "FifoQueue" and (for_create or fifo)):
            continue
        if fifo and name in FIFO_ATTRIBUTES:
            continue
        if name in _FIFO_SCOPED:
            # SQS's answer on a standard queue (recorded).
            raise SqsInputError(
                "InvalidAttributeName",
                f"You can specify the {name} only when FifoQueue is set to true.",
            )
        # Everything else, including FifoQueue on SetQueueAttributes, ContentBasedDeduplication,
        # the read-only attributes and "All": SQS answers "Unknown Attribute X." (recorded).
        raise _unknown(str(name))


def parse_queue_attributes(
    attributes: Any, existing: QueueAttrs | None, for_create: bool
) -> QueueAttrs:
    """Apply a CreateQueue / SetQueueAttributes Attributes map to `existing` (defaults if None).

    Names are checked before values; values must be JSON strings (SQS's QueueAttributeMap holds
    strings only; a non-string answers InvalidAttributeValue). As SQS answers (recorded):
    FifoQueue on a standard queue is "Unknown Attribute FifoQueue.", even "false" on CreateQueue;
    on a FIFO queue's SetQueueAttributes "true" changes nothing and anything else is refused (the
    type is fixed). Extras okuri does not own (e.g. tags) are carried over untouched.
    """
    base = existing if existing is not None else QueueAttrs()
    if attributes is None:
        return replace(base, extra=dict(base.extra))
    if not isinstance(attributes, Mapping):
        raise SqsInputError(
            "InvalidParameterValue", "Value for parameter Attributes is invalid. Reason: not a map."
        )
    fifo = wants_fifo(attributes) if for_create else base.fifo
    _check_names(attributes, for_create, fifo)
    fields: dict[str, Any] = {"fifo": fifo}
    extra = dict(base.extra)
    for name, raw in attributes.items():
        if not isinstance(raw, str):
            raise _bad_value(name)
        if name == "FifoQueue":
            if not for_create and raw.lower() != "true":
                raise SqsInputError(
                    "InvalidAttributeValue",
                    "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is "
                    "not supported.",
                )
            continue
        if name in FIFO_ATTRIBUTES:
            extra[name] = _fifo_value(name, raw)
            continue
        if name in _INTEGER_ATTRIBUTES:
            fields[_INTEGER_ATTRIBUTES[name][0]] = _parse_integer(name, raw)
        elif name == "RedrivePolicy":
            policy = parse_redrive_policy(raw)
            if policy is not None and policy.dead_letter_queue.endswith(FIFO_SUFFIX) != fifo:
                raise policy_error(
                    "RedrivePolicy", raw, "Dead-letter target must be of same type as the source."
                )
            fields["dead_letter_queue"] = None if policy is None else policy.dead_letter_queue
            fields["max_receive_count"] = None if policy is None else policy.max_receive_count
        elif name == "Policy":
            if raw == "":
                extra.pop(name, None)
            elif len(raw.encode()) > policy_bytes_max:
                raise SqsInputError("OverLimit", POLICY_TOO_LARGE, 403)
            elif json_object(raw) is None:
                raise _bad_value(name)
            else:
                extra[name] = raw
        elif name == "RedriveAllowPolicy":
            if raw == "":
                extra.pop(name, None)
            else:
                check_redrive_allow_policy(raw)
                extra[name] = raw
        elif name == "KmsMasterKeyId":
            if raw == "":
                extra.pop(name, None)
            else:
                extra[name] = raw
        elif name == "KmsDataKeyReusePeriodSeconds":
            reuse_s = whole_number(raw, signed=True)
            if reuse_s is None or not kms_reuse_s_min <= reuse_s <= kms_reuse_s_max:
                raise _bad_value(name)
            if reuse_s == kms_reuse_s_default:
                extra.pop(name, None)
            else:
                extra[name] = str(reuse_s)
        elif name == "SqsManagedSseEnabled":
            extra[name] = _parse_boolean(name, raw)
    if fifo_setting(extra, "FifoThroughputLimit") == "perMessageGroupId" and (
        fifo_setting(extra, "DeduplicationScope") != "messageGroup"
    ):
        raise SqsInputError(
            "InvalidAttributeValue",
            "The perMessageGroupId value is allowed only when the value for "
            "DeduplicationScope is messageGroup.",
        )
    if attributes.get("SqsManagedSseEnabled", "").lower() == "true" and extra.get("KmsMasterKeyId"):
        # SQS's code and text (recorded).
        raise SqsInputError("InvalidAttributeName", _SSE_CONFLICT)
    if attributes.get("KmsMasterKeyId") and "SqsManagedSseEnabled" not in attributes:
        extra["SqsManagedSseEnabled"] = "false"  # SSE-KMS replaces SSE-SQS (recorded)
    return replace(base, **fields, extra=extra)


def _fifo_value(name: str, raw: str) -> str:
    allowed = FIFO_ATTRIBUTES[name][0]
    for value in allowed:  # SQS takes true/false in any case; the enumerations exactly
        if raw == value or (name == "ContentBasedDeduplication" and raw.lower() == value):
            return value
    raise _bad_value(name)


# --- rendering ----------------------------------------------------------------------------------


def _redrive_json(attrs: QueueAttrs, dlq_arn: Callable[[str], str]) -> str | None:
    if attrs.dead_letter_queue is None or attrs.max_receive_count is None:
        return None
    return json.dumps(
        {
            "deadLetterTargetArn": dlq_arn(attrs.dead_letter_queue),
            "maxReceiveCount": attrs.max_receive_count,
        },
        separators=(",", ":"),
    )


def render_queue_attributes(
    attrs: QueueAttrs,
    names: Iterable[str] | None,
    *,
    arn: str,
    dlq_arn: Callable[[str], str],
    counts: tuple[int, int, int],
    created_s: int,
    modified_s: int,
) -> dict[str, str]:
    """GetQueueAttributes' answer for `names` ("All" for every attribute the queue has).

    `counts` is (visible, in flight, delayed); timestamps are epoch seconds; `dlq_arn` turns the
    dead-letter queue's name into its ARN. No names answers nothing, as SQS does. A name outside
    QueueAttributeName answers InvalidAttributeName "Unknown Attribute X." (recorded); a defined
    name the queue does not have (FifoQueue, an unset Policy) is omitted. SqsManagedSseEnabled
    reads "true" unless set otherwise, as on a new SQS queue (recorded).
    """
    wanted = list(names or ())
    for name in wanted:
        if name != "All" and name not in QUEUE_ATTRIBUTE_NAMES:
            raise _unknown(name)
    if not wanted:
        return {}
    visible, in_flight, delayed = counts
    full: dict[str, str | None] = {
        "ApproximateNumberOfMessages": str(visible),
        "ApproximateNumberOfMessagesNotVisible": str(in_flight),
        "ApproximateNumberOfMessagesDelayed": str(delayed),
        "CreatedTimestamp": str(created_s),
        "LastModifiedTimestamp": str(modified_s),
        "QueueArn": arn,
        "VisibilityTimeout": str(attrs.visibility_timeout_s),
        "DelaySeconds": str(attrs.delay_s),
        "MaximumMessageSize": str(attrs.max_message_bytes),
        "MessageRetentionPeriod": str(attrs.retention_s),
        "ReceiveMessageWaitTimeSeconds": str(attrs.receive_wait_s),
        "RedrivePolicy": _redrive_json(attrs, dlq_arn),
        **{name: attrs.extra.get(name) for name in _EXTRA_ATTRIBUTES},
    }
    if full["SqsManagedSseEnabled"] is None:
        full["SqsManagedSseEnabled"] = "true"
    if attrs.fifo:
        full["FifoQueue"] = "true"
        full.update({name: fifo_setting(attrs.extra, name) for name in FIFO_ATTRIBUTES})
    selected = full if "All" in wanted else {n: full.get(n) for n in wanted}
    return {name: value for name, value in selected.items() if value is not None}


# --- CreateQueue idempotence --------------------------------------------------------------------


def _canonical(attrs: QueueAttrs, name: str) -> object:
    """An attribute's value as compared for CreateQueue: defaults filled in, JSON parsed."""
    if name in _INTEGER_ATTRIBUTES:
        return getattr(attrs, _INTEGER_ATTRIBUTES[name][0])
    if name == "RedrivePolicy":
        return (attrs.dead_letter_queue, attrs.max_receive_count)
    if name == "FifoQueue":
        return "true" if attrs.fifo else "false"
    if name in FIFO_ATTRIBUTES:
        return fifo_setting(attrs.extra, name)
    value = attrs.extra.get(name)
    if name in ("Policy", "RedriveAllowPolicy"):
        return None if value is None else json.loads(value)
    if name == "KmsDataKeyReusePeriodSeconds":
        return int(value) if value is not None else kms_reuse_s_default
    if name == "SqsManagedSseEnabled":
        return value or "true"
    return value


def create_conflict(requested: Any, existing: QueueAttrs) -> str | None:
    """The first attribute of a CreateQueue for an existing queue whose value differs, or None.

    Only the attributes the request names are compared, each with the queue's current value
    (defaults included). That is SQS's documented rule — it "returns this error only if the
    request includes attributes whose values differ from those of the existing queue" — and its
    recorded behaviour: a CreateQueue without attributes returns the URL of a queue created with
    non-default ones. SQS answers the conflict with QueueNameExists / QueueAlreadyExists and
    "A queue already exists with the same name and a different value for attribute X".
    The request is validated first, so a malformed one raises rather than conflicting.
    """
    wanted = parse_queue_attributes(requested, None, for_create=True)
    for name in requested or ():
        if _canonical(wanted, name) != _canonical(existing, name):
            return str(name)
    return None


def attrs_equal_for_create(requested: Any, existing: QueueAttrs) -> bool:
    """Whether a CreateQueue naming an existing queue returns its URL (see `create_conflict`)."""
    return create_conflict(requested, existing) is None
