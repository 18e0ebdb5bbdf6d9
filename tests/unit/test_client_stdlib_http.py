"""okuri.client's http.client transport against a small HTTP server on loopback: keep-alive
reuse, a connection the server closed while idle, threads sharing one client, and what a
refused connection, a timeout and an error answer become. Which transport `Client` picks
(httpx when given one or behind a proxy) is checked here too; the operations' wire shape is
shared with the httpx transport (tests/unit/test_client.py) and the real server's answers are
tests/surface/test_native_client.py's."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from okuri.client import (
    Client,
    HttpTransport,
    OverloadedError,
    Request,
    StdlibHttpTransport,
    TransportError,
)
from okuri.client.stdlib_http import proxied

KEY = "test-key-0123456789"


@dataclass
class Seen:
    """What the server was asked, over how many connections."""

    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    connections: set[tuple[str, int]] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


Answer = Callable[[BaseHTTPRequestHandler], None]


def _ok(handler: BaseHTTPRequestHandler) -> None:
    _send(handler, 200, {"ids": ["id-1"]})


def _send(handler: BaseHTTPRequestHandler, status: int, doc: object, **headers: str) -> None:
    body = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.wfile.write(body)


@contextmanager
def server(answer: Answer = _ok) -> Iterator[tuple[str, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def _any(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with seen.lock:
                seen.requests.append((self.command, self.path, dict(self.headers), body))
                seen.connections.add(self.client_address)
            answer(self)

        do_GET = do_POST = do_DELETE = do_PATCH = _any

        def log_message(self, format: str, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_requests_reuse_one_keep_alive_connection_and_carry_the_wire_shape() -> None:
    with server() as (url, seen), StdlibHttpTransport(url + "/base/", KEY) as transport:
        for _ in range(3):
            doc = transport.send(Request("produce", "jobs q", {"items": [{"body": "x"}]}))
            assert doc == {"ids": ["id-1"]}
        transport.send(Request("list_queues", doc={"prefix": "a b", "limit": 2}))
    assert len(seen.connections) == 1
    method, path, headers, body = seen.requests[0]
    assert (method, path) == ("POST", "/base/v1/queues/jobs%20q/messages")
    assert json.loads(body) == {"items": [{"body": "x"}]}
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert headers["Content-Type"] == "application/json"
    assert seen.requests[3][:2] == ("GET", "/base/v1/queues?prefix=a+b&limit=2")


def test_a_connection_the_server_closed_while_idle_is_replaced_before_sending() -> None:
    def close_after(handler: BaseHTTPRequestHandler) -> None:
        _ok(handler)
        handler.wfile.flush()
        handler.close_connection = True  # no Connection: close header: the client finds out

    with server(close_after) as (url, seen), StdlibHttpTransport(url, KEY) as transport:
        for _ in range(3):
            transport.send(Request("produce", "jobs", {"items": []}))
            time.sleep(0.05)  # the server's close reaches the idle socket
    assert len(seen.requests) == 3  # each sent once: none failed on a dead connection
    assert len(seen.connections) == 3


def test_threads_sharing_a_client_each_get_a_connection_and_their_own_answer() -> None:
    def echo(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(0.01)  # overlap the threads' requests
        _send(handler, 200, {"path": handler.path})

    errors: list[BaseException] = []
    with server(echo) as (url, seen), StdlibHttpTransport(url, KEY) as transport:

        def work(n: int) -> None:
            try:
                for i in range(10):
                    doc = transport.send(Request("get_queue", f"q{n}-{i}"))
                    assert doc == {"path": f"/v1/queues/q{n}-{i}"}
            except BaseException as err:
                errors.append(err)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(seen.requests) == 40
    assert 2 <= len(seen.connections) <= 4


def test_a_refused_connection_is_unsent_and_a_timeout_is_sent() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    transport = StdlibHttpTransport(f"http://127.0.0.1:{port}", KEY)
    with transport, pytest.raises(TransportError) as refused:
        transport.send(Request("produce", "jobs", {"items": []}))
    assert refused.value.code == "connection_failed" and not refused.value.sent

    def slow(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(0.5)
        with suppress(OSError):  # the client gave up meanwhile
            _ok(handler)

    with server(slow) as (url, _), pytest.raises(TransportError) as late:
        StdlibHttpTransport(url, KEY, timeout_s=0.1).send(Request("produce", "jobs", {"items": []}))
    assert late.value.code == "timeout" and late.value.sent


def test_an_error_answer_is_the_clients_error_with_its_retry_after() -> None:
    def shed(handler: BaseHTTPRequestHandler) -> None:
        doc = {"error": {"code": "overloaded", "message": "busy"}}
        _send(handler, 429, doc, Retry_After="2")

    with server(shed) as (url, _), pytest.raises(OverloadedError) as caught:
        StdlibHttpTransport(url, KEY).send(Request("produce", "jobs", {"items": []}))
    assert caught.value.retry_after_s == 2.0


def test_each_exchange_is_logged_at_debug_on_the_logger_given(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger("tests.stdlib_http")
    with (
        caplog.at_level(logging.DEBUG, logger="tests.stdlib_http"),
        server() as (url, _),
        StdlibHttpTransport(url, KEY, logger=logger) as transport,
    ):
        transport.send(Request("produce", "jobs", {"items": []}))
    [record] = [r for r in caplog.records if r.name == "tests.stdlib_http"]
    assert record.levelno == logging.DEBUG
    assert "POST" in record.getMessage() and "200" in record.getMessage()


def test_client_picks_http_client_unless_given_httpx_or_behind_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    url = "http://okuri.test:8080"
    assert not proxied(url)
    with Client(url, KEY) as c:
        assert isinstance(c._transport, StdlibHttpTransport)
    with httpx.Client() as http, Client(url, KEY, http=http) as c:
        assert isinstance(c._transport, HttpTransport)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.test:3128")
    assert proxied(url)
    with Client(url, KEY) as c:
        assert isinstance(c._transport, HttpTransport)
    monkeypatch.setenv("NO_PROXY", "okuri.test")
    assert not proxied(url)
