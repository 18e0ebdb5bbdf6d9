"""An application's SQS tests, as a user would write them: the suite `python -m bench testing`
runs once under moto's mock_aws and once under okuri's pytest fixtures.

Why these bodies know nothing of either: the bench compares what the same tests cost on each,
so only the conftest beside them (conftest_moto.py or conftest_okuri.py, copied in as
conftest.py) differs, by the `sqs` fixture it provides (a boto3 SQS client). Each test starts
with no queues on both, so fixed queue names are safe, and `test_each_test_starts_with_no_queues`
fails if state leaks from one test into the next.

BENCH_TESTS (default 100) sets how many tests run: the scenarios below share them out as copies
(pytest_generate_tests), at least one each.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

TESTS_DEFAULT = 100


def _scenarios() -> list[str]:
    return sorted(name for name in globals() if name.startswith("test_"))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Share BENCH_TESTS out over the scenarios, the first ones taking one more when uneven."""
    names = _scenarios()
    total = int(os.environ.get("BENCH_TESTS", TESTS_DEFAULT))
    if total < len(names):
        raise pytest.UsageError(f"BENCH_TESTS={total}: at least {len(names)}, one per scenario")
    place = names.index(metafunc.function.__name__)
    copies = total // len(names) + (place < total % len(names))
    metafunc.parametrize("copy", range(copies))


def _receive(sqs: Any, url: str, count: int = 1, **extra: Any) -> list[dict[str, Any]]:
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=count, WaitTimeSeconds=1, **extra)
    messages: list[dict[str, Any]] = got.get("Messages", [])
    return messages


def _counts(sqs: Any, url: str) -> tuple[int, int]:
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return int(attrs[names[0]]), int(attrs[names[1]])


def test_each_test_starts_with_no_queues(sqs: Any, copy: int) -> None:
    assert sqs.list_queues().get("QueueUrls", []) == []
    sqs.create_queue(QueueName="leftover")  # the next test must not see it


def test_a_created_queue_is_found_by_name_and_listed(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="orders")["QueueUrl"]
    assert sqs.get_queue_url(QueueName="orders")["QueueUrl"] == url
    assert sqs.list_queues(QueueNamePrefix="ord")["QueueUrls"] == [url]


def test_a_sent_message_is_received_with_its_body_and_attributes(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="emails")["QueueUrl"]
    sent = sqs.send_message(
        QueueUrl=url,
        MessageBody=json.dumps({"to": "a@example.com"}),
        MessageAttributes={"kind": {"DataType": "String", "StringValue": "welcome"}},
    )
    [message] = _receive(sqs, url, MessageAttributeNames=["All"])
    assert message["MessageId"] == sent["MessageId"]
    assert json.loads(message["Body"]) == {"to": "a@example.com"}
    assert message["MessageAttributes"]["kind"]["StringValue"] == "welcome"


def test_a_deleted_message_is_gone(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="jobs")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="resize cat.jpg")
    [message] = _receive(sqs, url)
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert _counts(sqs, url) == (0, 0)


def test_a_message_not_deleted_comes_back_after_its_visibility_timeout(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="retries")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="flaky")
    [first] = _receive(sqs, url, VisibilityTimeout=0, AttributeNames=["All"])
    [again] = _receive(sqs, url, AttributeNames=["All"])
    assert again["MessageId"] == first["MessageId"]
    assert again["Attributes"]["ApproximateReceiveCount"] == "2"


def test_a_batch_is_sent_received_and_deleted(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="batch")["QueueUrl"]
    entries = [{"Id": str(i), "MessageBody": f"item {i}"} for i in range(10)]
    assert len(sqs.send_message_batch(QueueUrl=url, Entries=entries)["Successful"]) == 10
    bodies: list[str] = []
    for _ in range(10):  # a receive may answer with fewer than asked for
        messages = _receive(sqs, url, count=10)
        deletes = [{"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in messages]
        if deletes:
            sqs.delete_message_batch(QueueUrl=url, Entries=deletes)
        bodies += [m["Body"] for m in messages]
        if len(bodies) == 10:
            break
    assert sorted(bodies) == sorted(e["MessageBody"] for e in entries)
    assert _counts(sqs, url) == (0, 0)


def test_a_fifo_group_is_received_in_the_order_it_was_sent(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="steps.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    for step in ("a1", "a2", "a3"):
        sqs.send_message(
            QueueUrl=url, MessageBody=step, MessageGroupId="a", MessageDeduplicationId=step
        )
    received = []
    for _ in range(3):
        [message] = _receive(sqs, url)
        received.append(message["Body"])
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert received == ["a1", "a2", "a3"]


def test_a_fifo_duplicate_within_the_window_is_dropped(sqs: Any, copy: int) -> None:
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"}
    url = sqs.create_queue(QueueName="payments.fifo", Attributes=attributes)["QueueUrl"]
    for _ in range(2):
        sqs.send_message(QueueUrl=url, MessageBody="charge 7", MessageGroupId="customer-7")
    [message] = _receive(sqs, url, count=10)
    assert message["Body"] == "charge 7"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    assert _counts(sqs, url) == (0, 0)


def test_a_message_received_too_often_moves_to_the_dead_letter_queue(sqs: Any, copy: int) -> None:
    dlq = sqs.create_queue(QueueName="work-dlq")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "2"})
    url = sqs.create_queue(QueueName="work", Attributes={"RedrivePolicy": policy})["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    for _ in range(2):  # received, never deleted, visible again at once
        [message] = _receive(sqs, url, VisibilityTimeout=0)
        assert message["Body"] == "poison"
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
    [dead] = _receive(sqs, dlq)
    assert dead["Body"] == "poison"


def test_a_purged_queue_is_empty(sqs: Any, copy: int) -> None:
    url = sqs.create_queue(QueueName="reports")["QueueUrl"]
    for i in range(3):
        sqs.send_message(QueueUrl=url, MessageBody=f"report {i}")
    sqs.purge_queue(QueueUrl=url)
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) == []
