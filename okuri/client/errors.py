"""Everything the client raises: one root, `OkuriClientError`, and a kind per answer.

The server answers every failure as `{"error": {"code", "message"}}`; `from_answer` turns that
(with the HTTP status, or whatever status a transport maps its own failure to) into one of
these, in exactly one place. `.status` is the HTTP status (None when no answer came), `.code`
the server's stable code, `.message` its sentence for people.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class OkuriClientError(Exception):
    """Root of every error the client raises on purpose."""

    def __init__(self, status: int | None, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if status is None else f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class BadRequestError(OkuriClientError):
    """400 (or 405, 413): the request is malformed, out of range or too large; fix it."""


class TooLargeError(BadRequestError):
    """413: an item over the queue's size, or a request over the server's bound."""


class AuthError(OkuriClientError):
    """401: no key, or a key the server does not know."""


class ForbiddenError(OkuriClientError):
    """403: the key's role or namespace does not allow this."""


class NotFoundError(OkuriClientError):
    """404: no such queue (or no such route: a server of another version)."""


class ConflictError(OkuriClientError):
    """409: the queue exists with other attributes."""


class RetryableError(OkuriClientError):
    """A failure that trying again may cure; `retry_after_s` is the server's hint, if any."""

    def __init__(
        self, status: int | None, code: str, message: str, retry_after_s: float | None = None
    ) -> None:
        super().__init__(status, code, message)
        self.retry_after_s = retry_after_s


class OverloadedError(RetryableError):
    """429: the server shed the request before doing anything; retry after `retry_after_s`."""


class UnavailableError(RetryableError):
    """503: the server (or its bucket) could not answer in time; the outcome is unknown."""


class ServerError(OkuriClientError):
    """Any other 5xx, or an answer that is not the API's: a fault on the server's side."""


class TransportError(RetryableError):
    """No answer came: the connection failed or timed out. `sent` is False only when the
    request certainly never reached the server (the connection could not be opened)."""

    def __init__(self, code: str, message: str, sent: bool) -> None:
        super().__init__(None, code, message)
        self.sent = sent


class PartialProduceError(OkuriClientError):
    """Some items of a produce were enqueued and some refused: `ids` holds an id per item in
    order (None for a refused one), `errors` the refusals as (index, code, message)."""

    def __init__(self, ids: Sequence[str | None], errors: Sequence[tuple[int, str, str]]) -> None:
        index, code, message = errors[0]
        super().__init__(
            200, code, f"{len(errors)} of {len(ids)} items refused; #{index}: {message}"
        )
        self.ids = list(ids)
        self.errors = list(errors)


_BY_STATUS: Mapping[int, type[OkuriClientError]] = {
    400: BadRequestError,
    401: AuthError,
    403: ForbiddenError,
    404: NotFoundError,
    405: BadRequestError,
    409: ConflictError,
    413: TooLargeError,
}


def from_answer(
    status: int, doc: Any, fallback: str = "", retry_after_s: float | None = None
) -> OkuriClientError:
    """The error an answer of `status` with the document `doc` stands for; `fallback` is the
    message when `doc` is not the API's error shape (a proxy's page, say)."""
    error = doc.get("error") if isinstance(doc, dict) else None
    code, message = f"http_{status}", fallback.strip()[:500] or f"HTTP {status}"
    if isinstance(error, dict):
        code = str(error.get("code") or code)
        message = str(error.get("message") or message)
    if status == 429:
        return OverloadedError(status, code, message, retry_after_s)
    if status == 503:
        return UnavailableError(status, code, message, retry_after_s)
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = ServerError if status >= 500 or error is None else OkuriClientError
    return kind(status, code, message)


def bad_answer(what: str) -> ServerError:
    """An answer that does not have the shape the API promises."""
    return ServerError(None, "bad_answer", f"The server's answer is not as expected: {what}.")
