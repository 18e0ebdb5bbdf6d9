"""docs/sqs-compatibility.md's action matrix, checked against a running server.

Every SQS action is in the matrix. One listed as supported is called with a minimal valid request,
through boto3 (AWS JSON 1.0) and as a signed query-protocol request, and must succeed; one listed
as unsupported must be one the server's table refuses by name with UnsupportedOperation (none
is today). So the page cannot claim what the server does not do, nor hide what it refuses.
"""

from __future__ import annotations

import re
import time
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import botocore.loaders
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from okuri.sqs.query import XMLNS
from okuri.sqs.shapes import UNSUPPORTED
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, create_with_dead_letter_queue, http

DOC = Path(__file__).resolve().parents[2] / "docs" / "sqs-compatibility.md"
ROW = re.compile(r"^\| (\w+) \| (supported|unsupported) \|", re.M)


def matrix() -> dict[str, str]:
    section = re.search(r"<!-- actions -->(.*?)<!-- /actions -->", DOC.read_text(), re.S)
    assert section, "docs/sqs-compatibility.md has no <!-- actions --> matrix"
    return dict(ROW.findall(section.group(1)))


def sqs_operations() -> set[str]:
    model = botocore.loaders.Loader().load_service_model("sqs", "service-2")
    return set(model["operations"])


def test_the_matrix_lists_every_sqs_action_once() -> None:
    rows = ROW.findall(DOC.read_text())
    names = [name for name, _ in rows]
    assert len(names) == len(set(names))
    assert set(names) == sqs_operations()


Call = Callable[[Any, dict[str, str]], Any]


def _setup(client: Any, tag: str) -> dict[str, str]:
    """A queue with a message in flight, and a dead-letter queue with a source and messages."""
    url, dlq, dlq_arn = create_with_dead_letter_queue(client, f"mx-{tag}", 5)
    client.send_message_batch(
        QueueUrl=dlq, Entries=[{"Id": str(i), "MessageBody": f"dead {i}"} for i in range(10)]
    )
    client.send_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m {i}"} for i in range(6)]
    )
    return {"url": url, "dlq": dlq, "dlq_arn": dlq_arn, "tag": tag}


def _handle(client: Any, url: str) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = client.receive_message(QueueUrl=url, WaitTimeSeconds=1, VisibilityTimeout=60)
        if got.get("Messages"):
            return str(got["Messages"][0]["ReceiptHandle"])
    pytest.fail(f"no message to receive from {url}")


def _start_move(c: Any, x: dict[str, str]) -> Any:
    return c.start_message_move_task(SourceArn=x["dlq_arn"], MaxNumberOfMessagesPerSecond=1)


def _cancel_move(c: Any, x: dict[str, str]) -> Any:
    tasks = c.list_message_move_tasks(SourceArn=x["dlq_arn"])["Results"]
    running = [t for t in tasks if t["Status"] == "RUNNING"]
    handle = running[0]["TaskHandle"] if running else _start_move(c, x)["TaskHandle"]
    return c.cancel_message_move_task(TaskHandle=handle)


# Minimal valid boto3 calls, in an order where each finds what it needs.
CALLS: dict[str, Call] = {
    "CreateQueue": lambda c, x: c.create_queue(QueueName=f"mx-{x['tag']}-new"),
    "GetQueueUrl": lambda c, x: c.get_queue_url(QueueName=f"mx-{x['tag']}"),
    "ListQueues": lambda c, x: c.list_queues(QueueNamePrefix="mx-"),
    "GetQueueAttributes": lambda c, x: c.get_queue_attributes(
        QueueUrl=x["url"], AttributeNames=["All"]
    ),
    "SetQueueAttributes": lambda c, x: c.set_queue_attributes(
        QueueUrl=x["url"], Attributes={"DelaySeconds": "0"}
    ),
    "SendMessage": lambda c, x: c.send_message(QueueUrl=x["url"], MessageBody="hello"),
    "SendMessageBatch": lambda c, x: c.send_message_batch(
        QueueUrl=x["url"], Entries=[{"Id": "a", "MessageBody": "one"}]
    ),
    "ReceiveMessage": lambda c, x: c.receive_message(QueueUrl=x["url"], WaitTimeSeconds=1),
    "ChangeMessageVisibility": lambda c, x: c.change_message_visibility(
        QueueUrl=x["url"], ReceiptHandle=_handle(c, x["url"]), VisibilityTimeout=30
    ),
    "ChangeMessageVisibilityBatch": lambda c, x: c.change_message_visibility_batch(
        QueueUrl=x["url"],
        Entries=[{"Id": "a", "ReceiptHandle": _handle(c, x["url"]), "VisibilityTimeout": 30}],
    ),
    "DeleteMessage": lambda c, x: c.delete_message(
        QueueUrl=x["url"], ReceiptHandle=_handle(c, x["url"])
    ),
    "DeleteMessageBatch": lambda c, x: c.delete_message_batch(
        QueueUrl=x["url"], Entries=[{"Id": "a", "ReceiptHandle": _handle(c, x["url"])}]
    ),
    "TagQueue": lambda c, x: c.tag_queue(QueueUrl=x["url"], Tags={"team": "blue"}),
    "ListQueueTags": lambda c, x: c.list_queue_tags(QueueUrl=x["url"]),
    "UntagQueue": lambda c, x: c.untag_queue(QueueUrl=x["url"], TagKeys=["team"]),
    "ListDeadLetterSourceQueues": lambda c, x: c.list_dead_letter_source_queues(QueueUrl=x["dlq"]),
    "StartMessageMoveTask": _start_move,
    "ListMessageMoveTasks": lambda c, x: c.list_message_move_tasks(SourceArn=x["dlq_arn"]),
    "CancelMessageMoveTask": _cancel_move,
    "AddPermission": lambda c, x: c.add_permission(
        QueueUrl=x["url"], Label="l", AWSAccountIds=["000000000000"], Actions=["SendMessage"]
    ),
    "RemovePermission": lambda c, x: c.remove_permission(QueueUrl=x["url"], Label="l"),
    "PurgeQueue": lambda c, x: c.purge_queue(QueueUrl=x["url"]),
    "DeleteQueue": lambda c, x: c.delete_queue(QueueUrl=x["url"]),
}


def test_every_matrix_row_has_a_call() -> None:
    rows = matrix()
    assert {a for a, s in rows.items() if s == "supported"} == set(CALLS)
    assert {a for a, s in rows.items() if s == "unsupported"} == set(UNSUPPORTED)


def test_supported_actions_work_over_json(sqs_server: ServerProcess) -> None:
    sqs = sqs_server.sqs_client()
    ctx = _setup(sqs, f"json-{time.monotonic_ns()}")
    for action, call in CALLS.items():
        response = call(sqs, ctx)
        assert response["ResponseMetadata"]["HTTPStatusCode"] == 200, action


def query_code(server: ServerProcess, action: str, params: dict[str, str]) -> str | None:
    """The XML error code of a signed query-protocol request, or None when it succeeded."""
    body = urllib.parse.urlencode({"Action": action, "Version": "2012-11-05", **params})
    request = AWSRequest(
        "POST",
        server.url + "/",
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", "us-east-1").add_auth(request)
    response = http("POST", server.url + "/", body.encode(), dict(request.headers.items()))
    if response.status == 200:
        return None
    return ET.fromstring(response.body).findtext(f"{{{XMLNS}}}Error/{{{XMLNS}}}Code")


def test_supported_actions_work_over_the_query_protocol(sqs_server: ServerProcess) -> None:
    sqs = sqs_server.sqs_client()
    ctx = _setup(sqs, f"query-{time.monotonic_ns()}")
    handle = lambda: _handle(sqs, ctx["url"])  # noqa: E731
    params: dict[str, Callable[[], dict[str, str]]] = {
        "CreateQueue": lambda: {"QueueName": f"mx-{ctx['tag']}-new"},
        "GetQueueUrl": lambda: {"QueueName": f"mx-{ctx['tag']}"},
        "ListQueues": lambda: {"QueueNamePrefix": "mx-"},
        "GetQueueAttributes": lambda: {"QueueUrl": ctx["url"], "AttributeName.1": "All"},
        "SetQueueAttributes": lambda: {
            "QueueUrl": ctx["url"],
            "Attribute.1.Name": "DelaySeconds",
            "Attribute.1.Value": "0",
        },
        "SendMessage": lambda: {"QueueUrl": ctx["url"], "MessageBody": "hello"},
        "SendMessageBatch": lambda: {
            "QueueUrl": ctx["url"],
            "SendMessageBatchRequestEntry.1.Id": "a",
            "SendMessageBatchRequestEntry.1.MessageBody": "one",
        },
        "ReceiveMessage": lambda: {"QueueUrl": ctx["url"], "WaitTimeSeconds": "1"},
        "ChangeMessageVisibility": lambda: {
            "QueueUrl": ctx["url"],
            "ReceiptHandle": handle(),
            "VisibilityTimeout": "30",
        },
        "ChangeMessageVisibilityBatch": lambda: {
            "QueueUrl": ctx["url"],
            "ChangeMessageVisibilityBatchRequestEntry.1.Id": "a",
            "ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle": handle(),
            "ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout": "30",
        },
        "DeleteMessage": lambda: {"QueueUrl": ctx["url"], "ReceiptHandle": handle()},
        "DeleteMessageBatch": lambda: {
            "QueueUrl": ctx["url"],
            "DeleteMessageBatchRequestEntry.1.Id": "a",
            "DeleteMessageBatchRequestEntry.1.ReceiptHandle": handle(),
        },
        "TagQueue": lambda: {"QueueUrl": ctx["url"], "Tag.1.Key": "team", "Tag.1.Value": "b"},
        "ListQueueTags": lambda: {"QueueUrl": ctx["url"]},
        "UntagQueue": lambda: {"QueueUrl": ctx["url"], "TagKey.1": "team"},
        "ListDeadLetterSourceQueues": lambda: {"QueueUrl": ctx["dlq"]},
        "StartMessageMoveTask": lambda: {
            "SourceArn": ctx["dlq_arn"],
            "MaxNumberOfMessagesPerSecond": "1",
        },
        "ListMessageMoveTasks": lambda: {"SourceArn": ctx["dlq_arn"]},
        "CancelMessageMoveTask": lambda: {
            "TaskHandle": sqs.list_message_move_tasks(SourceArn=ctx["dlq_arn"])["Results"][0][
                "TaskHandle"
            ]
        },
        "AddPermission": lambda: {
            "QueueUrl": ctx["url"],
            "Label": "l",
            "AWSAccountId.1": "000000000000",
            "ActionName.1": "SendMessage",
        },
        "RemovePermission": lambda: {"QueueUrl": ctx["url"], "Label": "l"},
        "PurgeQueue": lambda: {"QueueUrl": ctx["url"]},
        "DeleteQueue": lambda: {"QueueUrl": ctx["url"]},
    }
    assert set(params) == set(CALLS)
    for action in CALLS:  # the same order as over JSON
        assert query_code(sqs_server, action, params[action]()) is None, action
