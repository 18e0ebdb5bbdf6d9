"""JSON log lines and access records, formatted in-process: one object per record, every
access field present, RFC 3339 UTC times, and nothing built while the access log is off."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from okuri import access_log
from okuri.server import logs


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
