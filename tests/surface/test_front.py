"""The main listener's sniffing (okuri/server/front.py) at the edges: first bytes split across
reads, a request that starts like the HTTP/2 preface and is not, garbage after the preface,
connections that say nothing; through all of it the server stays healthy."""

from __future__ import annotations

import asyncio
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from okuri import limits
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.principals.local import DEV_ADMIN_KEY
from okuri.server.app import Server
from okuri.server.front import PREFACE
from okuri.server.grpc_backend import GrpcBackend
from okuri.server.settings import Settings
from tests.servers import ServerProcess, start_server

# An empty HTTP/2 SETTINGS frame: length 0, type 4, no flags, stream 0.
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
READ_S = 5.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("front")
    proc = start_server(tmp, {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_AUTH": "off"})
    yield proc
    proc.terminate()


def connect(server: ServerProcess) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=READ_S)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by READ_S a read)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def read_some(sock: socket.socket) -> bytes:
    return sock.recv(65536)


def test_an_http_request_sent_a_byte_at_a_time_is_answered(server: ServerProcess) -> None:
    with connect(server) as sock:
        for byte in b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":
            sock.sendall(bytes([byte]))
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 200 ") and b'"service":"okuri"' in answer


def test_a_preface_split_across_reads_reaches_grpc(server: ServerProcess) -> None:
    with connect(server) as sock:
        sock.sendall(PREFACE[:5])
        time.sleep(0.1)  # let the server read the first part alone
        sock.sendall(PREFACE[5:] + SETTINGS)
        answer = read_some(sock)
    assert answer[3] == 4  # grpc's own SETTINGS frame opens its answer


def test_a_request_that_starts_like_the_preface_is_http(server: ServerProcess) -> None:
    with connect(server) as sock:
        sock.sendall(b"PRI * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = read_until_closed(sock)
    # aiohttp's parser, not grpc, refuses it.
    assert answer.startswith(b"HTTP/1.0 400 Bad Request")


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"PRI * HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
        b"GET /\x00 HTTP/1.1\r\nHost: x\r\n\r\n",
    ],
    ids=["unknown-method", "bad-content-length", "nul-in-path"],
)
def test_malformed_http_is_one_log_line_not_a_traceback(
    server: ServerProcess, request_bytes: bytes
) -> None:
    refusals = server.log.count("refused a malformed HTTP request")
    with connect(server) as sock:
        sock.sendall(request_bytes)
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.0 400 Bad Request")
    deadline = time.monotonic() + 5
    while server.log.count("refused a malformed HTTP request") == refusals:
        assert time.monotonic() < deadline, server.log[-2000:]
        time.sleep(0.05)
    assert "Traceback" not in server.log, server.log[-3000:]


def test_garbage_after_the_preface_closes_that_connection_only(server: ServerProcess) -> None:
    tracebacks = server.log.count("Traceback")
    with connect(server) as sock:
        sock.sendall(PREFACE + b"\xff" * 64)
        read_until_closed(sock)  # grpc says GOAWAY and hangs up
    for first in (b"", b"PR", b"\x16\x03\x01"):  # nothing, half a preface, a TLS hello
        with connect(server) as sock:
            sock.sendall(first)
            sock.shutdown(socket.SHUT_WR)
            read_until_closed(sock)
    assert server.get("/readyz").status == 200
    with grpc.insecure_channel(server.url.removeprefix("http://")) as ch:
        made = pb_grpc.QueueServiceStub(ch).CreateQueue(pb.CreateQueueRequest(name="after"))
    assert made.name == "after"
    assert server.request("GET", "/").status == 200
    assert server.log.count("Traceback") == tracebacks, server.log[-3000:]


def in_process(tmp_path: Path) -> Server:
    return Server(
        Settings.load(
            {
                "OKURI_LISTEN": "127.0.0.1:0",
                "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
                "OKURI_DATA_DIR": str(tmp_path / "data"),
                "OKURI_AUTH": "off",
            }
        )
    )


async def test_grpc_works_through_a_socket_file_where_there_is_no_abstract_namespace(
    tmp_path: Path,
) -> None:
    server = in_process(tmp_path)
    server.grpc = GrpcBackend(server.health.readiness, "okuri-grpc-test", abstract=False)
    await server.start()
    try:
        assert server.grpc._dir is not None and Path(server.grpc._dir, "grpc.sock").exists()
        (url,) = server.urls
        async with grpc.aio.insecure_channel(url.removeprefix("http://")) as ch:
            made = await pb_grpc.QueueServiceStub(ch).CreateQueue(pb.CreateQueueRequest(name="f"))
        assert made.name == "f"
        socket_dir = server.grpc._dir
    finally:
        assert await server.stop() is True
    assert not Path(socket_dir).exists()  # removed at stop


@pytest.mark.parametrize("abstract", [True, False], ids=["abstract socket", "socket file"])
async def test_the_splice_tells_grpc_which_client_each_connection_leads(
    tmp_path: Path, abstract: bool
) -> None:
    """grpcio sees the splice, not the client: the splice's end of the private socket names
    the client, for as long as its connection lives (the development key needs a loopback
    client, okuri.principals.local)."""
    server = Server(
        Settings.load(
            {
                "OKURI_LISTEN": "127.0.0.1:0",
                "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
                "OKURI_DATA_DIR": str(tmp_path / "data"),
            }
        )
    )
    name = f"okuri-grpc-test-{uuid.uuid4().hex}"
    server.grpc = GrpcBackend(server.health.readiness, name, abstract=abstract)
    await server.start()
    try:
        (url,) = server.urls
        async with grpc.aio.insecure_channel(url.removeprefix("http://")) as ch:
            metadata = (("authorization", f"Bearer {DEV_ADMIN_KEY}"),)
            await pb_grpc.QueueServiceStub(ch).ListQueues(pb.ListQueuesRequest(), metadata=metadata)
            (peer,) = server.grpc._clients
            assert server.grpc.client_address(peer) == "127.0.0.1"
            if not abstract:
                assert peer.startswith("unix:") and Path(peer.removeprefix("unix:")).exists()
        deadline = time.monotonic() + READ_S
        while server.grpc._clients:  # forgotten once its connection is gone
            assert time.monotonic() < deadline, server.grpc._clients
            await asyncio.sleep(0.02)
        assert server.grpc.client_address(peer) is None
        if not abstract:
            assert not Path(peer.removeprefix("unix:")).exists()
    finally:
        assert await server.stop() is True


async def test_a_connection_that_says_nothing_is_closed_after_the_first_bytes_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "first_bytes_s", 0.2)
    server = in_process(tmp_path)
    await server.start()
    try:
        (url,) = server.urls
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        assert await asyncio.wait_for(reader.read(), READ_S) == b""  # closed by the server
        writer.close()
    finally:
        assert await server.stop() is True
