"""Answers SQS itself was recorded giving, checked against a real `okuri serve` on each store.

Each test replays what a boto3 user (AWS JSON 1.0) or a query-protocol client saw from SQS:
the error code `e.response["Error"]["Code"]` carries, the JSON shape name botocore keeps as
`QueryErrorCode`, and SQS's own texts.
"""

from __future__ import annotations

import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri.sqs.query import XMLNS
from tests.servers import SQS_KEY, SQS_SECRET, Response, ServerProcess, http

NS = {"s": XMLNS}
MiB = 1024 * 1024


@pytest.fixture
def sqs(sqs_server: ServerProcess) -> Any:
    return sqs_server.sqs_client(retries={"max_attempts": 1})


@pytest.fixture
def queue(sqs: Any) -> str:
    return str(sqs.create_queue(QueueName=f"rec-{uuid.uuid4().hex[:10]}")["QueueUrl"])


def _error(err: pytest.ExceptionInfo[ClientError]) -> tuple[str, str | None, str]:
    e = err.value.response["Error"]
    return e["Code"], e.get("QueryErrorCode"), e["Message"]


def query(
    server: ServerProcess,
    params: dict[str, str],
    path: str = "/",
    headers: dict[str, str] | None = None,
) -> Response:
    body = urllib.parse.urlencode({"Version": "2012-11-05", **params})
    request = AWSRequest(
        "POST",
        server.url + path,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
    )
    SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", "us-east-1").add_auth(request)
    return http("POST", server.url + path, body.encode(), dict(request.headers.items()))


def query_error(response: Response) -> tuple[int, str, str]:
    root = ET.fromstring(response.body)
    return (
        response.status,
        root.findtext("s:Error/s:Code", namespaces=NS) or "",
        root.findtext("s:Error/s:Message", namespaces=NS) or "",
    )


# --- error names and texts ------------------------------------------------------------------


def test_generic_validation_errors_keep_their_codes_under_sqs_json_names(
    sqs: Any, queue: str
) -> None:
    with pytest.raises(ClientError) as err:
        sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=11)
    assert _error(err) == (
        "InvalidParameterValue",
        "InvalidParameterValueException",
        "Value 11 for parameter MaxNumberOfMessages is invalid. "
        "Reason: Must be between 1 and 10, if provided.",
    )
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=queue, MessageBody="")
    assert _error(err) == (
        "MissingParameter",
        "MissingRequiredParameterException",
        "The request must contain the parameter MessageBody.",
    )
    # A modelled error still raises its own exception class.
    with pytest.raises(sqs.exceptions.QueueDoesNotExist) as gone:
        sqs.get_queue_url(QueueName=f"rec-none-{uuid.uuid4().hex[:8]}")
    assert _error(gone) == (
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "The specified queue does not exist.",
    )


def test_an_oversized_message_is_refused_in_sqs_words(sqs: Any, queue: str) -> None:
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=queue, MessageBody="a" * (MiB + 1))
    assert _error(err) == (
        "InvalidParameterValue",
        "InvalidParameterValueException",
        "One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes.",
    )


def test_an_oversized_batch_entry_fails_in_the_batch_wording(sqs: Any) -> None:
    url = sqs.create_queue(
        QueueName=f"rec-{uuid.uuid4().hex[:10]}", Attributes={"MaximumMessageSize": "1024"}
    )["QueueUrl"]
    out = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": "ok", "MessageBody": "a" * 1024}, {"Id": "big", "MessageBody": "a" * 1025}],
    )
    assert [e["Id"] for e in out["Successful"]] == ["ok"]
    assert out["Failed"] == [
        {
            "Id": "big",
            "SenderFault": True,
            "Code": "InvalidParameterValue",
            "Message": "One or more parameters cannot be validated. Reason: Message must be "
            "shorter than 1024 bytes.",
        }
    ]


def test_create_queue_names_the_attribute_that_differs(sqs: Any) -> None:
    name = f"rec-conflict-{uuid.uuid4().hex[:8]}"
    sqs.create_queue(QueueName=name, Attributes={"DelaySeconds": "1"})
    with pytest.raises(sqs.exceptions.QueueNameExists) as err:
        sqs.create_queue(QueueName=name, Attributes={"DelaySeconds": "2"})
    assert _error(err) == (
        "QueueAlreadyExists",
        "QueueNameExists",
        "A queue already exists with the same name and a different value for attribute "
        "DelaySeconds",
    )


def test_a_missing_queue_over_the_query_protocol_names_the_wsdl_version(
    sqs_server: ServerProcess,
) -> None:
    gone = f"{sqs_server.url}/000000000000/rec-gone-{uuid.uuid4().hex[:8]}"
    answer = query(sqs_server, {"Action": "GetQueueAttributes", "QueueUrl": gone})
    assert query_error(answer) == (
        400,
        "AWS.SimpleQueueService.NonExistentQueue",
        "The specified queue does not exist for this wsdl version.",
    )


# --- validation -------------------------------------------------------------------------------


def test_a_batch_counts_its_message_attributes_against_the_batch_bound(
    sqs: Any, queue: str
) -> None:
    attributes = {"k": {"DataType": "String", "StringValue": "x"}}  # 1 + 6 + 1 bytes
    entries = [
        {"Id": "1", "MessageBody": "a" * (MiB - 8), "MessageAttributes": attributes},
        {"Id": "2", "MessageBody": "a"},
    ]
    with pytest.raises(ClientError) as err:
        sqs.send_message_batch(QueueUrl=queue, Entries=entries)
    assert _error(err) == (
        "AWS.SimpleQueueService.BatchRequestTooLong",
        "BatchRequestTooLong",
        "Batch requests cannot be longer than 1048576 bytes. You have sent 1048577 bytes.",
    )
    entries[0]["MessageBody"] = "a" * (MiB - 9)  # exactly at the bound
    assert len(sqs.send_message_batch(QueueUrl=queue, Entries=entries)["Successful"]) == 2


@pytest.mark.parametrize("group_id", ["", "a" * 129, "group 123"])
def test_a_malformed_message_group_id_is_refused_on_a_standard_queue(
    sqs: Any, queue: str, group_id: str
) -> None:
    with pytest.raises(ClientError) as err:
        sqs.send_message(QueueUrl=queue, MessageBody="message", MessageGroupId=group_id)
    assert _error(err) == (
        "InvalidParameterValue",
        "InvalidParameterValueException",
        f"Value {group_id} for parameter MessageGroupId is invalid. Reason: MessageGroupId can "
        "only include alphanumeric and punctuation characters. 1 to 128 in length.",
    )
    batch = sqs.send_message_batch(
        QueueUrl=queue,
        Entries=[
            {"Id": "bad", "MessageBody": "m", "MessageGroupId": group_id},
            {"Id": "good", "MessageBody": "m"},
        ],
    )
    assert [e["Id"] for e in batch["Successful"]] == ["good"]
    assert [(e["Id"], e["Code"]) for e in batch["Failed"]] == [("bad", "InvalidParameterValue")]


def test_a_well_formed_message_group_id_is_kept_on_a_standard_queue(sqs: Any, queue: str) -> None:
    sqs.send_message(QueueUrl=queue, MessageBody="message", MessageGroupId="test")
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5, AttributeNames=["All"])[
        "Messages"
    ]
    assert message["Attributes"]["MessageGroupId"] == "test"


def test_an_empty_tags_map_creates_an_untagged_queue(sqs: Any) -> None:
    """boto3's `create_queue(..., tags={})`: SQS creates the queue with no tags. Over the query
    protocol botocore sends an empty map as no parameter at all, so SQS cannot tell it from no
    tags; its JSON front end reads an empty map as those absent parameters."""
    name = f"rec-tags-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(QueueName=name, tags={})["QueueUrl"]
    assert sqs.list_queues(QueueNamePrefix=name)["QueueUrls"] == [url]
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)
    assert sqs.create_queue(QueueName=name, tags={})["QueueUrl"] == url  # and again: the same


def test_empty_tags_on_tag_queue_and_empty_tag_keys_are_refused(sqs: Any, queue: str) -> None:
    """TagQueue's Tags are required: an empty map is SQS's MissingParameter (moto's text, taken
    from SQS), the same over the query protocol (tests/surface/test_sqs_query.py)."""
    with pytest.raises(ClientError) as err:
        sqs.tag_queue(QueueUrl=queue, Tags={})
    assert _error(err) == (
        "MissingParameter",
        "MissingRequiredParameterException",
        "The request must contain the parameter Tags.",
    )
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    with pytest.raises(ClientError) as err:
        sqs.untag_queue(QueueUrl=queue, TagKeys=[])
    assert _error(err)[:2] == ("InvalidParameterValue", "InvalidParameterValueException")
    sqs.tag_queue(QueueUrl=queue, Tags={"team": "blue"})
    sqs.untag_queue(QueueUrl=queue, TagKeys=["team"])
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=queue)


def test_message_attribute_names_may_hold_letters_of_any_script(sqs: Any, queue: str) -> None:
    attributes = {"attr.1øßä": {"StringValue": "Valida", "DataType": "String"}}
    sent = sqs.send_message(QueueUrl=queue, MessageBody="test", MessageAttributes=attributes)
    [message] = sqs.receive_message(
        QueueUrl=queue, WaitTimeSeconds=5, MessageAttributeNames=["All"]
    )["Messages"]
    assert message["MessageAttributes"] == attributes
    assert message["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    with pytest.raises(ClientError) as err:
        sqs.send_message(
            QueueUrl=queue,
            MessageBody="test",
            MessageAttributes={"Invalid-§-attr": {"StringValue": "v", "DataType": "String"}},
        )
    assert _error(err)[0] == "InvalidParameterValue"


# --- X-Amzn-Trace-Id --------------------------------------------------------------------------

TRACE = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1"


def _traced(sqs: Any, trace: str = TRACE) -> Any:
    def add_header(request: Any, **_: Any) -> None:
        request.headers["X-Amzn-Trace-Id"] = trace

    for operation in ("SendMessage", "SendMessageBatch"):
        sqs.meta.events.register(f"before-send.sqs.{operation}", add_header)
    return sqs


def test_the_trace_header_of_a_send_is_the_message_aws_trace_header(
    sqs_server: ServerProcess, sqs: Any, queue: str
) -> None:
    traced = _traced(sqs_server.sqs_client(retries={"max_attempts": 1}))
    attributes = {"timestamp": {"StringValue": "1493147359900", "DataType": "Number"}}
    sent = traced.send_message(QueueUrl=queue, MessageBody="test", MessageAttributes=attributes)
    assert "MD5OfMessageSystemAttributes" not in sent  # the header is not a given attribute
    [message] = sqs.receive_message(
        QueueUrl=queue,
        AttributeNames=["SentTimestamp", "AWSTraceHeader"],
        MessageAttributeNames=["All"],
        VisibilityTimeout=0,
        WaitTimeSeconds=5,
    )["Messages"]
    assert set(message["Attributes"]) == {"SentTimestamp", "AWSTraceHeader"}
    assert message["Attributes"]["AWSTraceHeader"] == TRACE
    for asked in ({"MessageSystemAttributeNames": ["AWSTraceHeader"]}, {"AttributeNames": ["All"]}):
        [again] = sqs.receive_message(
            QueueUrl=queue, VisibilityTimeout=0, WaitTimeSeconds=5, **asked
        )["Messages"]
        assert again["Attributes"]["AWSTraceHeader"] == TRACE
    [unasked] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5)["Messages"]
    assert "Attributes" not in unasked


def test_a_batch_traces_every_message_and_a_given_attribute_wins(sqs: Any, queue: str) -> None:
    own = "Root=1-00000000-000000000000000000000000"
    _traced(sqs).send_message_batch(
        QueueUrl=queue,
        Entries=[
            {"Id": "a", "MessageBody": "a"},
            {
                "Id": "b",
                "MessageBody": "b",
                "MessageSystemAttributes": {
                    "AWSTraceHeader": {"DataType": "String", "StringValue": own}
                },
            },
        ],
    )
    traces: dict[str, str] = {}
    for _ in range(10):
        got = sqs.receive_message(
            QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=2, AttributeNames=["All"]
        )
        traces |= {m["Body"]: m["Attributes"]["AWSTraceHeader"] for m in got.get("Messages", [])}
        if len(traces) == 2:
            break
    assert traces == {"a": TRACE, "b": own}


def test_the_trace_header_works_over_the_query_protocol(
    sqs_server: ServerProcess, sqs: Any, queue: str
) -> None:
    params = {"Action": "SendMessage", "QueueUrl": queue, "MessageBody": "q"}
    assert query(sqs_server, params, headers={"X-Amzn-Trace-Id": TRACE}).status == 200
    [message] = sqs.receive_message(
        QueueUrl=queue, WaitTimeSeconds=5, MessageSystemAttributeNames=["AWSTraceHeader"]
    )["Messages"]
    assert message["Attributes"] == {"AWSTraceHeader": TRACE}


def test_an_empty_trace_header_traces_nothing(sqs: Any, queue: str) -> None:
    _traced(sqs, "").send_message(QueueUrl=queue, MessageBody="x")
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=5, AttributeNames=["All"])[
        "Messages"
    ]
    assert "AWSTraceHeader" not in message["Attributes"]
