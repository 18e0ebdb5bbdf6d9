"""The replay comparator and value carrying, on hand-made responses: what they forgive, what not.

Replay is only worth something if a real difference fails it; these tests pin that a changed
field type, a missing field, another error code, an extra list element, a lost header and a
different XML shape are all caught, and that volatile values (ids, handles, timestamps, hosts)
are not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import vcr
from vcr.serializers import yamlserializer

from compat.cassette import Exchange, Recording, Request, Response, load, save
from compat.compare import difference, response_form, string_form
from compat.replay import Substitutions, learn

JSON_TYPE = "application/x-amz-json-1.0"


def json_response(body: Any, status: int = 200, **headers: str) -> Response:
    return Response(
        status,
        {
            "x-amzn-RequestId": "2b1c7a8e-1111-4a4a-8b8b-0123456789ab",
            "Content-Type": JSON_TYPE,
            "Content-Length": "10",
            **headers,
        },
        json.dumps(body).encode(),
    )


def xml_response(body: str, status: int = 200) -> Response:
    return Response(
        status,
        {"x-amzn-RequestId": "2b1c7a8e-1111-4a4a-8b8b-0123456789ab", "Content-Type": "text/xml"},
        body.encode(),
    )


def message(n: int, handle: str, sent_ms: int = 1764424350123) -> dict[str, Any]:
    return {
        "MessageId": f"0000000{n}-aaaa-4bbb-8ccc-dddddddddddd",
        "ReceiptHandle": handle,
        "MD5OfBody": f"{n:032x}",
        "Body": f"body {n}",
        "Attributes": {"SentTimestamp": str(sent_ms), "ApproximateReceiveCount": "1"},
    }


RECORDED_RECEIVE = json_response(
    {"Messages": [message(1, "okr1AAA+/="), message(2, "okr1BBBBBBBB")]}
)


def test_volatile_values_and_list_order_are_forgiven() -> None:
    live = json_response(
        {
            "Messages": [
                {
                    **message(2, "okr1ZZZ", 1764424999999),
                    "MessageId": "9f9f9f9f-aaaa-4bbb-8ccc-eeeeeeeeeeee",
                },
                {**message(1, "other-handle"), "MD5OfBody": "f" * 32},
            ]
        },
        **{"X-AMZN-REQUESTID": "7d7d7d7d-2222-4b4b-8c8c-0123456789ab"},
    )
    assert difference(3, "ReceiveMessage", RECORDED_RECEIVE, live) is None


def test_a_changed_field_type_is_caught() -> None:
    recorded = json_response({"Attributes": {"VisibilityTimeout": "30"}})
    live = json_response({"Attributes": {"VisibilityTimeout": 30}})
    diff = difference(7, "GetQueueAttributes", recorded, live)
    assert diff is not None
    assert '-      "VisibilityTimeout": "30"' in diff
    assert '+      "VisibilityTimeout": 30' in diff
    assert "recorded exchange 7 (GetQueueAttributes)" in diff


def test_a_missing_field_is_caught() -> None:
    recorded = json_response(
        {"MD5OfMessageBody": "a" * 32, "MessageId": message(1, "h")["MessageId"]}
    )
    live = json_response({"MessageId": message(2, "h")["MessageId"]})
    diff = difference(8, "SendMessage", recorded, live)
    assert diff is not None and '-    "MD5OfMessageBody": "<md5>"' in diff


def test_a_different_error_code_is_caught() -> None:
    recorded = json_response(
        {"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "gone"},
        400,
        **{"x-amzn-query-error": "AWS.SimpleQueueService.NonExistentQueue;Sender"},
    )
    live = json_response(
        {"__type": "com.amazonaws.sqs#QueueNameExists", "message": "other words"},
        400,
        **{"x-amzn-query-error": "QueueAlreadyExists;Sender"},
    )
    diff = difference(4, "GetQueueUrl", recorded, live)
    assert diff is not None
    assert '-  "error": "QueueDoesNotExist / AWS.SimpleQueueService.NonExistentQueue"' in diff
    assert '+  "error": "QueueNameExists / QueueAlreadyExists"' in diff


def test_an_error_message_is_compared_by_type_only() -> None:
    recorded = json_response({"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "a"}, 400)
    live = json_response({"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "b"}, 400)
    assert difference(4, "GetQueueUrl", recorded, live) is None


def test_an_extra_list_element_is_caught() -> None:
    live = json_response({"Messages": [message(1, "h1"), message(2, "h2"), message(3, "h3")]})
    diff = difference(14, "ReceiveMessage", RECORDED_RECEIVE, live)
    assert diff is not None and '+        "Body": "body 3",' in diff


def test_a_different_status_is_caught() -> None:
    diff = difference(0, "CreateQueue", json_response({}), json_response({}, 500))
    assert diff is not None and '+  "status": 500' in diff


def test_a_lost_header_that_sdks_read_is_caught_and_other_headers_are_ignored() -> None:
    error = {"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "m"}
    recorded = json_response(error, 400, **{"x-amzn-query-error": "X;Sender", "Date": "then"})
    live = json_response(error, 400, Server="another")
    diff = difference(5, "GetQueueUrl", recorded, live)
    assert diff is not None and '-    "x-amzn-query-error": "X;Sender"' in diff
    same = json_response(error, 400, **{"X-Amzn-Query-Error": "X;Sender", "Server": "x"})
    assert difference(5, "GetQueueUrl", recorded, same) is None


@pytest.mark.parametrize(
    ("value", "key", "form"),
    [
        ("2b1c7a8e-1111-4a4a-8b8b-0123456789ab", None, "<uuid>"),
        ("d41d8cd98f00b204e9800998ecf8427e", "MD5OfBody", "<md5>"),
        ("1764424350123", "SentTimestamp", "<epoch-ms>"),
        ("1764424350", "CreatedTimestamp", "<epoch-s>"),
        ("http://127.0.0.1:4444/000000000000/jobs", "QueueUrl", "http://<host>/000000000000/jobs"),
        ("okr1anything", "ReceiptHandle", "<receipt-handle>"),
        ("AKIDOKURITEST", "SenderId", "<sender-id>"),
        ("17", "ApproximateNumberOfMessages", "<count>"),
        ("17", "ApproximateReceiveCount", "17"),
        ("10000000000000065536", "SequenceNumber", "<sequence-number>"),
        ("not-a-number", "SequenceNumber", "not-a-number"),
        ("sqs-core message one", "Body", "sqs-core message one"),
    ],
)
def test_string_forms(value: str, key: str | None, form: str) -> None:
    assert string_form(value, key) == form


QUERY_ERROR = """<?xml version="1.0"?>
<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
  <Error><Type>Sender</Type><Code>{code}</Code><Message>{text}</Message><Detail/></Error>
  <RequestId>{request_id}</RequestId>
</ErrorResponse>"""

QUERY_ATTRIBUTES = """<GetQueueAttributesResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">
  <GetQueueAttributesResult>{attributes}</GetQueueAttributesResult>
  <ResponseMetadata><RequestId>{request_id}</RequestId></ResponseMetadata>
</GetQueueAttributesResponse>"""


def attribute(name: str, value: str) -> str:
    return f"<Attribute><Name>{name}</Name><Value>{value}</Value></Attribute>"


def test_xml_errors_compare_code_and_type_not_text_or_request_id() -> None:
    recorded = xml_response(
        QUERY_ERROR.format(
            code="AWS.SimpleQueueService.NonExistentQueue",
            text="a",
            request_id="2b1c7a8e-1111-4a4a-8b8b-0123456789ab",
        ),
        400,
    )
    same = xml_response(
        QUERY_ERROR.format(
            code="AWS.SimpleQueueService.NonExistentQueue",
            text="b",
            request_id="7d7d7d7d-2222-4b4b-8c8c-0123456789ab",
        ),
        400,
    )
    other = xml_response(
        QUERY_ERROR.format(
            code="QueueAlreadyExists", text="a", request_id="2b1c7a8e-1111-4a4a-8b8b-0123456789ab"
        ),
        400,
    )
    assert response_form(recorded)["error"] == "AWS.SimpleQueueService.NonExistentQueue (Sender)"
    assert difference(1, "GetQueueUrl", recorded, same) is None
    diff = difference(1, "GetQueueUrl", recorded, other)
    assert diff is not None and "QueueAlreadyExists" in diff


def test_xml_name_value_pairs_and_repeated_elements() -> None:
    def answer(*attributes: str) -> Response:
        return xml_response(
            QUERY_ATTRIBUTES.format(
                attributes="".join(attributes), request_id="2b1c7a8e-1111-4a4a-8b8b-0123456789ab"
            )
        )

    recorded = answer(
        attribute("VisibilityTimeout", "30"), attribute("ApproximateNumberOfMessages", "0")
    )
    counts_differ = answer(
        attribute("ApproximateNumberOfMessages", "5"), attribute("VisibilityTimeout", "30")
    )
    value_differs = answer(
        attribute("VisibilityTimeout", "45"), attribute("ApproximateNumberOfMessages", "0")
    )
    one_more = answer(
        attribute("VisibilityTimeout", "30"),
        attribute("ApproximateNumberOfMessages", "0"),
        attribute("DelaySeconds", "0"),
    )
    assert difference(2, "GetQueueAttributes", recorded, counts_differ) is None
    assert difference(2, "GetQueueAttributes", recorded, value_differs) is not None
    diff = difference(2, "GetQueueAttributes", recorded, one_more)
    assert diff is not None and '"Name": "DelaySeconds"' in diff


def test_substitutions_cover_raw_json_and_percent_encoded_forms() -> None:
    subs = Substitutions()
    subs.add("127.0.0.1:1111", "127.0.0.1:2222")
    subs.add("http://127.0.0.1:1111/000000000000/q", "http://127.0.0.1:2222/000000000000/q")
    subs.add("okr1a+b/c=", "okr1x+y/z=")
    text = (
        '{"QueueUrl": "http://127.0.0.1:1111/000000000000/q", "ReceiptHandle": "okr1a+b/c="}'
        "&QueueUrl=http%3A%2F%2F127.0.0.1%3A1111%2F000000000000%2Fq&ReceiptHandle=okr1a%2Bb%2Fc%3D"
        '&Escaped="okr1a+b\\/c="'
    )
    assert subs.apply(text) == (
        '{"QueueUrl": "http://127.0.0.1:2222/000000000000/q", "ReceiptHandle": "okr1x+y/z="}'
        "&QueueUrl=http%3A%2F%2F127.0.0.1%3A2222%2F000000000000%2Fq&ReceiptHandle=okr1x%2By%2Fz%3D"
        '&Escaped="okr1x+y\\/z="'
    )


def test_values_are_learned_from_messages_paired_by_content_not_position() -> None:
    live = json_response({"Messages": [message(2, "live-2"), message(1, "live-1")]})
    subs = Substitutions()
    learn(RECORDED_RECEIVE, live, subs)
    assert subs.values["okr1AAA+/="] == "live-1"
    assert subs.values["okr1BBBBBBBB"] == "live-2"


def test_a_value_with_no_live_counterpart_is_reported_when_sent_again() -> None:
    subs = Substitutions()
    learn(RECORDED_RECEIVE, json_response({}), subs)
    assert subs.unmapped_in("ReceiptHandle=okr1BBBBBBBB") == ["okr1BBBBBBBB"]
    assert subs.unmapped_in("ReceiptHandle=something-else") == []


def test_a_cassette_is_vcrpy_s_format_and_round_trips(tmp_path: Path) -> None:
    exchange = Exchange(
        Request(
            "POST",
            "http://127.0.0.1:4444/",
            {"X-Amz-Target": "AmazonSQS.ListQueues", "Host": "127.0.0.1:4444"},
            b"{}",
        ),
        Response(200, {"Content-Type": JSON_TYPE}, b"\xff\x00"),
    )
    recording = Recording("boto3", "1.0", "sqs-core", "2025-01-01", "0.0.1", [exchange])
    path = tmp_path / "session.yaml"
    save(recording, path)
    assert load(path) == Recording(
        "boto3",
        "1.0",
        "sqs-core",
        "2025-01-01",
        "0.0.1",
        [Exchange(exchange.request, Response(200, {"Content-Type": JSON_TYPE}, b"\xff\x00", "OK"))],
    )

    data = yamlserializer.deserialize(path.read_text())
    assert data["version"] == 1
    [interaction] = data["interactions"]
    assert interaction["request"] == {
        "method": "POST",
        "uri": "http://127.0.0.1:4444/",
        "body": "{}",
        "headers": {"X-Amz-Target": ["AmazonSQS.ListQueues"], "Host": ["127.0.0.1:4444"]},
    }
    assert interaction["response"] == {
        "status": {"code": 200, "message": "OK"},
        "headers": {"Content-Type": [JSON_TYPE]},
        "body": {"string": b"\xff\x00"},  # not UTF-8: YAML's !!binary
    }
    assert data["metadata"] == {
        "client": "boto3",
        "sdk_version": "1.0",
        "scenario": "sqs-core",
        "protocols": ["json"],
        "recorded": "2025-01-01",
        "okuri_version": "0.0.1",
    }
    # vcrpy itself plays it: its metadata and its one interaction.
    with vcr.use_cassette(str(path), record_mode="none") as cassette:
        assert cassette.get_metadata("client", None) == "boto3"
        assert len(cassette) == 1


def test_a_cassette_without_the_session_metadata_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("interactions: []\nversion: 1\n")
    with pytest.raises(ValueError, match="metadata lacks client, sdk_version"):
        load(path)
