"""okuri_kombu's HTTP client logs: a worker at `--loglevel=INFO` must not log every lease and
ack (httpx logs each request at INFO), yet the requests are there at DEBUG, and other httpx
clients of the process keep logging as their owners set up."""

from __future__ import annotations

import logging

import httpx
import pytest
from okuri_kombu.http import HttpClient


def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={})


def _requests_logged(caplog: pytest.LogCaptureFixture, level: int) -> list[tuple[str, int]]:
    return [
        (r.name, r.levelno)
        for r in caplog.records
        if r.levelno >= level and r.getMessage().startswith("HTTP Request: POST")
    ]


def test_at_info_the_transports_requests_are_not_logged_but_other_clients_are(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)  # the root logger, as `celery worker --loglevel=INFO` sets it
    # httpx's own logger as its default leaves it (another test of the session may have quieted
    # it, as tests/smoke/celery/smoke_app.py does for its worker)
    caplog.set_level(logging.NOTSET, logger="httpx")
    with HttpClient(transport=httpx.MockTransport(_answer)) as ours:
        ours.post("http://okuri.test/v1/queues/jobs/lease")
    assert _requests_logged(caplog, logging.DEBUG) == []
    with httpx.Client(transport=httpx.MockTransport(_answer)) as theirs:
        theirs.post("http://elsewhere.test/")
    assert _requests_logged(caplog, logging.INFO) == [("httpx", logging.INFO)]


def test_at_debug_each_request_is_logged_once_on_okuri_kombu_http(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with HttpClient(transport=httpx.MockTransport(_answer)) as ours:
        ours.post("http://okuri.test/v1/queues/jobs/lease")
    assert _requests_logged(caplog, logging.DEBUG) == [("okuri_kombu.http", logging.DEBUG)]
