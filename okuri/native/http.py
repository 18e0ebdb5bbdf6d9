"""The native HTTP/JSON listener under /v1/: routes, bearer authentication, error answers.

One request: find the route (404, or 405 naming the allowed methods), authenticate the bearer
key (401), read the JSON body (bounded; 413 past the server's request bound), run the
operation, which checks the key's role and namespace (403). Every failure is
`{"error": {"code", "message"}}`; nothing a client sends can produce a traceback.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from okuri import limits
from okuri.clock import Clock
from okuri.engine import Engine
from okuri.errors import OkuriError
from okuri.native import bearer, codec
from okuri.native.access import Access
from okuri.native.errors import NativeError, from_okuri
from okuri.native.messages import Messages
from okuri.native.queues import Queues, queue_name

log = logging.getLogger("okuri.native")

PREFIX = "/v1/"
JSON = "application/json"

QueueOp = Callable[[Access, str, codec.Obj], Awaitable[dict[str, Any]]]
_QUEUE = re.compile(r"/v1/queues/([^/]+)")
_ACTION = re.compile(r"/v1/queues/([^/]+)/([a-z]+)")


class NativeHttp:
    def __init__(self, engine: Engine, clock: Clock, keys: bearer.Keys) -> None:
        """`keys` gives the current key table (it changes on SIGHUP); None: no authentication
        (OKURI_AUTH=off), every request acting as an admin of every queue."""
        self.queues = Queues(engine)
        self.messages = Messages(engine, clock)
        self.keys = keys
        self._on_queue: dict[str, dict[str, QueueOp]] = {
            "": {"GET": self.queues.get, "PATCH": self.queues.update, "DELETE": self.queues.delete},
            "purge": {"POST": self.queues.purge},
            "messages": {"POST": self.messages.produce},
            "lease": {"POST": self.messages.lease},
            "complete": {"POST": self.messages.complete},
            "retry": {"POST": self.messages.retry},
            "extend": {"POST": self.messages.extend},
            "redrive": {"POST": self.messages.redrive},
        }

    async def handle(self, request: web.Request) -> web.Response:
        try:
            status, body = await self._handle(request)
            return web.Response(status=status, body=codec.dumps(body), content_type=JSON)
        except Exception as exc:
            if isinstance(exc, NativeError):
                err = exc
            elif isinstance(exc, OkuriError):
                err = from_okuri(exc)
            else:
                log.exception("native request %s %s failed", request.method, request.path)
                err = NativeError(500, "internal", "The request could not be processed.")
            headers = {"WWW-Authenticate": "Bearer"} if err.status == 401 else {}
            return web.Response(
                status=err.status, body=codec.dumps(err.body()), content_type=JSON, headers=headers
            )

    async def _handle(self, request: web.Request) -> tuple[int, dict[str, Any]]:
        path, method = request.path.rstrip("/") or "/", request.method
        if path == "/v1/queues":
            allowed: dict[str, Any] = {"GET": None, "POST": None}
        elif (m := _QUEUE.fullmatch(path)) is not None:
            allowed, name = self._on_queue[""], m.group(1)
        elif (m := _ACTION.fullmatch(path)) is not None and m.group(2) in self._on_queue:
            allowed, name = self._on_queue[m.group(2)], m.group(1)
        else:
            raise NativeError(404, "not_found", f"No such route: {request.path[:200]}")
        if method not in allowed:
            raise NativeError(
                405, "method_not_allowed", f"{path} takes {', '.join(sorted(allowed))}."
            )
        access = Access(bearer.principal(self.keys, request.headers.get("Authorization")))
        if path == "/v1/queues":
            if method == "GET":
                return 200, await self.queues.list(access, dict(request.query))
            return 200, await self.queues.create(access, await _body(request))
        return 200, await allowed[method](access, queue_name(name, "queue"), await _body(request))

async def _body(request: web.Request) -> codec.Obj:
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise NativeError(
            413, "too_large", f"The request body is larger than {limits.request_bytes_max} bytes."
        ) from None
    return codec.parse_body(raw)
