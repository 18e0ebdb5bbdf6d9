"""The process's log records, made for operators: text or JSON lines, and one line for a
client's malformed HTTP.

OKURI_LOG_FORMAT=text (the default) writes `time LEVEL logger: message`, as okuri always has,
and no access records. OKURI_LOG_FORMAT=json writes one JSON object per record, for log
pipelines: every record has time (RFC 3339, UTC), level, node, logger and message, and the
access records of `okuri.access_log` add request_id, surface, action, queue, key_id, status
and duration_ms. The JSON is built only when a record is written (a handler's format), never
on the way to deciding whether to write it.

aiohttp answers a request it cannot parse (a header that is not a number where one must be, a
request line it does not know) with 400 and logs the parser's exception with its traceback at
ERROR. That is the client's mistake, answered as it should be, and a traceback in the log reads
as a server fault; the filter turns such a record into one INFO line naming the client and
what was wrong. Every other record passes unchanged.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson
from aiohttp.http_exceptions import HttpProcessingError

from okuri.access_log import ACCESS, OFF

AIOHTTP_SERVER = "aiohttp.server"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def rfc3339(created_s: float) -> str:
    """`created_s` (a record's epoch seconds) as RFC 3339 UTC with milliseconds."""
    whole = int(created_s)
    ms = int((created_s - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{ms:03d}Z"


class JsonLines(logging.Formatter):
    """One JSON object per record, without newlines inside (a traceback is one string)."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": rfc3339(record.created),
            "level": record.levelname.lower(),
            "node": self.node,
            "logger": record.name,
            "message": record.getMessage(),
        }
        access = record.__dict__.get("access")
        if isinstance(access, dict):
            doc.update(access)
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


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


def configure(level: str, log_format: str, node: str) -> None:
    """The process's logging: `level` and `log_format` as settings give them ("text" or
    "json"), records of `node` (this process's id, as in its JSON lines)."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLines(node))
        ACCESS.setLevel(logging.NOTSET)  # as the root's level says: INFO, or DEBUG for health
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
        ACCESS.setLevel(OFF)  # text mode writes no access records, as it never did
    logging.basicConfig(level=level.upper(), handlers=[handler])
    install()


def install() -> None:
    """Apply the filter to aiohttp's server log (idempotent)."""
    logger = logging.getLogger(AIOHTTP_SERVER)
    if not any(isinstance(f, MalformedRequests) for f in logger.filters):
        logger.addFilter(MalformedRequests())
