"""FIFO queues through boto3 against a real `okuri serve` (local directory and S3): creation
rules, sends, order within a group, the in-flight rule, deduplication and SQS's errors."""

from __future__ import annotations

import time
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
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "true"})  # no change
    with pytest.raises(ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"FifoQueue": "false"})
    assert _code(err) == "InvalidAttributeValue"


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


def _send_all(sqs: Any, url: str, *pairs: str) -> None:
    """Send "group:body" pairs one by one, in order (content-based deduplication)."""
    for pair in pairs:
        group, body = pair.split(":")
        sqs.send_message(QueueUrl=url, MessageBody=body, MessageGroupId=group)


def _bodies(answer: dict[str, Any]) -> list[str]:
    return [m["Body"] for m in answer.get("Messages", [])]


def test_a_receive_returns_whole_groups_and_groups_given_back_wait_behind_the_rest(
    sqs: Any,
) -> None:
    """As SQS answers it (recorded by LocalStack's AWS-validated suite): one receive returns a
    group's messages together, and groups received and made visible again (visibility 0) come
    after a group that waited meanwhile."""
    url = _fifo(sqs, ContentBasedDeduplication="true")
    _send_all(sqs, url, "1:g1-m1", "2:g2-m1", "2:g2-m2", "3:g3-m1", "1:g1-m2")
    first = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3, VisibilityTimeout=0)
    assert _bodies(first) == ["g1-m1", "g1-m2", "g2-m1"]
    again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0)
    assert _bodies(again) == ["g3-m1", "g1-m1", "g1-m2", "g2-m1", "g2-m2"]


def test_a_head_made_visible_goes_out_again_while_later_messages_of_its_group_are_held(
    sqs: Any,
) -> None:
    """SQS's rule (recorded): a group offers its visible messages up to its first hidden one."""
    url = _fifo(sqs, ContentBasedDeduplication="true", VisibilityTimeout="30")
    _send_all(sqs, url, "1:g1-m1", "1:g1-m2", "2:g2-m1")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=2)["Messages"]
    assert [m["Body"] for m in got] == ["g1-m1", "g1-m2"]
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    assert _bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=3)) == [
        "g2-m1",
        "g1-m1",
    ]
    # Extending the middle of three held messages: once the others run out, the group offers
    # what comes before it only.
    url = _fifo(sqs, VisibilityTimeout="1")
    for body in ("foo", "bar", "baz"):
        sqs.send_message(
            QueueUrl=url, MessageBody=body, MessageGroupId="1", MessageDeduplicationId=body
        )
    held = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5)["Messages"]
    assert [m["Body"] for m in held] == ["foo", "bar", "baz"]
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=held[1]["ReceiptHandle"], VisibilityTimeout=4
    )
    time.sleep(2.5)
    assert _bodies(sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=5)) == ["foo"]


def test_a_delete_after_the_lease_ran_out_is_refused_as_expired(sqs: Any) -> None:
    url = _fifo(sqs, ContentBasedDeduplication="true", VisibilityTimeout="1")
    sqs.send_message(QueueUrl=url, MessageBody="foobar", MessageGroupId="1")
    (msg,) = sqs.receive_message(QueueUrl=url)["Messages"]
    time.sleep(1.5)
    with pytest.raises(ClientError) as err:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=msg["ReceiptHandle"])
    assert _code(err) == "InvalidParameterValue"
    assert err.value.response["Error"]["Message"] == (
        f"Value {msg['ReceiptHandle']} for parameter ReceiptHandle is invalid. "
        "Reason: The receipt handle has expired."
    )
    out = sqs.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": msg["ReceiptHandle"]}]
    )
    assert [f["Code"] for f in out["Failed"]] == ["InvalidParameterValue"]
    (back,) = sqs.receive_message(QueueUrl=url)["Messages"]  # not deleted: it comes back
    assert back["Body"] == "foobar"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=back["ReceiptHandle"])


def test_counts_show_messages_not_yet_received_and_none_leased_ahead(sqs: Any) -> None:
    url = _fifo(sqs, ContentBasedDeduplication="true")

    def visible() -> int:
        got = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"]
        )
        return int(got["Attributes"]["ApproximateNumberOfMessages"])

    assert visible() == 0
    _send_all(sqs, url, "1:g1-m1", "1:g1-m2", "1:g1-m3", "2:g2-m1", "3:g3-m1")
    assert visible() == 5
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=4, WaitTimeSeconds=1)
    assert _bodies(got) == ["g1-m1", "g1-m2", "g1-m3", "g2-m1"]
    assert visible() == 1
    for m in got["Messages"]:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    assert visible() == 1


def test_a_purge_clears_the_deduplication_window(sqs: Any) -> None:
    url = _fifo(sqs)
    sqs.send_message(QueueUrl=url, MessageBody="m1", MessageGroupId="g", MessageDeduplicationId="d")
    sqs.purge_queue(QueueUrl=url)
    sqs.send_message(QueueUrl=url, MessageBody="m2", MessageGroupId="g", MessageDeduplicationId="d")
    assert _bodies(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)) == ["m2"]
