"""Dead-letter queues: ListDeadLetterSourceQueues and the message move tasks.

A queue's dead-letter *sources* are the queues that dead-letter to it: those whose RedrivePolicy
names it, or, for a queue given only a receive limit, the queue whose name it is plus "-dlq"
(`okuri.engine.dead_letter_target`, the rule the engine's dead-letter move itself
follows). A move task needs such a source, as SQS's does.

Start, list and cancel follow SQS's recorded answers: a source that is not a dead-letter queue
is InvalidParameterValue "Source queue must be configured as a Dead Letter Queue."; a second
active task is InvalidParameterValue; a queue or task that does not exist is
ResourceNotFoundException (HTTP 404); an undecodable TaskHandle is InvalidParameterValue "Value
for parameter TaskHandle is invalid.". A task handle names the task and its source queue (SQS's
carry both too), so any node can cancel a task from the handle alone. Queue ARNs are read as
leniently as queue URLs: any region and account, the last component names the queue.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any

from okuri.engine import (
    MOVE_TASK_FAILED,
    MOVE_TASK_RUNNING,
    QUEUE_NAME,
    DestinationDoesNotExist,
    MoveTask,
)
from okuri.errors import QueueDoesNotExist, QueueError
from okuri.sqs import paging
from okuri.sqs.errors import SqsError, from_okuri, invalid, resource_not_found

if TYPE_CHECKING:
    from okuri.sqs.actions import SqsActions

rate_per_s_max = 500  # MaxNumberOfMessagesPerSecond
list_tasks_max = 10  # ListMessageMoveTasks' MaxResults

_ARN = re.compile(r"arn:([^:]+):([^:]+):([^:]*):([^:]*):(.+)", re.S)


def queue_of_arn(arn: str, parameter: str) -> str:
    """The queue an ARN names; its format refused as SQS refuses it, a non-queue not found."""
    found = _ARN.fullmatch(arn)
    if found is None:
        raise invalid(
            f"You must use this format to specify the {parameter}: "
            "arn:<partition>:<service>:<region>:<account-id>:<resource-id>"
        )
    service, name = found.group(2), found.group(5)
    if service != "sqs" or not QUEUE_NAME.fullmatch(name):
        raise _not_found(parameter)
    return name


def _not_found(parameter: str) -> SqsError:
    return resource_not_found(
        f"The resource that you specified for the {parameter} parameter doesn't exist."
    )


def encode_handle(task_id: str, source_arn: str) -> str:
    raw = json.dumps({"taskId": task_id, "sourceArn": source_arn}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode()


def decode_handle(handle: str) -> tuple[str, str]:
    """(task id, source ARN) from a TaskHandle; InvalidParameterValue if it is not one."""
    bad = invalid("Value for parameter TaskHandle is invalid.")
    try:
        raw = base64.urlsafe_b64decode(handle.encode() + b"=" * (-len(handle) % 4))
        fields = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeError):
        raise bad from None
    if not isinstance(fields, dict):
        raise bad
    task_id, source_arn = fields.get("taskId"), fields.get("sourceArn")
    if not isinstance(task_id, str) or not isinstance(source_arn, str) or not task_id:
        raise bad
    return task_id, source_arn


# --- actions ------------------------------------------------------------------------------------


async def list_dead_letter_source_queues(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    name = sqs.queue_name(p["QueueUrl"])
    max_results = paging.check_max_results(p.get("MaxResults"))
    after = paging.decode_token(p.get("NextToken"))
    await sqs.engine.get_queue(name)
    limit = max_results or paging.list_results_max
    names, more_after = await sqs.engine.dead_letter_sources(name, limit + 1, after)
    page = names[:limit]
    out: dict[str, Any] = {"queueUrls": [sqs.queue_url(n, host) for n in page]}
    token = page[-1] if len(names) > limit else more_after
    if max_results is not None and token:
        out["NextToken"] = paging.encode_token(token)
    return out


async def start_message_move_task(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    source = queue_of_arn(p["SourceArn"], "SourceArn")
    destination_arn = p.get("DestinationArn") or None  # "left blank": back to the sources
    destination = (
        queue_of_arn(destination_arn, "DestinationArn") if destination_arn is not None else None
    )
    rate = p.get("MaxNumberOfMessagesPerSecond")
    if rate is not None and not 1 <= rate <= rate_per_s_max:
        raise invalid(
            f"Value {rate} for parameter MaxNumberOfMessagesPerSecond is invalid. "
            f"Reason: Must be between 1 and {rate_per_s_max}, if provided."
        )
    if destination == source:
        raise invalid("Source queue arn and destination queue arn cannot be the same.")
    try:
        task = await sqs.engine.start_move_task(source, destination, rate)
    except DestinationDoesNotExist:
        raise _not_found("DestinationArn") from None
    except QueueDoesNotExist:
        raise _not_found("SourceArn") from None
    except QueueError as err:
        raise from_okuri(err) from err
    return {"TaskHandle": encode_handle(task.id, sqs.arn(source))}


async def list_message_move_tasks(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    source = queue_of_arn(p["SourceArn"], "SourceArn")
    max_results = p.get("MaxResults", 1)
    if not 1 <= max_results <= list_tasks_max:
        raise invalid(
            f"Value {max_results} for parameter MaxResults is invalid. "
            f"Reason: Must be between 1 and {list_tasks_max}, if provided."
        )
    try:
        tasks = await sqs.engine.list_move_tasks(source, max_results)
    except QueueDoesNotExist:
        raise _not_found("SourceArn") from None
    return {"Results": [_entry(sqs, t) for t in tasks]}


def _entry(sqs: SqsActions, task: MoveTask) -> dict[str, Any]:
    """One ListMessageMoveTasks result: optional members only when they apply, as SQS sends."""
    source_arn = sqs.arn(task.source)
    out: dict[str, Any] = {}
    if task.status == MOVE_TASK_RUNNING:
        out["TaskHandle"] = encode_handle(task.id, source_arn)
    out["Status"] = task.status
    out["SourceArn"] = source_arn
    if task.destination is not None:
        out["DestinationArn"] = sqs.arn(task.destination)
    if task.rate is not None:
        out["MaxNumberOfMessagesPerSecond"] = task.rate
    out["ApproximateNumberOfMessagesMoved"] = task.moved
    out["ApproximateNumberOfMessagesToMove"] = task.to_move
    if task.status == MOVE_TASK_FAILED and task.failure:
        out["FailureReason"] = task.failure
    out["StartedTimestamp"] = task.started_ms
    return out


async def cancel_message_move_task(
    sqs: SqsActions, p: dict[str, Any], host: str, caller: str
) -> dict[str, Any]:
    task_id, source_arn = decode_handle(p["TaskHandle"])
    try:
        source = queue_of_arn(source_arn, "SourceArn")
    except SqsError:
        raise _not_found("SourceArn") from None
    try:
        task = await sqs.engine.cancel_move_task(source, task_id)
    except QueueDoesNotExist:
        raise _not_found("SourceArn") from None
    except QueueError as err:
        raise from_okuri(err) from err
    return {"ApproximateNumberOfMessagesMoved": task.moved}
