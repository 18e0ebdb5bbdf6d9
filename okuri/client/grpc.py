"""The gRPC transports over grpcio: a `Request` becomes a call of `okuri.api.v1.QueueService`,
its answer the document the HTTP answer would be (okuri/client/grpc_shapes.py), and a failed
call the error the HTTP transport would raise (`error_of`, the one translation).

`grpc://host[:port]` is a plaintext channel, as okuri serves it; `grpcs://host[:port]` a TLS
channel with the system's roots (or the `credentials` given). The call's deadline is the
transport's timeout plus a long poll's wait, as the HTTP transport lengthens its timeout. The
channel takes answers up to `RECEIVE_BYTES_MAX` (grpc's default of 4 MiB is less than a lease
of 100 items of 1 MiB). Nothing here retries: the clients do (okuri/client/retries.py).

How a failed call maps, with the server's `okuri-error-code` trailer (its table is in
okuri/native/grpc_service.py): each status to the HTTP status of the same refusal
(INVALID_ARGUMENT 400, or 413 for `too_large`; ALREADY_EXISTS and FAILED_PRECONDITION 409;
FAILED_PRECONDITION 403 for `quota_exceeded`; RESOURCE_EXHAUSTED 429 with
`grpc-retry-pushback-ms` as its Retry-After; UNAVAILABLE 503; ...),
then through `errors.from_answer` as an HTTP answer. Without the trailer the status is grpc's
own: UNAVAILABLE and DEADLINE_EXCEEDED are a `TransportError` (no answer), RESOURCE_EXHAUSTED
a message over grpc's size bound (`TooLargeError`, as HTTP's 413 for a request over 4 MiB),
UNIMPLEMENTED a server without the RPC (`NotFoundError`, as HTTP's 404 for an unknown route).

gRPC does not say whether a call that failed UNAVAILABLE reached the server. A call that failed
because no connection could be made or the name did not resolve never left (its message says
so, and it fails before anything is written); any other is taken as possibly sent, so a
produce is not retried after it (okuri/client/retries.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import grpc
import grpc.aio
from google.protobuf.message import Message

from okuri import __version__
from okuri.client import grpc_shapes
from okuri.client.errors import OkuriClientError, TransportError, from_answer
from okuri.client.http import TIMEOUT_S
from okuri.client.transport import Doc, Operation, Request

SCHEMES = {"grpc": 80, "grpcs": 443}  # scheme -> default port (transport.GRPC_SCHEMES)
RECEIVE_BYTES_MAX = 128 * 1024 * 1024
USER_AGENT = f"okuri-client/{__version__}"
ERROR_CODE_KEY = "okuri-error-code"
PUSHBACK_KEY = "grpc-retry-pushback-ms"
NEVER_LEFT = ("failed to connect to all addresses", "errors resolving", "dns resolution failed")

Code = grpc.StatusCode
_HTTP_STATUS: Mapping[grpc.StatusCode, int] = {
    Code.INVALID_ARGUMENT: 400,
    Code.UNAUTHENTICATED: 401,
    Code.PERMISSION_DENIED: 403,
    Code.NOT_FOUND: 404,
    Code.UNIMPLEMENTED: 405,
    Code.ALREADY_EXISTS: 409,
    Code.FAILED_PRECONDITION: 409,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.UNAVAILABLE: 503,
}
Trailers = Sequence[tuple[str, str | bytes]]


def target(url: str) -> tuple[str, bool]:
    """The channel target (`host:port`) of `url`, and whether it is TLS."""
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES or not parts.hostname:
        raise ValueError(f"a gRPC server's URL is grpc:// or grpcs://host[:port], not {url!r}")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise ValueError(f"a gRPC URL names a host and port only, not {url!r}")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{parts.port or SCHEMES[parts.scheme]}", parts.scheme == "grpcs"


def channel_options() -> list[tuple[str, Any]]:
    return [
        ("grpc.max_receive_message_length", RECEIVE_BYTES_MAX),
        ("grpc.primary_user_agent", USER_AGENT),
    ]


def error_of(code: grpc.StatusCode, details: str, trailers: Trailers) -> OkuriClientError:
    """The error a call that ended with `code`, `details` and `trailers` stands for."""
    meta = {k: v for k, v in trailers if isinstance(v, str)}
    okuri_code = meta.get(ERROR_CODE_KEY)
    if okuri_code is not None:  # the server's refusal: an HTTP answer in gRPC's words
        status = _HTTP_STATUS.get(code, 500)
        if code == Code.INVALID_ARGUMENT and okuri_code == "too_large":
            status = 413
        if code == Code.FAILED_PRECONDITION and okuri_code == "quota_exceeded":
            status = 403
        doc = {"error": {"code": okuri_code, "message": details}}
        return from_answer(status, doc, retry_after_s=_pushback_s(meta.get(PUSHBACK_KEY)))
    message = f"{code.name}: {details}" if details else code.name
    if code == Code.UNAVAILABLE:
        never_left = any(words in details.lower() for words in NEVER_LEFT)
        return TransportError("connection_failed", message, sent=not never_left)
    if code == Code.DEADLINE_EXCEEDED:
        return TransportError("timeout", message, sent=True)
    if code == Code.CANCELLED:
        return TransportError("connection_failed", message, sent=True)
    if code == Code.RESOURCE_EXHAUSTED:
        return from_answer(413, {"error": {"code": "too_large", "message": message}})
    if code == Code.UNIMPLEMENTED:
        return from_answer(404, {"error": {"code": "not_found", "message": message}})
    doc = {"error": {"code": f"grpc_{code.name.lower()}", "message": message}}
    return from_answer(_HTTP_STATUS.get(code, 500), doc)


def _pushback_s(value: str | None) -> float | None:
    try:
        ms = int(value) if value is not None else -1
    except ValueError:
        return None
    return ms / 1000 if ms >= 0 else None


def _failure(exc: grpc.RpcError) -> OkuriClientError:
    """grpc's exception, translated once. A failed call's exception is also its `grpc.Call`
    (sync) or an `AioRpcError` (asyncio): both have code, details and trailing metadata."""
    if isinstance(exc, grpc.Call | grpc.aio.AioRpcError):
        return error_of(exc.code(), exc.details() or "", tuple(exc.trailing_metadata() or ()))
    return error_of(Code.UNKNOWN, str(exc), ())


class _Shell:
    """What both transports share: the target, the key's metadata, the calls' deadline."""

    def __init__(
        self,
        url: str,
        key: str | None,
        timeout_s: float,
        credentials: grpc.ChannelCredentials | None,
        owned: bool,
    ) -> None:
        self.timeout_s = timeout_s
        self._target, self._tls = target(url) if owned else ("", False)
        if credentials is not None and not self._tls:
            raise ValueError("credentials= is for a grpcs:// URL")
        self._credentials = credentials
        self._metadata = (("authorization", f"Bearer {key}"),) if key is not None else ()
        self._owned = owned

    def _args(self, request: Request) -> tuple[Message, dict[str, Any]]:
        message = grpc_shapes.to_message(request)
        return message, {
            "timeout": self.timeout_s + request.wait_s,
            "metadata": self._metadata,
        }

    def _credentials_or_roots(self) -> grpc.ChannelCredentials:
        return self._credentials or grpc.ssl_channel_credentials()


class GrpcTransport(_Shell):
    """Sends requests over a `grpc.Channel`: the one given (left open on close), else its own
    to `url` (`grpc://host:port`, or `grpcs://` for TLS with `credentials` or the system's
    roots). `timeout_s` is each call's deadline, lengthened by a long poll's wait."""

    def __init__(
        self,
        url: str = "",
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        channel: grpc.Channel | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        super().__init__(url, key, timeout_s, credentials, owned=channel is None)
        if channel is None:
            if self._tls:
                channel = grpc.secure_channel(
                    self._target, self._credentials_or_roots(), options=channel_options()
                )
            else:
                channel = grpc.insecure_channel(self._target, options=channel_options())
        self._channel = channel
        self._calls: dict[Operation, grpc.UnaryUnaryMultiCallable[Any, Any]] = {
            op: channel.unary_unary(
                rpc.path,
                request_serializer=rpc.request.SerializeToString,
                response_deserializer=rpc.response.FromString,
            )
            for op, rpc in grpc_shapes.RPC.items()
        }

    def send(self, request: Request) -> Doc:
        message, args = self._args(request)
        try:
            answer = self._calls[request.operation](message, **args)
        except grpc.RpcError as exc:
            raise _failure(exc) from exc
        return grpc_shapes.from_message(answer)

    def close(self) -> None:
        if self._owned:
            self._channel.close()


class AsyncGrpcTransport(_Shell):
    """Sends requests over a `grpc.aio.Channel`: the one given (left open), else its own to
    `url`, opened on the first request in the event loop that sends it (a grpc.aio channel
    belongs to one loop)."""

    def __init__(
        self,
        url: str = "",
        key: str | None = None,
        *,
        timeout_s: float = TIMEOUT_S,
        channel: grpc.aio.Channel | None = None,
        credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        super().__init__(url, key, timeout_s, credentials, owned=channel is None)
        self._channel = channel
        self._calls: dict[Operation, grpc.aio.UnaryUnaryMultiCallable[Any, Any]] = {}

    def _call(self, operation: Operation) -> grpc.aio.UnaryUnaryMultiCallable[Any, Any]:
        if self._channel is None:
            if self._tls:
                self._channel = grpc.aio.secure_channel(
                    self._target, self._credentials_or_roots(), options=channel_options()
                )
            else:
                self._channel = grpc.aio.insecure_channel(self._target, options=channel_options())
        if operation not in self._calls:
            rpc = grpc_shapes.RPC[operation]
            self._calls[operation] = self._channel.unary_unary(
                rpc.path,
                request_serializer=rpc.request.SerializeToString,
                response_deserializer=rpc.response.FromString,
            )
        return self._calls[operation]

    async def send(self, request: Request) -> Doc:
        message, args = self._args(request)
        try:
            answer = await self._call(request.operation)(message, **args)
        except grpc.RpcError as exc:
            raise _failure(exc) from exc
        return grpc_shapes.from_message(answer)

    async def aclose(self) -> None:
        if self._owned and self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._calls.clear()
