"""The native API as `python -m bench native` drives it: produce, lease and complete, little else.

Why two clients: the SQS half of the bench speaks through a light aiohttp client
(bench.sqs_client) because an SDK's per-call CPU, on the machine the server runs on,
would be measured instead of the server; the native half gets the same treatment (`LightNative`:
one aiohttp session, orjson, a bearer header), so the two surfaces are compared through clients
of the same weight. `OkuriNative` drives the same calls through okuri.client.AsyncClient (httpx,
typed answers, retries off) to measure what an application built on it pays.

Both answer plain documents: `produce` the ids in order, `lease` the items as the API renders
them (`id`, `handle`, `body`...), `complete` one result per handle. A server's error answer
raises `NativeCallError` (or the client's own error) with the status and code; a connection
failure surfaces as the transport's own exception.
"""

from __future__ import annotations

from typing import Any, Protocol

import orjson

CONNECT_TIMEOUT_S = 5.0
REPLY_TIMEOUT_S = 30.0  # on top of a lease's request timeout
ERROR_MESSAGE_CHARS_MAX = 300


class NativeCallError(Exception):
    """The server answered a native error (`code` as the API names it, HTTP `status`)."""

    def __init__(self, operation: str, status: int, code: str, message: str) -> None:
        super().__init__(f"{operation}: {status} {code}: {message}")
        self.status = status
        self.code = code


class NativeClient(Protocol):
    """The calls the native load makes."""

    async def create_queue(self, name: str) -> None: ...

    async def delete_queue(self, name: str) -> None: ...

    async def produce(self, queue: str, bodies: list[str]) -> list[str]: ...

    async def lease(
        self, queue: str, max_items: int, request_timeout_s: int
    ) -> list[dict[str, Any]]: ...

    async def complete(self, queue: str, handles: list[str]) -> list[str]: ...

    async def close(self) -> None: ...


def _error(operation: str, status: int, body: bytes) -> NativeCallError:
    try:
        doc = orjson.loads(body)
        error = doc["error"]
        return NativeCallError(
            operation,
            status,
            str(error["code"]),
            str(error["message"])[:ERROR_MESSAGE_CHARS_MAX],
        )
    except (orjson.JSONDecodeError, KeyError, TypeError):
        text = body.decode(errors="replace")[:ERROR_MESSAGE_CHARS_MAX]
        return NativeCallError(operation, status, "unknown", text)


class LightNative:
    """An asyncio client of one server's native API: one keep-alive aiohttp session."""

    def __init__(
        self,
        endpoint: str,
        key: str,
        connections_max: int,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
    ) -> None:
        import aiohttp

        self.base = endpoint.rstrip("/") + "/v1/queues"
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections_max, keepalive_timeout=30),
            timeout=aiohttp.ClientTimeout(total=reply_timeout_s, sock_connect=CONNECT_TIMEOUT_S),
            skip_auto_headers=("User-Agent",),
        )

    async def close(self) -> None:
        await self._session.close()

    async def _call(self, operation: str, method: str, url: str, doc: Any) -> dict[str, Any]:
        data = None if doc is None else orjson.dumps(doc)
        async with self._session.request(method, url, data=data, headers=self._headers) as reply:
            body = await reply.read()
            if reply.status != 200:
                raise _error(operation, reply.status, body)
        answer = orjson.loads(body)
        if not isinstance(answer, dict):
            raise NativeCallError(operation, reply.status, "unknown", "the answer is no object")
        return answer

    async def create_queue(self, name: str) -> None:
        await self._call("create_queue", "POST", self.base, {"name": name})

    async def delete_queue(self, name: str) -> None:
        await self._call("delete_queue", "DELETE", f"{self.base}/{name}", None)

    async def produce(self, queue: str, bodies: list[str]) -> list[str]:
        doc = {"items": [{"body": b} for b in bodies]}
        answer = await self._call("produce", "POST", f"{self.base}/{queue}/messages", doc)
        return list(answer["ids"])

    async def lease(
        self, queue: str, max_items: int, request_timeout_s: int
    ) -> list[dict[str, Any]]:
        doc = {"max_items": max_items, "request_timeout_s": request_timeout_s}
        answer = await self._call("lease", "POST", f"{self.base}/{queue}/lease", doc)
        return list(answer["items"])

    async def complete(self, queue: str, handles: list[str]) -> list[str]:
        doc = {"handles": handles}
        answer = await self._call("complete", "POST", f"{self.base}/{queue}/complete", doc)
        return list(answer["results"])


class OkuriNative:
    """The same calls through okuri.client.AsyncClient, retries off (a failure is counted)."""

    def __init__(
        self,
        endpoint: str,
        key: str,
        connections_max: int,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
    ) -> None:
        import httpx

        from okuri.client import AsyncClient, RetryPolicy

        limits = httpx.Limits(
            max_connections=connections_max, max_keepalive_connections=connections_max
        )
        self._http = httpx.AsyncClient(limits=limits, timeout=reply_timeout_s)
        self._client = AsyncClient(
            endpoint,
            key,
            timeout_s=reply_timeout_s,
            retries=RetryPolicy(attempts_max=1),
            http=self._http,
        )

    async def close(self) -> None:
        await self._client.aclose()
        await self._http.aclose()

    async def create_queue(self, name: str) -> None:
        await self._client.create_queue(name)

    async def delete_queue(self, name: str) -> None:
        await self._client.delete_queue(name)

    async def produce(self, queue: str, bodies: list[str]) -> list[str]:
        return list(await self._client.produce(queue, list(bodies)))

    async def lease(
        self, queue: str, max_items: int, request_timeout_s: int
    ) -> list[dict[str, Any]]:
        items = await self._client.lease(
            queue, max_items=max_items, request_timeout_s=request_timeout_s
        )
        return [{"id": i.id, "handle": i.handle, "body": i.text} for i in items]

    async def complete(self, queue: str, handles: list[str]) -> list[str]:
        return list(await self._client.complete(queue, handles))
