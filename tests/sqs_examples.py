"""One well-formed request per SQS action, naming a given queue: the SQS half of the role
matrix (tests/unit/test_sqs_access.py against the pure check, tests/surface/test_role_matrix.py
against a real server started with the same account id)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from okuri.sqs.actions import SqsActions
from okuri.sqs.move_tasks import encode_handle
from okuri.sqs.shapes import check_request

ACCOUNT_ID = "123456789012"
SQS = SqsActions(engine=None, account_id=ACCOUNT_ID)  # type: ignore[arg-type]  # naming only


def url(name: str) -> str:
    return f"http://localhost:8080/{ACCOUNT_ID}/{name}"


def redrive(dlq: str) -> str:
    return json.dumps({"deadLetterTargetArn": SQS.arn(dlq), "maxReceiveCount": 3})


# One well-formed request per action, naming `queue` (and, where a request names two queues,
# both the same side of the namespace line).
EXAMPLES: dict[str, Callable[[str], dict[str, Any]]] = {
    "CreateQueue": lambda q: {
        "QueueName": q,
        "Attributes": {"RedrivePolicy": redrive(q + "-dlq")},
    },
    "GetQueueUrl": lambda q: {"QueueName": q},
    "ListQueues": lambda q: {"QueueNamePrefix": q},
    "DeleteQueue": lambda q: {"QueueUrl": url(q)},
    "PurgeQueue": lambda q: {"QueueUrl": url(q)},
    "GetQueueAttributes": lambda q: {"QueueUrl": url(q), "AttributeNames": ["All"]},
    "SetQueueAttributes": lambda q: {
        "QueueUrl": url(q),
        "Attributes": {"RedrivePolicy": redrive(q + "-dlq")},
    },
    "SendMessage": lambda q: {"QueueUrl": url(q), "MessageBody": "x"},
    "SendMessageBatch": lambda q: {
        "QueueUrl": url(q),
        "Entries": [{"Id": "1", "MessageBody": "x"}],
    },
    "ReceiveMessage": lambda q: {"QueueUrl": url(q)},
    "DeleteMessage": lambda q: {"QueueUrl": url(q), "ReceiptHandle": "h"},
    "DeleteMessageBatch": lambda q: {
        "QueueUrl": url(q),
        "Entries": [{"Id": "1", "ReceiptHandle": "h"}],
    },
    "ChangeMessageVisibility": lambda q: {
        "QueueUrl": url(q),
        "ReceiptHandle": "h",
        "VisibilityTimeout": 5,
    },
    "ChangeMessageVisibilityBatch": lambda q: {
        "QueueUrl": url(q),
        "Entries": [{"Id": "1", "ReceiptHandle": "h", "VisibilityTimeout": 5}],
    },
    "TagQueue": lambda q: {"QueueUrl": url(q), "Tags": {"team": "a"}},
    "UntagQueue": lambda q: {"QueueUrl": url(q), "TagKeys": ["team"]},
    "ListQueueTags": lambda q: {"QueueUrl": url(q)},
    "ListDeadLetterSourceQueues": lambda q: {"QueueUrl": url(q)},
    "StartMessageMoveTask": lambda q: {
        "SourceArn": SQS.arn(q + "-dlq"),
        "DestinationArn": SQS.arn(q),
    },
    "ListMessageMoveTasks": lambda q: {"SourceArn": SQS.arn(q + "-dlq")},
    "CancelMessageMoveTask": lambda q: {"TaskHandle": encode_handle("t1", SQS.arn(q + "-dlq"))},
    "AddPermission": lambda q: {
        "QueueUrl": url(q),
        "Label": "l",
        "AWSAccountIds": ["111122223333"],
        "Actions": ["SendMessage"],
    },
    "RemovePermission": lambda q: {"QueueUrl": url(q), "Label": "l"},
}


def request(action: str, queue: str) -> dict[str, Any]:
    return check_request(action, EXAMPLES[action](queue))  # well-formed, as the surface checks


