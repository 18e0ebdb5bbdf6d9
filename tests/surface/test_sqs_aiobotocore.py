"""The SQS surface through aiobotocore (async), against a real `okuri serve` on each store.

aiobotocore is what asyncio workers use to talk to SQS; it shares botocore's serializers and
error parsing but has its own HTTP stack (aiohttp), so this checks okuri's answers survive that
stack too. The client is configured only with endpoint_url and the server's key pair.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession

from tests.servers import SQS_KEY as KEY
from tests.servers import SQS_SECRET as SECRET
from tests.servers import ServerProcess

RECEIVE_ROUNDS_MAX = 5  # bounded re-polls while collecting a batch that lands in pieces
LONG_POLL_S = 10


@pytest.fixture
async def sqs(sqs_server: ServerProcess) -> AsyncIterator[Any]:
    session = AioSession()
    async with session.create_client(
        "sqs",
        endpoint_url=sqs_server.url,
        region_name="us-east-1",
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
        config=AioConfig(retries={"max_attempts": 1}, read_timeout=LONG_POLL_S + 10),
    ) as client:
        yield client


async def _receive_all(sqs: Any, url: str, count: int, **kw: Any) -> list[dict[str, Any]]:
    """Long-poll until `count` messages arrived (they may come in more than one answer)."""
    got: list[dict[str, Any]] = []
    for _ in range(RECEIVE_ROUNDS_MAX):
        answer = await sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=LONG_POLL_S, **kw
        )
        got += answer.get("Messages", [])
        if len(got) >= count:
            break
    return got


async def test_queue_lifecycle_through_aiobotocore(sqs: Any) -> None:
    name = f"aio-{uuid.uuid4().hex[:10]}"
    url = (await sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "30"}))[
        "QueueUrl"
    ]
    assert url.endswith(f"/000000000000/{name}")

    # A long poll waiting on the empty queue is woken by the batch sent after it started.
    start = time.monotonic()
    waiting = asyncio.ensure_future(
        _receive_all(
            sqs, url, 3, AttributeNames=["All"], MessageAttributeNames=["All"], VisibilityTimeout=30
        )
    )
    bodies = {"a": "first ✓", "b": "second", "c": "third"}
    sent = await sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {
                "Id": entry_id,
                "MessageBody": body,
                "MessageAttributes": {
                    "kind": {"DataType": "String", "StringValue": f"kind-{entry_id}"},
                    "n": {"DataType": "Number", "StringValue": "42"},
                    "raw": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
                },
            }
            for entry_id, body in bodies.items()
        ],
    )
    assert sent.get("Failed", []) == []
    assert sorted(s["Id"] for s in sent["Successful"]) == ["a", "b", "c"]
    for s in sent["Successful"]:
        assert s["MD5OfMessageBody"] == hashlib.md5(bodies[s["Id"]].encode()).hexdigest()
    attribute_md5 = {s["MessageId"]: s["MD5OfMessageAttributes"] for s in sent["Successful"]}

    got = await asyncio.wait_for(waiting, timeout=LONG_POLL_S * RECEIVE_ROUNDS_MAX)
    assert time.monotonic() - start < LONG_POLL_S
    assert sorted(m["Body"] for m in got) == sorted(bodies.values())
    for m in got:
        assert m["MD5OfMessageAttributes"] == attribute_md5[m["MessageId"]]
        assert m["MessageAttributes"]["raw"]["BinaryValue"] == b"\x00\x01\xff"
        assert m["MessageAttributes"]["n"] == {"DataType": "Number", "StringValue": "42"}
        assert m["MessageAttributes"]["kind"]["StringValue"].startswith("kind-")
        assert m["Attributes"]["ApproximateReceiveCount"] == "1"
        assert m["Attributes"]["SenderId"] == KEY

    # Visibility: one message comes straight back, the other two are held longer.
    first, *rest = got
    await sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0
    )
    held = await sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[
            {"Id": f"v{i}", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 60}
            for i, m in enumerate(rest)
        ],
    )
    assert held.get("Failed", []) == [] and len(held["Successful"]) == 2
    again = await _receive_all(sqs, url, 1, AttributeNames=["ApproximateReceiveCount"])
    assert [m["MessageId"] for m in again] == [first["MessageId"]]
    assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"

    deleted = await sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate([again[0], *rest])
        ],
    )
    assert deleted.get("Failed", []) == [] and len(deleted["Successful"]) == 3

    attrs = (await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]))["Attributes"]
    assert attrs["VisibilityTimeout"] == "30"
    assert attrs["QueueArn"] == f"arn:aws:sqs:us-east-1:000000000000:{name}"
    assert attrs["ApproximateNumberOfMessages"] == "0"
    assert attrs["ApproximateNumberOfMessagesNotVisible"] == "0"

    await sqs.send_message(QueueUrl=url, MessageBody="purged before anyone sees it")
    await sqs.purge_queue(QueueUrl=url)
    assert "Messages" not in await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    counts = await sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    assert counts["Attributes"]["ApproximateNumberOfMessages"] == "0"

    await sqs.delete_queue(QueueUrl=url)
    assert url not in (await sqs.list_queues(QueueNamePrefix=name)).get("QueueUrls", [])


async def test_missing_queue_raises_aiobotocores_queue_does_not_exist(sqs: Any) -> None:
    name = f"aio-gone-{uuid.uuid4().hex[:10]}"
    with pytest.raises(sqs.exceptions.QueueDoesNotExist) as err:
        await sqs.get_queue_url(QueueName=name)
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    url = (await sqs.create_queue(QueueName=name))["QueueUrl"]
    await sqs.delete_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        await sqs.send_message(QueueUrl=url, MessageBody="too late")
