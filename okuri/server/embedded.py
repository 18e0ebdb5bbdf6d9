"""okuri inside another program: an engine in this process, and a whole server on loopback.

Two ways, both picking the concrete adapters a server would, which is why they live in the
composition root (the public name is `okuri.embedded`):

- `Embedded`: an async context manager giving an `okuri.engine.Engine` on a local directory
  (durable: another process, or a server, started on the same directory later sees the same
  queues) or in memory (gone when the block ends), with the real clock. Leaving the block
  flushes every pending send and commit and closes the store. For single-process programs and
  tests that want queues without a network.
- `serve_in_thread`: a context manager running a complete `okuri serve` (SQS, the native API
  under /v1/, health and metrics) on a background thread with its own event loop, on
  127.0.0.1 ports the system picks, with fresh keys. For tests of programs that talk to okuri
  over HTTP (the native client, boto3) without starting a process.

Documented in docs/embedding.md, whose examples tests/surface/test_embedding_docs.py runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType

from okuri import limits
from okuri.clock import SystemClock, new_access_key_id, new_secret
from okuri.engine import Engine
from okuri.server.app import Server
from okuri.server.settings import Settings
from okuri.store.local import LocalStore
from okuri.store.memory import MemoryStore
from okuri.store.port import ObjectStore

embedded_start_s_max = limits.startup_check_s + 30.0  # start-up check, then the listeners
embedded_stop_s_max = limits.shutdown_grace_s + limits.flush_timeout_s + 5.0


class Embedded:
    """An okuri engine in this process: `async with Embedded("./okuri-data") as engine:`
    (`Embedded()` keeps the queues in memory). The engine is the one every okuri surface runs
    on; its methods are documented in docs/embedding.md."""

    def __init__(
        self, data_dir: str | os.PathLike[str] | None = None, *, linger_ms: int | None = None
    ) -> None:
        """`data_dir`: the local directory the queues live in (created if missing), or None
        for memory. `linger_ms`: how long sends and commits wait to share one write (default
        0, as for a server on a local directory: a write there costs nothing)."""
        self.data_dir = None if data_dir is None else os.path.abspath(os.fspath(data_dir))
        self.linger_ms = limits.linger_ms_local_default if linger_ms is None else linger_ms
        self._store: ObjectStore | None = None
        self._engine: Engine | None = None

    @property
    def engine(self) -> Engine:
        """The engine, inside the `async with` block."""
        if self._engine is None:
            raise RuntimeError("the embedded engine runs only inside its `async with` block")
        return self._engine

    async def __aenter__(self) -> Engine:
        if self._engine is not None:
            raise RuntimeError("this Embedded is open already")
        if self.data_dir is None:
            self._store = MemoryStore()
        else:
            await asyncio.to_thread(os.makedirs, self.data_dir, exist_ok=True)
            self._store = LocalStore(self.data_dir)
        self._engine = Engine(self._store, SystemClock(), linger_ms=self.linger_ms)
        return self._engine

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        engine, store = self._engine, self._store
        self._engine = self._store = None
        try:
            if engine is not None:
                engine.stop_waiting()
                await engine.close()  # flushes pending sends and commits
        finally:
            if store is not None:
                await store.close()


@dataclass(frozen=True, slots=True)
class Served:
    """Where a server started by `serve_in_thread` answers, and its keys."""

    url: str  # SQS, and the native API under /v1/
    health_url: str  # /healthz, /readyz, /metrics
    admin_key: str = field(repr=False)  # a native API bearer key, an admin of every queue
    access_key_id: str  # an SQS key pair, an admin of every queue
    secret_access_key: str = field(repr=False)
    region: str
    data_dir: str


@contextlib.contextmanager
def serve_in_thread(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    admin_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Iterator[Served]:
    """Run `okuri serve` on a thread of its own until the block ends, on 127.0.0.1 ports the
    system picks, storing in `data_dir` (None: a temporary directory removed afterwards).

    `admin_key` is the native API's admin key (None: a fresh random one), and SQS gets a fresh
    key pair; both are in the `Served` the block receives. `environ` gives further settings as
    the OKURI_* variables `okuri serve` reads (e.g. OKURI_API_KEYS_FILE, OKURI_LINGER_MS; the
    process's own environment is not read). A server that cannot start raises here (its
    StartupError, or SettingsError for a setting it refuses)."""
    with contextlib.ExitStack() as stack:
        if data_dir is None:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="okuri-"))
        key_id, secret = new_access_key_id("OKEM", 16), new_secret(30)
        settings = Settings.load(
            {
                "OKURI_LOG_LEVEL": "warning",
                **(environ or {}),
                "OKURI_LISTEN": "127.0.0.1:0",
                "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
                "OKURI_DATA_DIR": os.fspath(data_dir),
                "OKURI_ADMIN_KEY": admin_key or new_secret(),
                "OKURI_ACCESS_KEY_ID": key_id,
                "OKURI_SECRET_ACCESS_KEY": secret,
            }
        )
        runner = _ServerThread(settings)
        urls, health_urls = runner.start()
        try:
            yield Served(
                url=urls[0],
                health_url=health_urls[0],
                admin_key=settings.admin_key or "",
                access_key_id=key_id,
                secret_access_key=secret,
                region=settings.region,
                data_dir=os.path.abspath(settings.data_dir),
            )
        finally:
            runner.stop()


class _ServerThread:
    """One `Server` on its own thread and event loop, started and stopped from another."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._ready: concurrent.futures.Future[tuple[list[str], list[str]]] = (
            concurrent.futures.Future()
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._failed: BaseException | None = None  # after it served: raised by `stop`
        self._thread = threading.Thread(target=self._main, name="okuri-server", daemon=True)

    def start(self) -> tuple[list[str], list[str]]:
        """The main and health listeners' URLs once the server serves."""
        self._thread.start()
        try:
            return self._ready.result(timeout=embedded_start_s_max)
        except concurrent.futures.TimeoutError:
            self.stop()
            raise TimeoutError(
                f"the embedded okuri server did not start within {embedded_start_s_max:g} s"
            ) from None

    def stop(self) -> None:
        """Stop as `okuri serve` stops on SIGTERM (drain, flush) and wait for the thread."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has ended already
                loop.call_soon_threadsafe(stop.set)
        self._thread.join(timeout=embedded_stop_s_max)
        if self._thread.is_alive():
            raise TimeoutError(
                f"the embedded okuri server did not stop within {embedded_stop_s_max:g} s"
            )
        if self._failed is not None:
            raise self._failed

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as err:  # handed to the thread that started or stops it
            if self._ready.done():
                self._failed = err
            else:
                self._ready.set_exception(err)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        server = Server(self.settings)
        try:
            await server.start()
            self._ready.set_result((server.urls, server.health_urls))
            await self._stop.wait()
        finally:
            await server.stop()
