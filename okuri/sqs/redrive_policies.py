"""RedrivePolicy and RedriveAllowPolicy, the two JSON documents among a queue's attributes.

SQS refuses a bad one with InvalidParameterValue, not InvalidAttributeValue (recorded: a non-ARN
deadLetterTargetArn, a missing member and a non-numeric maxReceiveCount all answer
InvalidParameterValue).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from okuri import limits
from okuri.digits import whole_number
from okuri.sqs.messages import SqsInputError

redrive_allow_source_arns_max = 10

_QUEUE_ARN = re.compile(
    r"arn:(aws[A-Za-z-]*):sqs:([a-z0-9-]+):([0-9]{12}):([A-Za-z0-9_-]{1,80}|[A-Za-z0-9_-]{1,75}\.fifo)"
)
_REDRIVE_PERMISSIONS = ("allowAll", "denyAll", "byQueue")


@dataclass(frozen=True, slots=True)
class RedrivePolicy:
    dead_letter_target_arn: str
    partition: str
    region: str
    account_id: str
    dead_letter_queue: str  # the ARN's last component: the queue's name
    max_receive_count: int


def policy_error(parameter: str, raw: str, reason: str) -> SqsInputError:
    return SqsInputError(
        "InvalidParameterValue",
        f"Value {raw} for parameter {parameter} is invalid. Reason: {reason}",
    )


def json_object(raw: str) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return None
    return value if isinstance(value, dict) else None


def parse_redrive_policy(raw: str) -> RedrivePolicy | None:
    """A RedrivePolicy string; None for "" (which removes the policy).

    maxReceiveCount may be a JSON integer or a string of digits (SQS accepts "42", recorded),
    1..1000. The dead-letter queue's existence, and whether its region and account are this
    queue's, are for the caller to check. Reasons quoted from SQS: "Invalid value for
    deadLetterTargetArn." and "Redrive policy does not contain mandatory attribute: X."; the
    others are okuri's.
    """
    if raw == "":
        return None
    policy = json_object(raw)
    if policy is None:
        raise policy_error("RedrivePolicy", raw, "Redrive policy is not a valid JSON map.")
    for member in ("deadLetterTargetArn", "maxReceiveCount"):
        if policy.get(member) is None:
            raise policy_error(
                "RedrivePolicy",
                raw,
                f"Redrive policy does not contain mandatory attribute: {member}.",
            )
    arn = policy["deadLetterTargetArn"]
    found = _QUEUE_ARN.fullmatch(arn) if isinstance(arn, str) else None
    if found is None:
        raise policy_error("RedrivePolicy", raw, "Invalid value for deadLetterTargetArn.")
    count = policy["maxReceiveCount"]
    if isinstance(count, str):
        count = whole_number(count)
    if (
        isinstance(count, bool)
        or not isinstance(count, int)
        or not 1 <= count <= limits.max_receive_count_max
    ):
        raise policy_error(
            "RedrivePolicy",
            raw,
            f"Invalid value for maxReceiveCount: {policy['maxReceiveCount']}, "
            f"valid values are from 1 to {limits.max_receive_count_max} both inclusive.",
        )
    partition, region, account, name = found.groups()
    return RedrivePolicy(arn, partition, region, account, name, count)


def check_redrive_allow_policy(raw: str) -> None:
    """RedriveAllowPolicy: redrivePermission allowAll|denyAll|byQueue; sourceQueueArns (1..10
    strings) exactly when byQueue. Code as for RedrivePolicy; texts are okuri's."""
    policy = json_object(raw)
    if policy is None:
        raise policy_error(
            "RedriveAllowPolicy", raw, "Redrive allow policy is not a valid JSON map."
        )
    permission = policy.get("redrivePermission")
    if permission not in _REDRIVE_PERMISSIONS:
        raise policy_error(
            "RedriveAllowPolicy",
            raw,
            "redrivePermission must be one of allowAll, denyAll, byQueue.",
        )
    sources = policy.get("sourceQueueArns")
    if permission == "byQueue":
        if (
            not isinstance(sources, list)
            or not 1 <= len(sources) <= redrive_allow_source_arns_max
            or not all(isinstance(s, str) for s in sources)
        ):
            raise policy_error(
                "RedriveAllowPolicy",
                raw,
                f"byQueue needs sourceQueueArns: 1 to {redrive_allow_source_arns_max} queue ARNs.",
            )
    elif sources is not None:
        raise policy_error(
            "RedriveAllowPolicy",
            raw,
            "sourceQueueArns can be given only when redrivePermission is byQueue.",
        )
