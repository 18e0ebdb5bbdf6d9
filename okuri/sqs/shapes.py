"""Request shapes of the SQS actions okuri serves: members, their JSON types, which are required.

The member lists follow SQS's published API model. A request naming a member an action does not
have, or giving one the wrong JSON type, is refused before it reaches the engine: the same
400 an SDK-less client would get from a strict AWS JSON service, never a 500. A member given as
JSON null is absent, as AWS's JSON protocols treat it: the checked request the actions see has
no null members, so `p.get(name, default)` means what it says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from okuri.sqs.errors import SqsError, missing

Check = Callable[[Any, str], Any]


def _type_error(path: str, expected: str) -> SqsError:
    return SqsError("SerializationException", f"{path} must be {expected}.")


def string(v: Any, path: str) -> str:
    if not isinstance(v, str):
        raise _type_error(path, "a string")
    return v


def integer(v: Any, path: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _type_error(path, "an integer")
    return v


def string_map(v: Any, path: str) -> dict[str, str]:
    if not isinstance(v, dict):
        raise _type_error(path, "an object of strings")
    for key, value in v.items():
        string(value, f"{path}.{key}")
    return v


def string_list(v: Any, path: str) -> list[str]:
    if not isinstance(v, list):
        raise _type_error(path, "a list of strings")
    for i, item in enumerate(v):
        string(item, f"{path}[{i}]")
    return v


ATTRIBUTE_VALUE: dict[str, Check] = {
    "DataType": string,
    "StringValue": string,
    "BinaryValue": string,  # base64 on the wire
    "StringListValues": string_list,
    "BinaryListValues": string_list,
}


def attribute_map(v: Any, path: str) -> dict[str, dict[str, Any]]:
    if not isinstance(v, dict):
        raise _type_error(path, "an object")
    return {
        name: structure(value, f"{path}.{name}", ATTRIBUTE_VALUE, ("DataType",))
        for name, value in v.items()
    }


def structure(
    v: Any, path: str, members: Mapping[str, Check], required: tuple[str, ...]
) -> dict[str, Any]:
    """`v` checked against `members`, returned without its null (absent) members."""
    if not isinstance(v, dict):
        raise _type_error(path or "The request body", "a JSON object")
    out: dict[str, Any] = {}
    for key, value in v.items():
        check = members.get(key)
        if check is None:
            raise SqsError(
                "InvalidParameterValue",
                f"Unknown parameter {key!r}{' in ' + path if path else ''}.",
            )
        if value is not None:
            out[key] = check(value, f"{path}.{key}" if path else key)
    for key in required:
        if key not in out:
            raise missing(f"{path}.{key}" if path else key)
    return out


def entries(members: Mapping[str, Check], required: tuple[str, ...]) -> Check:
    def check(v: Any, path: str) -> list[dict[str, Any]]:
        if not isinstance(v, list):
            raise _type_error(path, "a list")
        return [structure(item, f"{path}[{i}]", members, required) for i, item in enumerate(v)]

    return check


SEND_MEMBERS: dict[str, Check] = {
    "MessageBody": string,
    "DelaySeconds": integer,
    "MessageAttributes": attribute_map,
    "MessageSystemAttributes": attribute_map,
    "MessageDeduplicationId": string,
    "MessageGroupId": string,
}

ACTIONS: dict[str, tuple[dict[str, Check], tuple[str, ...]]] = {
    "CreateQueue": (
        {"QueueName": string, "Attributes": string_map, "tags": string_map},
        ("QueueName",),
    ),
    "GetQueueUrl": ({"QueueName": string, "QueueOwnerAWSAccountId": string}, ("QueueName",)),
    "ListQueues": (
        {"QueueNamePrefix": string, "NextToken": string, "MaxResults": integer},
        (),
    ),
    "DeleteQueue": ({"QueueUrl": string}, ("QueueUrl",)),
    "PurgeQueue": ({"QueueUrl": string}, ("QueueUrl",)),
    "GetQueueAttributes": ({"QueueUrl": string, "AttributeNames": string_list}, ("QueueUrl",)),
    "SetQueueAttributes": (
        {"QueueUrl": string, "Attributes": string_map},
        ("QueueUrl", "Attributes"),
    ),
    "SendMessage": ({"QueueUrl": string, **SEND_MEMBERS}, ("QueueUrl", "MessageBody")),
    "SendMessageBatch": (
        {
            "QueueUrl": string,
            "Entries": entries({"Id": string, **SEND_MEMBERS}, ("Id", "MessageBody")),
        },
        ("QueueUrl", "Entries"),
    ),
    "ReceiveMessage": (
        {
            "QueueUrl": string,
            "AttributeNames": string_list,
            "MessageSystemAttributeNames": string_list,
            "MessageAttributeNames": string_list,
            "MaxNumberOfMessages": integer,
            "VisibilityTimeout": integer,
            "WaitTimeSeconds": integer,
            "ReceiveRequestAttemptId": string,
        },
        ("QueueUrl",),
    ),
    "DeleteMessage": ({"QueueUrl": string, "ReceiptHandle": string}, ("QueueUrl", "ReceiptHandle")),
    "DeleteMessageBatch": (
        {
            "QueueUrl": string,
            "Entries": entries({"Id": string, "ReceiptHandle": string}, ("Id", "ReceiptHandle")),
        },
        ("QueueUrl", "Entries"),
    ),
    "ChangeMessageVisibility": (
        {"QueueUrl": string, "ReceiptHandle": string, "VisibilityTimeout": integer},
        ("QueueUrl", "ReceiptHandle", "VisibilityTimeout"),
    ),
    "ChangeMessageVisibilityBatch": (
        {
            "QueueUrl": string,
            "Entries": entries(
                {"Id": string, "ReceiptHandle": string, "VisibilityTimeout": integer},
                ("Id", "ReceiptHandle"),
            ),
        },
        ("QueueUrl", "Entries"),
    ),
    "TagQueue": ({"QueueUrl": string, "Tags": string_map}, ("QueueUrl", "Tags")),
    "UntagQueue": ({"QueueUrl": string, "TagKeys": string_list}, ("QueueUrl", "TagKeys")),
    "ListQueueTags": ({"QueueUrl": string}, ("QueueUrl",)),
    "ListDeadLetterSourceQueues": (
        {"QueueUrl": string, "NextToken": string, "MaxResults": integer},
        ("QueueUrl",),
    ),
    "StartMessageMoveTask": (
        {"SourceArn": string, "DestinationArn": string, "MaxNumberOfMessagesPerSecond": integer},
        ("SourceArn",),
    ),
    "ListMessageMoveTasks": ({"SourceArn": string, "MaxResults": integer}, ("SourceArn",)),
    "CancelMessageMoveTask": ({"TaskHandle": string}, ("TaskHandle",)),
    "AddPermission": (
        {"QueueUrl": string, "Label": string, "AWSAccountIds": string_list, "Actions": string_list},
        ("QueueUrl", "Label", "AWSAccountIds", "Actions"),
    ),
    "RemovePermission": ({"QueueUrl": string, "Label": string}, ("QueueUrl", "Label")),
}

# Actions SQS has that okuri does not serve: they answer UnsupportedOperation by name (none today).
UNSUPPORTED: frozenset[str] = frozenset()


def check_request(action: str, body: Any) -> dict[str, Any]:
    """The request's members, checked; what the action must be given (nulls dropped)."""
    members, required = ACTIONS[action]
    return structure(body, "", members, required)
