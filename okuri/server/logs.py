"""The process's log records, made for operators: one line for a client's malformed HTTP.

aiohttp answers a request it cannot parse (a header that is not a number where one must be, a
request line it does not know) with 400 and logs the parser's exception with its traceback at
ERROR. That is the client's mistake, answered as it should be, and a traceback in the log reads
as a server fault; the filter turns such a record into one INFO line naming the client and
what was wrong. Every other record passes unchanged.
"""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

AIOHTTP_SERVER = "aiohttp.server"


class MalformedRequests(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            client = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            reason = " ".join(str(exc.message).split())[:200]
            record.msg, record.args = "refused a malformed HTTP request from %s (400): %s", (
                client,
                reason,
            )
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
        return True


def install() -> None:
    """Apply the filter to aiohttp's server log (idempotent)."""
    logger = logging.getLogger(AIOHTTP_SERVER)
    if not any(isinstance(f, MalformedRequests) for f in logger.filters):
        logger.addFilter(MalformedRequests())
