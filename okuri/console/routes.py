"""The console's routes on the main listener: its three static files and two JSON reads.

/console answers the page; /console/console.js and /console/console.css its script and style,
each with its content type and a Content-Security-Policy that allows only these files and
fetches to this origin (no inline script, no frames, no other origin). /console/api/history
(the get_queue role on the queue) and /console/api/keys (admin keys only) check the bearer key
as the native API does (the development key from this machine only) and answer its errors.
They are console routes, not native API operations: the history is one node's memory, not
the queue's, and would mislead a client of the API behind a load balancer; the key table is
the server's configuration, not a queue's.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from typing import Any

from aiohttp import web

from okuri.clock import Clock
from okuri.console.history import History
from okuri.native import bearer, codec
from okuri.native.access import Access
from okuri.native.errors import NativeError
from okuri.native.http import credentials
from okuri.principals.keys import KeyTable

PREFIX = "/console"
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STATIC = {
    "": ("index.html", "text/html"),
    "/": ("index.html", "text/html"),
    "/console.js": ("console.js", "text/javascript"),
    "/console.css": ("console.css", "text/css"),
}


def _read(name: str) -> bytes:
    return (files("okuri.console") / "static" / name).read_bytes()


class Console:
    """The console's handler; `keys` gives the current key table (it changes on SIGHUP)."""

    def __init__(self, keys: Callable[[], KeyTable] | None, history: History, clock: Clock) -> None:
        self.keys = keys
        self.history = history
        self.clock = clock
        self._files = {path: (_read(name), ctype) for path, (name, ctype) in _STATIC.items()}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("GET", PREFIX, self.handle)
        app.router.add_route("GET", PREFIX + "/{tail:.*}", self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        tail = request.path[len(PREFIX) :]
        found = self._files.get(tail)
        if found is not None:
            body, ctype = found
            return web.Response(body=body, content_type=ctype, charset="utf-8", headers=_HEADERS)
        try:
            doc = self._api(tail, request)
        except NativeError as err:
            return _json(err.status, err.body(), err.headers())
        if doc is None:
            raise web.HTTPNotFound(text="Not found")
        return _json(200, doc)

    def _api(self, tail: str, request: web.Request) -> dict[str, Any] | None:
        if tail not in ("/api/history", "/api/keys"):
            return None
        access = Access(bearer.principal(self.keys, *credentials(request)))
        if tail == "/api/keys":
            if access.principal.role != "admin":
                raise NativeError(403, "forbidden", "Only an admin key may list the keys.")
            return {"keys": [] if self.keys is None else self.keys().listed()}
        queue = request.query.get("queue", "")
        if not queue:
            raise NativeError(400, "missing_field", "Name the queue: ?queue=<name>.")
        access.require("get_queue", queue)
        return {
            "queue": queue,
            "samples": [s.to_json() for s in self.history.series(queue, self.clock.now_ms())],
        }


def _json(status: int, doc: dict[str, Any], headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        status=status,
        body=codec.dumps(doc),
        content_type="application/json",
        headers={**_HEADERS, **(headers or {})},
    )
