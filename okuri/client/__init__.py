"""okuri's Python client for its native API: `Client` (blocking) and `AsyncClient` (asyncio),
method for method the same, with typed answers and one error hierarchy, over HTTP/JSON or gRPC.

    from okuri.client import Client

    with Client("http://localhost:8080", key) as okuri:  # or "grpc://localhost:8080"
        okuri.produce("emails", ["hello"])
        for item in okuri.lease("emails", max_items=10, request_timeout_s=5):
            okuri.complete("emails", [item])

It is a client: it imports nothing of the server (import-linter holds it to that), only the
API's wire definitions (okuri.api). Over HTTP it needs httpx; over gRPC grpcio and protobuf,
which it loads only when a gRPC transport is first asked for. What it retries, and why, is in
okuri/client/retries.py. The wire is a seam (okuri/client/transport.py): the URL's scheme picks
HTTP/JSON (okuri/client/http.py) or gRPC (okuri/client/grpc.py), `transport=` any other.
"""

from typing import TYPE_CHECKING, Any

from okuri.client.aio import AsyncClient
from okuri.client.errors import (
    AuthError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    OkuriClientError,
    OverloadedError,
    PartialProduceError,
    RetryableError,
    ServerError,
    TooLargeError,
    TransportError,
    UnavailableError,
)
from okuri.client.http import AsyncHttpTransport, HttpTransport
from okuri.client.models import (
    Binding,
    BrowsedItem,
    BrowsePage,
    Exchange,
    ExchangePage,
    Item,
    LeasedItem,
    Queue,
    QueueAttributes,
    QueuePage,
    QueueStats,
)
from okuri.client.retries import NO_RETRIES, RetryPolicy
from okuri.client.stdlib_http import StdlibHttpTransport
from okuri.client.sync import Client
from okuri.client.transport import OPERATIONS, AsyncTransport, Operation, Request, Transport

if TYPE_CHECKING:
    from okuri.client.grpc import AsyncGrpcTransport, GrpcTransport

_GRPC = ("AsyncGrpcTransport", "GrpcTransport")


def __getattr__(name: str) -> Any:
    """The gRPC transports, imported on first use: grpc is not loaded for HTTP alone."""
    if name in _GRPC:
        from okuri.client import grpc

        return getattr(grpc, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NO_RETRIES",
    "OPERATIONS",
    "AsyncClient",
    "AsyncGrpcTransport",
    "AsyncHttpTransport",
    "AsyncTransport",
    "AuthError",
    "BadRequestError",
    "Binding",
    "BrowsePage",
    "BrowsedItem",
    "Client",
    "ConflictError",
    "Exchange",
    "ExchangePage",
    "ForbiddenError",
    "GrpcTransport",
    "HttpTransport",
    "Item",
    "LeasedItem",
    "NotFoundError",
    "OkuriClientError",
    "Operation",
    "OverloadedError",
    "PartialProduceError",
    "Queue",
    "QueueAttributes",
    "QueuePage",
    "QueueStats",
    "Request",
    "RetryPolicy",
    "RetryableError",
    "ServerError",
    "StdlibHttpTransport",
    "TooLargeError",
    "Transport",
    "TransportError",
    "UnavailableError",
]
