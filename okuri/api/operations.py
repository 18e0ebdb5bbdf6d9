"""The native API's operations, defined once: each one's name, RPC, HTTP method and path, request
and answer documents (okuri/api/shapes.py), and whether it may wait on purpose (a long poll).

Everything else that names an operation reads it here: the key roles
(okuri/principals/roles.py), the server's HTTP route table (okuri/native/routes.py) and gRPC
service (okuri/native/grpc_service.py), the OpenAPI document (okuri/native/openapi.py), and the
client's transports (okuri/client/transport.py, http.py, grpc.py).
tests/unit/test_api_agreement.py holds the table to the .proto's service.

`{queue}` stands for a queue's name in a path, `{exchange}` for an exchange's; the path field
of the request shape carries it over gRPC.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from okuri.api.shapes import SHAPES, Field, Shape

Operation = Literal[
    "create_queue",
    "get_queue",
    "list_queues",
    "update_queue",
    "delete_queue",
    "purge_queue",
    "produce",
    "lease",
    "complete",
    "retry",
    "extend",
    "redrive",
    "browse",
    "create_exchange",
    "get_exchange",
    "list_exchanges",
    "delete_exchange",
    "bind",
    "unbind",
    "publish",
]
OPERATIONS: tuple[Operation, ...] = get_args(Operation)
Method = Literal["GET", "POST", "PATCH", "DELETE"]

QUEUES = "/v1/queues"
QUEUE = "/v1/queues/{queue}"
EXCHANGES = "/v1/exchanges"
EXCHANGE = "/v1/exchanges/{exchange}"


@dataclass(frozen=True, slots=True)
class OperationSpec:
    """One operation. `request` and `answer` name shapes (and the RPC's protobuf messages);
    `summary` says what it does; `long_poll`: the server may hold it up to the request's
    `request_timeout_s`."""

    name: Operation
    rpc: str
    method: Method
    path: str
    request: str
    answer: str
    summary: str
    long_poll: bool = False

    @property
    def request_shape(self) -> Shape:
        return SHAPES[self.request]

    @property
    def answer_shape(self) -> Shape:
        return SHAPES[self.answer]

    @property
    def path_field(self) -> Field | None:
        """The request field the path names (`queue` or `exchange`), if any."""
        return next((f for f in self.request_shape.fields if f.location == "path"), None)


def _op(
    name: Operation,
    rpc: str,
    method: Method,
    path: str,
    answer: str,
    summary: str,
    request: str = "",
    long_poll: bool = False,
) -> OperationSpec:
    return OperationSpec(
        name, rpc, method, path, request or f"{rpc}Request", answer, summary, long_poll
    )


_ALL = (
    _op(
        "create_queue",
        "CreateQueue",
        "POST",
        QUEUES,
        "Queue",
        "Create a queue (again with the same attributes: the same answer).",
    ),
    _op("get_queue", "GetQueue", "GET", QUEUE, "Queue", "A queue's attributes and live counts."),
    _op(
        "list_queues",
        "ListQueues",
        "GET",
        QUEUES,
        "ListQueuesResponse",
        "List queues, a page at a time.",
    ),
    _op(
        "update_queue",
        "UpdateQueue",
        "PATCH",
        QUEUE,
        "Queue",
        "Change some of a queue's attributes.",
    ),
    _op(
        "delete_queue",
        "DeleteQueue",
        "DELETE",
        QUEUE,
        "DeleteQueueResponse",
        "Delete a queue and its items.",
    ),
    _op(
        "purge_queue",
        "PurgeQueue",
        "POST",
        QUEUE + "/purge",
        "PurgeQueueResponse",
        "Delete every item of a queue.",
    ),
    _op("produce", "Produce", "POST", QUEUE + "/messages", "ProduceResponse", "Enqueue items."),
    _op(
        "lease",
        "Lease",
        "POST",
        QUEUE + "/lease",
        "LeaseResponse",
        "Lease items, waiting for the first up to request_timeout_s.",
        long_poll=True,
    ),
    _op(
        "complete",
        "Complete",
        "POST",
        QUEUE + "/complete",
        "CompleteResponse",
        "Finish leased items.",
    ),
    _op(
        "retry",
        "Retry",
        "POST",
        QUEUE + "/retry",
        "RetryResponse",
        "Make leased items visible again now or at a time, or send them to the dead-letter queue.",
    ),
    _op("extend", "Extend", "POST", QUEUE + "/extend", "ExtendResponse", "Lengthen leases."),
    _op(
        "redrive",
        "Redrive",
        "POST",
        QUEUE + "/redrive",
        "RedriveResponse",
        "Move a dead-letter queue's items back to `target`, else each to the queue it came from.",
    ),
    _op(
        "browse",
        "Browse",
        "GET",
        QUEUE + "/messages",
        "BrowseResponse",
        "Read a page of a queue's items, oldest first, visible, leased or delayed, without "
        "leasing them or changing any count.",
    ),
    _op(
        "create_exchange",
        "CreateExchange",
        "POST",
        EXCHANGES,
        "Exchange",
        "Declare an exchange (again with the same type: the same answer).",
    ),
    _op(
        "get_exchange", "GetExchange", "GET", EXCHANGE, "Exchange", "An exchange and its bindings."
    ),
    _op(
        "list_exchanges",
        "ListExchanges",
        "GET",
        EXCHANGES,
        "ListExchangesResponse",
        "List exchanges, a page at a time.",
    ),
    _op(
        "delete_exchange",
        "DeleteExchange",
        "DELETE",
        EXCHANGE,
        "DeleteExchangeResponse",
        "Delete an exchange (its queues stay).",
    ),
    _op(
        "bind",
        "BindQueue",
        "POST",
        EXCHANGE + "/bind",
        "Exchange",
        "Bind a queue to the exchange under a routing key (again: no change).",
        request="BindingRequest",
    ),
    _op(
        "unbind",
        "UnbindQueue",
        "POST",
        EXCHANGE + "/unbind",
        "Exchange",
        "Remove a binding (one that is not there: no change).",
        request="BindingRequest",
    ),
    _op(
        "publish",
        "Publish",
        "POST",
        EXCHANGE + "/messages",
        "PublishResponse",
        "Produce items to every queue the routing key reaches, each queue once; refused whole "
        "(403) when one is a queue the key may not produce to.",
    ),
)

SPECS: Mapping[Operation, OperationSpec] = {spec.name: spec for spec in _ALL}
BY_RPC: Mapping[str, OperationSpec] = {spec.rpc: spec for spec in _ALL}
