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


def query(server: ServerProcess, params: dict[str, str], path: str = "/") -> Response:
    body = urllib.parse.urlencode({"Version": "2012-11-05", **params})
    request = AWSRequest(
        "POST",
        server.url + path,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
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
