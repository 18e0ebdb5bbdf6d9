"""The JSON Schemas of the native API's documents, for its OpenAPI document
(okuri/native/openapi.py), rendered from the API's shapes (okuri/api/shapes.py): a field's
name, type, whether it is required, its default and its words come from there, so the schemas
cannot list other fields than the operations and the gRPC codec read.

What the shapes do not say is the server's and is added here: the bounds, read from
okuri.limits, and the queue-name, exchange-name and FIFO-id patterns, read from the engine,
the rules the operations themselves check. A shape renders as a request (`required` as it
says; a list holds 1 to `native_items_max` entries) or as an answer (a field is required unless
the answer may leave it out).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from okuri import limits
from okuri.api.shapes import SHAPES, Field, Shape
from okuri.engine import EXCHANGE_NAME_RULE as EXCHANGE_NAME
from okuri.engine import EXCHANGE_TYPES, FIFO_ID, QUEUE_NAME

Schema = dict[str, Any]
Mode = Literal["request", "answer"]


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


# Components named after a shape, by how it is used; a shape not named here is written inline.
REQUESTS: Mapping[str, str] = {
    "CreateQueueRequest": "CreateQueue",
    "UpdateQueueRequest": "UpdateQueue",
    "QueueAttributes": "AttributesChange",
    "ProduceRequest": "Produce",
    "ProduceItem": "Item",
    "LeaseRequest": "Lease",
    "CompleteRequest": "Handles",
    "RetryRequest": "Retry",
    "ExtendRequest": "Extend",
    "RedriveRequest": "Redrive",
    "CreateExchangeRequest": "CreateExchange",
    "BindingRequest": "Binding",
    "PublishRequest": "Publish",
}
ANSWERS: Mapping[str, str] = {
    "Queue": "Queue",
    "QueueAttributes": "QueueAttributes",
    "ListQueuesResponse": "QueueList",
    "DeleteQueueResponse": "Empty",
    "PurgeQueueResponse": "Empty",
    "ProduceResponse": "Produced",
    "LeaseResponse": "Leased",
    "LeasedItem": "LeasedItem",
    "CompleteResponse": "Completed",
    "RetryResponse": "Retried",
    "ExtendResponse": "Extended",
    "RedriveResponse": "Redriven",
    "BrowseResponse": "Browsed",
    "BrowsedItem": "BrowsedItem",
    "Exchange": "Exchange",
    "ListExchangesResponse": "ExchangeList",
    "DeleteExchangeResponse": "Empty",
    "PublishResponse": "Published",
}

# --- what the server adds to the shapes ---------------------------------------------------------

_QUEUE_NAMES = {
    ("Queue", "name"),
    ("CreateQueueRequest", "name"),
    ("QueueAttributes", "dead_letter_queue"),
    ("ListQueuesResponse", "queues"),
    ("ListQueuesResponse", "next"),
    ("RedriveRequest", "target"),
    ("BrowsedItem", "dead_letter_source"),
    ("Binding", "queue"),
    ("BindingRequest", "queue"),
    ("RoutedQueue", "queue"),
}
_EXCHANGE_NAMES = {
    ("Exchange", "name"),
    ("CreateExchangeRequest", "name"),
    ("ListExchangesResponse", "exchanges"),
    ("ListExchangesResponse", "next"),
}
_EXCHANGE_TYPES = {("Exchange", "type"), ("CreateExchangeRequest", "type")}
_HANDLE: Schema = {"minLength": 1, "maxLength": limits.native_text_chars_max}
_STALE = ("stale", "gone", "invalid")
_DIGITS = {"pattern": "^[0-9]+$"}
_COUNT = {"minimum": 0}


def _range(low: int, high: int, default: int | None = None) -> Schema:
    doc: Schema = {"minimum": low, "maximum": high}
    return doc if default is None else {**doc, "default": default}


# (shape, field) -> the bounds of the field's value (of each entry, for a list).
_BOUNDS: Mapping[tuple[str, str], Schema] = {
    ("QueueAttributes", "lease_timeout_s"): _range(
        0, limits.visibility_s_max, limits.visibility_s_default
    ),
    ("QueueAttributes", "max_attempts"): _range(1, limits.max_receive_count_max),
    ("QueueAttributes", "retention_s"): _range(
        limits.retention_s_min, limits.retention_s_max, limits.retention_s_default
    ),
    ("QueueAttributes", "delay_s"): _range(0, limits.delay_s_max),
    ("QueueAttributes", "expires_s"): _range(limits.expires_s_min, limits.expires_s_max),
    **{("QueueStats", n): _COUNT for n in SHAPES["QueueStats"].names},
    ("ListQueuesRequest", "prefix"): {"maxLength": limits.queue_name_chars_max},
    ("ListQueuesRequest", "limit"): _range(1, limits.native_list_max, limits.native_list_max),
    ("ListQueuesRequest", "after"): {"maxLength": limits.queue_name_chars_max},
    ("BrowseRequest", "limit"): _range(1, limits.browse_items_max, limits.browse_items_default),
    ("BrowseRequest", "after"): {"maxLength": 64},
    ("BrowsedItem", "state"): {"enum": ["visible", "leased", "delayed"]},
    ("BrowsedItem", "attempts"): _COUNT,
    ("ProduceItem", "body"): {"maxLength": limits.request_bytes_max},
    ("ProduceItem", "body_base64"): {"maxLength": limits.request_bytes_max},
    ("ProduceItem", "dedup_id"): {"maxLength": limits.dedup_id_chars_max},
    ("ProduceItem", "group"): {"pattern": f"^{FIFO_ID.pattern}$"},
    ("ProduceError", "index"): _COUNT,
    ("ProduceResponse", "sequence_numbers"): _DIGITS,
    ("ProduceResponse", "duplicates"): _COUNT,
    ("LeaseRequest", "max_items"): _range(1, limits.native_items_max),
    ("LeaseRequest", "lease_s"): _range(1, limits.visibility_s_max),
    ("LeaseRequest", "request_timeout_s"): _range(0, limits.wait_s_max),
    ("LeasedItem", "attempts"): {"minimum": 1},
    ("LeasedItem", "sequence_number"): _DIGITS,
    ("CompleteRequest", "handles"): _HANDLE,
    ("CompleteResponse", "results"): {"enum": ["completed", *_STALE]},
    ("RetryItem", "handle"): _HANDLE,
    ("RetryResponse", "results"): {"enum": ["retried", "dead", *_STALE]},
    ("ExtendRequest", "handles"): _HANDLE,
    ("ExtendRequest", "lease_s"): _range(1, limits.visibility_s_max),
    ("ExtendResponse", "results"): {"enum": ["extended", *_STALE]},
    ("RedriveRequest", "max_items"): _range(1, 1_000_000),
    ("RedriveResponse", "moved"): _COUNT,
    **{
        (shape, "routing_key"): {"maxLength": limits.routing_key_chars_max}
        for shape in ("Binding", "BindingRequest", "PublishRequest")
    },
    ("ListExchangesRequest", "prefix"): {"maxLength": limits.exchange_name_chars_max},
    ("ListExchangesRequest", "limit"): _range(1, limits.native_list_max, limits.native_list_max),
    ("ListExchangesRequest", "after"): {"maxLength": limits.exchange_name_chars_max},
}
# (shape, field) -> bounds of the list itself.
_LIST_BOUNDS: Mapping[tuple[str, str], Schema] = {
    ("Exchange", "bindings"): {"maxItems": limits.exchange_bindings_max},
}
# (shape, field) -> what a field's words say of its bounds.
_MORE_WORDS: Mapping[tuple[str, str], str] = {
    ("ProduceItem", "enqueue_at"): f" At most {limits.schedule_s_max} s ahead; a time past is now.",
    ("RetryItem", "retry_at"): f" At most {limits.visibility_s_max} s ahead.",
}
_ITEM_HEADERS: Schema = {
    "type": "object",
    "maxProperties": limits.native_headers_max,
    "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,256}$"},
    "additionalProperties": {
        "type": "string",
        "minLength": 1,
        "maxLength": limits.native_text_chars_max,
    },
    "description": "String values; names as SQS message attributes allow (not starting with "
    "'AWS.', 'Amazon.' or '.', no '..', not ending in '.').",
}

# --- rendering ---------------------------------------------------------------------------------


def render(shape: Shape, mode: Mode) -> Schema:
    """`shape` as a JSON object schema with exactly its fields (the server refuses others)."""
    properties: Schema = {}
    required: list[str] = []
    payload = False
    for f in shape.fields:
        if f.location == "path":
            continue
        if f.inline:
            inner = render(SHAPES[f.type], mode)
            properties |= inner["properties"]
            required += inner.get("required", [])
        elif f.type == "payload":
            payload = True
            properties |= _payload(shape, mode)
        else:
            properties[f.name] = field_schema(shape, f, mode)
            if f.required if mode == "request" else f.absent in ("never", "null"):
                required.append(f.name)
    doc: Schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        doc["required"] = required
    if payload:
        doc["oneOf"] = [{"required": ["body"]}, {"required": ["body_base64"]}]
    return doc


def field_schema(shape: Shape, f: Field, mode: Mode) -> Schema:
    """One field's schema: its type, nullability, list-ness, bounds, default and words."""
    key = (shape.name, f.name)
    if key == ("ProduceItem", "headers") and mode == "request":
        return _ITEM_HEADERS
    one = _one(shape, f, mode)
    if f.nullable and f.repeated:
        one = {**one, "type": [one["type"], "null"]}
    if f.repeated:
        doc: Schema = {"type": "array", "items": one, **_LIST_BOUNDS.get(key, {})}
        if mode == "request":
            doc |= {"minItems": 1, "maxItems": limits.native_items_max}
    elif f.nullable and "$ref" in one:
        doc = {"oneOf": [one, {"type": "null"}]}
    elif f.nullable:
        doc = {**one, "type": [one["type"], "null"]}
    else:
        doc = one
    if f.default is not None and not f.repeated:
        doc = {**doc, "default": f.default}
    words = f.doc + _MORE_WORDS.get(key, "")
    if words:
        doc = {**doc, "description": words}
    return doc


def _one(shape: Shape, f: Field, mode: Mode) -> Schema:
    """The schema of one value of `f` (one entry, for a list)."""
    key = (shape.name, f.name)
    if key in _QUEUE_NAMES:
        return ref("QueueName")
    if key in _EXCHANGE_NAMES:
        return ref("ExchangeName")
    if key in _EXCHANGE_TYPES:
        return ref("ExchangeType")
    if f.type in SHAPES:
        named = (REQUESTS if mode == "request" else ANSWERS).get(f.type)
        return ref(named) if named else render(SHAPES[f.type], mode)
    bases: dict[str, Schema] = {
        "string": {"type": "string"},
        "integer": {"type": "integer"},
        "boolean": {"type": "boolean"},
        "time": {"type": "string", "format": "date-time"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    }
    return {**bases[f.type], **_BOUNDS.get(key, {})}


def _payload(shape: Shape, mode: Mode) -> Schema:
    """A payload's two spellings, exactly one of which a document carries."""
    words = (
        ("The payload as UTF-8 text.", "The payload as base64 bytes.")
        if mode == "request"
        else ("The payload, when it is UTF-8.", "The payload, when it is not UTF-8.")
    )
    return {
        "body": {
            "type": "string",
            **_BOUNDS.get((shape.name, "body"), {}),
            "description": words[0],
        },
        "body_base64": {
            "type": "string",
            **_BOUNDS.get((shape.name, "body_base64"), {}),
            "contentEncoding": "base64",
            "description": words[1],
        },
    }


def _components() -> dict[str, Schema]:
    out: dict[str, Schema] = {}
    for mode, names in (("request", REQUESTS), ("answer", ANSWERS)):
        for shape_name, component in names.items():
            out[component] = render(SHAPES[shape_name], mode)  # type: ignore[arg-type]
    out["AttributesChange"]["description"] = "Only the attributes given change."
    return out


SCHEMAS: dict[str, Schema] = {
    "QueueName": {
        "type": "string",
        "pattern": f"^(?:{QUEUE_NAME.pattern})$",
        "description": f"1 to {limits.queue_name_chars_max} letters, digits, '-' or '_' "
        "(a FIFO queue's name ends in .fifo).",
    },
    "ExchangeName": {
        "type": "string",
        "pattern": f"^(?:{EXCHANGE_NAME.pattern})$",
        "description": f"1 to {limits.exchange_name_chars_max} letters, digits, '-' or '_'.",
    },
    "ExchangeType": {
        "type": "string",
        "enum": list(EXCHANGE_TYPES),
        "description": "direct: binding key == routing key; topic: AMQP patterns; fanout: "
        "every bound queue.",
    },
    "Error": {
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "code": {"type": "string", "description": "Stable; for programs."},
                    "message": {"type": "string", "minLength": 1, "description": "For people."},
                },
                "additionalProperties": False,
                "required": ["code", "message"],
            }
        },
        "additionalProperties": False,
        "required": ["error"],
    },
    **_components(),
}
