"""A request body's way in: read under deadlines, its bytes charged as they arrive.

A client that has not yet proved who it is must not be able to hold what other clients need.
Charging what a request *declares* (Content-Length) before it is authenticated let 64 idle
connections, each declaring 4 MiB and sending nothing, fill a node's in-flight bytes and turn
every other request away. So a body is charged for the bytes that have actually arrived, as
they arrive, and while its request is unverified (SigV4 signs the body, so the body must be
read before the signature can be checked) they are charged to its sender: at most
`address_bytes_max` for one address (an IPv6 sender counts by its /64, which one host
usually holds whole) and `unverified_bytes_max` for all together (okuri.engine.admission). A
sender past its share is refused with its surface's throttle answer, and others are not.

Every read has two deadlines: a body that pauses for `pause_s`, or is not whole after
`total_s`, ends with `BodyUnread("timed_out")`, so a connection that declares a body and
dribbles it holds its bytes for moments, not for ever. A client that goes away half-way is
`BodyUnread("incomplete")`: its own doing, answered (to nobody) without a server error.

The read takes a `read_chunk` callable (aiohttp's `StreamReader.readany`: b"" at the end)
rather than a request, so this stays free of HTTP and every surface shares it, each through a
`BodyReader` holding its clock and deadlines.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Protocol

from okuri import limits
from okuri.clock import Clock
from okuri.engine.admission import Holding
from okuri.errors import BodyUnread

ReadChunk = Callable[[], Awaitable[bytes]]


class Stream(Protocol):
    """A body as it arrives: aiohttp's `StreamReader` is one."""

    total_bytes: int  # received so far

    async def readany(self) -> bytes: ...


@functools.lru_cache(maxsize=4096)  # asked once a request; a node's clients are few and repeat
def sender_of(address: str | None) -> str:
    """The key one sender's bytes are counted under: the IPv4 address, or the /64 an IPv6
    address lies in ("" when the transport names none, as a Unix socket does)."""
    if not address:
        return ""
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address[:64]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


async def read_body(
    read_chunk: ReadChunk,
    declared: int | None,
    bytes_max: int,
    clock: Clock,
    pause_s: float,
    total_s: float,
    holding: Holding | None = None,
    arrived: Callable[[], int] | None = None,
) -> bytes:
    """The whole body, at most `bytes_max` bytes, each chunk charged to `holding` (when the
    request is not yet verified) as it arrives. Raises BodyUnread ("too_large", "timed_out",
    "incomplete"), or Overloaded when the sender's share of unverified bytes is full.
    `arrived` tells how many of the body's bytes the connection has received so far: once all
    that were `declared` are there, no read can wait, and none pays for a deadline (about 6 µs
    a read, twice a request: most bodies arrive with their headers)."""
    if declared is not None and declared > bytes_max:
        raise BodyUnread(f"The request body is larger than {bytes_max} bytes.", "too_large")
    chunks: list[bytes] = []
    size = 0
    started_s = clock.monotonic_s()
    while True:
        left_s = total_s - (clock.monotonic_s() - started_s)
        if left_s <= 0:
            raise BodyUnread(f"The request body did not arrive within {total_s:g} s.", "timed_out")
        try:
            if declared is not None and arrived is not None and arrived() >= declared:
                chunk = await read_chunk()  # buffered already, or the end
            else:
                async with clock.timeout(min(pause_s, left_s)):
                    chunk = await read_chunk()
        except TimeoutError:
            raise BodyUnread(
                f"The request body stopped arriving (no bytes for {min(pause_s, left_s):g} s, "
                f"or not whole within {total_s:g} s).",
                "timed_out",
            ) from None
        except Exception as err:  # the transport's own: the client went away or broke framing
            raise BodyUnread("The request body did not arrive whole.", "incomplete") from err
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > bytes_max:
            raise BodyUnread(f"The request body is larger than {bytes_max} bytes.", "too_large")
        if holding is not None:
            holding.charge(len(chunk))
        chunks.append(chunk)


class BodyReader:
    """`read_body` with one surface's clock and deadlines."""

    __slots__ = ("clock", "pause_s", "total_s")

    def __init__(self, clock: Clock, pause_s: float, total_s: float = limits.body_s_max) -> None:
        self.clock = clock
        self.pause_s = pause_s
        self.total_s = total_s

    async def read(
        self,
        stream: Stream,
        declared: int | None,
        bytes_max: int = limits.request_bytes_max,
        holding: Holding | None = None,
    ) -> bytes:
        """`stream`'s whole body (`declared`: its Content-Length, None for none)."""
        return await read_body(
            stream.readany,
            declared,
            bytes_max,
            self.clock,
            self.pause_s,
            self.total_s,
            holding,
            lambda: stream.total_bytes,
        )
