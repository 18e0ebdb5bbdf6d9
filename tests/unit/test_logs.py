"""JSON log lines and access records, formatted in-process: one object per record, every
access field present, RFC 3339 UTC times, and nothing built while the access log is off."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest
from aiohttp.http_exceptions import (
    BadHttpMessage,
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    InvalidHeader,
    LineTooLong,
)
from aiohttp.web import RequestPayloadError

from okuri import access_log
from okuri.server import logs
from okuri.server.malformed import describe


@pytest.fixture
def access_level() -> Iterator[None]:
    before = access_log.ACCESS.level
    yield
    access_log.ACCESS.setLevel(before)


def _record(msg: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("okuri.x", logging.WARNING, __file__, 1, msg, (), None)
    record.__dict__.update(extra)
    record.created = 1_765_000_000.25  # 2025-12-06T05:46:40.250Z
    return record


def test_rfc3339_is_utc_with_milliseconds() -> None:
    assert logs.rfc3339(0.0) == "1970-01-01T00:00:00.000Z"
    assert logs.rfc3339(1_765_000_000.25) == "2025-12-06T05:46:40.250Z"


def test_a_plain_record_is_one_json_object_naming_the_node() -> None:
    line = logs.JsonLines("node1").format(_record("a\nmulti-line message"))
    assert "\n" not in line
    assert json.loads(line) == {
        "time": "2025-12-06T05:46:40.250Z",
        "level": "warning",
        "node": "node1",
        "logger": "okuri.x",
        "message": "a\nmulti-line message",
    }


def test_a_traceback_stays_inside_the_line() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = _record("failed")
        record.exc_info = sys.exc_info()
    line = logs.JsonLines("n").format(record)
    assert "\n" not in line
    assert "ValueError: boom" in json.loads(line)["error"]


def test_an_access_record_has_every_field_null_when_unknown(access_level: None) -> None:
    access_log.ACCESS.setLevel(logging.INFO)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonLines("n1"))
    access_log.ACCESS.addHandler(handler)
    try:
        entry = access_log.Entry("SendMessage")
        entry.params = {"QueueUrl": "http://h/000000000000/orders", "MessageBody": "x"}
        access_log.emit("sqs", "rid-1", entry, 200, 1.23456)
        access_log.emit("native-grpc", "rid-2", access_log.Entry("GetQueue"), "NOT_FOUND", 0.5)
    finally:
        access_log.ACCESS.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert {k: first[k] for k in ("request_id", "surface", "action", "queue", "key_id")} == {
        "request_id": "rid-1",
        "surface": "sqs",
        "action": "SendMessage",
        "queue": "orders",
        "key_id": None,
    }
    assert (first["status"], first["duration_ms"], first["level"]) == (200, 1.235, "info")
    assert (second["queue"], second["status"]) == (None, "NOT_FOUND")


def test_the_access_log_is_off_until_json_lines_turn_it_on(access_level: None) -> None:
    access_log.ACCESS.setLevel(access_log.OFF)
    assert not access_log.on()
    access_log.ACCESS.setLevel(logging.NOTSET)
    assert access_log.on() is logging.getLogger().isEnabledFor(logging.INFO)


@pytest.mark.parametrize(
    ("sent", "kept"),
    [("abc-123_x.y:z", "abc-123_x.y:z"), ("", ""), (None, ""), ("a b", ""), ("x" * 129, ""),
     ('"}{', "")],
)  # fmt: skip
def test_a_client_request_id_is_kept_only_when_plain(sent: str | None, kept: str) -> None:
    assert access_log.client_request_id(sent) == kept


# --- no credential reaches a line ------------------------------------------------------------

SECRET = "s3cr3tKEY0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"Authorization: Bearer {SECRET}", "Authorization: [redacted]"),
        (f"b'GET / HTTP/1.1\\nAuthorization: Bearer {SECRET}\\n\\n'", "Authorization: [redacted]"),
        (f"header was 'bearer {SECRET}'", "bearer [redacted]'"),
        (f"Credential=AKID/x, SignedHeaders=host, Signature={SECRET}", "Signature=[redacted]"),
        (f'"GET /?Action=ListQueues&X-Amz-Signature={SECRET}&X=1 HTTP/1.1" 200',
         "/?Action=ListQueues&X-Amz-Signature=[redacted]&X=1 HTTP/1.1"),
        (f"X-Amz-Security-Token={SECRET}", "X-Amz-Security-Token=[redacted]"),
        (f"X-Okuri-Peer-Signature: 17:{SECRET}", "X-Okuri-Peer-Signature: [redacted]"),
    ],
)  # fmt: skip
def test_credential_shaped_spans_are_redacted(text: str, kept: str) -> None:
    redacted = logs.redact(text)
    assert SECRET not in redacted
    assert kept in redacted


def test_a_line_with_no_credential_is_left_as_it_is() -> None:
    text = "okuri 0.0.1 serving SQS on http://127.0.0.1:9324; 3 keys (admin-key, ci-producer)"
    assert logs.redact(text) == text


def test_the_redacting_filter_cleans_the_message_its_arguments_and_the_traceback() -> None:
    try:
        raise ValueError(f"parsing 'Authorization: Bearer {SECRET}'")
    except ValueError:
        record = logging.LogRecord(
            "aiohttp.access",
            logging.INFO,
            __file__,
            1,
            "%s %s",
            ("GET", f"/?X-Amz-Signature={SECRET}"),
            sys.exc_info(),
        )
    assert logs.Redact().filter(record)
    for formatter in (logging.Formatter(logs.TEXT_FORMAT), logs.JsonLines("n")):
        line = formatter.format(record)
        assert SECRET not in line and "[redacted]" in line and "ValueError" in line


def test_a_parse_error_is_logged_by_its_kind_never_by_its_bytes() -> None:
    """aiohttp's parser quotes the request in its message (Authorization included); the line
    names the client and the kind of mistake only, at INFO, without a traceback."""
    for exc in (
        BadStatusLine(
            error=f"Bad status line:\n  Expected CRLF:\n\n  b'Authorization: Bearer {SECRET}'"
        ),
        InvalidHeader(f"Bearer {SECRET}\x01".encode()),
        LineTooLong(f"Authorization: Bearer {SECRET}"[:100].encode(), 8190),
    ):
        record = logging.LogRecord(
            "aiohttp.server", logging.ERROR, __file__, 1, "Error handling request from %s",
            ("10.0.0.7",), (type(exc), exc, None),
        )  # fmt: skip
        assert logs.MalformedRequests().filter(record)
        assert record.levelno == logging.INFO and record.exc_info is None
        message = record.getMessage()
        assert message.startswith("refused a malformed HTTP request from 10.0.0.7 (400): a ")
        assert SECRET not in message and "Bearer" not in message


def test_the_parsers_own_reason_is_kept_only_when_it_is_plain_words() -> None:
    plain = BadHttpMessage(f"Invalid header value char:\n\n  b'Bearer {SECRET}\\x01'\n  ^")
    assert describe(plain) == "a malformed request (Invalid header value char)"
    quoting = BadHttpMessage(f"Duplicate 'Bearer {SECRET}' header found.")
    assert describe(quoting) == "a malformed request"
    assert describe(BadHttpMethod(error="Received HTTPS traffic on an HTTP port")) == (
        "TLS sent to a plain HTTP port"
    )


def test_a_body_aiohttp_drains_after_the_answer_is_one_line_not_a_traceback() -> None:
    """A body that does not decode (bad gzip, bad chunk) fails again when aiohttp drains it
    after the handler's 400, as an "Unhandled exception" at ERROR; it is the same mistake."""
    cause = ContentEncodingError("Can not decode content-encoding: gzip")
    exc = RequestPayloadError(str(cause))
    exc.__cause__ = cause
    record = logging.LogRecord(
        "aiohttp.server", logging.ERROR, __file__, 1, "Unhandled exception", (),
        (type(exc), exc, None),
    )  # fmt: skip
    assert logs.MalformedRequests().filter(record)
    assert record.levelno == logging.INFO and record.exc_info is None
    assert "Content-Encoding" in record.getMessage()
