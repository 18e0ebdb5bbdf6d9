"""The legacy query protocol against a real server: signed form POSTs, GETs and presigned URLs.

Requests are built and signed with botocore's own SigV4 signer, exactly as the query-protocol
SDKs send them; responses are read as XML the way those SDKs read them.
"""

from __future__ import annotations

import base64
import hashlib
import urllib.parse
import xml.etree.ElementTree as ET
from typing import Any

import botocore.session
import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.serialize import QuerySerializer

from okuri.sqs.query import XMLNS
from tests.servers import SQS_KEY, SQS_SECRET, Response, ServerProcess, http

NS = {"s": XMLNS}
CREDS = Credentials(SQS_KEY, SQS_SECRET)
FORM = "application/x-www-form-urlencoded; charset=utf-8"


def send(
    server: ServerProcess,
    params: dict[str, str],
    method: str = "POST",
    path: str = "/",
    sign: bool = True,
) -> Response:
    # A `+` in a URL is a space to AWS but signed literally by botocore: encode spaces as %20.
    encoded = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    if method == "POST":
        request = AWSRequest(
            "POST", server.url + path, data=encoded, headers={"Content-Type": FORM}
        )
    else:
        request = AWSRequest("GET", f"{server.url}{path}?{encoded}")
    if sign:
        SigV4Auth(CREDS, "sqs", "us-east-1").add_auth(request)
    headers = {k: v for k, v in request.headers.items()}
    body = request.body.encode() if isinstance(request.body, str) else request.body
    return http(method, request.url, body or None, headers)


def ok(response: Response, action: str) -> ET.Element:
    assert response.status == 200, response.text
    assert response.headers["content-type"].startswith("text/xml")
    assert response.headers["x-amzn-requestid"]
    root = ET.fromstring(response.body)
    assert root.tag == f"{{{XMLNS}}}{action}Response"
    assert root.findtext("s:ResponseMetadata/s:RequestId", namespaces=NS)
    result = root.find(f"s:{action}Result", NS)
    return result if result is not None else root


def error(response: Response, status: int, code: str, kind: str = "Sender") -> str:
    assert response.status == status, response.text
    assert response.headers["content-type"].startswith("text/xml")
    root = ET.fromstring(response.body)
    assert root.tag == f"{{{XMLNS}}}ErrorResponse"
    assert root.findtext("s:Error/s:Code", namespaces=NS) == code
    assert root.findtext("s:Error/s:Type", namespaces=NS) == kind
    assert root.findtext("s:RequestId", namespaces=NS)
    return root.findtext("s:Error/s:Message", namespaces=NS) or ""


def attributes(element: ET.Element, tag: str = "Attribute") -> dict[str, str]:
    return {
        a.findtext("s:Name", namespaces=NS) or "": a.findtext("s:Value", namespaces=NS) or ""
        for a in element.findall(f"s:{tag}", NS)
    }


def create(server: ServerProcess, name: str, **attrs: str) -> str:
    params = {"Action": "CreateQueue", "Version": "2012-11-05", "QueueName": name}
    for i, (key, value) in enumerate(attrs.items(), 1):
        params[f"Attribute.{i}.Name"], params[f"Attribute.{i}.Value"] = key, value
    url = ok(send(server, params), "CreateQueue").findtext("s:QueueUrl", namespaces=NS)
    assert url
    return url


def receive(server: ServerProcess, url: str, **extra: str) -> list[ET.Element]:
    params = {"Action": "ReceiveMessage", "QueueUrl": url, "WaitTimeSeconds": "2", **extra}
    return ok(send(server, params), "ReceiveMessage").findall("s:Message", NS)


def test_queue_lifecycle(sqs_server: ServerProcess) -> None:
    params = {
        "Action": "CreateQueue",
        "Version": "2012-11-05",
        "QueueName": "qp-life",
        "Attribute.1.Name": "VisibilityTimeout",
        "Attribute.1.Value": "7",
        "Tag.1.Key": "team",
        "Tag.1.Value": "blue",
    }
    url = ok(send(sqs_server, params), "CreateQueue").findtext("s:QueueUrl", namespaces=NS)
    assert url and url.endswith("/qp-life")
    got = ok(send(sqs_server, {"Action": "GetQueueUrl", "QueueName": "qp-life"}), "GetQueueUrl")
    assert got.findtext("s:QueueUrl", namespaces=NS) == url

    listed = ok(
        send(sqs_server, {"Action": "ListQueues", "QueueNamePrefix": "qp-life"}, "GET"),
        "ListQueues",
    )
    assert [e.text for e in listed.findall("s:QueueUrl", NS)] == [url]

    set_params = {"Action": "SetQueueAttributes", "QueueUrl": url}
    set_params |= {"Attribute.1.Name": "DelaySeconds", "Attribute.1.Value": "3"}
    root = ok(send(sqs_server, set_params), "SetQueueAttributes")
    assert root.find("s:SetQueueAttributesResult", NS) is None  # SQS sends no result element

    got_attrs = attributes(
        ok(
            send(
                sqs_server,
                {
                    "Action": "GetQueueAttributes",
                    "QueueUrl": url,
                    "AttributeName.1": "VisibilityTimeout",
                    "AttributeName.2": "DelaySeconds",
                },
            ),
            "GetQueueAttributes",
        )
    )
    assert got_attrs == {"VisibilityTimeout": "7", "DelaySeconds": "3"}

    ok(send(sqs_server, {"Action": "PurgeQueue", "QueueUrl": url}), "PurgeQueue")
    ok(send(sqs_server, {"Action": "DeleteQueue", "QueueUrl": url}), "DeleteQueue")
    missing = send(sqs_server, {"Action": "GetQueueUrl", "QueueName": "qp-life"})
    error(missing, 400, "AWS.SimpleQueueService.NonExistentQueue")


def _as_boto3_query(action: str, params: dict[str, Any]) -> dict[str, str]:
    """The form botocore's own query serializer makes of `params` (boto3 before late 2023)."""
    model = botocore.session.get_session().get_service_model("sqs")
    request = QuerySerializer().serialize_to_request(params, model.operation_model(action))
    body: dict[str, str] = request["body"]
    return body


def test_empty_tag_maps_answer_as_over_json(sqs_server: ServerProcess) -> None:
    """An empty map is no parameter at all in the query protocol: CreateQueue's `tags={}` makes
    an untagged queue and TagQueue's `Tags={}` lacks its Tags, refused as over JSON
    (tests/surface/test_sqs_recorded_answers.py)."""
    form = _as_boto3_query("CreateQueue", {"QueueName": "qp-empty-tags", "tags": {}})
    assert form == {"Action": "CreateQueue", "Version": "2012-11-05", "QueueName": "qp-empty-tags"}
    url = ok(send(sqs_server, form), "CreateQueue").findtext("s:QueueUrl", namespaces=NS)
    assert url and url.endswith("/qp-empty-tags")
    listed = ok(send(sqs_server, {"Action": "ListQueueTags", "QueueUrl": url}), "ListQueueTags")
    assert listed.findall("s:Tag", NS) == []

    form = _as_boto3_query("TagQueue", {"QueueUrl": url, "Tags": {}})
    assert form == {"Action": "TagQueue", "Version": "2012-11-05", "QueueUrl": url}
    refused = send(sqs_server, form)
    assert error(refused, 400, "MissingParameter") == "The request must contain the parameter Tags."
    ok(send(sqs_server, {"Action": "DeleteQueue", "QueueUrl": url}), "DeleteQueue")


def test_messages_round_trip_with_attributes_and_md5s(sqs_server: ServerProcess) -> None:
    url = create(sqs_server, "qp-msgs")
    body = "line one\r\nline <two> & three \U0001f600"
    sent = ok(
        send(
            sqs_server,
            {
                "Action": "SendMessage",
                "QueueUrl": url,
                "MessageBody": body,
                "MessageAttribute.1.Name": "colour",
                "MessageAttribute.1.Value.DataType": "String",
                "MessageAttribute.1.Value.StringValue": "red",
                "MessageAttribute.2.Name": "blob",
                "MessageAttribute.2.Value.DataType": "Binary",
                "MessageAttribute.2.Value.BinaryValue": base64.b64encode(b"\x00\x01").decode(),
                "MessageAttribute.3.Name": "n",
                "MessageAttribute.3.Value.DataType": "Number",
                "MessageAttribute.3.Value.StringValue": "42",
            },
        ),
        "SendMessage",
    )
    assert (
        sent.findtext("s:MD5OfMessageBody", namespaces=NS) == hashlib.md5(body.encode()).hexdigest()
    )
    attr_md5 = sent.findtext("s:MD5OfMessageAttributes", namespaces=NS)

    [message] = receive(
        sqs_server, url, **{"AttributeName.1": "All", "MessageAttributeName.1": "All"}
    )
    assert message.findtext("s:Body", namespaces=NS) == body  # CR survives XML parsing
    assert message.findtext("s:MD5OfBody", namespaces=NS) == hashlib.md5(body.encode()).hexdigest()
    assert message.findtext("s:MD5OfMessageAttributes", namespaces=NS) == attr_md5
    assert message.findtext("s:MessageId", namespaces=NS) == sent.findtext(
        "s:MessageId", namespaces=NS
    )
    system = attributes(message)
    assert system["ApproximateReceiveCount"] == "1" and system["SenderId"] == SQS_KEY
    values = {
        a.findtext("s:Name", namespaces=NS): {
            child.tag.split("}")[1]: child.text for child in a.find("s:Value", NS) or []
        }
        for a in message.findall("s:MessageAttribute", NS)
    }
    assert values == {
        "colour": {"DataType": "String", "StringValue": "red"},
        "blob": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\x00\x01").decode()},
        "n": {"DataType": "Number", "StringValue": "42"},
    }

    handle = message.findtext("s:ReceiptHandle", namespaces=NS) or ""
    change = {"Action": "ChangeMessageVisibility", "QueueUrl": url, "ReceiptHandle": handle}
    ok(send(sqs_server, change | {"VisibilityTimeout": "0"}), "ChangeMessageVisibility")
    [again] = receive(sqs_server, url)
    handle = again.findtext("s:ReceiptHandle", namespaces=NS) or ""
    delete = {"Action": "DeleteMessage", "QueueUrl": url, "ReceiptHandle": handle}
    ok(send(sqs_server, delete), "DeleteMessage")
    assert receive(sqs_server, url, WaitTimeSeconds="0") == []


def test_batches_report_successes_and_failures_in_xml(sqs_server: ServerProcess) -> None:
    url = create(sqs_server, "qp-batch")
    batch = {"Action": "SendMessageBatch", "QueueUrl": url}
    for i in range(1, 4):
        batch[f"SendMessageBatchRequestEntry.{i}.Id"] = f"m{i}"
        batch[f"SendMessageBatchRequestEntry.{i}.MessageBody"] = f"body {i}"
    batch["SendMessageBatchRequestEntry.3.DelaySeconds"] = "901"  # over the limit: fails alone
    result = ok(send(sqs_server, batch), "SendMessageBatch")
    entries = result.findall("s:SendMessageBatchResultEntry", NS)
    assert sorted(e.findtext("s:Id", namespaces=NS) or "" for e in entries) == ["m1", "m2"]
    [failed] = result.findall("s:BatchResultErrorEntry", NS)
    assert failed.findtext("s:Id", namespaces=NS) == "m3"
    assert failed.findtext("s:SenderFault", namespaces=NS) == "true"
    assert failed.findtext("s:Code", namespaces=NS)

    messages = receive(sqs_server, url, MaxNumberOfMessages="10")
    while len(messages) < 2:
        messages += receive(sqs_server, url, MaxNumberOfMessages="10")
    handles = [m.findtext("s:ReceiptHandle", namespaces=NS) or "" for m in messages]

    change = {"Action": "ChangeMessageVisibilityBatch", "QueueUrl": url}
    for i, handle in enumerate(handles, 1):
        change[f"ChangeMessageVisibilityBatchRequestEntry.{i}.Id"] = f"c{i}"
        change[f"ChangeMessageVisibilityBatchRequestEntry.{i}.ReceiptHandle"] = handle
        change[f"ChangeMessageVisibilityBatchRequestEntry.{i}.VisibilityTimeout"] = "60"
    changed = ok(send(sqs_server, change), "ChangeMessageVisibilityBatch")
    assert len(changed.findall("s:ChangeMessageVisibilityBatchResultEntry", NS)) == 2

    delete = {"Action": "DeleteMessageBatch", "QueueUrl": url}
    for i, handle in enumerate([*handles, "not-a-handle"], 1):
        delete[f"DeleteMessageBatchRequestEntry.{i}.Id"] = f"d{i}"
        delete[f"DeleteMessageBatchRequestEntry.{i}.ReceiptHandle"] = handle
    deleted = ok(send(sqs_server, delete), "DeleteMessageBatch")
    assert len(deleted.findall("s:DeleteMessageBatchResultEntry", NS)) == 2
    [bad] = deleted.findall("s:BatchResultErrorEntry", NS)
    assert bad.findtext("s:Code", namespaces=NS) == "ReceiptHandleIsInvalid"

    duplicate = {"Action": "DeleteMessageBatch", "QueueUrl": url}
    for i in (1, 2):
        duplicate[f"DeleteMessageBatchRequestEntry.{i}.Id"] = "same"
        duplicate[f"DeleteMessageBatchRequestEntry.{i}.ReceiptHandle"] = handles[0]
    error(send(sqs_server, duplicate), 400, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
    empty = {"Action": "DeleteMessageBatch", "QueueUrl": url}
    error(send(sqs_server, empty), 400, "AWS.SimpleQueueService.EmptyBatchRequest")


def test_get_requests_and_presigned_urls(sqs_server: ServerProcess) -> None:
    url = create(sqs_server, "qp-get")
    ok(
        send(sqs_server, {"Action": "SendMessage", "QueueUrl": url, "MessageBody": "x y"}, "GET"),
        "SendMessage",
    )
    query = urllib.parse.urlencode(
        {"Action": "ReceiveMessage", "QueueUrl": url, "WaitTimeSeconds": "2"},
        quote_via=urllib.parse.quote,
    )
    request = AWSRequest("GET", f"{sqs_server.url}/?{query}")
    SigV4QueryAuth(CREDS, "sqs", "us-east-1", expires=60).add_auth(request)
    [message] = ok(http("GET", request.url), "ReceiveMessage").findall("s:Message", NS)
    assert message.findtext("s:Body", namespaces=NS) == "x y"


def test_a_request_posted_to_the_queue_url_names_that_queue(sqs_server: ServerProcess) -> None:
    url = create(sqs_server, "qp-path")
    path = urllib.parse.urlsplit(url).path
    ok(
        send(sqs_server, {"Action": "SendMessage", "MessageBody": "by path"}, path=path),
        "SendMessage",
    )
    attrs = {"Action": "GetQueueAttributes", "AttributeName.1": "ApproximateNumberOfMessages"}
    got = attributes(ok(send(sqs_server, attrs, path=path), "GetQueueAttributes"))
    assert got == {"ApproximateNumberOfMessages": "1"}


def test_query_calls_on_a_queue_url_answer_as_sqs_does(sqs_server: ServerProcess) -> None:
    url = create(sqs_server, "qp-on-url")
    other = create(sqs_server, "qp-on-url-other")
    path = urllib.parse.urlsplit(url).path
    for method in ("GET", "POST"):
        # GetQueueUrl takes no QueueUrl: the path's queue is not forced on it, and it may name
        # another queue (recorded).
        for name, expected in (("qp-on-url", url), ("qp-on-url-other", other)):
            found = ok(
                send(sqs_server, {"Action": "GetQueueUrl", "QueueName": name}, method, path),
                "GetQueueUrl",
            )
            assert found.findtext("s:QueueUrl", namespaces=NS) == expected
        for action in ("CreateQueue", "ListQueues"):
            refused = send(sqs_server, {"Action": action, "QueueName": "qp-x"}, method, path)
            message = error(refused, 400, "InvalidAction")
            assert message == f"The action {action} is not valid for this endpoint."
    assert sqs_server.sqs_client().list_queues(QueueNamePrefix="qp-x").get("QueueUrls") is None

    empty = send(sqs_server, {"Action": "ReceiveMessage"}, "GET", path)
    ok(empty, "ReceiveMessage")
    assert "<ReceiveMessageResult/>" in empty.text
    ok(
        send(sqs_server, {"Action": "SendMessage", "MessageBody": "on url"}, "GET", path),
        "SendMessage",
    )
    [message] = receive(sqs_server, url)
    assert message.findtext("s:Body", namespaces=NS) == "on url"


@pytest.mark.parametrize("sign", [True, False])
def test_a_get_naming_no_action_is_an_unknown_operation(
    sqs_server: ServerProcess, sign: bool
) -> None:
    path = urllib.parse.urlsplit(create(sqs_server, "qp-no-action")).path
    for target, params in (
        (path, {}),
        (path, {"QueueName": "q"}),
        ("/", {"Version": "2012-11-05"}),
    ):
        answer = send(sqs_server, params, "GET", target, sign=sign)
        assert (answer.status, answer.text) == (404, "<UnknownOperationException/>")
    assert sqs_server.request("GET", "/").status == 200  # the service banner stays


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"Action": "Frobnicate"}, 400, "InvalidAction"),
        (
            {"Action": "AddPermission", "QueueUrl": "/0/qp-none", "Label": "l"},
            400,
            "MissingParameter",
        ),
        ({"Action": "GetQueueUrl"}, 400, "MissingParameter"),
        (
            {"Action": "SendMessage", "QueueUrl": "/0/qp-none", "MessageBody": "x"},
            400,
            "AWS.SimpleQueueService.NonExistentQueue",
        ),
    ],
)
def test_bad_requests_get_xml_errors(
    sqs_server: ServerProcess, params: dict[str, str], status: int, code: str
) -> None:
    for method in ("POST", "GET"):
        error(send(sqs_server, params, method), status, code)


def test_a_form_naming_no_action_is_missing_its_action(sqs_server: ServerProcess) -> None:
    error(send(sqs_server, {"Version": "2012-11-05"}), 400, "MissingAction")


@pytest.mark.parametrize(
    "params",
    [
        {"Action": "GetQueueUrl", "QueueName": "q", "Bogus": "1"},
        {"Action": "ListQueues", "MaxResults": "ten"},
        {"Action": "GetQueueAttributes", "QueueUrl": "/0/q", "AttributeName.x": "All"},
        {"Action": "GetQueueAttributes", "QueueUrl": "/0/q", "AttributeName.0": "All"},
        {"Action": "CreateQueue", "QueueName": "q", "QueueName.1": "x"},
        {"Action": "CreateQueue", "QueueName": "q", "Attribute.1.Value": "1"},
    ],
)
def test_unknown_or_malformed_parameters_are_invalid_parameter_values(
    sqs_server: ServerProcess, params: dict[str, str]
) -> None:
    for method in ("POST", "GET"):
        error(send(sqs_server, params, method), 400, "InvalidParameterValue")


def test_unsigned_and_badly_signed_requests_get_xml_errors(sqs_server: ServerProcess) -> None:
    params = {"Action": "ListQueues"}
    error(send(sqs_server, params, sign=False), 403, "MissingAuthenticationToken")
    request = AWSRequest(
        "POST", sqs_server.url + "/", data="Action=ListQueues", headers={"Content-Type": FORM}
    )
    SigV4Auth(Credentials(SQS_KEY, "wrong"), "sqs", "us-east-1").add_auth(request)
    headers: dict[str, Any] = dict(request.headers.items())
    error(http("POST", request.url, b"Action=ListQueues", headers), 403, "SignatureDoesNotMatch")


def test_a_non_utf8_form_is_refused(sqs_server: ServerProcess) -> None:
    request = AWSRequest(
        "POST",
        sqs_server.url + "/",
        data=b"Action=ListQueues&x=\xff",
        headers={"Content-Type": FORM},
    )
    SigV4Auth(CREDS, "sqs", "us-east-1").add_auth(request)
    headers: dict[str, Any] = dict(request.headers.items())
    error(
        http("POST", request.url, b"Action=ListQueues&x=\xff", headers), 400, "MalformedQueryString"
    )
