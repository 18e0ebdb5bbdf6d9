"""TLS on the main listener: the server's certificate, reloaded on SIGHUP, and the TLS front.

With OKURI_TLS_CERT and OKURI_TLS_KEY set, the one port speaks TLS for every surface (SQS, the
native HTTP/JSON API and gRPC). TLS ends here, at the front; the decrypted bytes are sniffed
exactly as on a plaintext port (`okuri.server.front`), so gRPC still goes to the in-process
grpcio server over its private socket, in plaintext, and HTTP/1.1 to aiohttp on the same
(now TLS) transport, which aiohttp sees as secure (`request.scheme` is "https", so queue URLs
are https://).

Why an accept loop of our own rather than `loop.create_server(ssl=...)`: a plaintext request
to a TLS port should get a clear answer (nginx's "400 The plain HTTP request was sent to HTTPS
port"), not a failed handshake, so the first byte must be looked at before TLS starts, and the
TLS layer must still see it. Of the ways to do that, peeking is the simplest that works with
uvloop: each accepted socket waits until readable and peeks one byte (MSG_PEEK, nothing is
consumed). A TLS record starts with 0x16 (handshake); such a socket goes to
`loop.connect_accepted_socket(ssl=...)`, the event loop's own TLS (uvloop's, under `okuri
serve`), which then reads the ClientHello itself. `loop.start_tls` would need the byte pushed
back, which neither asyncio nor uvloop allows, and an `ssl.MemoryBIO` pump would be a second TLS
transport to maintain beside the loop's. Anything else is plaintext: HTTP gets a short 400
saying the port speaks TLS (use https://), an HTTP/2 preface (plaintext gRPC) gets a GOAWAY
whose debug data says to use grpcs://, then each is closed. grpcio fails such a call at once
with UNAVAILABLE ("Expected SETTINGS frame"), without showing the debug data; the other choice,
SETTINGS then GOAWAY, gets the text into grpcio's log but has it reconnect in a tight loop until
the call's deadline.

ALPN offers "http/1.1" first, then "h2", and the server's order decides: a client that offers
http/1.1 gets it, and only a client that offers h2 alone gets h2. gRPC clients offer h2 (and
"grpc-exp") but never http/1.1, so they get h2 and go to grpcio; curl, browsers and every other
HTTP client offer both, and so speak HTTP/1.1 to aiohttp, since the only HTTP/2 server here is
grpcio's, which answers nothing but gRPC. The sniffing after the handshake decides, not ALPN, so
a client that negotiated nothing still works. With OKURI_TLS_CLIENT_CA every client must present a
certificate that authority signed (mutual TLS); one without is refused in the handshake.

Reload: SIGHUP builds a new context from the files; new connections use it, open ones keep
theirs. A reload that fails (a missing file, a key that does not match) keeps the context in use
and logs an error. Without TLS none of this runs: the plaintext front has no extra step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from dataclasses import dataclass

from aiohttp import web

from okuri import limits
from okuri.server.front import PREFACE, FrontSite, Splice, _Sniffer

log = logging.getLogger("okuri.server")

ALPN = ("http/1.1", "h2")  # the server's preference: see the module's docstring
TLS_HANDSHAKE = 0x16  # the content type of a TLS record that opens a handshake

_PLAIN_BODY = (
    b"This port speaks TLS: the plain HTTP request was sent to an HTTPS port. "
    b"Use https:// (grpcs:// for gRPC).\n"
)
PLAIN_HTTP_REFUSAL = (
    b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_PLAIN_BODY), _PLAIN_BODY)
)
_GOAWAY_DEBUG = b"this port speaks TLS: use grpcs://"
# GOAWAY: last stream 0, PROTOCOL_ERROR (1), and the reason as debug data. No SETTINGS before
# it: a client that got the server's SETTINGS counts the connection as made and reconnects at
# once, where one refused during the handshake backs off.
PLAIN_GRPC_REFUSAL = (
    (8 + len(_GOAWAY_DEBUG)).to_bytes(3, "big")
    + b"\x07\x00\x00\x00\x00\x00"
    + b"\x00\x00\x00\x00\x00\x00\x00\x01"
    + _GOAWAY_DEBUG
)


class TlsFilesInvalid(ValueError):
    """A certificate, key or client CA file that cannot be used; one line saying which."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    cert: str
    key: str
    client_ca: str | None = None

    def context(self) -> ssl.SSLContext:
        """A server context from the files, read now; raises TlsFilesInvalid."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(list(ALPN))
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as err:
            raise TlsFilesInvalid(
                f"cannot use OKURI_TLS_CERT={self.cert!r} with OKURI_TLS_KEY={self.key!r}: "
                + _why(err)
            ) from err
        if self.client_ca is not None:
            try:
                context.load_verify_locations(cafile=self.client_ca)
            except (OSError, ssl.SSLError) as err:
                raise TlsFilesInvalid(
                    f"cannot use OKURI_TLS_CLIENT_CA={self.client_ca!r}: " + _why(err)
                ) from err
            context.verify_mode = ssl.CERT_REQUIRED
        return context

    def peer_context(self) -> ssl.SSLContext:
        """What this node's forwards to another node use: the system's authorities check the
        leader's certificate (OpenSSL's defaults, so SSL_CERT_FILE can name a private CA), and
        this node's own certificate answers a leader that asks for one (mutual TLS), so the
        certificate needs the clientAuth usage too where its usages are restricted. Raises
        TlsFilesInvalid."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        try:
            context.load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as err:
            raise TlsFilesInvalid(
                f"cannot use OKURI_TLS_CERT={self.cert!r} with OKURI_TLS_KEY={self.key!r}: "
                + _why(err)
            ) from err
        return context


def _why(err: OSError | ssl.SSLError) -> str:
    if isinstance(err, ssl.SSLError):
        return err.reason or str(err)
    return err.strerror or str(err)


class ServerTls:
    """The context new connections get, and the one this node's forwards to its peers use;
    `reload` swaps both, or keeps both if the files are bad."""

    __slots__ = ("context", "files", "peer_context")

    def __init__(self, files: TlsFiles) -> None:
        self.files = files
        self.context = files.context()
        self.peer_context = files.peer_context()

    def reload(self) -> None:
        try:
            self.context, self.peer_context = self.files.context(), self.files.peer_context()
        except TlsFilesInvalid as err:
            log.error("keeping the TLS certificate in use: %s", err)
            return
        log.info("TLS certificate reloaded from %s", self.files.cert)


class _Refusal(_Sniffer):
    """A plaintext connection to the TLS port: told so in its own protocol, then closed."""

    __slots__ = ()

    def data_received(self, data: bytes) -> None:
        if self.head:
            return  # answered already; the rest is read (and dropped) until the peer closes
        self.head = data[:1]
        h2 = PREFACE.startswith(data[: len(PREFACE)])  # "PRI * HTTP/2.0...", not "POST"
        self.transport.write(PLAIN_GRPC_REFUSAL if h2 else PLAIN_HTTP_REFUSAL)
        if self.transport.can_write_eof():
            self.transport.write_eof()  # half-close: unread bytes would make a reset, losing it
        else:
            self.transport.close()

    def eof_received(self) -> bool | None:
        self.transport.close()
        return False


class _Listener:
    """What aiohttp's runner asks of a site's server: its sockets, and to stop accepting."""

    def __init__(self, sock: socket.socket, accepting: asyncio.Task[None]) -> None:
        self.sockets = [sock]
        self._accepting = accepting

    def close(self) -> None:
        self._accepting.cancel()
        with contextlib.suppress(ValueError, OSError):  # not waiting in sock_accept just now
            asyncio.get_running_loop().remove_reader(self.sockets[0].fileno())
        self.sockets[0].close()


class TlsFrontSite(FrontSite):
    """The main listener with TLS: peeks each connection's first byte, then TLS or a refusal."""

    __slots__ = ("_greeting", "_tls")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str | None,
        port: int,
        splice: Splice,
        tls: ServerTls,
        read_timeout_s: float = limits.read_timeout_s_default,
    ):
        super().__init__(runner, host, port, splice, read_timeout_s)
        self._tls = tls
        self._greeting: set[asyncio.Task[None]] = set()

    @property
    def name(self) -> str:
        return f"https://{self._host or '0.0.0.0'}:{self._port} (and gRPC)"

    async def start(self) -> None:
        await web.BaseSite.start(self)
        loop = asyncio.get_running_loop()
        self.loop_time = loop.time
        sock = _listening_socket(self._host, self._port, self._backlog)
        self._server = _Listener(sock, loop.create_task(self._accept(sock)))  # type: ignore[assignment]
        self._sweep()

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as err:  # out of descriptors: pause, as asyncio's own server does
                log.warning("not accepting for %g s: %s", limits.accept_pause_s, err)
                await asyncio.sleep(limits.accept_pause_s)
                continue
            task = loop.create_task(self._greet(conn))
            self._greeting.add(task)
            task.add_done_callback(self._greeting.discard)

    async def _greet(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        handed = False  # once the loop has the socket, closing it is the transport's business
        try:
            conn.setblocking(False)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            async with asyncio.timeout(limits.first_bytes_s):
                first = await _peek(loop, conn)
            handed = bool(first)
            if first and first[0] == TLS_HANDSHAKE:
                await loop.connect_accepted_socket(
                    lambda: _Sniffer(self),
                    conn,
                    ssl=self._tls.context,
                    ssl_handshake_timeout=limits.first_bytes_s,
                )
            elif first:
                await loop.connect_accepted_socket(lambda: _Refusal(self), conn)
        except (OSError, TimeoutError) as err:  # ssl.SSLError is an OSError
            log.debug("a connection to the TLS port failed before its first request: %s", err)
        finally:
            if not handed:  # silent, closed before it said anything, or stopping
                conn.close()

    async def stop(self) -> None:
        await super().stop()
        for task in list(self._greeting):
            task.cancel()
        self._greeting.clear()


async def _peek(loop: asyncio.AbstractEventLoop, conn: socket.socket) -> bytes:
    """The connection's first byte, left unread; b"" if the peer closed first."""
    while True:
        readable: asyncio.Future[None] = loop.create_future()
        loop.add_reader(conn.fileno(), _wake, readable)
        try:
            await readable
        finally:
            loop.remove_reader(conn.fileno())
        with contextlib.suppress(BlockingIOError, InterruptedError):  # a spurious wake-up
            return conn.recv(1, socket.MSG_PEEK)


def _wake(readable: asyncio.Future[None]) -> None:
    if not readable.done():
        readable.set_result(None)


def _listening_socket(host: str | None, port: int, backlog: int) -> socket.socket:
    """A bound, listening, non-blocking socket: IPv6 (dual-stack where it can) for every
    interface, else the first address `host` resolves to."""
    if host is None:
        if socket.has_dualstack_ipv6():
            sock = socket.create_server(
                ("", port), family=socket.AF_INET6, dualstack_ipv6=True, backlog=backlog
            )
        else:
            sock = socket.create_server(("", port), backlog=backlog)
    else:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.create_server(address[:2], family=family, backlog=backlog)
    sock.setblocking(False)
    return sock
