"""The SQS surface through boto3, against a real `okuri serve` on each store.

The server is configured only by environment variables; boto3 is pointed at it with
endpoint_url and the configured key pair, and nothing else about it is special.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.servers import SQS_KEY as KEY
from tests.servers import SQS_SECRET as SECRET
from tests.servers import ServerProcess, create_with_dead_letter_queue, http


@pytest.fixture
def server(sqs_server: ServerProcess) -> ServerProcess:
    return sqs_server


@pytest.fixture
def sqs(server: ServerProcess) -> Any:
    return server.sqs_client(retries={"max_attempts": 1})


@pytest.fixture
def queue(sqs: Any) -> str:
    return str(sqs.create_queue(QueueName=f"q-{uuid.uuid4().hex[:10]}")["QueueUrl"])


def _code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def test_create_get_list_delete_queue(sqs: Any, server: ServerProcess) -> None:
    name = f"life-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    assert url == f"{server.url}/000000000000/{name}"
    assert sqs.create_queue(QueueName=name)["QueueUrl"] == url  # idempotent
    assert sqs.get_queue_url(QueueName=name)["QueueUrl"] == url
    assert url in sqs.list_queues(QueueNamePrefix="life-")["QueueUrls"]
    sqs.delete_queue(QueueUrl=url)
    with pytest.raises(sqs.exceptions.QueueDoesNotExist) as err:
        sqs.get_queue_url(QueueName=name)
    assert _code(err) == "AWS.SimpleQueueService.NonExistentQueue"


def test_create_queue_with_different_attributes_is_refused(sqs: Any) -> None:
    name = f"attrs-{uuid.uuid4().hex[:8]}"
    sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "40"})
    with pytest.raises(sqs.exceptions.QueueNameExists) as err:
        sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "41"})
    assert _code(err) == "QueueAlreadyExists"


def test_list_queues_pages_with_next_token(sqs: Any) -> None:
    prefix = f"page-{uuid.uuid4().hex[:6]}-"
    urls = sorted(sqs.create_queue(QueueName=f"{prefix}{i}")["QueueUrl"] for i in range(5))
    seen: list[str] = []
    kwargs: dict[str, Any] = {"QueueNamePrefix": prefix, "MaxResults": 2}
    for _ in range(5):
        page = sqs.list_queues(**kwargs)
        seen += page.get("QueueUrls", [])
        if "NextToken" not in page:
            break
        kwargs["NextToken"] = page["NextToken"]
    assert seen == urls
    assert "QueueUrls" not in sqs.list_queues(QueueNamePrefix="no-such-prefix-xyz")


def test_send_receive_delete_with_attributes_and_md5s(sqs: Any, queue: str) -> None:
    attrs = {
        "attribName1": {"DataType": "String", "StringValue": "attribValue 1"},
        "n": {"DataType": "Number", "StringValue": "42"},
        "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xff"},
        "custom": {"DataType": "String.custom", "StringValue": "x"},
    }
    sent = sqs.send_message(QueueUrl=queue, MessageBody="hello ✓", MessageAttributes=attrs)
    assert sent["MD5OfMessageBody"] == hashlib.md5("hello ✓".encode()).hexdigest()
    assert "MD5OfMessageAttributes" in sent
    got = sqs.receive_message(
        QueueUrl=queue, MessageAttributeNames=["All"], AttributeNames=["All"], WaitTimeSeconds=5
    )["Messages"]
    assert len(got) == 1
    m = got[0]
    assert m["Body"] == "hello ✓" and m["MessageId"] == sent["MessageId"]
    assert m["MessageAttributes"]["b"]["BinaryValue"] == b"\x00\x01\xff"
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"
    assert m["Attributes"]["SenderId"] == KEY
    assert int(m["Attributes"]["SentTimestamp"]) > 1_700_000_000_000
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)


def test_published_md5_vector_for_a_string_attribute(sqs: Any, queue: str) -> None:
    sent = sqs.send_message(
        QueueUrl=queue,
        MessageBody="x",
        MessageAttributes={"attribName1": {"DataType": "String", "StringValue": "attribValue 1"}},
    )
    assert sent["MD5OfMessageAttributes"] == "19e27d4e946b072f3f58da80d94fd778"


def test_batches_report_successes_and_failures(sqs: Any, queue: str) -> None:
    res = sqs.send_message_batch(
        QueueUrl=queue,
        Entries=[
            {"Id": "a", "MessageBody": "one"},
            {"Id": "b", "MessageBody": "two", "DelaySeconds": 0},
            {"Id": "bad", "MessageBody": "\x00 not allowed"},
        ],
    )
    assert sorted(s["Id"] for s in res["Successful"]) == ["a", "b"]
    assert [(f["Id"], f["SenderFault"]) for f in res["Failed"]] == [("bad", True)]
    got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=5)["Messages"]
    for _ in range(5):
        if len(got) >= 2:
            break
        got += sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=2).get(
            "Messages", []
        )
    assert sorted(m["Body"] for m in got) == ["one", "two"]
    deleted = sqs.delete_message_batch(
        QueueUrl=queue,
        Entries=[{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
        + [{"Id": "junk", "ReceiptHandle": "not-a-receipt"}],
    )
    assert len(deleted["Successful"]) == 2
    assert deleted["Failed"][0]["Code"] == "ReceiptHandleIsInvalid"


@pytest.mark.parametrize(
    ("entries", "exception", "code"),
    [
        ([], "EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest"),
        (
            [{"Id": str(i), "MessageBody": "x"} for i in range(11)],
            "TooManyEntriesInBatchRequest",
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        ),
        (
            [{"Id": "same", "MessageBody": "x"}] * 2,
            "BatchEntryIdsNotDistinct",
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        ),
        (
            [{"Id": "bad id!", "MessageBody": "x"}],
            "InvalidBatchEntryId",
            "AWS.SimpleQueueService.InvalidBatchEntryId",
        ),
    ],
)
def test_batch_rules_raise_the_sdks_own_exceptions(
    server: ServerProcess, queue: str, entries: list[dict[str, Any]], exception: str, code: str
) -> None:
    raw = server.sqs_client(parameter_validation=False, retries={"max_attempts": 1})
    with pytest.raises(getattr(raw.exceptions, exception)) as err:
        raw.send_message_batch(QueueUrl=queue, Entries=entries)
    assert _code(err) == code


def test_visibility_timeout_change_and_redelivery(sqs: Any, queue: str) -> None:
    sqs.send_message(QueueUrl=queue, MessageBody="v")
    first = sqs.receive_message(QueueUrl=queue, VisibilityTimeout=30, WaitTimeSeconds=5)[
        "Messages"
    ][0]
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)
    sqs.change_message_visibility(
        QueueUrl=queue, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0
    )
    second = sqs.receive_message(
        QueueUrl=queue, AttributeNames=["ApproximateReceiveCount"], WaitTimeSeconds=5
    )["Messages"][0]
    assert second["Attributes"]["ApproximateReceiveCount"] == "2"
    # the first receipt is outdated now, yet it still changes the visibility, as SQS answers
    # (recorded)...
    res = sqs.change_message_visibility_batch(
        QueueUrl=queue,
        Entries=[
            {"Id": "new", "ReceiptHandle": second["ReceiptHandle"], "VisibilityTimeout": 30},
            {"Id": "old", "ReceiptHandle": first["ReceiptHandle"], "VisibilityTimeout": 0},
        ],
    )
    assert sorted(s["Id"] for s in res["Successful"]) == ["new", "old"]
    assert not res.get("Failed")
    third = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"][0]
    assert third["MessageId"] == first["MessageId"]
    # ...and it still deletes the message, as SQS does in practice: it was processed
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=first["ReceiptHandle"])
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=third["ReceiptHandle"])  # already gone: ok
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)


def test_delay_and_queue_attributes(sqs: Any, queue: str) -> None:
    sqs.set_queue_attributes(
        QueueUrl=queue, Attributes={"DelaySeconds": "1", "VisibilityTimeout": "45"}
    )
    attrs = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["All"])["Attributes"]
    assert attrs["DelaySeconds"] == "1" and attrs["VisibilityTimeout"] == "45"
    assert attrs["QueueArn"].endswith(":" + queue.rsplit("/", 1)[1])
    sqs.send_message(QueueUrl=queue, MessageBody="later")
    delayed = sqs.get_queue_attributes(
        QueueUrl=queue, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )
    assert delayed["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    assert "Messages" not in sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0)
    time.sleep(1.2)
    assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"][0]["Body"] == "later"
    with pytest.raises(ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=queue, Attributes={"VisibilityTimeout": "99999"})
    assert _code(err) == "InvalidAttributeValue"
    with pytest.raises(ClientError) as err:
        sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["NoSuchAttribute"])
    assert _code(err) == "InvalidAttributeName"


def test_purge_removes_earlier_messages_only(sqs: Any, queue: str) -> None:
    sqs.send_message(QueueUrl=queue, MessageBody="before")
    sqs.purge_queue(QueueUrl=queue)
    sqs.send_message(QueueUrl=queue, MessageBody="after")
    got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=5)["Messages"]
    assert [m["Body"] for m in got] == ["after"]


def test_redrive_policy_moves_to_dead_letter_queue(sqs: Any) -> None:
    url, dlq, _ = create_with_dead_letter_queue(sqs, f"dl-{uuid.uuid4().hex[:8]}", 1)
    sqs.send_message(QueueUrl=url, MessageBody="poison")
    first = sqs.receive_message(QueueUrl=url, VisibilityTimeout=1, WaitTimeSeconds=5)["Messages"]
    assert first
    time.sleep(1.2)
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    moved = sqs.receive_message(QueueUrl=dlq, WaitTimeSeconds=5, AttributeNames=["All"])["Messages"]
    assert moved[0]["Body"] == "poison"


def test_queue_errors(sqs: Any, queue: str) -> None:
    missing = queue.rsplit("/", 1)[0] + "/does-not-exist"
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.send_message(QueueUrl=missing, MessageBody="x")
    with pytest.raises(sqs.exceptions.ReceiptHandleIsInvalid):
        sqs.delete_message(QueueUrl=queue, ReceiptHandle="garbage")
    with pytest.raises(ClientError) as err:
        sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=11)
    assert _code(err) == "InvalidParameterValue"
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName="bad name!")
    assert _code(err) == "InvalidParameterValue"
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=queue, MessageBody="x" * (1024 * 1024 + 1))
    assert _code(err) == "InvalidParameterValue"


def test_list_values_answer_unsupported_operation(sqs: Any, queue: str) -> None:
    listed = {"DataType": "String", "StringValue": "a", "StringListValues": ["a"]}
    with pytest.raises(sqs.exceptions.UnsupportedOperation) as err:
        sqs.send_message(QueueUrl=queue, MessageBody="x", MessageAttributes={"a": listed})
    assert _code(err) == "AWS.SimpleQueueService.UnsupportedOperation"


def test_bad_credentials_get_aws_error_codes(server: ServerProcess) -> None:
    with pytest.raises(ClientError) as err:
        server.sqs_client(key="AKIDUNKNOWN", retries={"max_attempts": 1}).list_queues()
    assert _code(err) == "InvalidClientTokenId"
    with pytest.raises(ClientError) as err:
        server.sqs_client(secret="wrong", retries={"max_attempts": 1}).list_queues()
    assert _code(err) == "SignatureDoesNotMatch"
    unsigned = http(
        "POST",
        server.url + "/",
        b"{}",
        {"X-Amz-Target": "AmazonSQS.ListQueues", "Content-Type": "application/x-amz-json-1.0"},
    )
    assert unsigned.status in (400, 403)
    assert unsigned.headers.get("x-amzn-query-error", "").startswith("MissingAuthenticationToken")
    assert server.get("/healthz").status == 200


def test_long_poll_wakes_for_a_send(server: ServerProcess, sqs: Any, queue: str) -> None:
    import threading

    def later() -> None:
        time.sleep(0.5)
        other = server.sqs_client(parameter_validation=False, retries={"max_attempts": 1})
        other.send_message(QueueUrl=queue, MessageBody="wake")

    t = threading.Thread(target=later)
    start = time.monotonic()
    t.start()
    got = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=10)
    t.join()
    assert got["Messages"][0]["Body"] == "wake"
    assert time.monotonic() - start < 5


def test_resource_api_works_too(server: ServerProcess) -> None:
    resource = boto3.resource(
        "sqs",
        endpoint_url=server.url,
        region_name="us-east-1",
        aws_access_key_id=KEY,
        aws_secret_access_key=SECRET,
    )
    q = resource.create_queue(QueueName=f"res-{uuid.uuid4().hex[:8]}")
    q.send_message(MessageBody="via resource")
    msgs = q.receive_messages(WaitTimeSeconds=5)
    assert msgs[0].body == "via resource"
    msgs[0].delete()
    assert q.attributes["VisibilityTimeout"] == "30"


def test_metrics_count_sqs_requests_batches_and_depths(
    sqs: Any, queue: str, server: ServerProcess
) -> None:
    sqs.send_message_batch(
        QueueUrl=queue, Entries=[{"Id": str(i), "MessageBody": "m"} for i in range(3)]
    )
    with pytest.raises(ClientError):
        sqs.delete_message(QueueUrl=queue, ReceiptHandle="nope")
    text = server.get("/metrics").text
    assert 'okuri_sqs_requests_total{action="SendMessageBatch",outcome="ok"}' in text
    failed = 'okuri_sqs_requests_total{action="DeleteMessage",outcome="ReceiptHandleIsInvalid"}'
    assert failed in text
    assert 'okuri_engine_events_total{event="segment_messages"}' in text
    name = queue.rsplit("/", 1)[1]
    assert f'okuri_queue_messages{{queue="{name}",state="visible"}}' in text
    # the batch's segment was written here and no receive has adopted it yet
    assert f'okuri_queue_unadopted_slots{{queue="{name}"}} 1' in text
    got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=5)
    assert got["Messages"]
    text = server.get("/metrics").text
    assert f'okuri_queue_unadopted_slots{{queue="{name}"}} 0' in text
    # this node's per-queue counters: the batch's three sends, and no delete yet
    assert f'okuri_queue_sent_messages_total{{queue="{name}"}} 3' in text
    assert f'okuri_queue_deleted_messages_total{{queue="{name}"}} 0' in text
    sqs.delete_message(QueueUrl=queue, ReceiptHandle=got["Messages"][0]["ReceiptHandle"])
    text = server.get("/metrics").text
    assert f'okuri_queue_deleted_messages_total{{queue="{name}"}} 1' in text
    for event in ("manifest_commits", "manifest_cas_attempts", "slots_discovered"):
        assert f'okuri_engine_events_total{{event="{event}"}}' in text
