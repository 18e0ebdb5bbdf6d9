"""FIFO queues through boto3 against a real `okuri serve` (local directory and S3): creation
rules, sends, order within a group, the in-flight rule, deduplication and SQS's errors."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from tests.servers import ServerProcess


@pytest.fixture
def sqs(sqs_server: ServerProcess) -> Any:
    return sqs_server.sqs_client(retries={"max_attempts": 1})


def _fifo(sqs: Any, **attributes: str) -> str:
    name = f"f-{uuid.uuid4().hex[:10]}.fifo"
    attrs = {"FifoQueue": "true", **attributes}
    return str(sqs.create_queue(QueueName=name, Attributes=attrs)["QueueUrl"])


def _code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def test_create_needs_the_name_and_the_attribute_together(sqs: Any) -> None:
    base = f"f-{uuid.uuid4().hex[:10]}"
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName=base + ".fifo")
    assert _code(err) == "InvalidParameterValue"
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName=base, Attributes={"FifoQueue": "true"})
    assert _code(err) == "InvalidParameterValue"
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName=base, Attributes={"ContentBasedDeduplication": "true"})
    assert _code(err) == "InvalidAttributeName"
    url = _fifo(sqs)
    assert url.endswith(".fifo")
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attrs["FifoQueue"] == "true"
    assert attrs["ContentBasedDeduplication"] == "false"
    assert attrs["DeduplicationScope"] == "queue"
    assert attrs["FifoThroughputLimit"] == "perQueue"


def test_fifo_attributes_are_validated_stored_and_updated(sqs: Any) -> None:
    url = _fifo(sqs, DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId")
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["DeduplicationScope"] == "messageGroup"
    assert got["FifoThroughputLimit"] == "perMessageGroupId"
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"ContentBasedDeduplication": "true"})
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ContentBasedDeduplication"])
    assert got["Attributes"] == {"ContentBasedDeduplication": "true"}
    for bad in (
        {"DeduplicationScope": "everything"},
        {"FifoThroughputLimit": "perMessageGroupId", "DeduplicationScope": "queue"},
    ):
        with pytest.raises(ClientError) as err:
            sqs.set_queue_attributes(QueueUrl=url, Attributes=bad)
        assert _code(err) == "InvalidAttributeValue"
    with pytest.raises(ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "false"})
    assert _code(err) == "InvalidAttributeName"


def test_group_order_in_flight_rule_and_sequence_numbers(sqs: Any) -> None:
    url = _fifo(sqs)
    sent = [
        sqs.send_message(
            QueueUrl=url, MessageBody=f"m{i}", MessageGroupId="g", MessageDeduplicationId=f"d{i}"
        )
        for i in range(4)
    ]
    numbers = [int(s["SequenceNumber"]) for s in sent]
    assert numbers == sorted(numbers)
    first = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=2, MessageSystemAttributeNames=["All"]
    )["Messages"]
    assert [m["Body"] for m in first] == ["m0", "m1"]
    assert first[0]["Attributes"]["MessageGroupId"] == "g"
    assert first[0]["Attributes"]["MessageDeduplicationId"] == "d0"
    assert first[0]["Attributes"]["SequenceNumber"] == sent[0]["SequenceNumber"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(first)],
    )
    rest = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in rest] == ["m2", "m3"]


def test_duplicates_are_accepted_not_enqueued(sqs: Any) -> None:
    url = _fifo(sqs, ContentBasedDeduplication="true")
    a = sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    b = sqs.send_message(QueueUrl=url, MessageBody="same", MessageGroupId="g")
    assert b["MessageId"] == a["MessageId"]
    out = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "1", "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "k"},
            {"Id": "2", "MessageBody": "y", "MessageGroupId": "h", "MessageDeduplicationId": "k"},
        ],
    )
    ids = {e["Id"]: e["MessageId"] for e in out["Successful"]}
    assert ids["1"] == ids["2"]
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert sorted(m["Body"] for m in got) == ["same", "x"]


def test_fifo_send_errors(sqs: Any) -> None:
    url = _fifo(sqs)
    cases = [
        ({"MessageDeduplicationId": "d"}, "MissingParameter"),
        ({"MessageGroupId": "g"}, "InvalidParameterValue"),
        ({"MessageGroupId": "g", "MessageDeduplicationId": "d", "DelaySeconds": 5},
         "InvalidParameterValue"),
        ({"MessageGroupId": "", "MessageDeduplicationId": "d"}, "InvalidParameterValue"),
        ({"MessageGroupId": "g" * 129, "MessageDeduplicationId": "d"}, "InvalidParameterValue"),
        ({"MessageGroupId": "g", "MessageDeduplicationId": "bad id"}, "InvalidParameterValue"),
    ]
    for params, code in cases:
        with pytest.raises(ClientError) as err:
            sqs.send_message(QueueUrl=url, MessageBody="x", **params)
        assert _code(err) == code, params
    assert "Messages" not in sqs.receive_message(QueueUrl=url)


def test_a_zero_per_message_delay_is_accepted_and_the_queues_delay_applies(sqs: Any) -> None:
    """SQS accepts DelaySeconds=0 on a FIFO send (single and batch) and ignores it (recorded)."""
    url = _fifo(sqs, ContentBasedDeduplication="true", DelaySeconds="1")
    sent = sqs.send_message(QueueUrl=url, MessageBody="m0", MessageGroupId="g", DelaySeconds=0)
    assert sent["SequenceNumber"]
    batch = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "1", "MessageBody": "m1", "MessageGroupId": "g", "DelaySeconds": 0}],
    )
    assert [e["Id"] for e in batch["Successful"]] == ["1"]
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=5)
    assert [m["Body"] for m in got["Messages"]][:1] == ["m0"]


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("MessageGroupId", "The request must contain the parameter MessageGroupId."),
        (
            "MessageDeduplicationId",
            "The queue should either have ContentBasedDeduplication enabled or "
            "MessageDeduplicationId provided explicitly",
        ),
    ],
)
def test_a_batch_entry_missing_a_fifo_id_fails_the_whole_batch(
    sqs: Any, missing: str, message: str
) -> None:
    """As SQS answers it (recorded): the request fails, InvalidParameterValue in both cases,
    and no entry of it is enqueued."""
    url = _fifo(sqs)
    whole = {"MessageGroupId": "g", "MessageDeduplicationId": "d1"}
    partial = {k: v for k, v in {"MessageGroupId": "g", "MessageDeduplicationId": "d2"}.items()
               if k != missing}
    with pytest.raises(ClientError) as err:
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": "a", "MessageBody": "x", **whole},
                {"Id": "b", "MessageBody": "y", **partial},
            ],
        )
    assert _code(err) == "InvalidParameterValue"
    assert err.value.response["Error"]["Message"] == message
    assert "Messages" not in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)


def test_dead_letter_queue_must_match_the_source_type(sqs: Any) -> None:
    standard = sqs.create_queue(QueueName=f"dlq-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=standard, AttributeNames=["QueueArn"])
    policy = f'{{"deadLetterTargetArn":"{arn["Attributes"]["QueueArn"]}","maxReceiveCount":2}}'
    with pytest.raises(ClientError) as err:
        _fifo(sqs, RedrivePolicy=policy)
    assert _code(err) == "InvalidParameterValue"
    fifo_dlq = _fifo(sqs)
    fifo_arn = sqs.get_queue_attributes(QueueUrl=fifo_dlq, AttributeNames=["QueueArn"])
    good = f'{{"deadLetterTargetArn":"{fifo_arn["Attributes"]["QueueArn"]}","maxReceiveCount":2}}'
    assert _fifo(sqs, RedrivePolicy=good).endswith(".fifo")


def test_a_receive_retried_with_its_attempt_id_gets_the_same_messages(sqs: Any) -> None:
    url = _fifo(sqs)
    for i in range(3):
        sqs.send_message(
            QueueUrl=url, MessageBody=f"m{i}", MessageGroupId=f"g{i}", MessageDeduplicationId=f"{i}"
        )
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, ReceiveRequestAttemptId="a1")
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, ReceiveRequestAttemptId="a1")
    assert [m["ReceiptHandle"] for m in again["Messages"]] == [
        m["ReceiptHandle"] for m in first["Messages"]
    ]
    other = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2, ReceiveRequestAttemptId="a2")
    assert [m["Body"] for m in other["Messages"]] == ["m2"]
    with pytest.raises(ClientError) as err:
        sqs.receive_message(QueueUrl=url, ReceiveRequestAttemptId="no spaces")
    assert _code(err) == "InvalidParameterValue"


def test_dead_letters_of_a_fifo_queue_keep_their_group_order(sqs: Any) -> None:
    dlq = _fifo(sqs)
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]
    policy = f'{{"deadLetterTargetArn":"{dlq_arn["QueueArn"]}","maxReceiveCount":1}}'
    url = _fifo(sqs, RedrivePolicy=policy, VisibilityTimeout="1")
    sqs.send_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": str(i), "MessageBody": f"m{i}", "MessageGroupId": "g",
             "MessageDeduplicationId": f"d{i}"}
            for i in range(3)
        ],
    )
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert [m["Body"] for m in got["Messages"]] == ["m0", "m1", "m2"]
    moved: list[str] = []
    for _ in range(40):  # past maxReceiveCount, each receive moves what it found
        sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        answer = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, VisibilityTimeout=30)
        for m in answer.get("Messages", []):
            moved.append(m["Body"])
            sqs.delete_message(QueueUrl=dlq, ReceiptHandle=m["ReceiptHandle"])
        if len(moved) >= 3:
            break
    assert moved == ["m0", "m1", "m2"]
