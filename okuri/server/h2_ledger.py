"""What a gRPC connection's unfinished request messages hold, charged to the connection's sender.

grpcio reads a call's whole request message before the service sees the call, and with it the
key: a client without one could open a hundred streams, send all but the last byte of a 4 MiB
message on each, and stop. Measured before this module: 120 such streams on two connections
took a node from 59 to 543 MiB, without a key. The splice that leads gRPC connections to grpcio
(okuri.server.grpc_backend) sees every byte, so it reads the HTTP/2 frame headers going past
(9 bytes each; nothing is decoded, no payload is copied) and keeps a ledger per connection:

- a DATA frame on a stream whose request has not ended is charged to the sender as it passes,
  as okuri.engine.intake charges an HTTP body before its signature is checked (the same
  per-sender and total bounds, in the same `Admission`, under the surface name "grpc");
- the stream's bytes are given back when its request ends (END_STREAM from the client: grpcio
  now holds a whole message and hands it to the service, which checks the key first), when
  either side resets the stream, when the server ends the call, or when the connection closes;
- past the sender's share, or with a stream whose upload has not moved for the read timeout
  (`stalled`, closed by the backend's sweep), the connection is closed.

The HTTP/2 connection preface (24 bytes) opens the client's side; frame headers are the same in
both directions (RFC 9113, section 4.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from okuri.engine import Holding
from okuri.errors import Overloaded

PREFACE_BYTES = 24
FRAME_HEADER_BYTES = 9
DATA, HEADERS, RST_STREAM = 0x0, 0x1, 0x3
END_STREAM = 0x1


class FrameHeaders:
    """Frame headers of one direction of an HTTP/2 connection, read incrementally from chunks
    that may split a header anywhere; payloads are skipped, not kept."""

    __slots__ = ("_head", "_skip")

    def __init__(self, skip: int = 0) -> None:
        self._skip = skip  # payload bytes (or the preface) still to pass over
        self._head = b""

    def feed(self, data: bytes) -> Iterator[tuple[int, int, int, int]]:
        """(type, flags, stream id, payload length) of each frame header completed in `data`."""
        at, end = 0, len(data)
        while at < end:
            if self._skip:
                step = min(self._skip, end - at)
                self._skip -= step
                at += step
                continue
            need = FRAME_HEADER_BYTES - len(self._head)
            self._head += data[at : at + need]
            at += need
            if len(self._head) < FRAME_HEADER_BYTES:
                return
            head, self._head = self._head, b""
            length = int.from_bytes(head[0:3], "big")
            stream = int.from_bytes(head[5:9], "big") & 0x7FFF_FFFF
            self._skip = length
            yield head[3], head[4], stream, length


class StreamLedger:
    """One gRPC connection's unfinished request bytes, by stream, charged through `hold`."""

    __slots__ = ("_client", "_clock", "_close", "_held", "_hold", "_moved_s", "_server")

    def __init__(
        self,
        hold: Callable[[], Holding],
        close: Callable[[], None],
        clock: Callable[[], float],
    ) -> None:
        """`hold` gives a new holding against the sender; `close` closes the connection;
        `clock` is the event loop's time."""
        self._hold = hold
        self._close = close
        self._clock = clock
        self._held: dict[int, Holding] = {}
        self._moved_s: dict[int, float] = {}
        self._client = FrameHeaders(skip=PREFACE_BYTES)
        self._server = FrameHeaders()

    def from_client(self, data: bytes) -> None:
        for kind, flags, stream, length in self._client.feed(data):
            if kind == DATA and length:
                holding = self._held.get(stream)
                if holding is None:
                    holding = self._held[stream] = self._hold()
                try:
                    holding.charge(length)
                except Overloaded:
                    self.abort()
                    return
                self._moved_s[stream] = self._clock()
            if (kind in (DATA, HEADERS) and flags & END_STREAM) or kind == RST_STREAM:
                self._release(stream)

    def from_server(self, data: bytes) -> None:
        for kind, flags, stream, _ in self._server.feed(data):
            if (kind == HEADERS and flags & END_STREAM) or kind == RST_STREAM:
                self._release(stream)

    def stalled(self, oldest_s: float) -> bool:
        """Whether an upload holding bytes has not moved since `oldest_s`."""
        return any(moved <= oldest_s for moved in self._moved_s.values())

    def release_all(self) -> None:
        for stream in list(self._held):
            self._release(stream)

    def abort(self) -> None:
        """Give every stream's bytes back and close the connection."""
        self.release_all()
        self._close()

    def _release(self, stream: int) -> None:
        holding = self._held.pop(stream, None)
        if holding is not None:
            holding.release()
        self._moved_s.pop(stream, None)
