"""How the engine's verdict on a receipt handle (a delete, a visibility change) reads as SQS
answers it, and the visibility timeout's bound."""

from __future__ import annotations

from okuri import limits
from okuri.errors import ReceiptHandleInvalid
from okuri.sqs.errors import SqsError, invalid


def bad_receipt(handle: str) -> SqsError:
    shown = handle if len(handle) <= 200 else handle[:200] + "..."
    return SqsError(
        "ReceiptHandleIsInvalid",
        f'The input receipt handle "{shown}" is not a valid receipt handle.',
    )


def visibility_timeout(value: int) -> int:
    if not 0 <= value <= limits.visibility_s_max:
        raise invalid(
            f"Value {value} for parameter VisibilityTimeout is invalid. "
            f"Reason: Must be >= 0 and <= {limits.visibility_s_max}."
        )
    return value


def ack_error(result: object, handle: str) -> SqsError | None:
    """Only a malformed or foreign handle and, on a FIFO queue, a lease run out are refused; a
    delete of a message finished already succeeds, as on SQS."""
    if isinstance(result, ReceiptHandleInvalid):
        return bad_receipt(handle)
    if result == "expired":
        return invalid(
            f"Value {handle[:200]} for parameter ReceiptHandle is invalid. "
            "Reason: The receipt handle has expired."
        )
    return None


def visibility_error(result: object, handle: str) -> SqsError | None:
    if isinstance(result, ReceiptHandleInvalid):
        return bad_receipt(handle)
    if result == "ok":
        return None
    if result == "gone":
        return invalid(
            f"Value {handle[:200]} for parameter ReceiptHandle is invalid. "
            "Reason: Message does not exist or is not available for visibility timeout change.",
        )
    return SqsError("MessageNotInflight", "Message is not in flight.")
