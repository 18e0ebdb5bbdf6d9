"""The native API's errors: one shape, `{"error": {"code", "message"}}`, and one table from
okuri's errors to HTTP statuses, so the answer to a failure is decided in exactly one place."""

from __future__ import annotations

from typing import Any

from okuri.errors import (
    InvalidArgument,
    MessageTooLong,
    OkuriError,
    QueueAlreadyExists,
    QueueDoesNotExist,
    ReceiptHandleInvalid,
)


class NativeError(Exception):
    """An answer other than success: HTTP `status`, a stable `code`, a sentence for people."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def bad_request(message: str, code: str = "invalid_request") -> NativeError:
    return NativeError(400, code, message)


def from_okuri(err: OkuriError) -> NativeError:
    """The answer to an error the engine raised."""
    if isinstance(err, QueueDoesNotExist):
        return NativeError(404, "queue_not_found", str(err) or "The queue does not exist.")
    if isinstance(err, QueueAlreadyExists):
        return NativeError(409, "queue_exists", str(err))
    if isinstance(err, MessageTooLong):
        return NativeError(413, "too_large", str(err))
    if isinstance(err, InvalidArgument | ReceiptHandleInvalid):
        return bad_request(str(err), "invalid_argument")
    if err.retryable:
        return NativeError(503, "unavailable", f"Try again: {err}")
    return NativeError(500, "internal", f"The request could not be completed: {err}")
