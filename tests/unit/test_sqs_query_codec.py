"""The query codec on its own: query names to JSON members, JSON results to SQS's XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from okuri.sqs import query
from okuri.sqs.errors import SqsError

NS = {"s": query.XMLNS}


def decode(action: str, pairs: dict[str, str], path: str = "/") -> dict[str, object]:
    return query.decode(action, pairs.items(), path, "http://h:1")


def test_maps_lists_entries_and_integers_become_json_members() -> None:
    params = decode(
        "SendMessageBatch",
        {
            "Action": "SendMessageBatch",
            "Version": "2012-11-05",
            "QueueUrl": "http://h:1/0/q",
            "SendMessageBatchRequestEntry.2.Id": "b",
            "SendMessageBatchRequestEntry.2.MessageBody": "two",
            "SendMessageBatchRequestEntry.10.Id": "c",
            "SendMessageBatchRequestEntry.10.MessageBody": "ten",
            "SendMessageBatchRequestEntry.1.Id": "a",
            "SendMessageBatchRequestEntry.1.MessageBody": "one",
            "SendMessageBatchRequestEntry.1.DelaySeconds": "5",
            "SendMessageBatchRequestEntry.1.MessageAttribute.1.Name": "k",
            "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType": "String",
            "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue": "v",
            "SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringListValue.1": "x",
        },
    )
    assert params == {
        "QueueUrl": "http://h:1/0/q",
        "Entries": [
            {
                "Id": "a",
                "MessageBody": "one",
                "DelaySeconds": 5,
                "MessageAttributes": {
                    "k": {"DataType": "String", "StringValue": "v", "StringListValues": ["x"]}
                },
            },
            {"Id": "b", "MessageBody": "two"},
            {"Id": "c", "MessageBody": "ten"},
        ],
    }


def test_create_queue_tags_use_the_lower_case_member_and_tag_queue_the_upper() -> None:
    tags = {"Tag.1.Key": "team", "Tag.1.Value": "blue"}
    assert decode("CreateQueue", {"QueueName": "q", **tags}) == {
        "QueueName": "q",
        "tags": {"team": "blue"},
    }
    assert decode("TagQueue", {"QueueUrl": "u", **tags}) == {
        "QueueUrl": "u",
        "Tags": {"team": "blue"},
    }
    assert decode("UntagQueue", {"QueueUrl": "u", "TagKey.1": "team"}) == {
        "QueueUrl": "u",
        "TagKeys": ["team"],
    }


def test_a_queue_path_stands_in_for_a_missing_queue_url() -> None:
    assert decode("PurgeQueue", {}, "/000000000000/jobs") == {
        "QueueUrl": "http://h:1/000000000000/jobs"
    }
    assert decode("ListQueues", {}, "/") == {}
    assert decode("PurgeQueue", {"QueueUrl": "u"}, "/0/q") == {"QueueUrl": "u"}


def test_presigned_url_parameters_and_repeats() -> None:
    params = decode(
        "ListQueues", {"X-Amz-Signature": "s", "x-amz-date": "d", "QueueNamePrefix": "a"}
    )
    assert params == {"QueueNamePrefix": "a"}
    repeated = query.decode(
        "ListQueues", [("QueueNamePrefix", "a"), ("QueueNamePrefix", "b")], "/", ""
    )
    assert repeated == {"QueueNamePrefix": "b"}
    assert query.action_of([("Action", "A"), ("Action", "B")]) == "B"
    assert query.action_of([]) is None


@pytest.mark.parametrize(
    "pairs",
    [
        {"QueueName": "q", "QueueName.1": "x"},
        {"Attribute.1": "x", "Attribute.1.Name": "y"},
        {"AttributeName": "All"},
        {"AttributeName.first": "All"},
        {"AttributeName.0": "All"},
        {"Attribute.1.Value": "1"},
        {"Attribute.1": "flat"},
        {"MaxResults": "many"},
        {"QueueUrl.x": "u"},
        # Python's isdigit() is true of '²' and int() refuses 4,301 digits: both once a 500.
        {"AttributeName.²": "All"},
        {"AttributeName." + "1" * 5000: "All"},
        {"MaxResults": "²"},
        {"MaxResults": "1" * 5000},
        {"MaxResults": " 5"},
        {"MaxResults": "1_0"},
    ],
)
def test_malformed_parameters_are_invalid_parameter_values(pairs: dict[str, str]) -> None:
    with pytest.raises(SqsError) as err:
        decode("GetQueueAttributes", pairs)
    assert err.value.code == "InvalidParameterValue"


def test_is_query() -> None:
    assert query.is_query("POST", query.FORM_TYPE, {}, False)
    assert query.is_query("POST", "", {"Action": "ListQueues"}, False)
    assert query.is_query("GET", "", {"QueueUrl": "u"}, False)
    assert not query.is_query("POST", query.FORM_TYPE, {}, True)
    assert not query.is_query("POST", "application/x-amz-json-1.0", {}, False)


def test_results_render_as_sqs_xml() -> None:
    result = {
        "Successful": [{"Id": "a", "MessageId": "m"}],
        "Failed": [{"Id": "b", "SenderFault": True, "Code": "X", "Message": "a < b & c\r"}],
    }
    root = ET.fromstring(query.response("SendMessageBatch", result, "rid"))
    assert root.tag == f"{{{query.XMLNS}}}SendMessageBatchResponse"
    body = root.find("s:SendMessageBatchResult", NS)
    assert body is not None
    assert body.findtext("s:SendMessageBatchResultEntry/s:Id", namespaces=NS) == "a"
    assert body.findtext("s:BatchResultErrorEntry/s:SenderFault", namespaces=NS) == "true"
    assert body.findtext("s:BatchResultErrorEntry/s:Message", namespaces=NS) == "a < b & c\r"
    assert root.findtext("s:ResponseMetadata/s:RequestId", namespaces=NS) == "rid"


def test_maps_lists_and_empty_results() -> None:
    messages = {
        "Messages": [
            {
                "Body": "b",
                "Attributes": {"SentTimestamp": "1"},
                "MessageAttributes": {"k": {"DataType": "String", "StringListValues": ["x", "y"]}},
            }
        ]
    }
    root = ET.fromstring(query.response("ReceiveMessage", messages, "r"))
    message = root.find("s:ReceiveMessageResult/s:Message", NS)
    assert message is not None
    assert message.findtext("s:Attribute/s:Name", namespaces=NS) == "SentTimestamp"
    values = message.findall("s:MessageAttribute/s:Value/s:StringListValue", NS)
    assert [v.text for v in values] == ["x", "y"]

    tags = ET.fromstring(query.response("ListQueueTags", {"Tags": {"a": "1"}}, "r"))
    assert tags.findtext("s:ListQueueTagsResult/s:Tag/s:Key", namespaces=NS) == "a"
    sources = ET.fromstring(
        query.response("ListDeadLetterSourceQueues", {"queueUrls": ["u1", "u2"]}, "r")
    )
    assert [
        e.text for e in sources.findall("s:ListDeadLetterSourceQueuesResult/s:QueueUrl", NS)
    ] == [
        "u1",
        "u2",
    ]
    empty = ET.fromstring(query.response("ReceiveMessage", {}, "r"))
    assert empty.find("s:ReceiveMessageResult", NS) is not None
    none = ET.fromstring(query.response("DeleteQueue", {}, "r"))
    assert none.find("s:DeleteQueueResult", NS) is None
    skipped = ET.fromstring(query.response("GetQueueUrl", {"QueueUrl": "u", "X": None}, "r"))
    assert skipped.find("s:GetQueueUrlResult/s:X", NS) is None


def test_error_documents() -> None:
    err = SqsError("QueueDoesNotExist", "The specified queue does not exist.")
    root = ET.fromstring(query.error_response(err, "rid"))
    assert (
        root.findtext("s:Error/s:Code", namespaces=NS) == "AWS.SimpleQueueService.NonExistentQueue"
    )
    assert root.findtext("s:Error/s:Type", namespaces=NS) == "Sender"
    assert root.findtext("s:RequestId", namespaces=NS) == "rid"
    server = ET.fromstring(query.error_response(SqsError("InternalFailure", "x", 500, False), "r"))
    assert server.findtext("s:Error/s:Type", namespaces=NS) == "Receiver"


def test_an_empty_or_missing_batch_is_an_empty_entries_list() -> None:
    assert decode("SendMessageBatch", {"QueueUrl": "u", "SendMessageBatchRequestEntry": ""}) == {
        "QueueUrl": "u",
        "Entries": [],
    }
    assert decode("DeleteMessageBatch", {"QueueUrl": "u"}) == {"QueueUrl": "u", "Entries": []}
    assert decode("GetQueueAttributes", {"QueueUrl": "u", "AttributeName": ""}) == {
        "QueueUrl": "u",
        "AttributeNames": [],
    }


def test_botocore_sends_an_empty_list_under_its_json_member_name() -> None:
    # botocore's query serializer writes `Entries=` (aws-sdk-go writes `<Action>RequestEntry=`)
    assert decode("SendMessageBatch", {"QueueUrl": "u", "Entries": ""}) == {
        "QueueUrl": "u",
        "Entries": [],
    }
    assert decode("GetQueueAttributes", {"QueueUrl": "u", "AttributeNames": ""}) == {
        "QueueUrl": "u",
        "AttributeNames": [],
    }
    # outside a batch action `Entries` is no list member: it stays a (refused) scalar
    assert decode("PurgeQueue", {"QueueUrl": "u", "Entries": ""}) == {
        "QueueUrl": "u",
        "Entries": "",
    }
