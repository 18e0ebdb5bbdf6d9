"""The main listener (OKURI_LISTEN): one port for SQS, the native HTTP/JSON API, peers and gRPC.

Each new connection is sniffed: a gRPC client opens with the HTTP/2 connection preface
(`PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n`, sent with prior knowledge, no upgrade), while an
HTTP/1.1 request opens with a method, so the first bytes decide. HTTP/1.1 connections are
handed, with the bytes already read, to aiohttp's own protocol on the same transport: from then
on aiohttp reads the socket directly, as if it had accepted it. A connection is decided by its
first byte or two (no HTTP method starts with "PR"); only a gRPC one waits for the whole
preface, and is then spliced to the in-process grpcio server (`okuri.server.grpc_backend`).

Why not one HTTP/2 server for both: aiohttp speaks only HTTP/1.1, and grpcio's server cannot
be handed a connection another listener accepted; a pure-Python HTTP/2 gRPC server would be a
second implementation of what grpcio does well. Sniffing keeps the SQS path as it was, at the
cost of one extra local hop for gRPC bytes.

A connection that sends nothing is closed after `limits.first_bytes_s` (give or take a quarter
of it: one sweep for all rather than a timer each), as aiohttp closes one that never sends a
request. aiohttp bounds the time between requests but not the time a request's headers take to
arrive, so a client could hold a connection for ever by sending a header byte now and then
(slowloris): each HTTP connection's bytes pass through a `_HeaderClock` on their way to aiohttp,
and one whose headers are not whole `read_timeout_s` after their first byte is closed by the
same sweep. (Bodies have their own deadlines, okuri.engine.intake.) This is an aiohttp site,
so the runner's shutdown stops it: it stops accepting, drops connections still undecided, and
aiohttp drains its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import cast

from aiohttp import web

from okuri import limits

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

Splice = Callable[[asyncio.Transport, bytes], None]


class _Sniffer(asyncio.Protocol):
    """A connection until its first bytes say which protocol it speaks."""

    __slots__ = ("head", "since_s", "site", "transport")
    transport: asyncio.Transport

    def __init__(self, site: FrontSite) -> None:
        self.site = site
        self.head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.since_s = self.site.loop_time()
        self.site.undecided.add(self)

    def data_received(self, data: bytes) -> None:
        if not self.head and data[:1] != b"P":  # the common case: GET, POST, HEAD, DELETE...
            self.site.to_http(self, data)
            return
        head = self.head + data
        n = min(len(head), len(PREFACE))
        if head[:n] != PREFACE[:n]:
            self.site.to_http(self, head)
        elif n == len(PREFACE):
            self.site.undecided.discard(self)
            self.site.splice(self.transport, head)
        else:
            self.head = head

    def eof_received(self) -> bool | None:
        return None  # closed before it said anything useful

    def connection_lost(self, exc: Exception | None) -> None:
        self.site.undecided.discard(self)


class _HeaderClock(asyncio.Protocol):
    """Between an HTTP connection's transport and aiohttp's handler: notes when a request's
    headers began to arrive, and forgets it once aiohttp has the whole request line and headers
    (it queues a parsed message, or is handling one). It reads aiohttp's handler state through
    `_parsed`, the one place that knows those attribute names."""

    __slots__ = ("handler", "headers_since_s", "site", "transport")
    transport: asyncio.BaseTransport

    def __init__(self, site: FrontSite, handler: asyncio.Protocol) -> None:
        self.site = site
        self.handler = handler
        self.headers_since_s: float | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.handler.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.headers_since_s is None and not _parsed(self.handler):
            self.headers_since_s = self.site.loop_time()
        self.handler.data_received(data)
        if self.headers_since_s is not None and _parsed(self.handler):
            self.headers_since_s = None

    def eof_received(self) -> bool | None:
        return self.handler.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.site.reading.discard(self)
        self.handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self.handler.pause_writing()

    def resume_writing(self) -> None:
        self.handler.resume_writing()

    def late(self, oldest_s: float) -> bool:
        """Whether a request's headers began arriving before `oldest_s` and are not whole."""
        since = self.headers_since_s
        if since is None or _parsed(self.handler):
            self.headers_since_s = None
            return False
        return since <= oldest_s


def _parsed(handler: asyncio.Protocol) -> bool:
    """Whether aiohttp's request handler holds a whole request (queued or being handled)."""
    return bool(getattr(handler, "_messages", None)) or bool(
        getattr(handler, "_request_in_progress", False)
    )


class FrontSite(web.BaseSite):
    """An aiohttp site on `host:port` that also leads gRPC connections to `splice`."""

    __slots__ = (
        "_host",
        "_port",
        "_sweeper",
        "loop_time",
        "read_timeout_s",
        "reading",
        "splice",
        "undecided",
    )

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str | None,
        port: int,
        splice: Splice,
        read_timeout_s: float = limits.read_timeout_s_default,
    ):
        super().__init__(runner)
        self._host = host
        self._port = port
        self.splice = splice
        self.read_timeout_s = read_timeout_s
        self.undecided: set[_Sniffer] = set()
        self.reading: set[_HeaderClock] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self.loop_time: Callable[[], float] = lambda: 0.0

    @property
    def name(self) -> str:
        return f"http://{self._host or '0.0.0.0'}:{self._port} (and gRPC)"

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        self.loop_time = loop.time
        self._server = await loop.create_server(
            lambda: _Sniffer(self), self._host, self._port, backlog=self._backlog
        )
        self._sweep()

    def _sweep(self) -> None:
        """Close connections silent for `first_bytes_s`, and those whose request headers are
        not whole `read_timeout_s` after they began (one timer for all, not one each)."""
        now_s = self.loop_time()
        oldest_s = now_s - limits.first_bytes_s
        for sniffer in [s for s in self.undecided if s.since_s <= oldest_s]:
            self.undecided.discard(sniffer)
            sniffer.transport.close()
        oldest_s = now_s - self.read_timeout_s
        for clock in [c for c in self.reading if c.late(oldest_s)]:
            self.reading.discard(clock)
            clock.transport.close()
        self._sweeper = asyncio.get_running_loop().call_later(
            min(limits.first_bytes_s, self.read_timeout_s) / 4, self._sweep
        )

    def to_http(self, sniffer: _Sniffer, head: bytes) -> None:
        self.undecided.discard(sniffer)
        server = self._runner.server
        transport = sniffer.transport
        if server is None:  # the runner is shutting down
            transport.close()
            return
        clock = _HeaderClock(self, server())
        self.reading.add(clock)
        transport.set_protocol(clock)
        clock.connection_made(transport)
        clock.data_received(head)

    async def stop(self) -> None:
        await super().stop()  # stops accepting
        if self._sweeper is not None:
            self._sweeper.cancel()
        for sniffer in list(self.undecided):
            sniffer.transport.close()
        self.undecided.clear()
