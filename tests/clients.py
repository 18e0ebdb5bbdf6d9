"""okuri.client's two clients behind one blocking face, so each client test is written once and
runs against `Client` and `AsyncClient` alike (`open_client("sync" | "async", ...)`), and over
either wire: a kind ending in "+grpc" speaks gRPC to the same server (its http:// URL becomes
grpc://). `KINDS` are the two clients over HTTP, `CLIENTS` the four of them.

The async client runs on an event loop of its own, one coroutine per call; its waits between
tries go to `slept` (as the sync client's do) instead of sleeping, when a test asks.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from okuri.client import AsyncClient, Client

KINDS = ("sync", "async")
CLIENTS = (*KINDS, "sync+grpc", "async+grpc")


def over(wire: str, url: str) -> str:
    """The server's http:// URL as `wire` ("http" or "grpc") reaches it."""
    return url if wire == "http" else "grpc://" + url.removeprefix("http://")


class Blocking:
    """An AsyncClient driven method by method from blocking code."""

    def __init__(self, client: AsyncClient, loop: asyncio.AbstractEventLoop) -> None:
        self.client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.client, name)
        if name == "iter_queues":

            def pages(*args: Any, **kwargs: Any) -> Iterator[str]:
                async def every() -> list[str]:
                    return [n async for n in method(*args, **kwargs)]

                return iter(self._loop.run_until_complete(every()))

            return pages
        return lambda *args, **kwargs: self._loop.run_until_complete(method(*args, **kwargs))

    def close(self) -> None:
        try:
            self._loop.run_until_complete(self.client.aclose())
        finally:
            self._loop.close()

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_client(
    kind: str,
    url: str,
    key: str | None = None,
    *,
    mock: httpx.MockTransport | None = None,
    slept: list[float] | None = None,
    **options: Any,
) -> Any:
    """A `Client` (kind "sync") or a blocking face of an `AsyncClient` ("async") of `url`, over
    HTTP or, for "sync+grpc" and "async+grpc", gRPC; `mock` answers instead of a server;
    `slept` records the waits between tries (none taken)."""
    kind, _, wire = kind.partition("+")
    url = over(wire or "http", url)
    if kind == "sync":
        if mock is not None:
            options["http"] = httpx.Client(transport=mock)
        if slept is not None:
            options["sleep"] = slept.append
        return Client(url, key, **options)
    if mock is not None:
        options["http"] = httpx.AsyncClient(transport=mock)
    if slept is not None:
        record = slept

        async def sleep(seconds: float) -> None:
            record.append(seconds)

        options["sleep"] = sleep
    return Blocking(AsyncClient(url, key, **options), asyncio.new_event_loop())
