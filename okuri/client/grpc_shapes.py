"""The client's JSON-shaped documents as `okuri.api.v1.QueueService` messages, both ways: pure.

A request document becomes exactly the message whose server-side reading
(okuri/native/grpc_shapes.py) is that document again, and an answer message becomes exactly
the document the HTTP answer would be, so okuri/client/operations.py reads both wires with the
same parsers. tests/unit/test_client_grpc.py holds every operation to that, through the
server's own shapes. What protobuf says otherwise than JSON is mapped here, once (the list in
docs/native-api.md's gRPC section):

- fields have the JSON names, so a request document is `json_format.ParseDict`'s input, with
  the queue an operation acts on as the field `queue`; JSON's null on create is the default,
  which is what an unset field asks for;
- a payload is bytes: `body` (text) and `body_base64` go as `payload`; a leased payload comes
  back as `body` when it is UTF-8, else `body_base64`, as the HTTP answer carries it;
- an update's null (reset an attribute) is `reset_attributes`;
- times are `google.protobuf.Timestamp`, the documents' RFC 3339 text to the millisecond;
- an unset `optional` field in an answer is JSON's null where the HTTP answer always has the
  field, else absent (a FIFO queue's `content_based_dedup`, a leased item's `group` and
  `sequence_number`); a refused item's id or sequence number "" is null;
- a produce's `sequence_numbers` and `duplicates` are there for a FIFO queue only, which
  answers a sequence number for every item (so a standard queue's answer has none).

A document that protobuf cannot carry (a number past int32, a time past year 9999) is refused
here as a `BadRequestError`, before anything is sent.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from okuri.api.operations import SPECS
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.client.errors import BadRequestError, bad_answer
from okuri.client.transport import Doc, Operation, Request

SERVICE = pb.DESCRIPTOR.services_by_name["QueueService"]

# operation -> RPC of okuri.api.v1.QueueService, from the API's one table of operations.
RPCS: Mapping[Operation, str] = {name: spec.rpc for name, spec in SPECS.items()}
# Operations that name what they act on in their document, not their path.
NAMED_IN_DOC: frozenset[Operation] = frozenset(
    name for name, spec in SPECS.items() if spec.path_field is None
)
# Operations on an exchange: the name they act on is the field `exchange`.
ON_EXCHANGE: frozenset[Operation] = frozenset(
    name for name, spec in SPECS.items() if spec.path_field and spec.path_field.name == "exchange"
)
ATTRIBUTES = tuple(f.name for f in pb.QueueAttributes.DESCRIPTOR.fields)
FIFO_ATTRIBUTES = frozenset({"content_based_dedup"})  # absent from a standard queue's answer
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC: its method path and its request and response messages."""

    path: str
    request: type[Message]
    response: type[Message]


def _rpc(name: str) -> Rpc:
    method = SERVICE.methods_by_name[name]
    return Rpc(
        f"/{SERVICE.full_name}/{name}",
        _message_class(method.input_type.name),
        _message_class(method.output_type.name),
    )


def _message_class(name: str) -> type[Message]:
    cls = getattr(pb, name)
    assert isinstance(cls, type) and issubclass(cls, Message)
    return cls


RPC: Mapping[Operation, Rpc] = {op: _rpc(name) for op, name in RPCS.items()}


# --- requests ----------------------------------------------------------------------------------


def to_message(request: Request) -> Message:
    """The RPC's request message for `request`."""
    doc: Doc = dict(request.doc)
    if request.operation in ON_EXCHANGE:
        doc["exchange"] = request.queue
    elif request.operation not in NAMED_IN_DOC:
        doc["queue"] = request.queue
    if request.operation in ("produce", "publish"):
        doc["items"] = [_produce_item(item) for item in doc.get("items", ())]
    elif request.operation == "update_queue":
        doc.update(_update_attributes(doc.get("attributes")))
    try:
        return json_format.ParseDict(doc, RPC[request.operation].request())
    except json_format.ParseError as exc:
        text = str(exc)
        code = "out_of_range" if "range" in text or "not valid" in text else "wrong_type"
        raise BadRequestError(400, code, f"Cannot be sent over gRPC: {text}") from exc


def _produce_item(item: Any) -> Any:
    if not isinstance(item, Mapping):
        return item  # ParseDict refuses it
    doc = dict(item)
    if "body" in doc:
        body = doc.pop("body")
        doc["payload"] = base64.b64encode(str(body).encode()).decode("ascii")
    elif "body_base64" in doc:
        doc["payload"] = doc.pop("body_base64")
    return doc


def _update_attributes(attrs: Any) -> Doc:
    """An update's attributes: those given as `attributes` (present even if empty: the update
    names its attributes), those given as null in `reset_attributes`."""
    if not isinstance(attrs, Mapping):
        return {}
    out: Doc = {"attributes": {k: v for k, v in attrs.items() if v is not None}}
    reset = [k for k, v in attrs.items() if v is None]
    if reset:
        out["reset_attributes"] = reset
    return out


# --- answers -----------------------------------------------------------------------------------


def from_message(message: Message) -> Doc:
    """The document the HTTP answer to the same request would be."""
    read = _READERS.get(message.DESCRIPTOR.name)
    if read is None:
        raise bad_answer(f"a {message.DESCRIPTOR.full_name} message")
    return read(message)


def rfc3339(ts: Timestamp) -> str:
    """A Timestamp as the answers' RFC 3339 text in UTC, to the millisecond."""
    try:
        when = _EPOCH + timedelta(seconds=ts.seconds, milliseconds=ts.nanos // 1_000_000)
    except OverflowError:
        raise bad_answer("a time out of range") from None
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def _optional(message: Message, name: str) -> Any:
    return getattr(message, name) if message.HasField(name) else None


def _queue(m: pb.Queue) -> Doc:
    return {
        "name": m.name,
        "fifo": m.fifo,
        "attributes": {
            name: _optional(m.attributes, name)
            for name in ATTRIBUTES
            if name not in FIFO_ATTRIBUTES or m.attributes.HasField(name)
        },
        "stats": {"visible": m.stats.visible, "leased": m.stats.leased, "delayed": m.stats.delayed},
        "created_at": rfc3339(m.created_at),
    }


def _queues(m: pb.ListQueuesResponse) -> Doc:
    return {"queues": list(m.queues), "next": _optional(m, "next")}


def _produced(m: pb.ProduceResponse) -> Doc:
    doc: Doc = {"ids": [i or None for i in m.ids]}
    if m.sequence_numbers:
        doc["sequence_numbers"] = [n or None for n in m.sequence_numbers]
        doc["duplicates"] = list(m.duplicates)
    if m.errors:
        doc["errors"] = [{"index": e.index, "code": e.code, "message": e.message} for e in m.errors]
    return doc


def _leased_item(m: pb.LeasedItem) -> Doc:
    doc: Doc = {
        "id": m.id,
        "handle": m.handle,
        "attempts": m.attempts,
        "lease_deadline": rfc3339(m.lease_deadline),
        "enqueued_at": rfc3339(m.enqueued_at),
    }
    try:
        doc["body"] = m.payload.decode()
    except UnicodeDecodeError:
        doc["body_base64"] = base64.b64encode(m.payload).decode("ascii")
    if m.headers:
        doc["headers"] = dict(m.headers)
    for name in ("group", "sequence_number"):
        if m.HasField(name):
            doc[name] = getattr(m, name)
    return doc


def _results(m: Any) -> Doc:
    return {"results": list(m.results)}


def _exchange(m: pb.Exchange) -> Doc:
    return {
        "name": m.name,
        "type": m.type,
        "bindings": [{"queue": b.queue, "routing_key": b.routing_key} for b in m.bindings],
        "created_at": rfc3339(m.created_at),
    }


def _published(m: pb.PublishResponse) -> Doc:
    return {"routed": [{"queue": r.queue, **_produced(r.produced)} for r in m.routed]}


_READERS: Mapping[str, Callable[[Any], Doc]] = {
    "Queue": _queue,
    "ListQueuesResponse": _queues,
    "DeleteQueueResponse": lambda m: {},
    "PurgeQueueResponse": lambda m: {},
    "ProduceResponse": _produced,
    "LeaseResponse": lambda m: {"items": [_leased_item(i) for i in m.items]},
    "CompleteResponse": _results,
    "RetryResponse": _results,
    "ExtendResponse": _results,
    "RedriveResponse": lambda m: {"moved": m.moved},
    "Exchange": _exchange,
    "ListExchangesResponse": lambda m: {
        "exchanges": list(m.exchanges),
        "next": _optional(m, "next"),
    },
    "DeleteExchangeResponse": lambda m: {},
    "PublishResponse": _published,
}
