"""The native API's documents, described once: each message's fields, their JSON types, and how
an absent or empty value reads, in the JSON names both wires use.

A `Shape` is named as its protobuf message in okuri/api/v1/queue_service.proto, and its fields
are that message's fields, except where JSON and protobuf say one thing two ways (a `payload`
is JSON's `body` or `body_base64`; an update's null attributes are protobuf's
`reset_attributes`; an `inline` field's members sit in the enclosing JSON object). From these
follow the gRPC codec (okuri/api/grpc_codec.py), the OpenAPI schemas
(okuri/native/openapi_schemas.py) and the client's models (okuri/client/models.py);
tests/unit/test_api_agreement.py holds them and the .proto to each other.

Bounds are not here: they are the server's (okuri.limits), which this package may not import,
so the OpenAPI document adds them where it renders a field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

# A field's JSON type: one of these, or the name of another `Shape` (an object).
SCALARS = ("string", "integer", "boolean", "time", "payload", "headers")
Location = Literal["path", "query", "body"]
# How an answer carries a field without a value: "never" (always there), "null" (null when
# unset), "empty" (left out when unset or empty), or another field's name (there when it is).
Absent = str


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a document. `type` is a JSON type of `SCALARS` or a `Shape`'s name; `time`
    is RFC 3339 text (a protobuf Timestamp), `payload` is `body` (UTF-8) or `body_base64`
    (protobuf bytes `payload`), `headers` a string map. `default` is what the server takes when
    the field is absent (None: nothing to say here, or a bound of okuri.limits). `resets`: the
    members of this object may be null to reset them (over gRPC, `reset_<name>`)."""

    name: str
    type: str
    doc: str = ""
    required: bool = False
    default: object = None
    location: Location = "body"
    repeated: bool = False
    nullable: bool = False
    absent: Absent = "never"
    inline: bool = False
    resets: bool = False


@dataclass(frozen=True, slots=True)
class Shape:
    """A message: its protobuf name and its fields, in the .proto's order."""

    name: str
    fields: tuple[Field, ...]
    doc: str = ""

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


def _queue_in_path(doc: str = "The queue.") -> Field:
    return Field("queue", "string", doc, required=True, location="path")


def _exchange_in_path() -> Field:
    return Field("exchange", "string", "The exchange.", required=True, location="path")


def _listing(what: str) -> tuple[Field, ...]:
    return (
        Field("prefix", "string", f"Only {what} whose names start with this.", location="query"),
        Field("limit", "integer", f"{what.capitalize()} per page.", location="query"),
        Field("after", "string", "The previous page's `next`.", location="query"),
    )


def _page(what: str) -> tuple[Field, ...]:
    return (
        Field(what, "string", repeated=True),
        Field(
            "next",
            "string",
            "Pass as `after` for the next page; null on the last.",
            nullable=True,
            absent="null",
        ),
    )


_RESULTS = (Field("results", "string", "One outcome per handle, in order.", repeated=True),)
_HANDLES = Field("handles", "string", "Lease handles.", required=True, repeated=True)
_ROUTING_KEY = Field(
    "routing_key",
    "string",
    "Words separated by '.'; in a topic exchange's binding '*' stands for exactly one word "
    "and '#' for zero or more.",
    default="",
)

_ALL: tuple[Shape, ...] = (
    # --- queues ---------------------------------------------------------------------------
    Shape(
        "QueueAttributes",
        (
            Field("lease_timeout_s", "integer", "The default lease (SQS's VisibilityTimeout)."),
            Field(
                "max_attempts",
                "integer",
                "After this many leases an item goes to the dead-letter queue; null: never.",
                nullable=True,
                absent="null",
            ),
            Field(
                "dead_letter_queue",
                "string",
                "Where dead items go; null: `{queue}-dlq` when an item is sent there.",
                nullable=True,
                absent="null",
            ),
            Field("retention_s", "integer", "How long an item is kept."),
            Field(
                "delay_s", "integer", "How long a new item waits before it is visible.", default=0
            ),
            Field(
                "content_based_dedup",
                "boolean",
                "FIFO queues only: an item without a dedup_id is deduplicated by the SHA-256 "
                "of its bytes.",
                default=False,
                absent="empty",
            ),
            Field(
                "expires_s",
                "integer",
                "Delete the queue, with its items, once nobody has used it (leased, waited on, "
                "read or declared it; producing does not count) for this long (RabbitMQ's "
                "x-expires); null: never.",
                nullable=True,
                absent="null",
            ),
        ),
        "A queue's attributes; in a request only those given change (null: reset).",
    ),
    Shape(
        "QueueStats",
        (
            Field("visible", "integer"),
            Field("leased", "integer"),
            Field("delayed", "integer"),
            Field("dead_lettered", "integer", "Items waiting in the queue's dead-letter queue."),
        ),
    ),
    Shape(
        "Queue",
        (
            Field("name", "string", required=True),
            Field("fifo", "boolean", "Whether the queue is FIFO.", required=True),
            Field("attributes", "QueueAttributes", required=True),
            Field("stats", "QueueStats", required=True),
            Field("created_at", "time", "When the queue was created.", required=True),
        ),
    ),
    Shape(
        "CreateQueueRequest",
        (
            Field("name", "string", required=True),
            Field("attributes", "QueueAttributes"),
            Field(
                "fifo",
                "boolean",
                "A FIFO queue; must agree with the name (FIFO names end in .fifo).",
            ),
        ),
    ),
    Shape("GetQueueRequest", (_queue_in_path(),)),
    Shape(
        "UpdateQueueRequest",
        (
            _queue_in_path(),
            Field("attributes", "QueueAttributes", required=True, resets=True),
        ),
    ),
    Shape("ListQueuesRequest", _listing("queues")),
    Shape("ListQueuesResponse", _page("queues")),
    Shape("DeleteQueueRequest", (_queue_in_path(),)),
    Shape("DeleteQueueResponse", ()),
    Shape("PurgeQueueRequest", (_queue_in_path(),)),
    Shape("PurgeQueueResponse", ()),
    # --- messages -------------------------------------------------------------------------
    Shape(
        "ProduceItem",
        (
            Field("payload", "payload", required=True),
            Field("headers", "headers", absent="empty"),
            Field(
                "dedup_id",
                "string",
                "A repeat within five minutes is answered with the first item's id and not "
                "enqueued again: on a standard queue, on the same node; on a FIFO queue, on any "
                "node and over SQS too (SQS's MessageDeduplicationId, of the same form as "
                "`group`), and required unless the queue has content_based_dedup.",
            ),
            Field("enqueue_at", "time", "Standard queues only: when the item becomes visible."),
            Field(
                "group",
                "string",
                "FIFO queues only, and required there: items of a group are leased in order, "
                "one lease of the group at a time (SQS's MessageGroupId).",
            ),
        ),
    ),
    Shape(
        "ProduceRequest",
        (
            _queue_in_path(),
            Field("items", "ProduceItem", "The items, enqueued in order.", True, repeated=True),
        ),
    ),
    Shape(
        "ProduceError",
        (Field("index", "integer"), Field("code", "string"), Field("message", "string")),
    ),
    Shape(
        "ProduceResponse",
        (
            Field(
                "ids",
                "string",
                "One id per item, in order; null for an item refused.",
                repeated=True,
                nullable=True,
            ),
            Field(
                "errors",
                "ProduceError",
                "Present when some, not all, items were refused.",
                repeated=True,
                absent="empty",
            ),
            Field(
                "sequence_numbers",
                "string",
                "FIFO queues: one per item, in order (a duplicate's is the first item's); null "
                "for an item refused.",
                repeated=True,
                nullable=True,
                absent="empty",
            ),
            Field(
                "duplicates",
                "integer",
                "FIFO queues: the indexes of items that repeated a dedup_id within five "
                "minutes; each was answered with the first item's id and not enqueued again.",
                repeated=True,
                absent="sequence_numbers",
            ),
        ),
    ),
    Shape(
        "LeaseRequest",
        (
            _queue_in_path(),
            Field("max_items", "integer", "At most this many items.", default=1),
            Field("lease_s", "integer", "The lease; default the queue's lease_timeout_s."),
            Field(
                "request_timeout_s",
                "integer",
                "Wait up to this long for the first item.",
                default=0,
            ),
        ),
    ),
    Shape(
        "LeasedItem",
        (
            Field("id", "string", required=True),
            Field("handle", "string", "Names this lease of the item.", required=True),
            Field("attempts", "integer", "Leases so far, this one included.", required=True),
            Field("lease_deadline", "time", "The lease ends no earlier.", required=True),
            Field("enqueued_at", "time", "When the item was produced.", required=True),
            Field("payload", "payload", required=True),
            Field("headers", "headers", absent="empty"),
            Field("group", "string", "FIFO queues: the item's group.", absent="empty"),
            Field(
                "sequence_number",
                "string",
                "FIFO queues: its place in the queue (SQS's SequenceNumber).",
                absent="empty",
            ),
        ),
    ),
    Shape("LeaseResponse", (Field("items", "LeasedItem", repeated=True),)),
    Shape("CompleteRequest", (_queue_in_path(), _HANDLES)),
    Shape("CompleteResponse", _RESULTS),
    Shape(
        "RetryItem",
        (
            Field("handle", "string", required=True),
            Field("retry_at", "time", "Visible again then; absent: now."),
            Field("dead", "boolean", "Move it to the dead-letter queue now.", default=False),
        ),
    ),
    Shape(
        "RetryRequest",
        (_queue_in_path(), Field("items", "RetryItem", "The items to retry.", True, repeated=True)),
    ),
    Shape("RetryResponse", _RESULTS),
    Shape(
        "ExtendRequest",
        (
            _queue_in_path(),
            _HANDLES,
            Field("lease_s", "integer", "The lease's new length, from now.", required=True),
        ),
    ),
    Shape("ExtendResponse", _RESULTS),
    Shape(
        "RedriveRequest",
        (
            _queue_in_path("The dead-letter queue."),
            Field(
                "target", "string", "Where the items go; absent: each to the queue it came from."
            ),
            Field("max_items", "integer", "Move at most this many.", default=10_000),
        ),
    ),
    Shape("RedriveResponse", (Field("moved", "integer"),)),
    Shape(
        "BrowseRequest",
        (
            _queue_in_path(),
            Field("limit", "integer", "Items per page.", default=10, location="query"),
            Field("after", "string", "The previous page's `next`.", location="query"),
        ),
    ),
    Shape(
        "BrowsedItem",
        (
            Field("id", "string", required=True),
            Field(
                "state",
                "string",
                "visible, leased (a consumer holds it until `until`) or delayed (visible at "
                "`until`).",
                required=True,
            ),
            Field("until", "time", "When the lease or the delay runs out.", absent="empty"),
            Field("attempts", "integer", "Leases so far.", required=True),
            Field("enqueued_at", "time", "When the item was produced.", required=True),
            Field("first_leased_at", "time", "When it was first leased.", absent="empty"),
            Field("payload", "payload", required=True),
            Field("headers", "headers", absent="empty"),
            Field("group", "string", "FIFO queues: the item's group.", absent="empty"),
            Field(
                "sequence_number",
                "string",
                "FIFO queues: its place in the queue (SQS's SequenceNumber).",
                absent="empty",
            ),
            Field(
                "dead_letter_source",
                "string",
                "In a dead-letter queue: the queue the item was dead-lettered from.",
                absent="empty",
            ),
        ),
    ),
    Shape(
        "BrowseResponse",
        (
            Field("items", "BrowsedItem", "Oldest first.", repeated=True),
            Field(
                "next",
                "string",
                "Pass as `after` for the next page; null once the queue had no more.",
                nullable=True,
                absent="null",
            ),
        ),
    ),
    # --- exchanges ------------------------------------------------------------------------
    Shape("Binding", (Field("queue", "string", required=True), _ROUTING_KEY)),
    Shape(
        "Exchange",
        (
            Field("name", "string", required=True),
            Field("type", "string", "direct, topic or fanout.", required=True),
            Field("bindings", "Binding", repeated=True),
            Field("created_at", "time", "When the exchange was declared.", required=True),
        ),
    ),
    Shape(
        "CreateExchangeRequest",
        (Field("name", "string", required=True), Field("type", "string", required=True)),
    ),
    Shape("GetExchangeRequest", (_exchange_in_path(),)),
    Shape("ListExchangesRequest", _listing("exchanges")),
    Shape("ListExchangesResponse", _page("exchanges")),
    Shape("DeleteExchangeRequest", (_exchange_in_path(),)),
    Shape("DeleteExchangeResponse", ()),
    Shape(
        "BindingRequest",
        (_exchange_in_path(), Field("queue", "string", required=True), _ROUTING_KEY),
    ),
    Shape(
        "PublishRequest",
        (
            _exchange_in_path(),
            _ROUTING_KEY,
            Field(
                "items",
                "ProduceItem",
                "The items, produced in order to each routed queue.",
                required=True,
                repeated=True,
            ),
        ),
    ),
    Shape(
        "RoutedQueue",
        (
            Field("queue", "string", required=True),
            Field("produced", "ProduceResponse", inline=True),
        ),
    ),
    Shape(
        "PublishResponse",
        (
            Field(
                "routed",
                "RoutedQueue",
                "One entry per queue reached, each once; empty when none.",
                repeated=True,
            ),
        ),
    ),
)

SHAPES: Mapping[str, Shape] = {s.name: s for s in _ALL}


def body_fields(shape: Shape) -> tuple[Field, ...]:
    """The fields a request carries in its JSON body (or query), not in its path."""
    return tuple(f for f in shape.fields if f.location != "path")
