"""okuri's Python client for its native HTTP/JSON API: `Client` (blocking) and `AsyncClient`
(asyncio), method for method the same, with typed answers and one error hierarchy.

    from okuri.client import Client

    with Client("http://localhost:8080", key) as okuri:
        okuri.produce("emails", ["hello"])
        for item in okuri.lease("emails", max_items=10, request_timeout_s=5):
            okuri.complete("emails", [item])

It is a client: it imports nothing of the server (import-linter holds it to that) and needs
only httpx. What it retries, and why, is in okuri/client/retries.py. The wire is a seam
(okuri/client/transport.py): HTTP/JSON now, another transport through `transport=`.
"""

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
from okuri.client.models import Item, LeasedItem, Queue, QueueAttributes, QueuePage, QueueStats
from okuri.client.retries import NO_RETRIES, RetryPolicy
from okuri.client.sync import Client
from okuri.client.transport import OPERATIONS, AsyncTransport, Operation, Request, Transport

__all__ = [
    "NO_RETRIES",
    "OPERATIONS",
    "AsyncClient",
    "AsyncHttpTransport",
    "AsyncTransport",
    "AuthError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "ForbiddenError",
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
    "TooLargeError",
    "Transport",
    "TransportError",
    "UnavailableError",
]
