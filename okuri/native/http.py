"""The native HTTP/JSON listener under /v1/: routes, bearer authentication, error answers.

One request: find the route in okuri/native/routes.py's table (404, or 405 naming the allowed
methods), answer GET /v1/openapi.json (the API's description; no key needed), authenticate
the bearer key (401) before anything is read or held, admit the request within the node's
bounds (429), read the JSON body (bounded; 413 past the server's request bound, 408 when it
pauses for the read timeout: okuri.engine.intake), run the operation, which checks the key's
role and namespace (403). Every failure is `{"error": {"code", "message"}}`; nothing a client
sends can produce a traceback. Each request is counted by operation and outcome for /metrics
(okuri/native/stats.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from okuri import access_log, limits
from okuri.api.operations import SPECS, Operation
from okuri.clock import Clock
from okuri.digits import whole_number
from okuri.engine import BodyReader, Engine, Gate, Ticket
from okuri.errors import BodyUnread, OkuriError
from okuri.native import bearer, codec, openapi, routes
from okuri.native.access import Access
from okuri.native.errors import NativeError, from_okuri
from okuri.native.operations import Operations
from okuri.native.routes import Route
from okuri.native.stats import UNKNOWN, RequestStats
from okuri.principals.local import is_local

log = logging.getLogger("okuri.native")

PREFIX = "/v1/"
JSON = "application/json"


class NativeHttp:
    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        keys: bearer.Keys,
        gate: Gate | None = None,
        stats: RequestStats | None = None,
        read_timeout_s: float = limits.read_timeout_s_default,
    ) -> None:
        """`keys` gives the current key table (it changes on SIGHUP); None: no authentication
        (OKURI_AUTH=off), every request acting as an admin of every queue. `gate` admits each
        request, and each lease that may wait (None: no bounds); past the node's bounds the
        answer is 429 `overloaded` with Retry-After. `stats` counts each request's operation
        and outcome (a new one when absent; another transport of the API may share it)."""
        self.operations = Operations(engine, clock, gate)
        self.clock = clock
        self.keys = keys
        self.gate = gate
        self.bodies = BodyReader(clock, read_timeout_s)
        self.stats = stats or RequestStats()

    async def handle(self, request: web.Request) -> web.Response:
        """Answer `request` with its id in x-request-id; with the access log on, write its
        record. A client's own x-request-id is logged beside okuri's, never instead of it."""
        request_id = self.clock.new_id()
        entry = access_log.Entry(UNKNOWN)
        if not access_log.on():
            return await self._handle(request, request_id, entry)
        started_s = self.clock.monotonic_s()
        entry.client_request_id = access_log.client_request_id(
            request.headers.get(access_log.REQUEST_ID_HEADER)
        )
        response = await self._handle(request, request_id, entry)
        duration_ms = (self.clock.monotonic_s() - started_s) * 1000
        access_log.emit("native-http", request_id, entry, response.status, duration_ms)
        return response

    async def _handle(
        self, request: web.Request, request_id: str, entry: access_log.Entry
    ) -> web.Response:
        operation: str = UNKNOWN
        ticket: Ticket | None = None
        ids = {access_log.REQUEST_ID_HEADER: request_id}
        try:
            route, queue = _route(request)
            operation = entry.action = route
            if _NAMES_QUEUE.get(route, False):
                entry.queue = queue
            if route == "openapi":  # no key needed: it describes the API and holds no secret
                body = openapi.DOCUMENT
            else:
                access = Access(bearer.principal(self.keys, *credentials(request)))
                entry.key_id = access.principal.key_id
                if self.gate is not None:  # authenticated: only now may it hold anything
                    ticket = self.gate.enter("request", request.content_length)
                body = await self._run(route, queue, access, request, entry)
            self.stats.count(operation, "ok")
            return web.Response(status=200, body=codec.dumps(body), content_type=JSON, headers=ids)
        except Exception as exc:
            if isinstance(exc, NativeError):
                err = exc
            elif isinstance(exc, OkuriError):
                err = from_okuri(exc)
            else:
                log.exception(
                    "native request %s (%s %s) failed", request_id, request.method, request.path
                )
                err = NativeError(500, "internal", "The request could not be processed.")
            self.stats.count(operation, err.code)
            response = web.Response(
                status=err.status,
                body=codec.dumps(err.body()),
                content_type=JSON,
                headers={**err.headers(), **ids},
            )
            if isinstance(exc, BodyUnread) and exc.reason != "too_large":
                response.force_close()  # the rest of its body is not worth waiting for
            return response
        finally:
            if ticket is not None:
                ticket.release()

    async def _run(
        self,
        route: Operation,
        name: str,
        access: Access,
        request: web.Request,
        entry: access_log.Entry,
    ) -> dict[str, Any]:
        target = self.operations.target(route, name)
        if _QUERIES[route]:
            doc = _query(_QUERIES[route], request.query)
        else:
            raw = await self.bodies.read(request.content, request.content_length)
            doc = codec.parse_body(raw)
            if route == "create_queue" and isinstance(doc.get("name"), str):
                entry.queue = doc["name"]  # named in the body, not the path
        return await self.operations.run(route, access, target, doc)


def credentials(request: web.Request) -> tuple[str | None, bearer.Local]:
    """The request's Authorization header, and whether it comes from this machine (its peer
    a loopback address, forwarding for nobody): what `bearer.principal` reads."""
    return request.headers.get("Authorization"), lambda: is_local(request.remote, request.headers)


def _route(request: web.Request) -> tuple[Route, str]:
    """The route `request` takes and the queue or exchange its path names ("" for none); 404
    when nothing is routed at its path, 405 naming the methods the path takes."""
    path, method = request.path.rstrip("/") or "/", request.method
    name, allowed = routes.match(path)
    if not allowed:
        raise NativeError(404, "not_found", f"No such route: {request.path[:200]}")
    if method not in allowed:
        raise NativeError(405, "method_not_allowed", f"{path} takes {', '.join(sorted(allowed))}.")
    return allowed[method], name


# operation -> whether its path names a queue (not an exchange, not nothing).
_NAMES_QUEUE: Mapping[str, bool] = {
    name: (f := spec.path_field) is not None and f.name == "queue" for name, spec in SPECS.items()
}

# operation -> its query fields' types (none: it reads a JSON body).
_QUERIES: Mapping[Operation, Mapping[str, str]] = {
    name: {f.name: f.type for f in spec.request_shape.fields if f.location == "query"}
    for name, spec in SPECS.items()
}


def _query(types: Mapping[str, str], query: Mapping[str, str]) -> codec.Obj:
    """The query string's fields, typed as the operation's request shape says (text there), so
    the operation reads the document the gRPC surface hands it; unknown fields are left to it."""
    doc: codec.Obj = dict(query)
    if not set(doc) <= set(types):
        return doc  # the operation names the unknown field first
    for name, value in query.items():
        if types.get(name) == "integer":
            number = whole_number(value)
            if number is None:
                raise NativeError(400, "wrong_type", f"{name!r} must be a whole number.")
            doc[name] = number
    return doc
