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
what kind of mistake it was (okuri.server.malformed's words: the parser's own message quotes
the request, Authorization header and all).

No key, secret or signature is ever written. Nothing okuri logs holds one by design (a key
*id* at most); as a second line of defence every record is redacted on its way out: a
credential-shaped span (an Authorization header's value, `Bearer <key>`, a SigV4 or presigned
URL's signature, a session token, a peer signature) becomes `[redacted]`, in the message and in
a traceback's text alike. aiohttp's own access lines (text mode at debug) quote each request
line, a presigned URL's X-Amz-Signature with it; they pass through the same redaction.
"""

from __future__ import annotations

import logging
import re
import sys
import time
from typing import Any

import orjson
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.web import RequestPayloadError

from okuri.access_log import ACCESS, OFF
from okuri.server.malformed import describe

AIOHTTP_SERVER = "aiohttp.server"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REDACTED = "[redacted]"
# Credential-shaped spans: what precedes the secret (kept, so the line still says what was
# there), then the secret up to the next separator a header, URL or repr() would put after it.
_CREDENTIALS = re.compile(
    r"((?:authorization|x-okuri-peer-signature|x-amz-security-token)\s*[:=]\s*)[^\r\n]+"
    r"|(bearer\s+)[^\s'\"\\,;&]+"
    r"|((?:x-amz-signature|x-amz-security-token|signature)\s*=\s*)[^\s'\"\\,;&]+",
    re.IGNORECASE,
)


def redact(text: str) -> str:
    """`text` with every credential-shaped span's secret replaced by `[redacted]`."""
    return _CREDENTIALS.sub(lambda m: (m[1] or m[2] or m[3]) + REDACTED, text)


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
            doc["error"] = record.exc_text or self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


class MalformedRequests(logging.Filter):
    """aiohttp's record of a request it could not parse, as one INFO line (DEBUG stays DEBUG)
    naming the client and the kind of mistake, never the request's bytes. That includes a
    body it could not decode (a bad chunk, a bad gzip), which aiohttp reports as an "Unhandled
    exception" when it drains the body after the handler has answered."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, RequestPayloadError):  # a body aiohttp read after the handler
            exc = exc.__cause__
        if isinstance(exc, HttpProcessingError):
            client = record.args[0] if isinstance(record.args, tuple) and record.args else "?"
            record.msg = "refused a malformed HTTP request from %s (400): %s"
            record.args = (client, describe(exc))
            if record.levelno > logging.INFO:
                record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
        return True


class Redact(logging.Filter):
    """Every record's credential-shaped spans redacted (`redact`), in its message and its
    traceback, before any formatter sees it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


_TRACEBACKS = logging.Formatter()


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
    handler.addFilter(Redact())
    logging.basicConfig(level=level.upper(), handlers=[handler])
    install()


def install() -> None:
    """Apply the filter to aiohttp's server log (idempotent)."""
    logger = logging.getLogger(AIOHTTP_SERVER)
    if not any(isinstance(f, MalformedRequests) for f in logger.filters):
        logger.addFilter(MalformedRequests())
