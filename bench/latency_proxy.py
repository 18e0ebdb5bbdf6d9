"""A TCP proxy on 127.0.0.1 that holds each answer for a fixed time before passing it on: a
store's latency, put in front of moto's S3 for `python -m bench floor --store s3`.

Why: moto answers on loopback in about a millisecond, where S3 answers a write in tens of them.
A floor measured on a store that costs nothing would hide what okuri does to amortise real
writes (its linger), so the bench puts this proxy between okuri and moto, and times its own
store writes through the same proxy.

Why TCP: the proxy parses no request, so HTTP keep-alive and anything else work untouched.
Each chunk the server sends leaves `latency_s` after it arrived, in order, so an answer read as
a few chunks is delayed once, and each request pays the latency once, as S3's time to answer.
One exception, where the proxy peeks at HTTP: an interim `100 Continue` passes at once. botocore
and aiobotocore send every PUT with `Expect: 100-continue` (headers first, the body once the
server says so); delaying that too would charge every write twice, where S3 charges its
processing once and a network round trip near it costs a millisecond. What clients send is
passed on at once.

Bounds: CHUNK_BYTES per read, CHUNKS_MAX chunks waiting per connection (reading pauses while
they wait), CONNECTIONS_MAX connections at once (more are closed at once). Run it as a process
(`python -m bench.latency_proxy --port P --target HOST:PORT --latency-ms MS`, or
`latency_proxy()` here, which stops it by its pid), or in-process with `start()`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.daemon import helper, run_until_signalled
from bench.servers import LOOPBACK, Process

CHUNK_BYTES = 64 * 1024
CHUNKS_MAX = 256  # waiting per connection: 16 MiB at most in flight through one
CONNECTIONS_MAX = 1024
CONNECT_S = 5.0  # to the target
DRAIN_S = 30.0  # after the client's EOF, how long the server may take to answer and close
LATENCY_MS_MAX = 10_000
MODULE = "bench.latency_proxy"  # run as a process: `python -m` this
INTERIM = (b"HTTP/1.1 100 ", b"HTTP/1.0 100 ")  # what starts a 100 Continue


def is_interim(chunk: bytes) -> bool:
    """Whether `chunk` starts with an interim 100 Continue (not delayed: see above)."""
    return chunk.startswith(INTERIM)


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency_s: float
) -> None:
    """Copy `reader` to `writer`, each chunk `latency_s` after it was read (an interim 100
    Continue at once, behind what was read before it); EOF passed on."""
    loop = asyncio.get_running_loop()
    waiting: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(CHUNKS_MAX)

    async def forward() -> None:
        while True:
            due_s, chunk = await waiting.get()
            if not chunk:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            if (wait_s := due_s - loop.time()) > 0:
                await asyncio.sleep(wait_s)
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.ensure_future(forward())
    try:
        while True:
            chunk = await reader.read(CHUNK_BYTES)
            delay_s = 0.0 if is_interim(chunk) else latency_s
            put = asyncio.ensure_future(waiting.put((loop.time() + delay_s, chunk)))
            done, _ = await asyncio.wait({put, sender}, return_when=asyncio.FIRST_COMPLETED)
            if put not in done:  # the sender failed (the far side went away): stop reading
                put.cancel()
                break
            if not chunk:
                break
        await sender
    finally:
        sender.cancel()


@dataclass
class _Proxy:
    target_host: str
    target_port: int
    latency_s: float
    connections: int = 0

    async def serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self.connections >= CONNECTIONS_MAX:
            client_w.close()
            return
        self.connections += 1
        try:
            server_r, server_w = await asyncio.wait_for(
                asyncio.open_connection(self.target_host, self.target_port), CONNECT_S
            )
        except (OSError, TimeoutError):
            self.connections -= 1
            client_w.close()
            return
        up = asyncio.ensure_future(_pipe(client_r, server_w, 0.0))
        down = asyncio.ensure_future(_pipe(server_r, client_w, self.latency_s))
        try:
            # The server closing ends the connection. The client's EOF is passed on, and the
            # server may still answer and close in its turn; a reset of the client ends it.
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
            if not down.done() and up.exception() is None:
                await asyncio.wait({down}, timeout=DRAIN_S)
        finally:
            self.connections -= 1
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            for writer in (server_w, client_w):
                writer.close()


async def start(
    target_host: str, target_port: int, latency_s: float, port: int = 0
) -> asyncio.Server:
    """The proxy, listening on LOOPBACK:`port` (0: any free port), forwarding to the target."""
    proxy = _Proxy(target_host, target_port, latency_s)
    return await asyncio.start_server(proxy.serve, LOOPBACK, port)


# --- as a process ------------------------------------------------------------------------------


@dataclass
class LatencyProxy:
    endpoint: str
    latency_ms: float
    process: Process


def _target(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host, int(port)


@contextlib.contextmanager
def latency_proxy(
    workdir: Path, target: str, latency_ms: float, probe_path: str = "/"
) -> Iterator[LatencyProxy]:
    """The proxy as a process on a free loopback port in front of `target` (an http://
    endpoint), ready once `probe_path` answers 200 through it; stopped by its pid."""
    host_port = target.removeprefix("http://").rstrip("/")
    args = ["--target", host_port, "--latency-ms", f"{latency_ms:g}"]
    with helper(workdir, "latency-proxy", MODULE, args, probe_path) as (endpoint, process):
        yield LatencyProxy(endpoint, latency_ms, process)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="a TCP proxy that delays what servers answer")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--target", type=_target, required=True, help="HOST:PORT to forward to")
    p.add_argument("--latency-ms", type=float, required=True)
    args = p.parse_args(argv)
    if not 0 <= args.latency_ms <= LATENCY_MS_MAX:
        p.error(f"--latency-ms must be from 0 to {LATENCY_MS_MAX}")
    host, port = args.target

    async def begin() -> Callable[[], Awaitable[None]]:
        server = await start(host, port, args.latency_ms / 1000, args.port)

        async def close() -> None:
            server.close()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), CONNECT_S)

        return close

    run_until_signalled(begin)


if __name__ == "__main__":
    main()
