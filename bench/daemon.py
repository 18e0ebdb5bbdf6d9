"""How a bench helper process runs: one asyncio service on uvloop (when installed), until SIGTERM.

Why a module: `python -m bench floor` starts two small servers of its own as processes (the
hello-world server of bench/floor_hello.py and the store latency proxy of
bench/latency_proxy.py). Each runs on the same event loop `okuri serve` runs on, so that
what they cost is comparable to what okuri costs, and each stops cleanly when the bench
stops it by its pid (SIGTERM; SIGINT too, for a person at a terminal). `helper()` starts one
the way bench/servers.py starts moto: a free loopback port (tried again when taken before
the helper bound it), a bounded wait until it answers, a stop by pid on the way out.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

from bench.servers import (
    BIND_ATTEMPTS,
    LOOPBACK,
    START_S,
    BenchError,
    Process,
    clean_environ,
    free_port,
    spawn,
    tail,
)

# Starts the service; what it answers closes it again.
Start = Callable[[], Awaitable[Callable[[], Awaitable[None]]]]


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop, as `okuri serve` runs on, when it is installed; else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def _until_signalled(start: Start) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    close = await start()
    try:
        await stop.wait()
    finally:
        await close()


def run_until_signalled(start: Start) -> None:
    """Start the service and serve until SIGTERM or SIGINT, then close it."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(_until_signalled(start))


@contextlib.contextmanager
def helper(
    workdir: Path, name: str, module: str, args: list[str], probe_path: str
) -> Iterator[tuple[str, Process]]:
    """`python -m module --port P *args` on a free loopback port, ready once `probe_path`
    answers 200: (its http:// endpoint, its process), stopped by its pid on the way out."""
    log_path = workdir / f"{name}.log"
    for _ in range(BIND_ATTEMPTS):
        port = free_port()
        argv = [sys.executable, "-m", module, "--port", str(port), *args]
        process = spawn(argv, clean_environ(), log_path)
        endpoint = f"http://{LOOPBACK}:{port}"
        if process.wait_ready(endpoint + probe_path):
            break
        process.stop()
    else:
        raise BenchError(f"{name} was not ready within {START_S:g} s:\n{tail(log_path)}")
    try:
        yield endpoint, process
    finally:
        process.stop()
