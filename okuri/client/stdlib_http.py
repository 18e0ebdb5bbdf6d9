"""The blocking client's HTTP/JSON transport over the standard library's `http.client`.

Why not httpx here: a caller that waits on each answer (a Celery producer's `apply_async`, a
worker's acks) pays the client's CPU on every call, and httpx spends about 0.3 ms of it per
request where `http.client` spends about 0.1 ms (measured against okuri on one 2-core machine,
the server's own time aside). The wire is the same (okuri/client/http.py's `to_http` and
`from_http`); this only moves bytes, over keep-alive connections kept in a small pool so that
threads sharing one client each get a connection of their own.

What it leaves to httpx: proxies. `Client` sends through httpx when the environment names a
proxy for the server's URL, or when given `http=` (okuri/client/sync.py).
"""

from __future__ import annotations

import http.client
import logging
import select
import ssl
import threading
import urllib.request
from urllib.parse import urlencode, urlsplit

from okuri.client.errors import TransportError
from okuri.client.http import TIMEOUT_S, HttpShell, from_http, to_http
from okuri.client.transport import Doc, Request

IDLE_MAX = 8  # connections kept open between requests; more threads than this open their own

_log = logging.getLogger("okuri.client.http")


class StdlibHttpTransport(HttpShell):
    """Sends requests over `http.client` keep-alive connections to one server.

    `verify` is for https://: True checks the server's certificate against the system's
    authorities, False checks nothing, an `ssl.SSLContext` is used as given. Each exchange is
    logged at DEBUG on `logger` (okuri.client.http unless another is given)."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        verify: bool | ssl.SSLContext = True,
        logger: logging.Logger | None = None,
    ) -> None:
        super().__init__(url, key, timeout_s, owned=True)
        parts = urlsplit(self._base)
        self._tls = _context(verify) if parts.scheme == "https" else None
        self._host = parts.hostname or "localhost"
        self._port = parts.port
        self._prefix = parts.path
        self._log = logger or _log
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False

    def send(self, request: Request) -> Doc:
        r = to_http(request, self.timeout_s)
        target = self._prefix + r.path + ("?" + urlencode(r.params) if r.params else "")
        headers = self._headers
        if r.body is not None:
            headers = {**headers, "Content-Type": "application/json"}
        conn = self._take(r.timeout_s)
        try:
            conn.sock.settimeout(r.timeout_s)
            conn.request(r.method, target, r.body, headers)
            answer = conn.getresponse()
            content = answer.read()
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _failed(exc, sent=True) from exc
        if answer.will_close:
            conn.close()
        else:
            self._give(conn)
        if self._log.isEnabledFor(logging.DEBUG):
            self._log.debug(
                'HTTP Request: %s %s "HTTP/1.1 %d %s"', r.method, self._base + target,
                answer.status, answer.reason,
            )  # fmt: skip
        return from_http(answer.status, answer.getheader("retry-after"), content)

    def _take(self, timeout_s: float) -> http.client.HTTPConnection:
        """An open connection: an idle one the server has not closed meanwhile, else a new one."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._connect(timeout_s)
            if not _closed_by_peer(conn):
                return conn
            conn.close()

    def _connect(self, timeout_s: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._tls is None:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout_s)
        else:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout_s, context=self._tls
            )
        try:
            conn.connect()
        except OSError as exc:  # nothing was sent: any operation may be tried again
            conn.close()
            raise _failed(exc, sent=False) from exc
        return conn

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < IDLE_MAX:
                self._idle.append(conn)
                return
        conn.close()

    def __enter__(self) -> StdlibHttpTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _failed(exc: Exception, sent: bool) -> TransportError:
    code = "timeout" if isinstance(exc, TimeoutError) else "connection_failed"
    return TransportError(code, f"{type(exc).__name__}: {exc}", sent=sent)


def _context(verify: bool | ssl.SSLContext) -> ssl.SSLContext:
    if isinstance(verify, ssl.SSLContext):
        return verify
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _closed_by_peer(conn: http.client.HTTPConnection) -> bool:
    """Whether an idle connection has something to read: the server closed it (keep-alive
    timeout, a restart), as nothing else arrives between a response and the next request."""
    sock = conn.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def proxied(url: str) -> bool:
    """Whether the environment names a proxy for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and
    NO_PROXY, as httpx reads them), which only httpx goes through."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    if not (proxies.get(parts.scheme) or proxies.get("all")):
        return False
    return not urllib.request.proxy_bypass(parts.netloc)
