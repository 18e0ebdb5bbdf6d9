"""A recording reverse proxy: forwards each request to okuri unchanged and logs the exchange.

It listens on 127.0.0.1 and sends every request on to one upstream okuri with the same method,
raw path and query, headers (the Host header included, so the SigV4 signature still verifies
and okuri's queue URLs point back at the proxy) and body. The upstream answer goes back to the
client as received, and both are kept in `exchanges` in the order the requests arrived, each
request under the absolute URI the client addressed (`http://` + its Host header + the raw
path), as vcrpy records it: compat.record saves them as a vcrpy cassette. It records the
programs vcrpy cannot reach from inside (the JS, Go and PHP SDKs).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType

import aiohttp
from aiohttp import web
from yarl import URL

from compat.cassette import Exchange, Request, Response

# Not forwarded: hop-by-hop headers belong to one connection, and aiohttp frames the body itself.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
        "expect",
    }
)
UPSTREAM_TIMEOUT_S = 60.0  # longer than the longest long poll (20 s)
BODY_BYTES_MAX = 16 * 1024 * 1024


def _headers(raw: Mapping[str, str]) -> dict[str, str]:
    """Headers as one dict in arrival order, names as sent; repeated headers joined by commas."""
    out: dict[str, str] = {}
    lower: dict[str, str] = {}
    for raw_name, value in raw.items():  # a multidict's items() holds every repeat
        name = str(raw_name)  # aiohttp's names are istr, which YAML would store as an object
        key = lower.setdefault(name.lower(), name)
        out[key] = f"{out[key]},{value}" if key in out else str(value)
    return out


class RecordingProxy:
    """`async with RecordingProxy(upstream) as proxy:` then point clients at `proxy.url`."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self._slots: list[Exchange | None] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    @property
    def exchanges(self) -> list[Exchange]:
        """The finished exchanges, in the order their requests arrived."""
        return [e for e in self._slots if e is not None]

    async def __aenter__(self) -> RecordingProxy:
        self._session = aiohttp.ClientSession(
            auto_decompress=False,
            timeout=aiohttp.ClientTimeout(total=UPSTREAM_TIMEOUT_S),
        )
        app = web.Application(client_max_size=BODY_BYTES_MAX)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        slot = len(self._slots)
        self._slots.append(None)
        body = await request.read()
        raw_path = request.raw_path
        headers = _headers(request.headers)
        host = request.headers.get("Host") or self.url.removeprefix("http://")
        sent = Request(request.method, f"http://{host}{raw_path}", headers, body)
        upstream_headers = {k: v for k, v in sent.headers.items() if k.lower() not in HOP_BY_HOP}
        async with self._session.request(
            request.method,
            URL(self.upstream + raw_path, encoded=True),
            headers=upstream_headers,
            data=body,
            skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
            allow_redirects=False,
        ) as upstream:
            answer = Response(
                upstream.status,
                _headers(upstream.headers),
                await upstream.read(),
                upstream.reason or "",
            )
        self._slots[slot] = Exchange(sent, answer)
        return web.Response(
            status=answer.status,
            body=answer.body,
            headers={k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP},
        )
