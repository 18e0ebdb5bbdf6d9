"""Behaviour SQS was recorded showing over several calls, replayed against a real `okuri serve`
on each store and over both protocols (boto3's AWS JSON 1.0, and signed query-protocol forms
read as XML, as the query SDKs read them).

The scenarios come from a suite whose expectations were recorded against SQS: a standard
queue's rough send order across a requeue, and a FIFO queue's deduplication after its
DeduplicationScope changed.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Protocol

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from okuri.sqs.query import XMLNS
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, http

NS = {"s": XMLNS}


class Sqs(Protocol):
    """The few calls the scenarios make, over one protocol; a receive answers (body, receipt)
    pairs."""

    def create(self, name: str, attributes: Mapping[str, str]) -> str: ...
    def set_attributes(self, url: str, attributes: Mapping[str, str]) -> None: ...
    def send(self, url: str, body: str, **fifo: str) -> None: ...
    def receive(self, url: str, **options: int) -> list[tuple[str, str]]: ...
    def delete(self, url: str, receipt: str) -> None: ...


class JsonSqs:
    def __init__(self, server: ServerProcess) -> None:
        self.client = server.sqs_client(retries={"max_attempts": 1})

    def create(self, name: str, attributes: Mapping[str, str]) -> str:
        made = self.client.create_queue(QueueName=name, Attributes=dict(attributes))
        return str(made["QueueUrl"])

    def set_attributes(self, url: str, attributes: Mapping[str, str]) -> None:
        self.client.set_queue_attributes(QueueUrl=url, Attributes=dict(attributes))

    def send(self, url: str, body: str, **fifo: str) -> None:
        self.client.send_message(QueueUrl=url, MessageBody=body, **fifo)

    def receive(self, url: str, **options: int) -> list[tuple[str, str]]:
        got = self.client.receive_message(QueueUrl=url, **options)
        return [(m["Body"], m["ReceiptHandle"]) for m in got.get("Messages", [])]

    def delete(self, url: str, receipt: str) -> None:
        self.client.delete_message(QueueUrl=url, ReceiptHandle=receipt)


def _text(element: ET.Element, path: str) -> str:
    return element.findtext(path, namespaces=NS) or ""


class QuerySqs:
    def __init__(self, server: ServerProcess) -> None:
        self.server = server

    def _call(self, action: str, params: Mapping[str, str]) -> ET.Element:
        body = urllib.parse.urlencode(
            {"Action": action, "Version": "2012-11-05", **params}, quote_via=urllib.parse.quote
        )
        headers = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
        request = AWSRequest("POST", self.server.url + "/", data=body, headers=headers)
        SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", "us-east-1").add_auth(request)
        answer = http("POST", self.server.url + "/", body.encode(), dict(request.headers.items()))
        assert answer.status == 200, answer.text
        return ET.fromstring(answer.body)

    @staticmethod
    def _attributes(attributes: Mapping[str, str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for n, (name, value) in enumerate(attributes.items(), 1):
            out[f"Attribute.{n}.Name"] = name
            out[f"Attribute.{n}.Value"] = value
        return out

    def create(self, name: str, attributes: Mapping[str, str]) -> str:
        root = self._call("CreateQueue", {"QueueName": name, **self._attributes(attributes)})
        return _text(root, "s:CreateQueueResult/s:QueueUrl")

    def set_attributes(self, url: str, attributes: Mapping[str, str]) -> None:
        self._call("SetQueueAttributes", {"QueueUrl": url, **self._attributes(attributes)})

    def send(self, url: str, body: str, **fifo: str) -> None:
        self._call("SendMessage", {"QueueUrl": url, "MessageBody": body, **fifo})

    def receive(self, url: str, **options: int) -> list[tuple[str, str]]:
        params = {"QueueUrl": url, **{k: str(v) for k, v in options.items()}}
        root = self._call("ReceiveMessage", params)
        return [
            (_text(m, "s:Body"), _text(m, "s:ReceiptHandle"))
            for m in root.findall("s:ReceiveMessageResult/s:Message", NS)
        ]

    def delete(self, url: str, receipt: str) -> None:
        self._call("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": receipt})


@pytest.fixture(params=["json", "query"])
def sqs(request: pytest.FixtureRequest, sqs_server: ServerProcess) -> Sqs:
    return JsonSqs(sqs_server) if request.param == "json" else QuerySqs(sqs_server)


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _bodies(received: list[tuple[str, str]]) -> list[str]:
    return [body for body, _receipt in received]


def test_a_message_shown_again_comes_back_ahead_of_a_later_send(sqs: Sqs) -> None:
    """SQS keeps a standard queue's rough send order across a requeue: A, received and left to
    run out, comes back before B, sent after A was first received."""
    url = sqs.create(_name("order"), {})
    sqs.send(url, "A")
    assert _bodies(sqs.receive(url, VisibilityTimeout=1)) == ["A"]
    sqs.send(url, "B")
    time.sleep(1.5)
    assert _bodies(sqs.receive(url, MaxNumberOfMessages=1)) == ["A"]
    assert _bodies(sqs.receive(url, MaxNumberOfMessages=1)) == ["B"]


def test_changing_a_live_fifo_queue_to_group_scope_deduplicates_as_before(sqs: Sqs) -> None:
    """As SQS answered it (recorded): after DeduplicationScope goes from queue to messageGroup
    (with FifoThroughputLimit perMessageGroupId), an id sent before the change is still a
    duplicate in another group, a new id goes out at once, and that new id too is a duplicate
    in another group."""
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    url = sqs.create(_name("scope") + ".fifo", {**fifo, "DeduplicationScope": "queue"})
    dedup = {"MessageDeduplicationId": "same-dedup"}
    sqs.send(url, "Test1", MessageGroupId="group1", **dedup)
    ((body, receipt),) = sqs.receive(url)
    assert body == "Test1"
    sqs.delete(url, receipt)
    sqs.send(url, "Test2", MessageGroupId="group2", **dedup)
    assert sqs.receive(url, VisibilityTimeout=0) == []  # a duplicate: never delivered
    sqs.set_attributes(
        url, {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
    )
    assert sqs.receive(url) == []
    sqs.send(url, "Test3", MessageGroupId="group3", **dedup)
    assert sqs.receive(url) == []
    sqs.send(url, "Test4", MessageGroupId="group4", MessageDeduplicationId="dedup_2")
    ((body, receipt),) = sqs.receive(url)
    assert body == "Test4"
    sqs.delete(url, receipt)
    sqs.send(url, "Test5", MessageGroupId="group5", MessageDeduplicationId="dedup_2")
    assert sqs.receive(url) == []


def test_changing_a_live_fifo_queue_to_queue_scope_deduplicates_as_before(sqs: Sqs) -> None:
    """The other way round, as SQS answered it (recorded): a queue created with messageGroup
    scope and changed to queue scope still lets one id go out once in each group."""
    fifo = {"FifoQueue": "true", "ContentBasedDeduplication": "false"}
    url = sqs.create(
        _name("scope") + ".fifo",
        {**fifo, "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
    )
    dedup = {"MessageDeduplicationId": "same-dedup"}
    for n in (1, 2):
        sqs.send(url, f"Test{n}", MessageGroupId=f"group{n}", **dedup)
        ((body, receipt),) = sqs.receive(url)
        assert body == f"Test{n}"
        sqs.delete(url, receipt)
    sqs.set_attributes(url, {"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"})
    sqs.send(url, "Test3", MessageGroupId="group3", **dedup)
    assert _bodies(sqs.receive(url)) == ["Test3"]
