"""The native API's errors: one shape, `{"error": {"code", "message"}}`, and one table from
okuri's errors to HTTP statuses, so the answer to a failure is decided in exactly one place."""

from __future__ import annotations

from typing import Any

from okuri.errors import (
    BodyUnread,
    ExchangeAlreadyExists,
    ExchangeDoesNotExist,
    InvalidArgument,
    MessageTooLong,
    OkuriError,
    Overloaded,
    QueueAlreadyExists,
    QueueDoesNotExist,
    QuotaExceeded,
    ReceiptHandleInvalid,
)


class NativeError(Exception):
    """An answer other than success: HTTP `status`, a stable `code`, a sentence for people,
    and for a refusal that passes, the seconds to wait before trying again (`Retry-After`)."""

    def __init__(
        self, status: int, code: str, message: str, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after_s = retry_after_s

    def headers(self) -> dict[str, str]:
        """The answer's headers beside its JSON body."""
        if self.status == 401:
            return {"WWW-Authenticate": "Bearer"}
        if self.retry_after_s is not None:
            return {"Retry-After": str(self.retry_after_s)}
        return {}

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}


def bad_request(message: str, code: str = "invalid_request") -> NativeError:
    return NativeError(400, code, message)


def from_okuri(err: OkuriError) -> NativeError:
    """The answer to an error the engine raised."""
    if isinstance(err, QueueDoesNotExist):
        return NativeError(404, "queue_not_found", str(err) or "The queue does not exist.")
    if isinstance(err, ExchangeDoesNotExist):
        return NativeError(404, "exchange_not_found", str(err) or "The exchange does not exist.")
    if isinstance(err, ExchangeAlreadyExists):
        return NativeError(409, "exchange_exists", str(err))
    if isinstance(err, QueueAlreadyExists):
        return NativeError(409, "queue_exists", str(err))
    if isinstance(err, MessageTooLong):
        return NativeError(413, "too_large", str(err))
    if isinstance(err, InvalidArgument | ReceiptHandleInvalid):
        return bad_request(str(err), "invalid_argument")
    if isinstance(err, BodyUnread):  # the client's body: too large, too slow, or cut short
        status, code = {"too_large": (413, "too_large"), "timed_out": (408, "request_timeout")}.get(
            err.reason, (400, "invalid_request")
        )
        return NativeError(status, code, str(err))
    if isinstance(err, QuotaExceeded):  # a bound the operator set: retrying does not help
        return NativeError(403, "quota_exceeded", str(err))
    if isinstance(err, Overloaded):  # the server is at one of its bounds (okuri.engine.Admission)
        return NativeError(429, "overloaded", str(err), err.retry_after_s)
    if err.retryable:
        return NativeError(503, "unavailable", f"Try again: {err}")
    return NativeError(500, "internal", f"The request could not be completed: {err}")
