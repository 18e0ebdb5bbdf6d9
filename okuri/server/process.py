"""The okuri process: serve until SIGTERM or SIGINT, reload keys and TLS files on SIGHUP.

`serve` owns the order a stop follows whatever moment it comes in (a stop during start-up
abandons the start cleanly); `run` is the process's entry point and its exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from okuri.clock import Clock, SystemClock
from okuri.server import logs
from okuri.server.app import Server
from okuri.server.settings import Settings
from okuri.server.startup import StartupError

log = logging.getLogger("okuri.server")


async def _reload_on(hangup: asyncio.Event, server: Server) -> None:
    while True:
        await hangup.wait()
        hangup.clear()
        server.reload_keys()
        if server.tls is not None:
            server.tls.reload()


async def serve(
    settings: Settings,
    stop: asyncio.Event,
    clock: Clock | None = None,
    hangup: asyncio.Event | None = None,
    node_id: str | None = None,
) -> int:
    """Run a server until `stop` is set; a stop during start-up abandons the start cleanly.
    Each time `hangup` is set (SIGHUP), the native API's keys file and the TLS files are read
    again."""
    server = Server(settings, clock, node_id=node_id)
    starting = asyncio.ensure_future(server.start())
    stopping = asyncio.ensure_future(stop.wait())
    reloading = asyncio.ensure_future(_reload_on(hangup or asyncio.Event(), server))
    try:
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            log.info("stop requested during start-up")
            starting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await starting  # re-raises StartupError
        await stopping
        log.info("stopping: draining requests and flushing pending sends")
    finally:
        stopping.cancel()
        reloading.cancel()
        flushed = await server.stop()
    log.info("stopped" if flushed else "stopped with unflushed sends")
    return 0 if flushed else 1


async def _serve_until_signalled(settings: Settings, node_id: str) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = (signal.SIGTERM, signal.SIGINT)

    def on_signal(signum: int) -> None:
        log.info("received %s", signal.Signals(signum).name)
        stop.set()
        for sig in signals:  # a second signal gets Python's default: an immediate exit
            loop.remove_signal_handler(sig)

    log.debug("event loop: %s.%s", type(loop).__module__, type(loop).__name__)
    for sig in signals:
        loop.add_signal_handler(sig, on_signal, sig)
    hangup = asyncio.Event()
    loop.add_signal_handler(signal.SIGHUP, hangup.set)
    try:
        return await serve(settings, stop, hangup=hangup, node_id=node_id)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        loop.remove_signal_handler(signal.SIGHUP)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def _run(main: Coroutine[Any, Any, int]) -> int:
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)


def run(settings: Settings) -> int:
    """Serve until signalled; the process exit code."""
    node_id = SystemClock().new_id()[:8]
    logs.configure(settings.log_level, settings.log_format, node_id)
    try:
        return _run(_serve_until_signalled(settings, node_id))
    except StartupError as err:
        print(f"okuri: error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("okuri: interrupted", file=sys.stderr)
        return 130
