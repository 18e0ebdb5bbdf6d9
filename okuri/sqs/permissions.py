"""AddPermission and RemovePermission: statements in the queue's Policy, as SQS keeps them.

SQS keeps what AddPermission grants as one statement of the queue's access policy (the `Policy`
attribute, a JSON document): `Sid` is the permission's Label, `Effect` Allow, `Principal.AWS` the
accounts' root ARNs and `Action` the actions prefixed `SQS:` (a single one as a string, several
as a list), `Resource` the queue's ARN; the document itself is
`{"Version": "2008-10-17", "Id": "<queue arn>/SQSDefaultPolicy", "Statement": [...]}`.
RemovePermission drops the statements with that Sid, and the whole attribute with the last one
(all recorded from SQS). Like every policy okuri stores, it is returned and never enforced: okuri
has no accounts; its access keys have roles and namespaces instead (`okuri.sqs.access`).

Both change the policy in one atomic read-modify-write of the manifest
(`Engine.update_attributes`), so a concurrent SetQueueAttributes or tagging is never undone.

Errors: a label already in the policy and a label not in it answer InvalidParameterValue in
SQS's words (recorded); more than 7 actions answers OverLimit and an action that is not SQS's,
or that only the queue's owner may call, InvalidParameterValue, in the texts moto copies from
SQS; an account id that is not 12 digits answers as an empty list does. The policy bounds SQS
documents (20 statements, 50 principals, 8 KiB) answer OverLimit, the size in SQS's words
(okuri.sqs.queue_attributes), the others in okuri's.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from okuri.engine import QueueAttrs
from okuri.sqs import queue_attributes as qa
from okuri.sqs.errors import SqsError, invalid, missing
from okuri.sqs.shapes import ACTIONS

if TYPE_CHECKING:
    from okuri.sqs.actions import SqsActions

POLICY = "Policy"  # the attribute, kept in QueueAttrs.extra
POLICY_VERSION = "2008-10-17"
actions_per_statement_max = 7
statements_per_policy_max = 20
principals_per_policy_max = 50
label_chars_max = 80

_LABEL = re.compile(rf"[A-Za-z0-9_-]{{1,{label_chars_max}}}")
_ACCOUNT_ID = re.compile(r"[0-9]{12}")
# The actions AddPermission may grant another account; "*" grants them all.
SHAREABLE = frozenset(
    {
        "*",
        "ChangeMessageVisibility",
        "DeleteMessage",
        "GetQueueAttributes",
        "GetQueueUrl",
        "ListDeadLetterSourceQueues",
        "PurgeQueue",
        "ReceiveMessage",
        "SendMessage",
    }
)


def _over_limit(message: str) -> SqsError:
    return SqsError("OverLimit", message, 403)  # SQS's API reference: OverLimit is a 403


def _check_request(label: str, accounts: list[str], actions: list[str]) -> None:
    if not _LABEL.fullmatch(label):
        raise invalid(
            f"Value {label[:200]} for parameter Label is invalid. Reason: a label is 1 to "
            f"{label_chars_max} letters, digits, hyphens or underscores."
        )
    if not actions:
        raise missing("Actions")
    if not accounts:
        raise invalid("Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.")
    for account in accounts:
        if not _ACCOUNT_ID.fullmatch(account):
            raise invalid(
                f"Value {account[:200]} for parameter PrincipalId is invalid. "
                "Reason: Unable to verify."
            )
    if len(actions) > actions_per_statement_max:
        raise _over_limit(
            f"{len(actions)} Actions were found, maximum allowed is {actions_per_statement_max}."
        )
    for action in actions:
        if action in SHAREABLE:
            continue
        reason = (
            "Only the queue owner is allowed to invoke this action."
            if action in ACTIONS
            else "Please refer to the appropriate WSDL for a list of valid actions."
        )
        raise invalid(
            f"Value SQS:{action[:200]} for parameter ActionName is invalid. Reason: {reason}"
        )


def _statements(policy: dict[str, Any]) -> list[Any]:
    """The policy's statements as a list (a policy may hold one as a bare object)."""
    found = policy.get("Statement", [])
    if isinstance(found, dict):
        return [found]
    if not isinstance(found, list):
        raise invalid("The queue's Policy has a Statement that is neither an object nor a list.")
    return list(found)


def _policy(attrs: QueueAttrs) -> dict[str, Any] | None:
    raw = attrs.extra.get(POLICY)
    if raw is None:
        return None
    parsed = json.loads(raw)  # validated as a JSON object when it was stored
    return parsed if isinstance(parsed, dict) else None


def _principals(statement: Any) -> int:
    if not isinstance(statement, dict) or not isinstance(statement.get("Principal"), dict):
        return 0
    found = statement["Principal"].get("AWS")
    return len(found) if isinstance(found, list) else 1


def _with_policy(attrs: QueueAttrs, policy: dict[str, Any] | None) -> QueueAttrs:
    extra = dict(attrs.extra)
    if policy is None:
        extra.pop(POLICY, None)
    else:
        extra[POLICY] = json.dumps(policy, separators=(",", ":"))
    return replace(attrs, extra=extra)


def add_statement(
    attrs: QueueAttrs, queue_arn: str, label: str, accounts: list[str], actions: list[str]
) -> QueueAttrs:
    """`attrs` with the statement AddPermission writes added to its Policy (pure)."""
    _check_request(label, accounts, actions)
    policy = _policy(attrs) or {
        "Version": POLICY_VERSION,
        "Id": f"{queue_arn}/SQSDefaultPolicy",
        "Statement": [],
    }
    statements = _statements(policy)
    if any(isinstance(s, dict) and s.get("Sid") == label for s in statements):
        raise invalid(f"Value {label} for parameter Label is invalid. Reason: Already exists.")
    partition = queue_arn.split(":", 2)[1]
    principals = [f"arn:{partition}:iam::{a}:root" for a in dict.fromkeys(accounts)]
    granted = [f"SQS:{a}" for a in dict.fromkeys(actions)]
    statements.append(
        {
            "Sid": label,
            "Effect": "Allow",
            "Principal": {"AWS": principals[0] if len(principals) == 1 else principals},
            "Action": granted[0] if len(granted) == 1 else granted,
            "Resource": queue_arn,
        }
    )
    if len(statements) > statements_per_policy_max:
        raise _over_limit(
            f"A queue's policy can hold at most {statements_per_policy_max} statements."
        )
    if sum(_principals(s) for s in statements) > principals_per_policy_max:
        raise _over_limit(
            f"A queue's policy can name at most {principals_per_policy_max} principals."
        )
    changed = _with_policy(attrs, {**policy, "Statement": statements})
    if len(changed.extra[POLICY].encode()) > qa.policy_bytes_max:
        raise _over_limit(qa.POLICY_TOO_LARGE)
    return changed


def remove_statements(attrs: QueueAttrs, label: str) -> QueueAttrs:
    """`attrs` without the Policy statements whose Sid is `label` (pure)."""
    policy = _policy(attrs)
    statements = _statements(policy) if policy is not None else []
    kept = [s for s in statements if not (isinstance(s, dict) and s.get("Sid") == label)]
    if policy is None or len(kept) == len(statements):
        raise invalid(
            f"Value {label[:200]} for parameter Label is invalid. Reason: can't find label."
        )
    return _with_policy(attrs, {**policy, "Statement": kept} if kept else None)


async def add_permission(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    name = sqs.queue_name(p["QueueUrl"])
    label, accounts, actions = p["Label"], p["AWSAccountIds"], p["Actions"]
    _check_request(label, accounts, actions)  # refuse a malformed request before reading the queue
    arn = sqs.arn(name)
    await sqs.engine.update_attributes(
        name, lambda attrs: add_statement(attrs, arn, label, accounts, actions)
    )
    return {}


async def remove_permission(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    name = sqs.queue_name(p["QueueUrl"])
    label = p["Label"]
    await sqs.engine.update_attributes(name, lambda attrs: remove_statements(attrs, label))
    return {}
