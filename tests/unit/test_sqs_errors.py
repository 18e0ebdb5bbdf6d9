"""The one table from okuri errors to SQS wire errors."""

from __future__ import annotations

import pytest

from okuri import errors
from okuri.sqs.errors import (
    JSON_TYPES,
    SqsError,
    from_okuri,
    invalid,
    missing,
    queue_does_not_exist,
)


@pytest.mark.parametrize(
    ("err", "shape", "legacy", "status"),
    [
        (
            errors.QueueDoesNotExist("x"),
            "QueueDoesNotExist",
            "AWS.SimpleQueueService.NonExistentQueue",
            400,
        ),
        (errors.QueueAlreadyExists("x"), "QueueNameExists", "QueueAlreadyExists", 400),
        (
            errors.MessageTooLong("too long", "MessageBody"),
            "InvalidParameterValue",
            "InvalidParameterValue",
            400,
        ),
        (
            errors.InvalidArgument("bad", "DelaySeconds"),
            "InvalidParameterValue",
            "InvalidParameterValue",
            400,
        ),
        (
            errors.ReceiptHandleInvalid("nope"),
            "ReceiptHandleIsInvalid",
            "ReceiptHandleIsInvalid",
            400,
        ),
        (
            errors.MessageNotInflight("no"),
            "MessageNotInflight",
            "AWS.SimpleQueueService.MessageNotInflight",
            400,
        ),
        (errors.Unavailable("down"), "ServiceUnavailable", "ServiceUnavailable", 503),
        (errors.Transient("down"), "ServiceUnavailable", "ServiceUnavailable", 503),
        (errors.OkuriError("?"), "InternalFailure", "InternalFailure", 500),
    ],
)
def test_each_engine_error_has_its_sqs_shape(
    err: errors.OkuriError, shape: str, legacy: str, status: int
) -> None:
    sqs = from_okuri(err)
    assert (sqs.code, sqs.legacy_code, sqs.status) == (shape, legacy, status)
    json_shape = JSON_TYPES.get(shape, shape)
    assert sqs.body() == {"__type": f"com.amazonaws.sqs#{json_shape}", "message": sqs.message}
    assert sqs.query_error == f"{legacy};{'Sender' if status < 500 else 'Receiver'}"
    assert sqs.message


def test_helpers_build_sqs_shaped_errors() -> None:
    assert invalid("Value x is bad.").code == "InvalidParameterValue"
    assert missing("QueueUrl").message == "The request must contain the parameter QueueUrl."
    assert queue_does_not_exist().legacy_code == "AWS.SimpleQueueService.NonExistentQueue"
    assert str(SqsError("A", "b")) == "A: b"


def test_generic_validation_errors_carry_sqs_json_names_and_query_codes() -> None:
    bad, absent = invalid("Value x is bad."), missing("QueueUrl")
    assert bad.body()["__type"] == "com.amazonaws.sqs#InvalidParameterValueException"
    assert bad.query_error == "InvalidParameterValue;Sender"
    assert absent.body()["__type"] == "com.amazonaws.sqs#MissingRequiredParameterException"
    assert absent.query_error == "MissingParameter;Sender"


def test_a_missing_queue_reads_as_sqs_words_it_on_each_protocol() -> None:
    gone = queue_does_not_exist()
    assert gone.body()["message"] == "The specified queue does not exist."
    assert gone.query_message == "The specified queue does not exist for this wsdl version."
