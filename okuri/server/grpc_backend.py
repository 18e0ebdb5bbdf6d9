"""The gRPC server behind the main listener, and the byte pipes that lead connections to it.

grpcio's server owns its sockets (it cannot take a connection another listener accepted), so
it listens on a private unix socket, and the main listener (`okuri.server.front`) splices each
gRPC connection to it, byte for byte in both directions
with flow control (a full write buffer on one side pauses reading on the other). HTTP/2 itself,
keepalives and GOAWAY stay grpcio's business.

grpcio sees each spliced connection come from this process, not from its client, so each
splice binds its end of the private socket to a name of its own, and keeps, for as long as the
connection lives, which client's address that name stands for: `client_address` answers the
service, from grpcio's name for a call's peer (how the development key is kept to loopback
clients, okuri.principals.local). A client cannot forge it: the name is the kernel's record
of the socket this process bound, and only this process binds names it records.

Beside `okuri.api.v1.QueueService` it serves reflection (so grpcurl and dynamic clients need
no .proto) and `grpc.health.v1.Health` (`okuri.server.health_grpc`).

On Linux the socket is in the abstract namespace: no file, so nothing is left behind by a
killed process and a read-only filesystem is no obstacle (it is as reachable as loopback, and
every call is authenticated by the service itself). Elsewhere it is a file in a private
temporary directory, removed at stop.

Shutdown: `stopping()` turns health to NOT_SERVING; `stop(grace)` lets in-flight calls finish
(a waiting lease answers at once, as the engine stops waiting), then closes every spliced
connection left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import cast

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from okuri import limits
from okuri.engine import Gate, sender_of
from okuri.server.h2_ledger import StreamLedger
from okuri.server.health_grpc import HealthService, Readiness

log = logging.getLogger("okuri.server")


class _Pipe(asyncio.Protocol):
    """One direction of a splice: what arrives on this side is shown to `watch` (the
    connection's ledger), then written to `peer`."""

    def __init__(
        self,
        peer: asyncio.Transport | None,
        pipes: set[_Pipe],
        watch: Callable[[bytes], None] | None = None,
        lost: Callable[[], None] | None = None,
    ) -> None:
        self.peer = peer
        self.pipes = pipes
        self.watch = watch
        self.lost = lost
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.pipes.add(self)

    def data_received(self, data: bytes) -> None:
        if self.watch is not None:
            self.watch(data)
        if self.peer is not None:
            self.peer.write(data)

    def eof_received(self) -> bool | None:
        # HTTP/2 peers do not half-close: an end of stream from either side ends the splice
        # (this side closes, and connection_lost closes the other once it has written out).
        return None

    def pause_writing(self) -> None:  # this side's buffer is full: stop reading the other
        if self.peer is not None:
            self.peer.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and not self.peer.is_closing():
            self.peer.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipes.discard(self)
        if self.lost is not None:
            self.lost()
        if self.peer is not None:
            self.peer.close()  # after writing what it holds

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class GrpcBackend:
    def __init__(
        self,
        readiness: Readiness,
        name: str,
        abstract: bool | None = None,
        gate: Gate | None = None,
        read_timeout_s: float = limits.read_timeout_s_default,
    ) -> None:
        """`name` names the private socket, unique among a host's processes; `abstract`: in
        the abstract namespace (the default on Linux) or a file. `gate` holds each
        connection's unfinished request messages against its sender (okuri.server.h2_ledger;
        None: not held), and an upload that does not move for `read_timeout_s` closes its
        connection."""
        self.readiness = readiness
        self.gate = gate
        self.read_timeout_s = read_timeout_s
        self._ledgers: set[StreamLedger] = set()
        self._sweeper: asyncio.TimerHandle | None = None
        self.name = name
        self.abstract = sys.platform.startswith("linux") if abstract is None else abstract
        self.server: grpc.aio.Server | None = None
        self._dir: str | None = None
        self._path = ""  # the socket's file; "" for an abstract socket
        self._health: HealthService | None = None
        self._pipes: set[_Pipe] = set()
        self._connecting: set[asyncio.Task[None]] = set()
        # grpcio's peer name of each splice's end of the socket -> its client's address
        self._clients: dict[str, str | None] = {}
        self._spliced = 0

    async def start(self, services: dict[str, grpc.GenericRpcHandler]) -> None:
        """Serve `services` (full service name: handler) on a private unix socket."""
        if self.abstract:
            address = "unix-abstract:" + self.name
        else:
            self._dir = tempfile.mkdtemp(prefix="okuri-grpc-")
            self._path = str(Path(self._dir) / "grpc.sock")
            address = "unix:" + self._path
        server = grpc.aio.server(
            options=[("grpc.max_receive_message_length", limits.request_bytes_max)]
        )
        server.add_generic_rpc_handlers(tuple(services.values()))
        self._health = HealthService(self.readiness, services)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        names = (*services, health.SERVICE_NAME, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server)
        if server.add_insecure_port(address) == 0:
            raise OSError(f"gRPC cannot listen on its private socket {address}")
        await server.start()
        self.server = server
        self._sweep()

    def _sweep(self) -> None:
        """Close connections whose upload has not moved for the read timeout."""
        loop = asyncio.get_running_loop()
        oldest_s = loop.time() - self.read_timeout_s
        for ledger in [d for d in self._ledgers if d.stalled(oldest_s)]:
            self._ledgers.discard(ledger)
            ledger.abort()
        self._sweeper = loop.call_later(self.read_timeout_s / 4, self._sweep)

    def splice(self, client: asyncio.Transport, first: bytes) -> None:
        """Lead a connection that began with `first` (the HTTP/2 preface) to the gRPC server."""
        client.pause_reading()
        ledger = self._ledger(client)
        if ledger is None:
            pipe = _Pipe(None, self._pipes)
        else:
            pipe = _Pipe(None, self._pipes, ledger.from_client, lambda: self._forget(ledger))
        client.set_protocol(pipe)
        pipe.connection_made(client)
        if ledger is not None:
            ledger.from_client(first)
        task = asyncio.get_running_loop().create_task(self._connect(pipe, client, first, ledger))
        self._connecting.add(task)
        task.add_done_callback(self._connecting.discard)

    def client_address(self, peer: str) -> str | None:
        """The address of the client whose connection a call came on, from grpcio's name for
        the call's peer (a splice's end of the private socket); None for a peer no splice
        bound (a process on this machine that reached the socket itself)."""
        return self._clients.get(peer)

    def _ledger(self, client: asyncio.Transport) -> StreamLedger | None:
        gate = self.gate
        if gate is None:
            return None
        sender = sender_of(_address_of(client))
        ledger = StreamLedger(
            lambda: gate.hold_unverified(sender), client.close, asyncio.get_running_loop().time
        )
        self._ledgers.add(ledger)
        return ledger

    def _forget(self, ledger: StreamLedger) -> None:
        self._ledgers.discard(ledger)
        ledger.release_all()

    async def _connect(
        self,
        pipe: _Pipe,
        client: asyncio.Transport,
        first: bytes,
        ledger: StreamLedger | None,
    ) -> None:
        watch = None if ledger is None else ledger.from_server
        end, peer = self._end()
        self._clients[peer] = _address_of(client)

        def lost() -> None:
            self._clients.pop(peer, None)
            if self._path:
                with contextlib.suppress(OSError):
                    os.unlink(end)

        try:
            upstream = await self._open(lambda: _Pipe(client, self._pipes, watch, lost), end)
        except BaseException as err:
            lost()
            if not isinstance(err, OSError):
                raise
            log.warning("a gRPC connection could not reach the gRPC server: %s", err)
            client.abort()
            return
        if client.is_closing():
            upstream.close()
            return
        pipe.peer = upstream
        upstream.write(first)
        client.resume_reading()

    def _end(self) -> tuple[str, str]:
        """A new splice's end of the private socket: the address to bind it to, and grpcio's
        name for a call's peer that comes through it."""
        self._spliced += 1
        if self._path:  # in the private directory, beside the server's socket
            end = str(Path(self._path).parent / f"c{self._spliced}.sock")
            return end, "unix:" + end
        end = f"{self.name}-c{self._spliced}"
        return "\0" + end, "unix-abstract:" + end

    async def _open(self, protocol: Callable[[], _Pipe], end: str) -> asyncio.Transport:
        """A connection to the gRPC server from a socket bound to `end`, so that grpcio names
        its peer by it."""
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.setblocking(False)
            sock.bind(end)
            await loop.sock_connect(sock, self._path or "\0" + self.name)
            transport, _ = await loop.create_unix_connection(protocol, sock=sock)
        except BaseException:
            sock.close()
            raise
        return transport

    def stopping(self) -> None:
        """Health answers NOT_SERVING from now on."""
        if self._health is not None:
            self._health.stop()

    async def stop(self, grace_s: float) -> None:
        self.stopping()
        if self._sweeper is not None:
            self._sweeper.cancel()
        for task in list(self._connecting):
            task.cancel()
        if self.server is not None:
            await self.server.stop(grace_s)
        for pipe in list(self._pipes):
            pipe.close()
        if self._dir is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._dir)
            self._dir = None


def _address_of(client: asyncio.Transport) -> str | None:
    """The client's IP address, as its socket reports it (None when it reports none)."""
    peer = client.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else None
