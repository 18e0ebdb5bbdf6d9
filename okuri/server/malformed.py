"""A client's malformed HTTP: what it is answered and how it is named in the log, never with
the bytes it sent.

aiohttp's parser describes a request it cannot parse by quoting it: a request line sent with
bare LFs comes back in the exception's message with every header after it, Authorization
included, and aiohttp answers the 400 with that message and logs it. A bearer key or a
presigned URL's signature would then sit in the log and in an answer that proxies and clients
record. Here the exception's class names the mistake instead (`describe`), and the listeners'
runner (`Runner`) answers with that phrase only.
"""

from __future__ import annotations

import re

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    ContentLengthError,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
    PayloadEncodingError,
    TransferEncodingError,
)
from aiohttp.web_request import BaseRequest

# Most specific first: each is a subclass of one further down.
_PHRASES: tuple[tuple[type[HttpProcessingError], str], ...] = (
    (BadHttpMethod, "a request line with no HTTP method"),
    (BadStatusLine, "a malformed request line"),
    (InvalidURLError, "a malformed request target"),
    (LineTooLong, "a request line or header over the size limit"),
    (InvalidHeader, "a malformed header"),
    (ContentLengthError, "a body shorter than its Content-Length"),
    (TransferEncodingError, "a malformed chunked body"),
    (ContentEncodingError, "a body that does not decode as its Content-Encoding says"),
    (PayloadEncodingError, "a malformed body"),
    (BadHttpMessage, "a malformed request"),
)
TLS_ON_HTTP = "Received HTTPS traffic on an HTTP port"  # aiohttp's own words, quoting nothing
# The parser's reason, kept only when it is a few plain words (llhttp's fixed reasons, such as
# "Invalid header value char"); anything with a quote, a digit or a symbol may be the request.
_PLAIN_REASON = re.compile(r"[A-Za-z]+(?: [A-Za-z]+){1,8}")


def describe(exc: HttpProcessingError) -> str:
    """What was wrong with a request aiohttp could not parse, in words that quote none of it."""
    message = str(exc.message)
    if message == TLS_ON_HTTP:
        return "TLS sent to a plain HTTP port"
    phrase = next((p for kind, p in _PHRASES if isinstance(exc, kind)), "a malformed request")
    reason = message.split(":", 1)[0].split("\n", 1)[0].strip()
    if type(exc) is BadHttpMessage and _PLAIN_REASON.fullmatch(reason):
        return f"{phrase} ({reason})"
    return phrase


class _Handler(web.RequestHandler):
    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        """aiohttp's answer, with a parse error's own message (which quotes the request)
        replaced by `describe`'s."""
        if isinstance(exc, HttpProcessingError):
            message = f"Bad Request: {describe(exc)}\n"
        return super().handle_error(request, status, exc, message)


class _Server(web.Server):
    def __call__(self) -> web.RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class Runner(web.AppRunner):
    """An aiohttp AppRunner whose connections answer an unparseable request with `describe`'s
    words instead of the request's bytes."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # aiohttp builds its Server in Application._make_handler
        return server
