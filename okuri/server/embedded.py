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
  127.0.0.1 ports the system picks, with fresh keys, on a directory or in memory. For tests of
  programs that talk to okuri over HTTP (the native client, boto3) without starting a process;
  `Served.reset()` deletes every queue and exchange between tests through the engines
  themselves (okuri.testing's pytest plugin resets that way), which no HTTP request can match
  for speed.

Documented in docs/embedding.md, whose examples tests/surface/test_embedding_docs.py runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import tempfile
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType

from okuri import limits
from okuri.clock import SystemClock, new_access_key_id, new_secret
from okuri.engine import Engine
from okuri.errors import ExchangeDoesNotExist, QueueDoesNotExist
from okuri.server.app import Server
from okuri.server.settings import Settings
from okuri.store.directory import open_local
from okuri.store.memory import MemoryStore
from okuri.store.port import ObjectStore

embedded_start_s_max = limits.startup_check_s + 30.0  # start-up check, then the listeners
embedded_stop_s_max = limits.shutdown_grace_s + limits.flush_timeout_s + 5.0
embedded_reset_s_max = 60.0  # every queue of a test's leftovers, deleted one request each
wipe_pages_max = 100  # pages of names a reset deletes, per engine and kind: 100,000 queues


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
            self._store = await asyncio.to_thread(open_local, self.data_dir)
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
    data_dir: str | None  # None: in memory
    _reset: Callable[[], None] | None = field(default=None, repr=False, compare=False)

    def reset(self) -> None:
        """Delete every queue and exchange, of every region, as if the server had just
        started: between tests. Not while requests are in flight: one racing the reset may
        leave its queue behind or fail."""
        if self._reset is None:
            raise RuntimeError("this server cannot be reset")
        self._reset()


@contextlib.contextmanager
def serve_in_thread(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    memory: bool = False,
    admin_key: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Iterator[Served]:
    """Run `okuri serve` on a thread of its own until the block ends, on 127.0.0.1 ports the
    system picks, storing in `data_dir` (None: a temporary directory removed afterwards), or
    with `memory=True` in memory (no directory, no fsync: the fastest for tests; gone when the
    block ends).

    `admin_key` is the native API's admin key (None: a fresh random one), and SQS gets a fresh
    key pair; both are in the `Served` the block receives. `environ` gives further settings as
    the OKURI_* variables `okuri serve` reads (e.g. OKURI_API_KEYS_FILE, OKURI_LINGER_MS; the
    process's own environment is not read). A server that cannot start raises here (its
    StartupError, or SettingsError for a setting it refuses)."""
    if memory and data_dir is not None:
        raise ValueError("serve_in_thread: give data_dir or memory=True, not both")
    with contextlib.ExitStack() as stack:
        if data_dir is None and not memory:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="okuri-"))
        key_id, secret = new_access_key_id("OKEM", 16), new_secret(30)
        settings = Settings.load(
            {
                "OKURI_LOG_LEVEL": "warning",
                **(environ or {}),
                "OKURI_LISTEN": "127.0.0.1:0",
                "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
                **({} if data_dir is None else {"OKURI_DATA_DIR": os.fspath(data_dir)}),
                "OKURI_ADMIN_KEY": admin_key or new_secret(),
                "OKURI_ACCESS_KEY_ID": key_id,
                "OKURI_SECRET_ACCESS_KEY": secret,
            }
        )
        runner = _ServerThread(settings, MemoryStore() if memory else None)
        urls, health_urls = runner.start()
        try:
            yield Served(
                url=urls[0],
                health_url=health_urls[0],
                admin_key=settings.admin_key or "",
                access_key_id=key_id,
                secret_access_key=secret,
                region=settings.region,
                data_dir=None if memory else os.path.abspath(settings.data_dir),
                _reset=runner.reset,
            )
        finally:
            runner.stop()


class _ServerThread:
    """One `Server` on its own thread and event loop, started and stopped from another."""

    def __init__(self, settings: Settings, store: ObjectStore | None = None) -> None:
        self.settings = settings
        self._store = store
        self._server: Server | None = None
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

    def reset(self) -> None:
        """Delete every queue and exchange through the engines, on the server's own loop."""
        loop, server = self._loop, self._server
        if loop is None or server is None or not self._thread.is_alive():
            raise RuntimeError("the embedded okuri server is not running")
        done = asyncio.run_coroutine_threadsafe(_wipe(server), loop)
        try:
            done.result(timeout=embedded_reset_s_max)
        except concurrent.futures.TimeoutError:
            done.cancel()
            raise TimeoutError(
                f"the embedded okuri server did not reset within {embedded_reset_s_max:g} s"
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
        server = self._server = Server(self.settings, store=self._store)
        try:
            await server.start()
            self._ready.set_result((server.urls, server.health_urls))
            await self._stop.wait()
        finally:
            await server.stop()


async def _wipe(server: Server) -> None:
    """Delete every exchange, then every queue, of every region's engine: what deleting them
    one by one through the API would do (each engine forgets its cached manifests and sweeps
    the segments), without a request per name."""
    page = limits.list_keys_max
    for engine in server.engines():
        for _ in range(wipe_pages_max):
            names = await engine.exchanges.names("", page, "")
            await asyncio.gather(*(_quietly(engine.exchanges.delete(n)) for n in names))
            if len(names) < page:
                break
        for _ in range(wipe_pages_max):
            names = await engine.list_queues(limit=page)
            await asyncio.gather(*(_quietly(engine.delete_queue(n)) for n in names))
            if len(names) < page:
                break


async def _quietly(deleting: Awaitable[None]) -> None:
    """A delete that found its object gone already (another client's delete raced it)."""
    with contextlib.suppress(ExchangeDoesNotExist, QueueDoesNotExist):
        await deleting
