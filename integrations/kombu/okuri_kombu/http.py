"""The transport's HTTP client: each request logged at DEBUG on `okuri_kombu.http`, not at INFO.

httpx logs every request at INFO on its `httpx` logger, and an idle Celery worker
(`--loglevel=INFO` sets the root logger there) sends two or three a second: long polls, acks,
remote-control polls, each a line in its log. A filter on the `httpx` logger drops the INFO
lines of this client's own requests (a context variable marks them while they are sent) and the
client logs each at DEBUG instead; other httpx clients of the process log as configured.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

import httpx

logger = logging.getLogger("okuri_kombu.http")

_sending: ContextVar[bool] = ContextVar("okuri_kombu_sending", default=False)


class _OwnRequests(logging.Filter):
    """Drops httpx's INFO (and DEBUG) records of a request an HttpClient sends."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not _sending.get()


_FILTER = _OwnRequests()


class HttpClient(httpx.Client):
    """An httpx.Client whose requests httpx does not log; it logs them at DEBUG."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        logging.getLogger("httpx").addFilter(_FILTER)  # once: the same filter is not added twice

    def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        token = _sending.set(True)
        try:
            response = super().send(request, **kwargs)
        finally:
            _sending.reset(token)
        logger.debug(
            'HTTP Request: %s %s "%s %d %s"',
            request.method,
            request.url,
            response.http_version,
            response.status_code,
            response.reason_phrase,
        )
        return response
