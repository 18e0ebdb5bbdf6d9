"""What a client without a key can hold of a real `okuri serve`: nothing another client needs.

Each test is an attack from issue 40, against a server configured only by its environment:
idle connections that declare large bodies, a body or headers that dribble in, one sender
pushing past its share of unauthenticated bytes (over HTTP/1.1 and over gRPC's HTTP/2, whose
uploads can stall too), and forwards to the peer endpoint that are
unsigned (refused before their body is read) or replayed (refused the second time). A second
sender is a second loopback address (127.0.0.2), which Linux routes like 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import socket
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import h2.config
import h2.connection
import pytest

from okuri.client import Client
from okuri.server.peers import DIGEST, PATH, SCOPE, SIGNATURE, Peers
from tests import rawhttp
from tests.rawhttp import address, read_until_closed
from tests.servers import SQS_SECRET, ServerProcess, start_server

ADMIN = "hardening-admin-key-0123456789"
MiB = 1024 * 1024
DECLARED = 4 * MiB  # the largest body a request may have


@contextmanager
def connection(server: ServerProcess, source: str = "127.0.0.1") -> Iterator[socket.socket]:
    sock = socket.create_connection(address(server), timeout=10, source_address=(source, 0))
    try:
        yield sock
    finally:
        sock.close()


def head(path: str, length: int, extra: str = "") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nX-Amz-Target: AmazonSQS.ListQueues\r\n"
        f"{extra}\r\n"
    ).encode()


def answer(sock: socket.socket, timeout_s: float = 10) -> tuple[int, bytes]:
    """The status and everything the server sent until it closed (or `timeout_s` passed)."""
    sock.settimeout(timeout_s)
    data = read_until_closed(sock, timeout_s)
    return rawhttp.status(data), data


def closed_within(sock: socket.socket, timeout_s: float) -> bool:
    """Whether the server closed `sock` (after answering or not) within `timeout_s`."""
    sock.settimeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if not sock.recv(65536):
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return False


def metric(server: ServerProcess, line: str) -> int:
    found = re.search(rf"^{re.escape(line)} (\d+)$", server.get("/metrics").text, re.M)
    assert found, line
    return int(found.group(1))


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    node = start_server(
        tmp_path,
        {
            "OKURI_DATA_DIR": str(tmp_path / "data"),
            "OKURI_ADMIN_KEY": ADMIN,
            "OKURI_READ_TIMEOUT_S": "1",
            "OKURI_SENDER_BYTES_MAX": str(DECLARED),
            "OKURI_UNVERIFIED_BYTES_MAX": str(2 * DECLARED),
        },
    )
    try:
        yield node
    finally:
        node.terminate()


def produce(server: ServerProcess, queue: str) -> int:
    body = json.dumps({"items": [{"body": "x"}]}).encode()
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    return server.request("POST", f"/v1/queues/{queue}/messages", body, headers).status


def test_idle_connections_declaring_large_bodies_hold_nothing_others_need(
    tmp_path: Path,
) -> None:
    """The issue's attack as it was: 64 connections declare 4 MiB each and send nothing. They
    used to fill the node's 256 MiB of in-flight bytes, so every request with a body got 429."""
    server = start_server(tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"),
                                     "OKURI_ADMIN_KEY": ADMIN})  # fmt: skip
    try:
        sqs = server.sqs_client()
        url = sqs.create_queue(QueueName="held")["QueueUrl"]
        with ExitStack() as stack:
            idle = [stack.enter_context(connection(server)) for _ in range(64)]
            for sock in idle:
                sock.sendall(head("/", DECLARED))
            time.sleep(0.5)
            assert produce(server, "held") == 200  # the native API, with its key
            sqs.send_message(QueueUrl=url, MessageBody="from the same address")
            assert metric(server, 'okuri_inflight{kind="bytes"}') == 0
            assert metric(server, 'okuri_inflight{kind="unverified_bytes"}') == 0
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        assert sorted(m["Body"] for m in got) == ["from the same address", "x"]
    finally:
        server.terminate()


def test_a_body_that_stops_arriving_is_answered_408_and_its_connection_closed(
    server: ServerProcess,
) -> None:
    for path, extra in (("/", ""), ("/v1/queues", f"Authorization: Bearer {ADMIN}\r\n")):
        with connection(server) as sock:
            sock.sendall(head(path, 1000, extra) + b"{")
            started = time.monotonic()
            status, data = answer(sock, 10)
            assert status == 408, data
            assert time.monotonic() - started < 8  # 1 s, and the sweep; not for ever
    assert b"RequestTimeout" in data or b"request_timeout" in data
    assert "Traceback" not in server.log


def test_headers_that_trickle_in_are_cut_off_at_the_read_timeout(server: ServerProcess) -> None:
    """Slowloris: a header line every 0.3 s never finishes a request; aiohttp alone would wait
    for ever (its keep-alive timer does not run while a request's headers arrive)."""
    with connection(server) as sock:
        sock.sendall(b"GET /v1/queues HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed = False
        while time.monotonic() - started < 10:
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                closed = True
                break
            if closed_within(sock, 0.3):
                closed = True
                break
        assert closed, "a request whose headers never end kept its connection for 10 s"
        assert time.monotonic() - started < 8
    with connection(server) as sock:  # a request that takes its time, within it, is served
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        time.sleep(0.5)
        sock.sendall(b"Connection: close\r\n\r\n")
        assert answer(sock)[0] == 200


def test_one_sender_past_its_share_of_unverified_bytes_is_refused_and_others_are_not(
    server: ServerProcess,
) -> None:
    url = server.sqs_client().create_queue(QueueName="shares")["QueueUrl"]
    with connection(server) as hog:
        hog.sendall(head("/", DECLARED) + b" " * (DECLARED - 1))  # all but its last byte
        deadline = time.monotonic() + 5
        while metric(server, 'okuri_inflight{kind="unverified_bytes"}') < DECLARED - 1:
            assert time.monotonic() < deadline, "the server did not read the hog's body"
            time.sleep(0.05)
        with connection(server) as same:
            same.sendall(head("/", 10) + b"{}" + b" " * 8)
            status, data = answer(same)
            assert status == 429, data
            assert b"RequestThrottled" in data
        with connection(server, "127.0.0.2") as other:  # another sender: its own share
            other.sendall(head("/", 2) + b"{}")
            status, data = answer(other, 3)
            assert status == 403, data  # unsigned: refused as SQS refuses, not throttled
        assert metric(server, 'okuri_shed_requests_total{surface="sqs",kind="sender_bytes"}') == 1
        # Authenticated requests never wait on unverified bytes: the native API is open.
        assert produce(server, "shares") == 200
    got = server.sqs_client().receive_message(QueueUrl=url)["Messages"]
    assert [m["Body"] for m in got] == ["x"]


def forward(
    server: ServerProcess, headers: dict[str, str], body: bytes, send_body: bool = True
) -> tuple[int, bytes]:
    with connection(server) as sock:
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        sock.sendall(
            f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{lines}\r\n".encode()
        )
        if send_body:
            sock.sendall(body)
        return answer(sock, 5)


def test_an_unsigned_forward_is_refused_before_its_body_is_read(server: ServerProcess) -> None:
    """It used to read up to 4 MiB first; 200 such connections took a node to over 1 GiB."""
    declared = b"x" * DECLARED
    for headers in (
        {},
        {SIGNATURE: "9999999999:00"},
        {SIGNATURE: f"{int(time.time())}:{'n' * 22}:{'0' * 64}", DIGEST: "0" * 64},
        {SIGNATURE: "\u00b2:x"},  # a digit to str.isdigit, not to int()
    ):
        started = time.monotonic()
        status, data = forward(server, headers, declared, send_body=False)
        assert status == 403, data
        assert time.monotonic() - started < 3
    assert "Traceback" not in server.log


def test_a_signed_forward_is_refused_when_replayed_or_when_its_body_differs(
    server: ServerProcess,
) -> None:
    peers = Peers(SQS_SECRET, lambda scope: pytest.fail("never called"))
    body = b'{"q":"jobs","inc":"i","ops":[["L",1,60000]],"slots":[]}'
    headers = peers.headers("", body)
    first, data = forward(server, headers, body)
    assert first != 403, data  # signed by this deployment: taken (the queue may not exist)
    again, data = forward(server, headers, body)
    assert again == 403, data
    assert b"already seen" in data
    other = peers.headers("", body)
    tampered, data = forward(server, {**other, SCOPE: ""}, body[:-1] + b" ")
    assert tampered == 403, data
    assert b"digest" in data


class H2Upload:
    """An HTTP/2 connection to the gRPC port that opens ListQueues calls without a key and sends
    their message bodies only in part, honouring flow control as a real client would."""

    def __init__(self, server: ServerProcess) -> None:
        self.sock = socket.create_connection(address(server), timeout=10)
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        self.h2.initiate_connection()
        self.sock.sendall(self.h2.data_to_send())

    def open(self) -> int:
        stream = self.h2.get_next_available_stream_id()
        self.h2.send_headers(
            stream,
            [(":method", "POST"), (":path", "/okuri.api.v1.QueueService/ListQueues"),
             (":scheme", "http"), (":authority", "x"), ("content-type", "application/grpc"),
             ("te", "trailers")],
        )  # fmt: skip
        self.sock.sendall(self.h2.data_to_send())
        return stream

    def send(self, stream: int, nbytes: int, timeout_s: float = 10) -> int:
        """Send up to `nbytes` of a 4 MiB message (never its end); how many went before the
        server closed the connection (or `timeout_s` passed)."""
        data = b"\x00" + (DECLARED - 16).to_bytes(4, "big") + bytes(nbytes - 5)
        sent, deadline = 0, time.monotonic() + timeout_s
        self.sock.settimeout(0.2)
        while sent < len(data) and time.monotonic() < deadline:
            window = min(
                self.h2.local_flow_control_window(stream),
                self.h2.max_outbound_frame_size,
                len(data) - sent,
            )
            try:
                if window > 0:
                    self.h2.send_data(stream, data[sent : sent + window])
                    self.sock.sendall(self.h2.data_to_send())
                    sent += window
                    continue
                incoming = self.sock.recv(65536)
                if not incoming:
                    return sent
                self.h2.receive_data(incoming)
                self.sock.sendall(self.h2.data_to_send())
            except TimeoutError:
                continue
            except OSError:
                return sent
        return sent

    def close(self) -> None:
        self.sock.close()


def test_grpc_uploads_without_a_key_hold_at_most_their_senders_share(
    server: ServerProcess,
) -> None:
    """grpcio reads a call's whole message before the service sees its key: streams left one
    byte short of 4 MiB each used to add 4 MiB of memory apiece (120 of them: +480 MiB)."""
    upload = H2Upload(server)
    try:
        first = upload.send(upload.open(), 3 * MiB)
        assert first == 3 * MiB
        assert metric(server, 'okuri_inflight{kind="unverified_bytes"}') >= 3 * MiB - 64 * 1024
        upload.send(upload.open(), 3 * MiB)  # what goes before the server closes (or all)
        assert closed_within(upload.sock, 5), "a sender went past its share and kept sending"
    finally:
        upload.close()
    assert metric(server, 'okuri_shed_requests_total{surface="grpc",kind="sender_bytes"}') == 1
    deadline = time.monotonic() + 5
    while metric(server, 'okuri_inflight{kind="unverified_bytes"}'):
        assert time.monotonic() < deadline, "a closed connection's bytes were not given back"
        time.sleep(0.05)
    with Client(f"grpc://{server.url.removeprefix('http://')}", ADMIN) as client:
        client.create_queue("after-grpc-hog")  # a keyed call on a new connection is served


def test_a_grpc_upload_that_stops_moving_is_cut_off_at_the_read_timeout(
    server: ServerProcess,
) -> None:
    upload = H2Upload(server)
    try:
        assert upload.send(upload.open(), 100_000) == 100_000
        started = time.monotonic()
        assert closed_within(upload.sock, 8), "a stalled gRPC upload kept its connection"
        assert time.monotonic() - started < 8
    finally:
        upload.close()
