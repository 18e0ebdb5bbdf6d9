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
request. This is an aiohttp site, so the runner's shutdown stops it: it stops accepting, drops
connections still undecided, and aiohttp drains its own.
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


class FrontSite(web.BaseSite):
    """An aiohttp site on `host:port` that also leads gRPC connections to `splice`."""

    __slots__ = ("_host", "_port", "_sweeper", "loop_time", "splice", "undecided")

    def __init__(self, runner: web.BaseRunner, host: str | None, port: int, splice: Splice):
        super().__init__(runner)
        self._host = host
        self._port = port
        self.splice = splice
        self.undecided: set[_Sniffer] = set()
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
        """Close connections silent for `first_bytes_s` (one timer for all, not one each)."""
        oldest_s = self.loop_time() - limits.first_bytes_s
        for sniffer in [s for s in self.undecided if s.since_s <= oldest_s]:
            self.undecided.discard(sniffer)
            sniffer.transport.close()
        self._sweeper = asyncio.get_running_loop().call_later(
            limits.first_bytes_s / 4, self._sweep
        )

    def to_http(self, sniffer: _Sniffer, head: bytes) -> None:
        self.undecided.discard(sniffer)
        server = self._runner.server
        transport = sniffer.transport
        if server is None:  # the runner is shutting down
            transport.close()
            return
        protocol = server()
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        protocol.data_received(head)

    async def stop(self) -> None:
        await super().stop()  # stops accepting
        if self._sweeper is not None:
            self._sweeper.cancel()
        for sniffer in list(self.undecided):
            sniffer.transport.close()
        self.undecided.clear()
