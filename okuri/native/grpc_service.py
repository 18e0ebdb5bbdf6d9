"""`okuri.api.v1.QueueService`: the native operations over gRPC.

Each RPC reads its bearer key from the `authorization` metadata (the development key only from
a client on this machine: grpcio sees the main listener's splice, not the client, so the
client's address comes from `remote`), reads the request into the document its HTTP twin
parses to (`grpc_shapes`, through the API's one converter), runs the same operation
(okuri/native/operations.py), and writes the answer back. The RPCs are the API's table of
operations (okuri/api/operations.py), one generic handler each. A refusal is the HTTP answer's
`NativeError`, mapped here to a gRPC status with the same message and the error's code in the
trailing metadata `okuri-error-code`; nothing a client sends produces a traceback.

The status table, and why:
- 400 INVALID_ARGUMENT, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND;
- 409 ALREADY_EXISTS for `queue_exists` and `exchange_exists` (a create that conflicts),
  FAILED_PRECONDITION else;
- 403 `quota_exceeded` (a bound the operator set: queues, attribute bytes) FAILED_PRECONDITION,
  gRPC's status for "do not retry until the system's state is fixed" (a queue deleted, the bound
  raised), not RESOURCE_EXHAUSTED, which retry policies commonly retry (below);
- 413 `too_large` (an item over the queue's size) INVALID_ARGUMENT, not RESOURCE_EXHAUSTED:
  sending the same item again can never succeed, and retry policies commonly retry
  RESOURCE_EXHAUSTED. (A whole request over the 4 MiB receive bound is refused by grpc itself,
  RESOURCE_EXHAUSTED, before it reaches this module.)
- 429 RESOURCE_EXHAUSTED (retry later: the node is at one of its bounds on requests, request
  bytes or long polls, `okuri.engine.Admission`), with HTTP's Retry-After as the trailer
  `grpc-retry-pushback-ms` (gRPC's own name for it, which its retry policies honour);
  503 UNAVAILABLE (retry), else INTERNAL.

Request bytes that do not parse as the RPC's message are answered INVALID_ARGUMENT
(`bad_protobuf`) by this module rather than left to grpc, which would log a traceback.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import grpc
from google.protobuf.message import DecodeError, Message

from okuri import access_log
from okuri.api.grpc_codec import message_class
from okuri.api.operations import SPECS, OperationSpec
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.clock import Clock
from okuri.engine import Engine, Gate
from okuri.errors import OkuriError
from okuri.native import bearer, grpc_shapes
from okuri.native.access import Access
from okuri.native.errors import NativeError, bad_request, from_okuri
from okuri.native.operations import Operations
from okuri.native.stats import RequestStats
from okuri.principals.local import is_local

log = logging.getLogger("okuri.native")

SERVICE = pb.DESCRIPTOR.services_by_name["QueueService"]
SERVICE_NAME: str = SERVICE.full_name
ERROR_CODE_KEY = "okuri-error-code"
PUSHBACK_KEY = "grpc-retry-pushback-ms"
GRPC = "grpc"  # the transport label of this surface's request counts

_STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    401: grpc.StatusCode.UNAUTHENTICATED,
    403: grpc.StatusCode.PERMISSION_DENIED,
    404: grpc.StatusCode.NOT_FOUND,
    405: grpc.StatusCode.UNIMPLEMENTED,
    409: grpc.StatusCode.FAILED_PRECONDITION,
    413: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    503: grpc.StatusCode.UNAVAILABLE,
}


def trailers(err: NativeError) -> tuple[tuple[str, str], ...]:
    """The error's code; for a refusal that passes, also gRPC's standard server pushback (what
    HTTP's Retry-After says, in milliseconds)."""
    code = ((ERROR_CODE_KEY, err.code),)
    if err.retry_after_s is None:
        return code
    return (*code, (PUSHBACK_KEY, str(err.retry_after_s * 1000)))


def status_of(err: NativeError) -> grpc.StatusCode:
    if err.code in ("queue_exists", "exchange_exists"):
        return grpc.StatusCode.ALREADY_EXISTS
    if err.code == "quota_exceeded":
        return grpc.StatusCode.FAILED_PRECONDITION
    return _STATUS.get(err.status, grpc.StatusCode.INTERNAL)


@dataclass(frozen=True, slots=True)
class Garbled:
    """A request whose bytes are not its RPC's message."""

    message: str


Rpc = Callable[[Access, Message], Awaitable[Message]]
# A call's client address from grpcio's name for its peer (None: unknown, never local).
Remote = Callable[[str], str | None]


def peer_address(peer: str) -> str | None:
    """The address in grpcio's peer name of a TCP client (`ipv4:127.0.0.1:5000`,
    `ipv6:[::1]:5000`, percent-encoded as grpcio writes it); None for any other peer."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host = unquote(rest).rpartition(":")[0]
    return host.strip("[]") or None


def _reader(cls: type[Message]) -> Callable[[bytes], Message | Garbled]:
    def read(data: bytes) -> Message | Garbled:
        try:
            return cls.FromString(data)
        except (DecodeError, ValueError):
            name = cls.DESCRIPTOR.full_name
            return Garbled(f"The request is not a valid {name} message.")

    return read


def _write(message: Message) -> bytes:
    return message.SerializeToString()


class QueueService:
    def __init__(
        self,
        engine: Engine,
        clock: Clock,
        keys: bearer.Keys,
        gate: Gate | None = None,
        stats: RequestStats | None = None,
        remote: Remote = peer_address,
    ) -> None:
        """`keys` as for the HTTP surface: the current key table, None with OKURI_AUTH=off.
        `gate` admits each call, and each lease that may wait (None: no bounds). `stats`
        counts each call as the HTTP surface counts its requests, as transport "grpc".
        `remote` tells a call's client address from grpcio's peer name (by default a TCP
        peer's own; behind the main listener, the splice's record of whom it leads)."""
        self.operations = Operations(engine, clock, gate)
        self.clock = clock
        self.keys = keys
        self.remote = remote
        self.gate = gate
        self.stats = stats or RequestStats()
        self.rpcs: Mapping[str, Rpc] = {spec.rpc: self._rpc(spec) for spec in SPECS.values()}
        missing = set(SERVICE.methods_by_name) ^ set(self.rpcs)
        if missing:
            raise RuntimeError(f"QueueService RPCs without an implementation: {sorted(missing)}")

    def handler(self) -> grpc.GenericRpcHandler:
        """The service for a grpc server's `add_generic_rpc_handlers`."""
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {
            spec.rpc: grpc.unary_unary_rpc_method_handler(
                self._behaviour(spec, self.rpcs[spec.rpc]),
                request_deserializer=_reader(message_class(spec.request)),
                response_serializer=_write,
            )
            for spec in SPECS.values()
        }
        return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)

    def _behaviour(
        self, spec: OperationSpec, rpc: Rpc
    ) -> Callable[[Message | Garbled, grpc.aio.ServicerContext[Any, Any]], Awaitable[Message]]:
        """The call's handler: its id goes back in the trailing metadata `x-request-id`, on
        success and refusal alike; with the access log on, it writes the call's record."""
        operation = spec.name
        path = spec.path_field
        # The request field naming the queue, for the log: the path's, or a create's name.
        queue_field = "name" if operation == "create_queue" else ""
        if path is not None and path.name == "queue":
            queue_field = path.name

        async def behaviour(
            request: Message | Garbled, context: grpc.aio.ServicerContext[Any, Any]
        ) -> Message:
            request_id = self.clock.new_id()
            ids = ((access_log.REQUEST_ID_HEADER, request_id),)
            logging_on = access_log.on()
            started_s = self.clock.monotonic_s() if logging_on else 0.0
            entry = access_log.Entry(spec.rpc)
            nbytes = 0 if isinstance(request, Garbled) else request.ByteSize()
            try:
                # Authenticated before it holds anything of the node's bounds.
                local = functools.partial(self._local, context)
                access = Access(bearer.principal(self.keys, _authorization(context), local))
                entry.key_id = access.principal.key_id
                with self.gate.enter("request", nbytes) if self.gate else contextlib.nullcontext():
                    if isinstance(request, Garbled):
                        raise bad_request(request.message, "bad_protobuf")
                    if queue_field:
                        entry.queue = getattr(request, queue_field)
                    answer = await rpc(access, request)
                self.stats.count(operation, "ok", GRPC)
                context.set_trailing_metadata(ids)
                if logging_on:
                    self._log(request_id, entry, context, grpc.StatusCode.OK, started_s)
                return answer
            except Exception as exc:
                err = _native(exc, request_id, spec.rpc)
            self.stats.count(operation, err.code, GRPC)
            status = status_of(err)
            if logging_on:
                self._log(request_id, entry, context, status, started_s)
            await context.abort(status, err.message, trailing_metadata=(*trailers(err), *ids))

        return behaviour

    def _local(self, context: grpc.aio.ServicerContext[Any, Any]) -> bool:
        """Whether the call comes from this machine: a loopback client, forwarding for nobody."""
        names = (key for key, _ in context.invocation_metadata() or ())
        return is_local(self.remote(context.peer()), names)

    def _log(
        self,
        request_id: str,
        entry: access_log.Entry,
        context: grpc.aio.ServicerContext[Any, Any],
        status: grpc.StatusCode,
        started_s: float,
    ) -> None:
        entry.client_request_id = access_log.client_request_id(
            _metadata(context, access_log.REQUEST_ID_HEADER)
        )
        duration_ms = (self.clock.monotonic_s() - started_s) * 1000
        access_log.emit("native-grpc", request_id, entry, status.name, duration_ms)

    def _rpc(self, spec: OperationSpec) -> Rpc:
        """The RPC of `spec`'s operation: the request message read as the document HTTP
        would carry after parsing, the operation run, its answer written as the response."""
        path = spec.path_field

        async def rpc(access: Access, request: Message) -> Message:
            name = self.operations.target(spec.name, getattr(request, path.name) if path else "")
            doc = grpc_shapes.request_doc(request)
            answer = await self.operations.run(spec.name, access, name, doc)
            return grpc_shapes.answer(spec.answer, answer)

        rpc.__name__ = rpc.__qualname__ = spec.name
        return rpc


def _authorization(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    return _metadata(context, "authorization")


def _metadata(context: grpc.aio.ServicerContext[Any, Any], name: str) -> str | None:
    for key, value in context.invocation_metadata() or ():
        if key == name:
            return value if isinstance(value, str) else None
    return None


def _native(exc: Exception, request_id: str, rpc: str) -> NativeError:
    """The answer to a failure, as the HTTP surface gives it; an unexpected one is logged with
    its traceback under the id the client got in its trailing metadata."""
    if isinstance(exc, NativeError):
        return exc
    if isinstance(exc, OkuriError):
        return from_okuri(exc)
    log.exception("native gRPC request %s (%s) failed", request_id, rpc)
    return NativeError(500, "internal", "The request could not be processed.")
