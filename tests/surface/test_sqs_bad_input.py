"""Malformed, unsigned and out-of-bounds requests to the SQS surface, sent as raw HTTP.

Each case is one request a careless or hostile client could send. It is signed by hand (or
deliberately not) with botocore's SigV4 signer over an AWSRequest, so its body and headers can
be anything an SDK would never produce. Every case must be answered as SQS answers over AWS JSON
1.0: the expected status, the error shape after '#' in `__type`, the legacy code in
x-amzn-query-error, a non-empty message, the JSON 1.0 content type and a request id. Where SQS's
own answer is unrecorded, the expectation is what okuri.sqs documents it intends. The last test
checks that none of this hurt the server: it stays healthy and never logged a traceback.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from unittest.mock import patch

import botocore.auth
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.servers import SQS_KEY as KEY
from tests.servers import SQS_SECRET as SECRET
from tests.servers import Response, ServerProcess, http

AWS_JSON = "application/x-amz-json-1.0"
REGION = "us-east-1"
AWS = "AWS.SimpleQueueService."  # the prefix of SQS's namespaced legacy codes
MiB = 1024 * 1024

# Markers filled in per server: the table is built before any server exists.
QUEUE = "@queue-url"  # a queue the module creates (default attributes)
QUEUE_NAME = "@queue-name"  # that queue's name
ACCOUNT = "000000000000"  # okuri's account id
GONE = "@missing-queue-url"  # a well-formed URL of a queue that does not exist
FIFO_QUEUE = "@fifo-queue-url"  # a FIFO queue the module creates (explicit deduplication ids)


# --- signing ------------------------------------------------------------------------------------

Sign = Callable[[AWSRequest], None]


def _add_auth(
    request: AWSRequest, key: str = KEY, secret: str = SECRET, skew: timedelta | None = None
) -> None:
    signer = SigV4Auth(Credentials(key, secret), "sqs", REGION)
    if skew is None:
        signer.add_auth(request)
        return
    real = botocore.auth.get_current_datetime

    def skewed(remove_tzinfo: bool = True) -> datetime:
        now: datetime = real(remove_tzinfo=remove_tzinfo)
        return now + skew

    with patch("botocore.auth.get_current_datetime", skewed):
        signer.add_auth(request)


def signed(request: AWSRequest) -> None:
    _add_auth(request)


def unsigned(request: AWSRequest) -> None:
    pass


def wrong_secret(request: AWSRequest) -> None:
    _add_auth(request, secret=SECRET + "-wrong")


def unknown_key(request: AWSRequest) -> None:
    _add_auth(request, key="AKIDNOSUCHKEY")


def clock_ahead_20_min(request: AWSRequest) -> None:
    _add_auth(request, skew=timedelta(minutes=20))


def clock_behind_20_min(request: AWSRequest) -> None:
    _add_auth(request, skew=timedelta(minutes=-20))


def _replace_header(request: AWSRequest, name: str, value: str) -> None:
    del request.headers[name]
    request.headers[name] = value


def authorization_cut_before_signature(request: AWSRequest) -> None:
    _add_auth(request)
    auth = request.headers["Authorization"]
    _replace_header(request, "Authorization", auth[: auth.index(", Signature=")])


def authorization_signature_cut_short(request: AWSRequest) -> None:
    _add_auth(request)
    _replace_header(request, "Authorization", request.headers["Authorization"][:-32])


def authorization_algorithm_only(request: AWSRequest) -> None:
    _add_auth(request)
    _replace_header(request, "Authorization", "AWS4-HMAC-SHA256")


def authorization_bearer(request: AWSRequest) -> None:
    _add_auth(request)
    _replace_header(request, "Authorization", "Bearer abc.def.ghi")


def x_amz_date_not_iso(request: AWSRequest) -> None:
    _add_auth(request)
    _replace_header(request, "X-Amz-Date", "yesterday")


def body_changed_after_signing(request: AWSRequest) -> None:
    _add_auth(request)
    request.data = b'{"QueueNamePrefix": "tampered"}'


# --- the table ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    action: str | None  # X-Amz-Target is "AmazonSQS.<action>"; None sends no X-Amz-Target
    body: Any  # a JSON value (markers filled in), or bytes sent exactly as given
    status: int
    shape: str  # what follows '#' in __type
    code: str  # the code in x-amzn-query-error, before ';'
    sign: Sign = signed
    method: str = "POST"
    query: str = ""
    content_type: str = AWS_JSON
    target: str | None = None  # sent verbatim as X-Amz-Target instead of the action's


def case(
    name: str,
    action: str | None,
    body: Any,
    status: int,
    shape: str,
    code: str | None = None,
    **kw: Any,
) -> Any:
    """One row: `code` defaults to the shape's name, as it is for SQS's un-namespaced codes."""
    return pytest.param(Case(action, body, status, shape, code or shape, **kw), id=name)


def invalid(name: str, action: str, body: Any) -> Any:
    # SQS's JSON name for its generic validation error; the query code stays (recorded).
    return case(name, action, body, 400, "InvalidParameterValueException", "InvalidParameterValue")


def serialization(name: str, action: str, body: Any) -> Any:
    return case(name, action, body, 400, "SerializationException")


def missing(name: str, action: str, body: Any) -> Any:
    return case(name, action, body, 400, "MissingRequiredParameterException", "MissingParameter")


def no_queue(name: str, action: str, body: Any) -> Any:
    return case(name, action, body, 400, "QueueDoesNotExist", AWS + "NonExistentQueue")


def namespaced(name: str, action: str, body: Any, shape: str) -> Any:
    """A 400 whose legacy code is the shape's name under SQS's namespace."""
    return case(name, action, body, 400, shape, AWS + shape)


def badly_signed(name: str, status: int, shape: str, sign: Sign) -> Any:
    """An empty ListQueues whose signing `sign` spoils."""
    return case(name, "ListQueues", {}, status, shape, sign=sign)


def _entries(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"Id": f"e{i}", "MessageBody": "x", **extra} for i in range(n)]


def _send(**extra: Any) -> dict[str, Any]:
    return {"QueueUrl": QUEUE, "MessageBody": "hello", **extra}


def _attr(**value: Any) -> dict[str, Any]:
    return _send(MessageAttributes={"a": value})


def _receipt(raw: str) -> str:
    """A handle in okuri's receipt format whose content is `raw`."""
    return "okr1" + base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


DEEP_JSON = "[" * 100_000 + "]" * 100_000  # past any recursive parser's limit
# As deep as a Policy within SQS's 8,192 bytes can be (a longer one is OverLimit first).
DEEP_POLICY = "[" * 4_000 + "]" * 4_000
STRING_ATTR = {"DataType": "String", "StringValue": "v"}

CASES = [
    # --- authentication ---
    badly_signed("unsigned", 403, "MissingAuthenticationToken", unsigned),
    badly_signed("wrong-secret", 403, "SignatureDoesNotMatch", wrong_secret),
    badly_signed("unknown-access-key", 403, "InvalidClientTokenId", unknown_key),
    badly_signed(
        "authorization-cut-before-signature",
        400,
        "IncompleteSignature",
        authorization_cut_before_signature,
    ),
    badly_signed(
        "authorization-signature-cut-short",
        403,
        "SignatureDoesNotMatch",
        authorization_signature_cut_short,
    ),
    badly_signed(
        "authorization-algorithm-only", 400, "IncompleteSignature", authorization_algorithm_only
    ),
    badly_signed("authorization-bearer-token", 400, "IncompleteSignature", authorization_bearer),
    badly_signed(
        "body-changed-after-signing", 403, "SignatureDoesNotMatch", body_changed_after_signing
    ),
    badly_signed("clock-20-min-ahead", 403, "SignatureDoesNotMatch", clock_ahead_20_min),
    badly_signed("clock-20-min-behind", 403, "SignatureDoesNotMatch", clock_behind_20_min),
    badly_signed("x-amz-date-not-iso-8601", 400, "IncompleteSignature", x_amz_date_not_iso),
    case(
        "body-over-4-MiB",
        "CreateQueue",
        b'{"QueueName": "' + b"x" * (4 * MiB) + b'"}',
        413,
        "RequestEntityTooLarge",
    ),
    # --- target and protocol ---
    case("unknown-action", "Frobnicate", {}, 400, "InvalidAction"),
    invalid(
        "add-permission-account-id-not-12-digits",
        "AddPermission",
        {"QueueUrl": QUEUE, "Label": "l", "AWSAccountIds": ["1"], "Actions": ["SendMessage"]},
    ),
    case(
        "add-permission-8-actions",
        "AddPermission",
        {"QueueUrl": QUEUE, "Label": "l", "AWSAccountIds": [ACCOUNT], "Actions": ["*"] * 8},
        403,
        "OverLimit",
    ),
    serialization(
        "add-permission-actions-not-a-list",
        "AddPermission",
        {"QueueUrl": QUEUE, "Label": "l", "AWSAccountIds": [ACCOUNT], "Actions": "*"},
    ),
    missing("remove-permission-without-label", "RemovePermission", {"QueueUrl": QUEUE}),
    invalid(
        "remove-permission-unknown-label", "RemovePermission", {"QueueUrl": QUEUE, "Label": "l"}
    ),
    case("missing-target", None, {}, 400, "MissingAction"),
    case("target-without-service-prefix", None, {}, 400, "InvalidAction", target="ListQueues"),
    case("target-with-empty-action", None, {}, 400, "InvalidAction", target="AmazonSQS."),
    # --- the body as a whole ---
    serialization("body-bad-json", "ListQueues", b"{not json"),
    serialization("body-truncated-json", "CreateQueue", b'{"QueueName": "q'),
    serialization("body-json-array", "ListQueues", b"[]"),
    serialization("body-json-null", "ListQueues", b"null"),
    serialization("body-json-string", "ListQueues", b'"ListQueues"'),
    serialization("body-not-utf-8", "CreateQueue", b'{"QueueName": "\xff\xfe"}'),
    serialization("body-lone-surrogate", "CreateQueue", b'{"QueueName": "\\ud800"}'),
    serialization("body-nested-too-deep", "ListQueues", DEEP_JSON.encode()),
    invalid("unknown-member", "CreateQueue", {"QueueName": "q", "Bogus": 1}),
    invalid(
        "unknown-member-in-batch-entry",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": _entries(1, Bogus=1)},
    ),
    invalid(
        "unknown-member-in-message-attribute",
        "SendMessage",
        _attr(DataType="String", StringValue="v", Bogus="x"),
    ),
    # --- a required member missing, per action (ListQueues has none) ---
    missing("CreateQueue-no-QueueName", "CreateQueue", {}),
    missing("CreateQueue-QueueName-null", "CreateQueue", {"QueueName": None}),
    missing("GetQueueUrl-no-QueueName", "GetQueueUrl", {}),
    missing("DeleteQueue-no-QueueUrl", "DeleteQueue", {}),
    missing("PurgeQueue-no-QueueUrl", "PurgeQueue", {}),
    missing("GetQueueAttributes-no-QueueUrl", "GetQueueAttributes", {"AttributeNames": ["All"]}),
    missing("SetQueueAttributes-no-Attributes", "SetQueueAttributes", {"QueueUrl": QUEUE}),
    missing("SendMessage-no-MessageBody", "SendMessage", {"QueueUrl": QUEUE}),
    missing("SendMessage-empty-MessageBody", "SendMessage", _send(MessageBody="")),
    missing("SendMessage-no-QueueUrl", "SendMessage", {"MessageBody": "x"}),
    missing("SendMessageBatch-no-Entries", "SendMessageBatch", {"QueueUrl": QUEUE}),
    missing(
        "SendMessageBatch-entry-no-Id",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"MessageBody": "x"}]},
    ),
    missing(
        "SendMessageBatch-entry-no-MessageBody",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "a"}]},
    ),
    missing("ReceiveMessage-no-QueueUrl", "ReceiveMessage", {"MaxNumberOfMessages": 1}),
    missing("DeleteMessage-no-ReceiptHandle", "DeleteMessage", {"QueueUrl": QUEUE}),
    missing("DeleteMessageBatch-no-Entries", "DeleteMessageBatch", {"QueueUrl": QUEUE}),
    missing(
        "DeleteMessageBatch-entry-no-ReceiptHandle",
        "DeleteMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "a"}]},
    ),
    missing(
        "ChangeMessageVisibility-no-VisibilityTimeout",
        "ChangeMessageVisibility",
        {"QueueUrl": QUEUE, "ReceiptHandle": "r"},
    ),
    missing(
        "ChangeMessageVisibilityBatch-no-Entries",
        "ChangeMessageVisibilityBatch",
        {"QueueUrl": QUEUE},
    ),
    missing("message-attribute-no-DataType", "SendMessage", _attr(StringValue="v")),
    # --- wrong JSON types ---
    serialization(
        "MaxNumberOfMessages-string",
        "ReceiveMessage",
        {"QueueUrl": QUEUE, "MaxNumberOfMessages": "5"},
    ),
    serialization("QueueName-list", "CreateQueue", {"QueueName": ["q"]}),
    serialization("MessageBody-object", "SendMessage", _send(MessageBody={"a": 1})),
    serialization("QueueUrl-number", "PurgeQueue", {"QueueUrl": 7}),
    serialization(
        "VisibilityTimeout-boolean",
        "ReceiveMessage",
        {"QueueUrl": QUEUE, "VisibilityTimeout": True},
    ),
    serialization(
        "WaitTimeSeconds-float", "ReceiveMessage", {"QueueUrl": QUEUE, "WaitTimeSeconds": 1.5}
    ),
    serialization("DelaySeconds-beyond-64-bit", "SendMessage", _send(DelaySeconds=2**64)),
    serialization("Entries-object", "SendMessageBatch", {"QueueUrl": QUEUE, "Entries": {}}),
    serialization(
        "Entries-holding-null", "DeleteMessageBatch", {"QueueUrl": QUEUE, "Entries": [None]}
    ),
    serialization(
        "Attributes-value-number",
        "SetQueueAttributes",
        {"QueueUrl": QUEUE, "Attributes": {"VisibilityTimeout": 30}},
    ),
    serialization(
        "AttributeNames-string", "GetQueueAttributes", {"QueueUrl": QUEUE, "AttributeNames": "All"}
    ),
    serialization("MessageAttributes-list", "SendMessage", _send(MessageAttributes=[])),
    serialization(
        "message-attribute-StringValue-number",
        "SendMessage",
        _attr(DataType="Number", StringValue=5),
    ),
    # --- receive and visibility bounds ---
    invalid(
        "MaxNumberOfMessages-0", "ReceiveMessage", {"QueueUrl": QUEUE, "MaxNumberOfMessages": 0}
    ),
    invalid(
        "MaxNumberOfMessages-11", "ReceiveMessage", {"QueueUrl": QUEUE, "MaxNumberOfMessages": 11}
    ),
    invalid("WaitTimeSeconds-21", "ReceiveMessage", {"QueueUrl": QUEUE, "WaitTimeSeconds": 21}),
    invalid(
        "WaitTimeSeconds-negative", "ReceiveMessage", {"QueueUrl": QUEUE, "WaitTimeSeconds": -1}
    ),
    invalid(
        "MaxNumberOfMessages-null-is-absent-WaitTimeSeconds-21",
        "ReceiveMessage",
        {"QueueUrl": QUEUE, "MaxNumberOfMessages": None, "WaitTimeSeconds": 21},
    ),
    invalid(
        "ReceiveMessage-VisibilityTimeout-negative",
        "ReceiveMessage",
        {"QueueUrl": QUEUE, "VisibilityTimeout": -1},
    ),
    invalid(
        "ReceiveMessage-VisibilityTimeout-43201",
        "ReceiveMessage",
        {"QueueUrl": QUEUE, "VisibilityTimeout": 43201},
    ),
    invalid(
        "ChangeMessageVisibility-VisibilityTimeout-negative",
        "ChangeMessageVisibility",
        {"QueueUrl": QUEUE, "ReceiptHandle": "r", "VisibilityTimeout": -1},
    ),
    invalid(
        "ChangeMessageVisibility-VisibilityTimeout-43201",
        "ChangeMessageVisibility",
        {"QueueUrl": QUEUE, "ReceiptHandle": "r", "VisibilityTimeout": 43201},
    ),
    # --- one message ---
    invalid("DelaySeconds-901", "SendMessage", _send(DelaySeconds=901)),
    invalid("DelaySeconds-negative", "SendMessage", _send(DelaySeconds=-1)),
    case(
        "body-NUL-character",
        "SendMessage",
        _send(MessageBody="bad \x00 char"),
        400,
        "InvalidMessageContents",
    ),
    case(
        "body-U+FFFF-character",
        "SendMessage",
        _send(MessageBody="bad \uffff char"),
        400,
        "InvalidMessageContents",
    ),
    invalid("message-over-1-MiB", "SendMessage", _send(MessageBody="x" * (MiB + 1))),
    invalid(
        "11-message-attributes",
        "SendMessage",
        _send(MessageAttributes={f"a{i}": STRING_ATTR for i in range(11)}),
    ),
    invalid("message-attribute-no-value", "SendMessage", _attr(DataType="String")),
    invalid(
        "message-attribute-empty-value", "SendMessage", _attr(DataType="String", StringValue="")
    ),
    invalid("message-attribute-type-Foo", "SendMessage", _attr(DataType="Foo", StringValue="v")),
    invalid(
        "message-attribute-Number-not-a-number",
        "SendMessage",
        _attr(DataType="Number", StringValue="twelve"),
    ),
    invalid(
        "message-attribute-Number-out-of-range",
        "SendMessage",
        _attr(DataType="Number", StringValue="1e99999999999"),
    ),
    invalid(
        "message-attribute-Binary-not-base64",
        "SendMessage",
        _attr(DataType="Binary", BinaryValue="not base64!"),
    ),
    invalid(
        "message-attribute-String-with-BinaryValue",
        "SendMessage",
        _attr(DataType="String", BinaryValue="AAE="),
    ),
    invalid(
        "message-attribute-name-reserved",
        "SendMessage",
        _send(MessageAttributes={"AWS.thing": STRING_ATTR}),
    ),
    invalid(
        "message-attribute-name-bad-characters",
        "SendMessage",
        _send(MessageAttributes={"a b": STRING_ATTR}),
    ),
    namespaced(
        "message-attribute-list-values",
        "SendMessage",
        _attr(DataType="String", StringListValues=["a"]),
        "UnsupportedOperation",
    ),
    invalid(
        "message-system-attribute-unknown",
        "SendMessage",
        _send(MessageSystemAttributes={"SenderId": STRING_ATTR}),
    ),
    # --- batches ---
    namespaced(
        "SendMessageBatch-0-entries",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": []},
        "EmptyBatchRequest",
    ),
    namespaced(
        "SendMessageBatch-11-entries",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": _entries(11)},
        "TooManyEntriesInBatchRequest",
    ),
    namespaced(
        "SendMessageBatch-duplicate-ids",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "same", "MessageBody": "x"}] * 2},
        "BatchEntryIdsNotDistinct",
    ),
    namespaced(
        "SendMessageBatch-id-bad-characters",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "bad id!", "MessageBody": "x"}]},
        "InvalidBatchEntryId",
    ),
    namespaced(
        "SendMessageBatch-id-and-newline",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "a\n", "MessageBody": "x"}]},
        "InvalidBatchEntryId",
    ),
    namespaced(
        "SendMessageBatch-id-81-characters",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "i" * 81, "MessageBody": "x"}]},
        "InvalidBatchEntryId",
    ),
    namespaced(
        "SendMessageBatch-over-1-MiB-in-total",
        "SendMessageBatch",
        {"QueueUrl": QUEUE, "Entries": _entries(2, MessageBody="x" * (600 * 1024))},
        "BatchRequestTooLong",
    ),
    namespaced(
        "DeleteMessageBatch-0-entries",
        "DeleteMessageBatch",
        {"QueueUrl": QUEUE, "Entries": []},
        "EmptyBatchRequest",
    ),
    namespaced(
        "DeleteMessageBatch-11-entries",
        "DeleteMessageBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": f"d{i}", "ReceiptHandle": "r"} for i in range(11)]},
        "TooManyEntriesInBatchRequest",
    ),
    namespaced(
        "ChangeMessageVisibilityBatch-duplicate-ids",
        "ChangeMessageVisibilityBatch",
        {"QueueUrl": QUEUE, "Entries": [{"Id": "same", "ReceiptHandle": "r"}] * 2},
        "BatchEntryIdsNotDistinct",
    ),
    # --- receipt handles ---
    case(
        "DeleteMessage-invalid-receipt-handle",
        "DeleteMessage",
        {"QueueUrl": QUEUE, "ReceiptHandle": "garbage"},
        400,
        "ReceiptHandleIsInvalid",
    ),
    case(
        "DeleteMessage-receipt-handle-of-another-queue",
        "DeleteMessage",
        {"QueueUrl": QUEUE, "ReceiptHandle": _receipt("other-queue\ninc\n0\n0\n1")},
        400,
        "ReceiptHandleIsInvalid",
    ),
    case(
        "DeleteMessage-receipt-handle-bad-numbers",
        "DeleteMessage",
        {"QueueUrl": QUEUE, "ReceiptHandle": _receipt("q\ninc\n-1\nx\n0")},
        400,
        "ReceiptHandleIsInvalid",
    ),
    case(
        "DeleteMessage-receipt-handle-2000-characters",
        "DeleteMessage",
        {"QueueUrl": QUEUE, "ReceiptHandle": "okr1" + "A" * 2000},
        400,
        "ReceiptHandleIsInvalid",
    ),
    case(
        "ChangeMessageVisibility-invalid-receipt-handle",
        "ChangeMessageVisibility",
        {"QueueUrl": QUEUE, "ReceiptHandle": "garbage", "VisibilityTimeout": 10},
        400,
        "ReceiptHandleIsInvalid",
    ),
    # --- queues ---
    invalid("ListQueues-MaxResults-0", "ListQueues", {"MaxResults": 0}),
    invalid("ListQueues-MaxResults-1001", "ListQueues", {"MaxResults": 1001}),
    invalid("ListQueues-NextToken-garbage", "ListQueues", {"NextToken": "!!! not a token"}),
    invalid(
        "ListQueues-NextToken-control-character",
        "ListQueues",
        {"NextToken": base64.urlsafe_b64encode(b"\x01").decode(), "MaxResults": 5},
    ),
    invalid(
        "ListQueues-NextToken-name-and-newline",
        "ListQueues",
        {"NextToken": base64.urlsafe_b64encode(b"q\n").decode(), "MaxResults": 5},
    ),
    invalid("CreateQueue-bad-name", "CreateQueue", {"QueueName": "bad name!"}),
    invalid("CreateQueue-empty-name", "CreateQueue", {"QueueName": ""}),
    invalid("CreateQueue-81-character-name", "CreateQueue", {"QueueName": "q" * 81}),
    invalid("CreateQueue-fifo-name-without-FifoQueue", "CreateQueue", {"QueueName": "jobs.fifo"}),
    invalid(
        "CreateQueue-FifoQueue-true-without-fifo-name",
        "CreateQueue",
        {"QueueName": "fifo-attr", "Attributes": {"FifoQueue": "true"}},
    ),
    invalid(
        "CreateQueue-fifo-with-a-standard-dead-letter-queue",
        "CreateQueue",
        {
            "QueueName": "fifo-dlq.fifo",
            "Attributes": {
                "FifoQueue": "true",
                "RedrivePolicy": '{"deadLetterTargetArn":'
                '"arn:aws:sqs:us-east-1:000000000000:standard","maxReceiveCount":3}',
            },
        },
    ),
    missing(
        "SendMessage-fifo-no-MessageGroupId",
        "SendMessage",
        {"QueueUrl": FIFO_QUEUE, "MessageBody": "x", "MessageDeduplicationId": "d"},
    ),
    invalid(
        "SendMessage-fifo-no-MessageDeduplicationId",
        "SendMessage",
        {"QueueUrl": FIFO_QUEUE, "MessageBody": "x", "MessageGroupId": "g"},
    ),
    invalid(
        "SendMessage-fifo-bad-MessageDeduplicationId",
        "SendMessage",
        {
            "QueueUrl": FIFO_QUEUE,
            "MessageBody": "x",
            "MessageGroupId": "g",
            "MessageDeduplicationId": "with space",
        },
    ),
    invalid(
        "SendMessage-fifo-per-message-DelaySeconds",
        "SendMessage",
        {
            "QueueUrl": FIFO_QUEUE,
            "MessageBody": "x",
            "MessageGroupId": "g",
            "MessageDeduplicationId": "d",
            "DelaySeconds": 5,
        },
    ),
    case(
        "CreateQueue-unknown-attribute",
        "CreateQueue",
        {"QueueName": "unknown-attr", "Attributes": {"Colour": "blue"}},
        400,
        "InvalidAttributeName",
    ),
    invalid(
        "CreateQueue-RedrivePolicy-not-json",
        "CreateQueue",
        {"QueueName": "redrive", "Attributes": {"RedrivePolicy": "{not json"}},
    ),
    invalid(
        "CreateQueue-RedrivePolicy-nested-too-deep",
        "CreateQueue",
        {"QueueName": "redrive", "Attributes": {"RedrivePolicy": DEEP_JSON}},
    ),
    invalid(
        "CreateQueue-RedrivePolicy-no-maxReceiveCount",
        "CreateQueue",
        {
            "QueueName": "redrive",
            "Attributes": {
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:dlq"}
                )
            },
        },
    ),
    case(
        "CreateQueue-Policy-nested-too-deep",
        "CreateQueue",
        {"QueueName": "policy", "Attributes": {"Policy": DEEP_POLICY}},
        400,
        "InvalidAttributeValue",
    ),
    case(
        "CreateQueue-VisibilityTimeout-43201",
        "CreateQueue",
        {"QueueName": "vis", "Attributes": {"VisibilityTimeout": "43201"}},
        400,
        "InvalidAttributeValue",
    ),
    invalid("CreateQueue-empty-tag-key", "CreateQueue", {"QueueName": "tags", "tags": {"": "v"}}),
    case(
        "CreateQueue-existing-with-other-attributes",
        "CreateQueue",
        {"QueueName": QUEUE_NAME, "Attributes": {"VisibilityTimeout": "31"}},
        400,
        "QueueNameExists",
        "QueueAlreadyExists",
    ),
    case(
        "SetQueueAttributes-VisibilityTimeout-abc",
        "SetQueueAttributes",
        {"QueueUrl": QUEUE, "Attributes": {"VisibilityTimeout": "abc"}},
        400,
        "InvalidAttributeValue",
    ),
    case(
        "SetQueueAttributes-FifoQueue",
        "SetQueueAttributes",
        {"QueueUrl": QUEUE, "Attributes": {"FifoQueue": "false"}},
        400,
        "InvalidAttributeName",
    ),
    case(
        "SetQueueAttributes-read-only-QueueArn",
        "SetQueueAttributes",
        {"QueueUrl": QUEUE, "Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:0:x"}},
        400,
        "InvalidAttributeName",
    ),
    case(
        "GetQueueAttributes-unknown-name",
        "GetQueueAttributes",
        {"QueueUrl": QUEUE, "AttributeNames": ["NoSuchAttribute"]},
        400,
        "InvalidAttributeName",
    ),
    no_queue("SendMessage-missing-queue", "SendMessage", {"QueueUrl": GONE, "MessageBody": "x"}),
    no_queue("ReceiveMessage-missing-queue", "ReceiveMessage", {"QueueUrl": GONE}),
    no_queue("DeleteQueue-missing-queue", "DeleteQueue", {"QueueUrl": GONE}),
    no_queue("PurgeQueue-missing-queue", "PurgeQueue", {"QueueUrl": GONE}),
    no_queue("GetQueueAttributes-missing-queue", "GetQueueAttributes", {"QueueUrl": GONE}),
    no_queue("GetQueueUrl-missing-queue", "GetQueueUrl", {"QueueName": "okuri-no-such-queue"}),
    no_queue("GetQueueUrl-bad-name", "GetQueueUrl", {"QueueName": "../etc"}),
    no_queue("GetQueueUrl-name-and-newline", "GetQueueUrl", {"QueueName": QUEUE_NAME + "\n"}),
    no_queue(
        "SendMessage-QueueUrl-and-newline",
        "SendMessage",
        {"QueueUrl": QUEUE + "\n", "MessageBody": "x"},
    ),
    no_queue("QueueUrl-not-a-url", "SendMessage", {"QueueUrl": "not a url", "MessageBody": "x"}),
    # --- tags, dead-letter sources, move tasks ---
    missing("TagQueue-without-Tags", "TagQueue", {"QueueUrl": QUEUE}),
    serialization("TagQueue-Tags-a-list", "TagQueue", {"QueueUrl": QUEUE, "Tags": ["a"]}),
    serialization("TagQueue-tag-value-a-number", "TagQueue", {"QueueUrl": QUEUE, "Tags": {"a": 1}}),
    invalid("TagQueue-reserved-prefix", "TagQueue", {"QueueUrl": QUEUE, "Tags": {"aws:x": "v"}}),
    invalid(
        "TagQueue-51-tags", "TagQueue", {"QueueUrl": QUEUE, "Tags": {str(i): "" for i in range(51)}}
    ),
    missing("UntagQueue-without-TagKeys", "UntagQueue", {"QueueUrl": QUEUE}),
    serialization("UntagQueue-TagKeys-a-string", "UntagQueue", {"QueueUrl": QUEUE, "TagKeys": "a"}),
    no_queue("ListQueueTags-missing-queue", "ListQueueTags", {"QueueUrl": GONE}),
    no_queue("UntagQueue-missing-queue", "UntagQueue", {"QueueUrl": GONE, "TagKeys": ["a"]}),
    invalid(
        "ListDeadLetterSourceQueues-MaxResults-0",
        "ListDeadLetterSourceQueues",
        {"QueueUrl": QUEUE, "MaxResults": 0},
    ),
    no_queue(
        "ListDeadLetterSourceQueues-missing-queue", "ListDeadLetterSourceQueues", {"QueueUrl": GONE}
    ),
    missing("StartMessageMoveTask-without-SourceArn", "StartMessageMoveTask", {}),
    invalid(
        "StartMessageMoveTask-SourceArn-not-an-arn", "StartMessageMoveTask", {"SourceArn": "q"}
    ),
    invalid(
        "StartMessageMoveTask-source-not-a-dead-letter-queue",
        "StartMessageMoveTask",
        {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:" + QUEUE_NAME},
    ),
    case(
        "StartMessageMoveTask-missing-source",
        "StartMessageMoveTask",
        {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:okuri-no-such-queue"},
        404,
        "ResourceNotFoundException",
    ),
    serialization(
        "StartMessageMoveTask-rate-a-string",
        "StartMessageMoveTask",
        {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:q", "MaxNumberOfMessagesPerSecond": "1"},
    ),
    invalid(
        "ListMessageMoveTasks-MaxResults-11",
        "ListMessageMoveTasks",
        {"SourceArn": "arn:aws:sqs:us-east-1:000000000000:q", "MaxResults": 11},
    ),
    missing("CancelMessageMoveTask-without-TaskHandle", "CancelMessageMoveTask", {}),
    invalid(
        "CancelMessageMoveTask-garbage-handle", "CancelMessageMoveTask", {"TaskHandle": "foobared"}
    ),
    no_queue("QueueUrl-empty", "DeleteQueue", {"QueueUrl": ""}),
    no_queue(
        "ChangeMessageVisibilityBatch-null-VisibilityTimeout",
        "ChangeMessageVisibilityBatch",
        {
            "QueueUrl": GONE,
            "Entries": [{"Id": "a", "ReceiptHandle": "r", "VisibilityTimeout": None}],
        },
    ),
]


# --- sending ------------------------------------------------------------------------------------


def _fill(value: Any, markers: dict[str, str]) -> Any:
    if isinstance(value, str):
        for marker, filled in markers.items():
            value = value.replace(marker, filled)
        return value
    if isinstance(value, list):
        return [_fill(v, markers) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, markers) for k, v in value.items()}
    return value


def _send_case(server: ServerProcess, c: Case, markers: dict[str, str]) -> Response:
    body = c.body if isinstance(c.body, bytes) else json.dumps(_fill(c.body, markers)).encode()
    headers = {"Content-Type": c.content_type} if c.method == "POST" else {}
    target = c.target if c.target is not None else c.action and f"AmazonSQS.{c.action}"
    if target:
        headers["X-Amz-Target"] = target
    url = f"{server.url}/" + (f"?{c.query}" if c.query else "")
    request = AWSRequest(method=c.method, url=url, data=body or None, headers=headers)
    c.sign(request)
    prepared = request.prepare()
    data = prepared.body if isinstance(prepared.body, bytes) else None
    return http(prepared.method, prepared.url, data, dict(prepared.headers.items()))


@pytest.fixture(scope="module")
def markers(sqs_server: ServerProcess) -> dict[str, str]:
    name = f"bad-input-{uuid.uuid4().hex[:10]}"
    create = Case("CreateQueue", {"QueueName": name}, 200, "", "")
    answer = _send_case(sqs_server, create, {})
    assert answer.status == 200, answer.text
    url = str(json.loads(answer.body)["QueueUrl"])
    gone = url.rsplit("/", 1)[0] + f"/no-such-queue-{uuid.uuid4().hex[:10]}"
    fifo = Case(
        "CreateQueue",
        {
            "QueueName": f"bad-input-{uuid.uuid4().hex[:10]}.fifo",
            "Attributes": {"FifoQueue": "true"},
        },
        200,
        "",
        "",
    )
    answer = _send_case(sqs_server, fifo, {})
    assert answer.status == 200, answer.text
    fifo_url = str(json.loads(answer.body)["QueueUrl"])
    return {QUEUE: url, QUEUE_NAME: name, GONE: gone, FIFO_QUEUE: fifo_url}


@pytest.mark.parametrize("c", CASES)
def test_malformed_request_answers_an_sqs_error(
    sqs_server: ServerProcess, markers: dict[str, str], c: Case
) -> None:
    answer = _send_case(sqs_server, c, markers)
    assert answer.status == c.status, answer.text[:500]
    assert answer.headers["content-type"].split(";")[0].strip() == AWS_JSON
    assert answer.headers.get("x-amzn-requestid")
    body = json.loads(answer.body)
    assert isinstance(body, dict)
    assert body["__type"].rpartition("#")[2] == c.shape, body
    assert isinstance(body.get("message"), str) and body["message"].strip(), body
    code, _, fault = answer.headers.get("x-amzn-query-error", "").partition(";")
    assert (code, fault) == (c.code, "Sender")  # every case is the client's fault


def test_server_survives_the_table(sqs_server: ServerProcess) -> None:
    assert sqs_server.get("/healthz").status == 200
    assert sqs_server.get("/readyz").status == 200
    assert "Traceback" not in sqs_server.log, sqs_server.log[-3000:]
