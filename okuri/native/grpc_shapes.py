"""The gRPC surface's messages as the native operations' JSON documents, both ways.

Each request becomes exactly the document its HTTP/JSON twin would send, and each operation's
answer is read back into the response message, so `Queues` and `Messages` stay the one
implementation of every rule: a bad value is refused with the same words on both surfaces.
What protobuf cannot say the JSON way is mapped here, once:
- a payload is bytes: UTF-8 goes as `body` (SQS then sees the same text), other bytes as
  `body_base64`; answers always carry the bytes;
- times are `google.protobuf.Timestamp`, the documents' RFC 3339 text;
- an unset `optional` field is an absent JSON field; JSON's null (reset an attribute) is
  `UpdateQueueRequest.reset_attributes`;
- a refused item's id and sequence number (JSON null) are "";
- a FIFO produce's answer has `sequence_numbers` (one per item, so never empty) and
  `duplicates`; a standard queue's has neither.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.native import codec
from okuri.native.errors import bad_request
from okuri.native.queues import ATTRIBUTES

# google.protobuf.Timestamp's documented range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
_SECONDS_MIN, _SECONDS_MAX = -62_135_596_800, 253_402_300_799


def _present(message: Message, names: tuple[str, ...]) -> dict[str, Any]:
    """The fields of `message` that are set, by name (for `optional` and message fields)."""
    return {n: getattr(message, n) for n in names if message.HasField(n)}


def when(ts: Timestamp, name: str) -> str:
    """A Timestamp as the RFC 3339 text the JSON documents carry (to the millisecond)."""
    if not (_SECONDS_MIN <= ts.seconds <= _SECONDS_MAX and 0 <= ts.nanos <= 999_999_999):
        raise bad_request(f"{name!r} is not a valid google.protobuf.Timestamp.", "wrong_type")
    return codec.rfc3339(ts.seconds * 1000 + ts.nanos // 1_000_000)


def timestamp(text: str) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(datetime.fromisoformat(text))
    return out


def payload_doc(payload: bytes) -> dict[str, str]:
    try:
        return {"body": payload.decode()}
    except UnicodeDecodeError:
        return {"body_base64": codec.b64encode(payload)}


def payload(doc: dict[str, Any]) -> bytes:
    if "body" in doc:
        return str(doc["body"]).encode()
    return base64.b64decode(doc["body_base64"])


# --- requests ----------------------------------------------------------------------------------


def attributes_doc(attrs: pb.QueueAttributes) -> dict[str, Any]:
    return _present(attrs, ATTRIBUTES)


def create_doc(req: pb.CreateQueueRequest) -> codec.Obj:
    doc: codec.Obj = {"name": req.name, **_present(req, ("fifo",))}
    if req.HasField("attributes"):
        doc["attributes"] = attributes_doc(req.attributes)
    return doc


def update_doc(req: pb.UpdateQueueRequest) -> codec.Obj:
    if not req.HasField("attributes") and not req.reset_attributes:
        return {}  # the operation names the missing field
    attrs = attributes_doc(req.attributes)
    for name in req.reset_attributes:
        if name in attrs:
            raise bad_request(
                f"Attribute {name!r} is both set and in 'reset_attributes'.", "invalid_argument"
            )
        attrs[name] = None
    return {"attributes": attrs}


def list_query(req: pb.ListQueuesRequest) -> codec.Obj:
    """The query string HTTP would carry (text values, as `Queues.list` reads them)."""
    query: codec.Obj = {}
    if req.prefix:
        query["prefix"] = req.prefix
    if req.after:
        query["after"] = req.after
    if req.HasField("limit"):
        query["limit"] = str(req.limit)
    return query


def produce_doc(req: pb.ProduceRequest) -> codec.Obj:
    items = []
    for item in req.items:
        doc: codec.Obj = payload_doc(item.payload)
        if item.headers:
            doc["headers"] = dict(item.headers)
        doc.update(_present(item, ("dedup_id", "group")))
        if item.HasField("enqueue_at"):
            doc["enqueue_at"] = when(item.enqueue_at, "enqueue_at")
        items.append(doc)
    return {"items": items}


def exchange_list_query(req: pb.ListExchangesRequest) -> codec.Obj:
    """The query string HTTP would carry for a listing of exchanges."""
    query: codec.Obj = {}
    if req.prefix:
        query["prefix"] = req.prefix
    if req.after:
        query["after"] = req.after
    if req.HasField("limit"):
        query["limit"] = str(req.limit)
    return query


def publish_doc(req: pb.PublishRequest) -> codec.Obj:
    items = produce_doc(pb.ProduceRequest(items=req.items))["items"]
    return {"routing_key": req.routing_key, "items": items}


def lease_doc(req: pb.LeaseRequest) -> codec.Obj:
    return _present(req, ("max_items", "lease_s", "request_timeout_s"))


def retry_doc(req: pb.RetryRequest) -> codec.Obj:
    items = []
    for item in req.items:
        doc: codec.Obj = {"handle": item.handle}
        if item.HasField("retry_at"):
            doc["retry_at"] = when(item.retry_at, "retry_at")
        if item.dead:
            doc["dead"] = True
        items.append(doc)
    return {"items": items}


def extend_doc(req: pb.ExtendRequest) -> codec.Obj:
    return {"handles": list(req.handles), **_present(req, ("lease_s",))}


def redrive_doc(req: pb.RedriveRequest) -> codec.Obj:
    return _present(req, ("target", "max_items"))


# --- answers -----------------------------------------------------------------------------------


def queue(doc: dict[str, Any]) -> pb.Queue:
    attrs = {k: v for k, v in doc["attributes"].items() if v is not None}
    return pb.Queue(
        name=doc["name"],
        fifo=doc["fifo"],
        attributes=pb.QueueAttributes(**attrs),
        stats=pb.QueueStats(**doc["stats"]),
        created_at=timestamp(doc["created_at"]),
    )


def queues(doc: dict[str, Any]) -> pb.ListQueuesResponse:
    return pb.ListQueuesResponse(queues=doc["queues"], next=doc["next"])


def produced(doc: dict[str, Any]) -> pb.ProduceResponse:
    return pb.ProduceResponse(
        ids=[i or "" for i in doc["ids"]],
        errors=[pb.ProduceError(**e) for e in doc.get("errors", ())],
        sequence_numbers=[n or "" for n in doc.get("sequence_numbers", ())],
        duplicates=doc.get("duplicates", ()),
    )


def leased(doc: dict[str, Any]) -> pb.LeaseResponse:
    return pb.LeaseResponse(
        items=[
            pb.LeasedItem(
                id=item["id"],
                handle=item["handle"],
                attempts=item["attempts"],
                lease_deadline=timestamp(item["lease_deadline"]),
                enqueued_at=timestamp(item["enqueued_at"]),
                payload=payload(item),
                headers=item.get("headers", {}),
                group=item.get("group"),
                sequence_number=item.get("sequence_number"),
            )
            for item in doc["items"]
        ]
    )


def exchange(doc: dict[str, Any]) -> pb.Exchange:
    return pb.Exchange(
        name=doc["name"],
        type=doc["type"],
        bindings=[pb.Binding(**b) for b in doc["bindings"]],
        created_at=timestamp(doc["created_at"]),
    )


def exchanges(doc: dict[str, Any]) -> pb.ListExchangesResponse:
    return pb.ListExchangesResponse(exchanges=doc["exchanges"], next=doc["next"])


def published(doc: dict[str, Any]) -> pb.PublishResponse:
    return pb.PublishResponse(
        routed=[pb.RoutedQueue(queue=r["queue"], produced=produced(r)) for r in doc["routed"]]
    )
