"""The server's lifecycle in-process: readiness through each phase, the start-up probe's verdicts,
shutdown order and exit codes. The subprocess tests in test_serve.py cover the same paths as an
operator sees them; these reach the branches a real bucket will not produce on demand.
"""

from __future__ import annotations

import asyncio
import dataclasses
import socket
from pathlib import Path

import aiohttp
import pytest

from okuri import limits
from okuri.clock import SystemClock
from okuri.engine import Engine
from okuri.errors import Transient, Unavailable
from okuri.server import app as app_module
from okuri.server.app import Server
from okuri.server.health import Health, render_metrics
from okuri.server.process import serve
from okuri.server.settings import Settings
from okuri.server.startup import StartupError, open_store, verify_store
from okuri.store.counting import RequestCounts
from okuri.store.directory import layout_of
from okuri.store.memory import MemoryStore


def local_settings(tmp_path: Path, **overrides: str) -> Settings:
    env = {
        "OKURI_LISTEN": "127.0.0.1:0",
        "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
        "OKURI_DATA_DIR": str(tmp_path / "data"),
        **overrides,
    }
    return Settings.load(env)


class OverwritingStore(MemoryStore):
    """A bucket that accepts If-None-Match and overwrites anyway, as some stores once did."""

    async def put_if_absent(self, key: str, data: bytes) -> str:
        return self._store(key, data)


class FlakyStore(MemoryStore):
    """Every request fails as transient until `failures` have been served."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.lists = 0

    async def put_if_absent(self, key: str, data: bytes) -> str:
        if self.failures > 0:
            self.failures -= 1
            raise Transient("connection refused")
        return await super().put_if_absent(key, data)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        self.lists += 1
        if self.failures > 0:
            raise Transient("503 SlowDown")
        return await super().list(prefix, start_after, limit)


class HangingStore(MemoryStore):
    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        await asyncio.Event().wait()
        return []


async def fetch(session: aiohttp.ClientSession, method: str, url: str) -> tuple[int, str]:
    async with session.request(method, url) as response:
        return response.status, await response.text()


async def test_readiness_follows_the_server_from_starting_to_serving_to_stopping(
    tmp_path: Path,
) -> None:
    server = Server(local_settings(tmp_path))
    assert await server.health.readiness() == (False, "starting: checking the object store")
    await server.start()
    try:
        (health,) = server.health_urls
        (main,) = server.urls
        async with aiohttp.ClientSession() as session:
            assert await fetch(session, "GET", health + "/healthz") == (200, "ok\n")
            assert await fetch(session, "GET", health + "/readyz") == (200, "ready\n")
            status, text = await fetch(session, "GET", health + "/metrics")
            assert status == 200 and 'okuri_store_requests_total{class="list"} 1' in text
            assert "\nokuri_ready 1\n" in text  # the readiness just answered, reused
            status, text = await fetch(session, "DELETE", main + "/anything")
            assert status == 403 and "MissingAuthenticationToken" in text
            assert (await fetch(session, "HEAD", main + "/"))[0] == 200
    finally:
        assert await server.stop() is True
    assert await server.health.readiness() == (False, "shutting down")
    assert layout_of(str(tmp_path / "data")) == "journal"  # the start-up probe wrote there


async def test_readiness_reports_a_failing_store_and_reuses_answers_for_a_second() -> None:
    store = FlakyStore(failures=1_000)
    health = Health(RequestCounts(), SystemClock())
    health.serving(Engine(store, SystemClock()).probe_store, {})
    ready, reason = await health.readiness()
    assert not ready and reason == "object store: 503 SlowDown"
    assert await health.readiness() == (False, reason)
    assert store.lists == 1  # the second probe within a second cost no request


async def test_readiness_gives_up_on_a_store_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limits, "ready_timeout_s", 0.05)
    health = Health(RequestCounts(), SystemClock())
    health.serving(Engine(HangingStore(), SystemClock()).probe_store, {})
    assert await health.readiness() == (False, "object store did not answer within 0.05 s")


def test_metrics_escape_label_values_and_list_engine_events() -> None:
    text = render_metrics({"put": 3}, {'odd"event\\': 2})
    assert 'okuri_store_requests_total{class="put"} 3\n' in text
    assert 'okuri_engine_events_total{event="odd\\"event\\\\"} 2\n' in text
    assert text.endswith("\n")
    assert "\nokuri_ready 0\n" in text  # not ready unless told
    assert "\nokuri_ready 1\n" in render_metrics({}, {}, ready=True)


async def test_a_store_that_ignores_conditional_writes_is_refused() -> None:
    with pytest.raises(StartupError, match="refusing to start: the object store ignored If-None"):
        await verify_store(OverwritingStore(), SystemClock())


async def test_the_start_up_probe_waits_out_a_store_that_is_still_coming_up() -> None:
    store = FlakyStore(failures=3)
    await verify_store(store, SystemClock(), budget_s=5.0)
    assert store.failures == 0


async def test_the_start_up_probe_gives_up_after_its_budget() -> None:
    with pytest.raises(StartupError, match=r"within 0.2 s: connection refused"):
        await verify_store(FlakyStore(failures=1_000), SystemClock(), budget_s=0.2)


async def test_a_taken_port_is_a_one_line_startup_error(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = Server(local_settings(tmp_path, OKURI_LISTEN=f"127.0.0.1:{port}"))
        with pytest.raises(StartupError, match=rf"cannot listen on 127.0.0.1:{port} \(SQS\)"):
            await server.start()
        assert await server.stop() is True


async def test_serve_runs_until_stopped_and_returns_0(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        health_port = probe.getsockname()[1]
    settings = local_settings(tmp_path, OKURI_HEALTH_LISTEN=f"127.0.0.1:{health_port}")
    stop = asyncio.Event()
    task = asyncio.create_task(serve(settings, stop))
    readyz = f"http://127.0.0.1:{health_port}/readyz"
    async with aiohttp.ClientSession() as session:
        for _ in range(500):  # bounded: 5 s
            assert not task.done()
            try:
                if (await fetch(session, "GET", readyz))[0] == 200:
                    break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.01)
        else:
            pytest.fail("the server never became ready")
    stop.set()
    assert await asyncio.wait_for(task, 10) == 0


async def test_a_stop_during_start_up_abandons_the_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probing = asyncio.Event()

    async def endless_probe(*args: object, **kwargs: object) -> None:
        probing.set()
        await asyncio.Event().wait()

    monkeypatch.setattr(app_module, "verify_store", endless_probe)
    stop = asyncio.Event()
    task = asyncio.create_task(serve(local_settings(tmp_path), stop))
    await asyncio.wait_for(probing.wait(), 10)
    stop.set()
    assert await asyncio.wait_for(task, 10) == 0


async def test_sends_that_cannot_be_flushed_make_the_exit_code_1(tmp_path: Path) -> None:
    server = Server(local_settings(tmp_path))
    await server.start()
    assert server.engine is not None

    async def failing_close() -> None:
        raise Unavailable("object store unavailable")

    server.engine.close = failing_close  # type: ignore[method-assign]
    assert await server.stop() is False


async def test_s3_settings_build_an_s3_store_without_touching_the_network() -> None:
    settings = dataclasses.replace(
        Settings.load({}), s3_bucket="b", s3_endpoint="http://127.0.0.1:1", s3_prefix="p"
    )
    store = await open_store(settings)
    try:
        assert type(store).__name__ == "S3Store"
    finally:
        await store.close()
