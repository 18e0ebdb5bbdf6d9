"""The one table from okuri's errors to SQS's wire errors.

Every error leaves as HTTP 4xx/5xx with body {"__type": "com.amazonaws.sqs#<Shape>", "message": ...}
and the header `x-amzn-query-error: <legacy code>;<Sender|Receiver>`. botocore (and the other
SDKs) pick the exception class from the shape name and report the legacy code as the error
code, exactly as they do against SQS itself: botocore reads `Error.Code` from the header and
keeps the shape name as `Error.QueryErrorCode`, so `e.response["Error"]["Code"]` is the legacy
code whichever shape name the body carries.

An error is named here by its query-protocol code (`code`, e.g. InvalidParameterValue); the
SQS API model's shape names the modelled errors alike, and the two generic validation errors
SQS sends under other JSON names (`JSON_TYPES`, recorded from SQS).
"""

from __future__ import annotations

from dataclasses import dataclass

from okuri import errors
from okuri.engine import MoveTaskActive, MoveTaskNotFound, NotADeadLetterQueue
from okuri.sqs.sigv4_errors import AuthError

# Shape name -> the legacy (query protocol) code SQS sends in x-amzn-query-error.
LEGACY_CODES = {
    "QueueDoesNotExist": "AWS.SimpleQueueService.NonExistentQueue",
    "QueueNameExists": "QueueAlreadyExists",
    "QueueDeletedRecently": "AWS.SimpleQueueService.QueueDeletedRecently",
    "PurgeQueueInProgress": "AWS.SimpleQueueService.PurgeQueueInProgress",
    "MessageNotInflight": "AWS.SimpleQueueService.MessageNotInflight",
    "BatchEntryIdsNotDistinct": "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
    "TooManyEntriesInBatchRequest": "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
    "EmptyBatchRequest": "AWS.SimpleQueueService.EmptyBatchRequest",
    "InvalidBatchEntryId": "AWS.SimpleQueueService.InvalidBatchEntryId",
    "BatchRequestTooLong": "AWS.SimpleQueueService.BatchRequestTooLong",
    "UnsupportedOperation": "AWS.SimpleQueueService.UnsupportedOperation",
    "ResourceNotFoundException": "ResourceNotFoundException",  # not namespaced (recorded)
}
# Query code -> the `__type` shape name SQS sends for it over JSON, where the two differ.
JSON_TYPES = {
    "InvalidParameterValue": "InvalidParameterValueException",
    "MissingParameter": "MissingRequiredParameterException",
}


@dataclass
class SqsError(Exception):
    """An error as SQS would answer it."""

    code: str
    message: str
    status: int = 400
    sender_fault: bool = True
    query_message: str | None = None  # where the query protocol's text differs (recorded)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    @property
    def legacy_code(self) -> str:
        return LEGACY_CODES.get(self.code, self.code)

    @property
    def query_error(self) -> str:
        return f"{self.legacy_code};{'Sender' if self.sender_fault else 'Receiver'}"

    def body(self) -> dict[str, str]:
        shape = JSON_TYPES.get(self.code, self.code)
        return {"__type": f"com.amazonaws.sqs#{shape}", "message": self.message}


def invalid(message: str) -> SqsError:
    return SqsError("InvalidParameterValue", message)


def missing(parameter: str) -> SqsError:
    return SqsError("MissingParameter", f"The request must contain the parameter {parameter}.")


def queue_does_not_exist() -> SqsError:
    text = "The specified queue does not exist"
    return SqsError("QueueDoesNotExist", f"{text}.", query_message=f"{text} for this wsdl version.")


def queue_name_exists(attribute: str) -> SqsError:
    """CreateQueue naming an existing queue with another value for `attribute` (SQS's text)."""
    return SqsError(
        "QueueNameExists",
        "A queue already exists with the same name and a different value for attribute "
        + attribute,
    )


def resource_not_found(message: str) -> SqsError:
    """The move-task actions' "no such thing" (HTTP 404, as SQS answers them: recorded)."""
    return SqsError("ResourceNotFoundException", message, 404)


def over_limit(message: str) -> SqsError:
    """SQS's answer to an action that violates a limit: OverLimit, a 403 (SQS's API reference;
    seen answering an oversized Policy in BishopFox/cloudfoxable#29)."""
    return SqsError("OverLimit", message, 403)


def throttled(err: errors.Overloaded) -> SqsError:
    """The node is at a bound (okuri.engine.Admission): SQS's own throttling code, which SDKs
    raise as their RequestThrottled exception, with HTTP 429 rather than SQS's 400, because
    botocore's legacy retry mode (boto3's default) retries RequestThrottled only with a 403, but
    every 429; its standard mode, aws-sdk-go v1 and v2 and aws-sdk-js v3 retry the code itself,
    whatever the status (docs/sqs-compatibility.md, "Throttling")."""
    return SqsError("RequestThrottled", str(err), 429)


def body_unread(err: errors.BodyUnread) -> SqsError:
    """A body not read whole: too large (413, as before), too slow (408, as S3's
    RequestTimeout), or cut short by the client (400, as S3's IncompleteBody)."""
    if err.reason == "too_large":
        return SqsError("RequestEntityTooLarge", "The request body is too large.", 413)
    if err.reason == "timed_out":
        return SqsError("RequestTimeout", str(err), 408)
    return SqsError("IncompleteBody", str(err), 400)


def from_okuri(err: errors.OkuriError) -> SqsError:
    """Translate an engine error; anything unexpected is the server's fault, never a traceback."""
    match err:
        case AuthError():
            return SqsError(err.code, err.message, err.status)
        case errors.QueueDoesNotExist():
            return queue_does_not_exist()
        case errors.QueueAlreadyExists():
            return SqsError(  # lost a race: which attribute differs is not known here
                "QueueNameExists",
                "A queue already exists with the same name and a different value for attribute(s).",
            )
        case errors.MessageTooLong():
            return SqsError(
                "InvalidParameterValue", f"One or more parameters are invalid. Reason: {err}"
            )
        case errors.InvalidArgument():
            return invalid(
                f"Value for parameter {err.field or 'request'} is invalid. Reason: {err}"
            )
        case errors.ReceiptHandleInvalid():
            return SqsError("ReceiptHandleIsInvalid", str(err))
        case errors.MessageNotInflight():
            return SqsError("MessageNotInflight", "Message is not in flight.")
        case NotADeadLetterQueue() | MoveTaskActive():
            return invalid(str(err))
        case MoveTaskNotFound():
            return resource_not_found(str(err))
        case errors.Overloaded():
            return throttled(err)
        case errors.BodyUnread():
            return body_unread(err)
        case errors.QuotaExceeded():
            # SQS has no queue-count error; OverLimit (403) is its answer for "the action
            # violates a limit", and what it answers an oversized Policy.
            return over_limit(str(err))
        case errors.Unavailable() | errors.StoreError():
            return SqsError(
                "ServiceUnavailable",
                "The object store is unavailable; retry the request.",
                503,
                False,
            )
    return SqsError("InternalFailure", "The request could not be processed.", 500, False)
