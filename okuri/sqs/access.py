"""Who may run which SQS action on which queues: each action in okuri's operation vocabulary.

The same principals cover both surfaces: an SQS access key has a role and a namespace, as a
native bearer key does, and the decision is the one pure rule of `okuri.principals.roles`.
This module only says which operation each SQS action is, which queues a request names, and
answers a refusal as AWS does: HTTP 403 AccessDenied, "User: <arn> is not authorized to
perform: sqs:<Action> on resource: <queue arn> because ...". The batch actions are authorised
as their single forms (IAM has no sqs:SendMessageBatch: AWS's own message names
sqs:SendMessage).

| SQS action | operation | queues checked |
| --- | --- | --- |
| CreateQueue | create_queue | QueueName, and its RedrivePolicy's dead-letter queue |
| GetQueueUrl, GetQueueAttributes, ListQueueTags | get_queue | the queue |
| ListQueues | list_queues | QueueNamePrefix; the listing is narrowed to the namespace |
| ListDeadLetterSourceQueues | get_queue | the queue; sources outside the namespace are left out |
| SetQueueAttributes | update_queue | the queue; create_queue on a RedrivePolicy's queue |
| TagQueue, UntagQueue, AddPermission, RemovePermission | update_queue | the queue |
| DeleteQueue | delete_queue | the queue |
| PurgeQueue | purge_queue | the queue |
| SendMessage, SendMessageBatch | produce | the queue |
| ReceiveMessage | lease | the queue |
| DeleteMessage, DeleteMessageBatch | complete | the queue |
| ChangeMessageVisibility, ChangeMessageVisibilityBatch | extend | the queue |
| StartMessageMoveTask | redrive | SourceArn and DestinationArn (a namespaced key must name one) |
| CancelMessageMoveTask | redrive | the source queue its TaskHandle names |
| ListMessageMoveTasks | get_queue | SourceArn |

Authorisation comes before the action runs, as in AWS: a consumer deleting a queue that does
not exist hears AccessDenied, not QueueDoesNotExist. A malformed queue URL or ARN still
answers the action's own error (it names no queue to decide on).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from okuri.principals.roles import Decision, Operation, Principal, decide, list_prefix
from okuri.sqs import queue_attributes as qa
from okuri.sqs.actions import NAMESPACE_PARAM, SqsActions
from okuri.sqs.errors import SqsError
from okuri.sqs.move_tasks import decode_handle, queue_of_arn

OPERATION_OF: Mapping[str, Operation] = {
    "CreateQueue": "create_queue",
    "GetQueueUrl": "get_queue",
    "ListQueues": "list_queues",
    "DeleteQueue": "delete_queue",
    "PurgeQueue": "purge_queue",
    "GetQueueAttributes": "get_queue",
    "SetQueueAttributes": "update_queue",
    "SendMessage": "produce",
    "SendMessageBatch": "produce",
    "ReceiveMessage": "lease",
    "DeleteMessage": "complete",
    "DeleteMessageBatch": "complete",
    "ChangeMessageVisibility": "extend",
    "ChangeMessageVisibilityBatch": "extend",
    "TagQueue": "update_queue",
    "UntagQueue": "update_queue",
    "ListQueueTags": "get_queue",
    "ListDeadLetterSourceQueues": "get_queue",
    "StartMessageMoveTask": "redrive",
    "ListMessageMoveTasks": "get_queue",
    "CancelMessageMoveTask": "redrive",
    "AddPermission": "update_queue",
    "RemovePermission": "update_queue",
}
_BATCH_SUFFIX = "Batch"


def iam_action(action: str) -> str:
    """The IAM action an SQS action is authorised as: a batch as its single form."""
    return "sqs:" + action.removesuffix(_BATCH_SUFFIX)


def access_denied(
    sqs: SqsActions, principal: Principal, action: str, resource: str, because: str
) -> SqsError:
    """AWS's refusal: 403 AccessDenied, naming the caller, the IAM action and the resource."""
    return SqsError(
        "AccessDenied",
        f"User: arn:aws:iam::{sqs.account_id}:user/{principal.key_id} is not authorized to "
        f"perform: {iam_action(action)} on resource: {resource} because {because}",
        403,
    )


def _reason(verdict: Decision, principal: Principal, action: str) -> str:
    if verdict == "wrong_role":
        return f"okuri's {principal.role} role does not allow the {iam_action(action)} action"
    return f"the queue is outside the key's namespace '{principal.namespace}'"


def _dead_letter_queue(attributes: Mapping[str, str] | None) -> str | None:
    """The dead-letter queue a RedrivePolicy among `attributes` names; None when there is none
    or the policy does not parse (the action then refuses it in SQS's words)."""
    raw = (attributes or {}).get("RedrivePolicy")
    if not raw:
        return None
    try:
        policy = qa.parse_redrive_policy(raw)
    except SqsError:
        return None
    return policy.dead_letter_queue if policy is not None else None


def checks(action: str, p: Mapping[str, Any]) -> list[tuple[Operation, str]]:
    """The (operation, queue) pairs a request needs allowed, first the queue it acts on. For
    ListQueues the "queue" is the prefix listed. Raises the action's own error for a queue URL
    or ARN that names no queue."""
    operation = OPERATION_OF[action]
    if action == "ListQueues":
        return [(operation, p.get("QueueNamePrefix") or "")]
    if action in ("CreateQueue", "GetQueueUrl"):
        out = [(operation, str(p["QueueName"]))]
    elif action in ("StartMessageMoveTask", "ListMessageMoveTasks"):
        out = [(operation, queue_of_arn(p["SourceArn"], "SourceArn"))]
        if p.get("DestinationArn"):
            out.append((operation, queue_of_arn(p["DestinationArn"], "DestinationArn")))
    elif action == "CancelMessageMoveTask":
        _, source_arn = decode_handle(p["TaskHandle"])
        out = [(operation, queue_of_arn(source_arn, "SourceArn"))]
    else:
        out = [(operation, SqsActions.name_in_url(p["QueueUrl"]))]
    if action in ("CreateQueue", "SetQueueAttributes"):
        # A dead-letter queue is created on first use: the key must be able to create it.
        dlq = _dead_letter_queue(p.get("Attributes"))
        if dlq is not None:
            out.append(("create_queue", dlq))
    return out


def authorize(
    sqs: SqsActions, principal: Principal, action: str, p: dict[str, Any]
) -> dict[str, Any]:
    """The request's members if `principal` may run it (ListQueues' prefix narrowed to the
    namespace); AccessDenied otherwise."""
    for operation, queue in checks(action, p):
        verdict = decide(operation, principal.role, principal.namespace, queue)
        if verdict != "allow":
            resource = sqs.arn(queue + "*" if action == "ListQueues" else queue)
            because = _reason(verdict, principal, action)
            raise access_denied(sqs, principal, action, resource, because)
    if action == "StartMessageMoveTask" and principal.namespace and not p.get("DestinationArn"):
        # Back to each message's source: queues the key may not reach, unknown beforehand.
        raise access_denied(
            sqs,
            principal,
            action,
            sqs.arn(queue_of_arn(p["SourceArn"], "SourceArn")),
            "a key limited to a namespace must name the DestinationArn of a move task",
        )
    if action == "ListQueues":
        prefix = list_prefix(principal.namespace, p.get("QueueNamePrefix") or "")
        return {**p, "QueueNamePrefix": prefix} if prefix else p
    if action == "CreateQueue" and principal.namespace:
        return {**p, NAMESPACE_PARAM: principal.namespace}  # the namespace's queue quota
    return p


def narrow(principal: Principal, action: str, result: dict[str, Any]) -> dict[str, Any]:
    """The answer with what lies outside the key's namespace left out: the dead-letter sources
    a listing would otherwise name."""
    urls = result.get("queueUrls")
    if action != "ListDeadLetterSourceQueues" or not principal.namespace or urls is None:
        return result
    inside = [u for u in urls if SqsActions.name_in_url(u).startswith(principal.namespace)]
    return {**result, "queueUrls": inside}
