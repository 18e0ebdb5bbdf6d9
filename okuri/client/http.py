"""The HTTP/JSON transports over httpx: a `Request` becomes a method, a path and a JSON body;
an answer becomes a document or an error.

`to_http` and `from_http` are pure and shared; `HttpTransport` and `AsyncHttpTransport` only
move bytes, and translate httpx's exceptions into `TransportError` in one place
(`_transport_error`). Nothing here retries: the clients do (okuri/client/retries.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from okuri import __version__
from okuri.api.operations import SPECS
from okuri.client.errors import TransportError, bad_answer, from_answer
from okuri.client.transport import Doc, Operation, Request

# operation -> (method, path); `{queue}` is the queue's name, `{exchange}` the exchange's: the
# API's one table (okuri/api/operations.py), which the server's routes read too.
ROUTES: Mapping[Operation, tuple[str, str]] = {
    name: (spec.method, spec.path) for name, spec in SPECS.items()
}
USER_AGENT = f"okuri-client/{__version__}"
TIMEOUT_S = 10.0


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str
    params: dict[str, str]
    body: bytes | None
    timeout_s: float


def to_http(request: Request, timeout_s: float) -> HttpRequest:
    """The HTTP request for `request`; a long poll's `wait_s` lengthens the timeout."""
    method, template = ROUTES[request.operation]
    name = quote(request.queue, safe="")
    path = template.replace("{queue}", name).replace("{exchange}", name)
    params: dict[str, str] = {}
    body: bytes | None = None
    if method == "GET":
        params = {k: str(v) for k, v in request.doc.items()}
    elif method != "DELETE":
        body = json.dumps(request.doc, separators=(",", ":")).encode()
    return HttpRequest(method, path, params, body, timeout_s + request.wait_s)


def from_http(status: int, retry_after: str | None, content: bytes) -> Doc:
    """The answer's document if it succeeded; else raises the error it stands for (with the
    answer's Retry-After header, if any)."""
    try:
        doc: Any = json.loads(content) if content.strip() else {}
    except ValueError:  # json.JSONDecodeError and UnicodeDecodeError
        doc = None
    if 200 <= status < 300:
        if not isinstance(doc, dict):
            raise bad_answer(f"a {status} answer whose body is not a JSON object")
        return doc
    text = content[:500].decode(errors="replace") if doc is None else ""
    raise from_answer(status, doc, text, retry_after_s(retry_after))


def retry_after_s(value: str | None) -> float | None:
    """A Retry-After of seconds (the form okuri sends); None for absent or another form."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _headers(key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _base_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"the server's URL must be http:// or https://host[:port], not {url!r}")
    return url.rstrip("/")


def _transport_error(exc: httpx.TransportError) -> TransportError:
    """httpx's failures, translated once: whether the request may have reached the server."""
    unsent = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout)
    code = "timeout" if isinstance(exc, httpx.TimeoutException) else "connection_failed"
    return TransportError(code, f"{type(exc).__name__}: {exc}", sent=not unsent)


class HttpShell:
    """What the HTTP transports share: the server's address and headers (and httpx's arguments
    for the httpx ones)."""

    def __init__(self, url: str, key: str | None, timeout_s: float, owned: bool) -> None:
        self.timeout_s = timeout_s
        self._base = _base_url(url)
        self._headers = _headers(key)
        self._owned = owned

    def _args(self, request: Request) -> dict[str, Any]:
        r = to_http(request, self.timeout_s)
        headers = self._headers
        if r.body is not None:
            headers = {**headers, "Content-Type": "application/json"}
        return {
            "method": r.method,
            "url": self._base + r.path,
            "params": r.params or None,
            "content": r.body,
            "headers": headers,
            "timeout": r.timeout_s,
        }


class HttpTransport(HttpShell):
    """Sends requests over an `httpx.Client`: the one given (left open on close), else its own."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(url, key, timeout_s, owned=http is None)
        self._http = http or httpx.Client()

    def send(self, request: Request) -> Doc:
        try:
            answer = self._http.request(**self._args(request))
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        return from_http(answer.status_code, answer.headers.get("retry-after"), answer.content)

    def close(self) -> None:
        if self._owned:
            self._http.close()


class AsyncHttpTransport(HttpShell):
    """Sends requests over an `httpx.AsyncClient`: the one given (left open), else its own."""

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(url, key, timeout_s, owned=http is None)
        self._http = http or httpx.AsyncClient()

    async def send(self, request: Request) -> Doc:
        try:
            answer = await self._http.request(**self._args(request))
        except httpx.TransportError as exc:
            raise _transport_error(exc) from exc
        return from_http(answer.status_code, answer.headers.get("retry-after"), answer.content)

    async def aclose(self) -> None:
        if self._owned:
            await self._http.aclose()
