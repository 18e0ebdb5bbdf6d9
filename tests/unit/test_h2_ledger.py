"""The gRPC splice's ledger (okuri.server.h2_ledger): frame headers read from chunks split
anywhere, a stream's request bytes charged until its request ends, is reset or is answered,
and the connection closed past the sender's share. Frames are built by hand (RFC 9113, 4.1);
tests/surface/test_hardening.py drives a real server with hyper-h2."""

from __future__ import annotations

import pytest

from okuri.engine import Admission, Bounds
from okuri.server.h2_ledger import (
    DATA,
    END_STREAM,
    HEADERS,
    PREFACE_BYTES,
    RST_STREAM,
    FrameHeaders,
    StreamLedger,
)

MiB = 1024 * 1024
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = 0x4


def frame(kind: int, stream: int, payload: bytes = b"", flags: int = 0) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + (
        payload
    )


def test_frame_headers_are_found_however_the_bytes_are_split() -> None:
    wire = PREFACE + frame(SETTINGS, 0) + frame(HEADERS, 1, b"h" * 7, 0x4) + frame(
        DATA, 1, b"d" * 100, END_STREAM
    )
    expected = [(SETTINGS, 0, 0, 0), (HEADERS, 0x4, 1, 7), (DATA, END_STREAM, 1, 100)]
    assert len(PREFACE) == PREFACE_BYTES
    for size in (1, 2, 5, 9, 10, 33, len(wire)):
        reader = FrameHeaders(skip=PREFACE_BYTES)
        got = [h for at in range(0, len(wire), size) for h in reader.feed(wire[at : at + size])]
        assert got == expected, size


class Conn:
    def __init__(self, sender_bytes: int = 4 * MiB) -> None:
        self.admission = Admission(
            Bounds(unverified_bytes_max=2 * sender_bytes, sender_bytes_max=sender_bytes)
        )
        gate = self.admission.gate("grpc")
        self.closed = False
        self.now_s = 0.0
        self.ledger = StreamLedger(
            lambda: gate.hold_unverified("10.0.0.1"), self.close, lambda: self.now_s
        )
        self.ledger.from_client(PREFACE)

    def close(self) -> None:
        self.closed = True

    @property
    def held(self) -> int:
        return self.admission.snapshot().in_flight["unverified_bytes"]


def test_a_request_holds_its_bytes_until_it_ends() -> None:
    conn = Conn()
    conn.ledger.from_client(frame(HEADERS, 1) + frame(DATA, 1, bytes(1000)))
    assert conn.held == 1000
    conn.ledger.from_client(frame(DATA, 1, bytes(500), END_STREAM))
    assert conn.held == 0


@pytest.mark.parametrize(
    ("side", "ending"),
    [
        ("client", frame(RST_STREAM, 1, bytes(4))),
        ("server", frame(RST_STREAM, 1, bytes(4))),
        ("server", frame(HEADERS, 1, b"trailers", END_STREAM | 0x4)),
    ],
)
def test_a_reset_or_an_answered_call_gives_its_bytes_back(side: str, ending: bytes) -> None:
    conn = Conn()
    conn.ledger.from_client(frame(HEADERS, 1) + frame(DATA, 1, bytes(1000)))
    conn.ledger.from_client(frame(HEADERS, 3) + frame(DATA, 3, bytes(10)))
    conn.ledger.from_server(frame(SETTINGS, 0) + frame(HEADERS, 1, b"response headers", 0x4))
    assert conn.held == 1010  # response headers alone end nothing
    (conn.ledger.from_client if side == "client" else conn.ledger.from_server)(ending)
    assert conn.held == 10


def test_past_the_senders_share_the_connection_is_closed_and_holds_nothing() -> None:
    conn = Conn(sender_bytes=4 * MiB)
    chunk = bytes(16 * 1024)
    for stream in (1, 3):
        for _ in range(128):  # 2 MiB each: the share exactly
            conn.ledger.from_client(frame(DATA, stream, chunk))
    assert (conn.held, conn.closed) == (4 * MiB, False)
    conn.ledger.from_client(frame(DATA, 5, b"x"))
    assert (conn.held, conn.closed) == (0, True)
    shed = conn.admission.snapshot().shed
    assert shed[("grpc", "sender_bytes")] == 1


def test_an_upload_that_stops_moving_is_stalled_and_a_finished_one_is_not() -> None:
    conn = Conn()
    conn.ledger.from_client(frame(DATA, 1, b"abc"))
    conn.now_s = 10.0
    conn.ledger.from_client(frame(DATA, 3, b"abc", END_STREAM))  # whole: nothing held
    assert conn.ledger.stalled(oldest_s=5.0)
    conn.ledger.from_client(frame(DATA, 1, b"more"))
    assert not conn.ledger.stalled(oldest_s=5.0)
    conn.ledger.abort()
    assert (conn.held, conn.closed) == (0, True)
