"""The seam between the clients and the wire: operations and JSON-shaped documents.

A client says *what* to do as a `Request` (an operation of the native API, the queue it acts
on, the request document) and gets the answer document back; a transport decides *how* it
travels. The HTTP/JSON transports (okuri/client/http.py) map an operation to a method and a
path; the gRPC transports (okuri/client/grpc.py) map it to an RPC and its messages to the same
documents. The clients pick one by the URL's scheme (`is_grpc_url`), or take any through
`Client(transport=...)` without changing. The operations, their routes and RPCs are the API's
one table, okuri/api/operations.py.

A transport raises `okuri.client.errors` only: the server's error answers through
`errors.from_answer`, and its own failures (no connection, a timeout) as `TransportError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from okuri.api.operations import OPERATIONS as OPERATIONS
from okuri.api.operations import Operation as Operation

Doc = dict[str, Any]
GRPC_SCHEMES = ("grpc", "grpcs")


def is_grpc_url(url: str) -> bool:
    """Whether `url` names a gRPC server (grpc:// plaintext, grpcs:// TLS) rather than HTTP."""
    return urlsplit(url).scheme in GRPC_SCHEMES


@dataclass(frozen=True, slots=True)
class Request:
    """One operation. `queue` is the queue it acts on, or for an exchange's operation the
    exchange ("" for create_queue, list_queues, create_exchange and list_exchanges, which name
    theirs in `doc`); `doc` is the request document (list_queues: its query
    fields); `wait_s` is how long the server may hold the request on purpose (a long-poll
    lease), which a transport adds to its own timeout."""

    operation: Operation
    queue: str = ""
    doc: Mapping[str, Any] = field(default_factory=dict)
    wait_s: float = 0.0


class Transport(Protocol):
    def send(self, request: Request) -> Doc:
        """The answer document; raises an `OkuriClientError`."""

    def close(self) -> None: ...


class AsyncTransport(Protocol):
    async def send(self, request: Request) -> Doc:
        """The answer document; raises an `OkuriClientError`."""

    async def aclose(self) -> None: ...
