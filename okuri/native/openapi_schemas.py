"""The JSON Schemas of the native API's request and answer documents, for its OpenAPI
document (okuri/native/openapi.py). Every bound is read from okuri.limits and the queue-name
pattern from the engine, the rules the operations themselves check, so the two cannot differ.
"""

from __future__ import annotations

from typing import Any

from okuri import limits
from okuri.engine import EXCHANGE_NAME_RULE as EXCHANGE_NAME
from okuri.engine import EXCHANGE_TYPES, FIFO_ID, QUEUE_NAME

Schema = dict[str, Any]

# --- building blocks -------------------------------------------------------------------------


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def obj(required: dict[str, Schema], optional: dict[str, Schema] | None = None) -> Schema:
    """A JSON object with exactly these fields (the server refuses unknown ones)."""
    doc: Schema = {
        "type": "object",
        "properties": {**required, **(optional or {})},
        "additionalProperties": False,
    }
    if required:
        doc["required"] = list(required)
    return doc


def integer(low: int, high: int, description: str, default: int | None = None) -> Schema:
    doc: Schema = {
        "type": "integer",
        "minimum": low,
        "maximum": high,
        "description": description,
    }
    if default is not None:
        doc["default"] = default
    return doc


def _text(most: int, description: str) -> Schema:
    return {"type": "string", "maxLength": most, "description": description}


def _time(description: str) -> Schema:
    return {"type": "string", "format": "date-time", "description": description}


def _items(schema: Schema, description: str) -> Schema:
    return {
        "type": "array",
        "items": schema,
        "minItems": 1,
        "maxItems": limits.native_items_max,
        "description": description,
    }


def _results(*outcomes: str) -> Schema:
    return obj(
        {
            "results": {
                "type": "array",
                "items": {"type": "string", "enum": list(outcomes)},
                "description": "One outcome per handle, in order.",
            }
        }
    )


_STALE = ("stale", "gone", "invalid")
_HANDLE = {"type": "string", "minLength": 1, "maxLength": limits.native_text_chars_max}

# --- schemas ---------------------------------------------------------------------------------

_ATTRIBUTES: dict[str, Schema] = {
    "lease_timeout_s": integer(
        0,
        limits.visibility_s_max,
        "The default lease (SQS's VisibilityTimeout).",
        limits.visibility_s_default,
    ),
    "max_attempts": {
        "type": ["integer", "null"],
        "minimum": 1,
        "maximum": limits.max_receive_count_max,
        "description": "After this many leases an item goes to the dead-letter queue; null: never.",
    },
    "dead_letter_queue": {
        "oneOf": [ref("QueueName"), {"type": "null"}],
        "description": "Where dead items go; null: `{queue}-dlq` when an item is sent there.",
    },
    "retention_s": integer(
        limits.retention_s_min,
        limits.retention_s_max,
        "How long an item is kept.",
        limits.retention_s_default,
    ),
    "delay_s": integer(0, limits.delay_s_max, "How long a new item waits before it is visible.", 0),
    "expires_s": {
        "type": ["integer", "null"],
        "minimum": limits.expires_s_min,
        "maximum": limits.expires_s_max,
        "description": "Delete the queue, with its items, once nobody has used it (leased, "
        "waited on, read or declared it; producing does not count) for this long (RabbitMQ's "
        "x-expires); null: never.",
    },
}
# A FIFO queue's only (SQS's ContentBasedDeduplication); absent on a standard queue.
_FIFO_ATTRIBUTES: dict[str, Schema] = {
    "content_based_dedup": {
        "type": "boolean",
        "default": False,
        "description": "FIFO queues only: an item without a dedup_id is deduplicated by the "
        "SHA-256 of its bytes.",
    },
}
_FIFO_ID = {"type": "string", "pattern": f"^{FIFO_ID.pattern}$"}

SCHEMAS: dict[str, Schema] = {
    "QueueName": {
        "type": "string",
        "pattern": f"^(?:{QUEUE_NAME.pattern})$",
        "description": f"1 to {limits.queue_name_chars_max} letters, digits, '-' or '_' "
        "(a FIFO queue's name ends in .fifo).",
    },
    "Error": obj(
        {
            "error": obj(
                {
                    "code": {"type": "string", "description": "Stable; for programs."},
                    "message": {"type": "string", "minLength": 1, "description": "For people."},
                }
            )
        }
    ),
    "Empty": obj({}),
    "AttributesChange": {
        **obj({}, {**_ATTRIBUTES, **_FIFO_ATTRIBUTES}),
        "description": "Only the attributes given change.",
    },
    "QueueAttributes": obj(_ATTRIBUTES, _FIFO_ATTRIBUTES),
    "Queue": obj(
        {
            "name": ref("QueueName"),
            "fifo": {"type": "boolean", "description": "Whether the queue is FIFO."},
            "attributes": ref("QueueAttributes"),
            "stats": obj(
                {
                    "visible": {"type": "integer", "minimum": 0},
                    "leased": {"type": "integer", "minimum": 0},
                    "delayed": {"type": "integer", "minimum": 0},
                    "dead_lettered": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Items waiting in the queue's dead-letter queue.",
                    },
                }
            ),
            "created_at": _time("When the queue was created."),
        }
    ),
    "CreateQueue": obj(
        {"name": ref("QueueName")},
        {
            "fifo": {
                "type": "boolean",
                "description": "A FIFO queue; must agree with the name (FIFO names end in .fifo).",
            },
            "attributes": ref("AttributesChange"),
        },
    ),
    "UpdateQueue": obj({"attributes": ref("AttributesChange")}),
    "QueueList": obj(
        {
            "queues": {"type": "array", "items": ref("QueueName")},
            "next": {
                "oneOf": [ref("QueueName"), {"type": "null"}],
                "description": "Pass as `after` for the next page; null on the last.",
            },
        }
    ),
    "Item": {
        **obj(
            {},
            {
                "body": _text(limits.request_bytes_max, "The payload as UTF-8 text."),
                "body_base64": {
                    **_text(limits.request_bytes_max, "The payload as base64 bytes."),
                    "contentEncoding": "base64",
                },
                "headers": {
                    "type": "object",
                    "maxProperties": limits.native_headers_max,
                    "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,256}$"},
                    "additionalProperties": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": limits.native_text_chars_max,
                    },
                    "description": "String values; names as SQS message attributes allow (not "
                    "starting with 'AWS.', 'Amazon.' or '.', no '..', not ending in '.').",
                },
                "group": {
                    **_FIFO_ID,
                    "description": "FIFO queues only, and required there: items of a group are "
                    "leased in order, one lease of the group at a time (SQS's MessageGroupId).",
                },
                "dedup_id": _text(
                    limits.dedup_id_chars_max,
                    "A repeat within five minutes is answered with the first item's id and "
                    "not enqueued again: on a standard queue, on the same node; on a FIFO "
                    "queue, on any node and over SQS too (SQS's MessageDeduplicationId, of the "
                    "same form as `group`), and required unless the queue has "
                    "content_based_dedup.",
                ),
                "enqueue_at": _time(
                    f"Standard queues only: when the item becomes visible; at most "
                    f"{limits.schedule_s_max} s ahead; a time past is now."
                ),
            },
        ),
        "oneOf": [{"required": ["body"]}, {"required": ["body_base64"]}],
    },
    "Produce": obj({"items": _items(ref("Item"), "The items, enqueued in order.")}),
    "Produced": obj(
        {
            "ids": {
                "type": "array",
                "items": {"type": ["string", "null"]},
                "description": "One id per item, in order; null for an item refused.",
            }
        },
        {
            "sequence_numbers": {
                "type": "array",
                "items": {"type": ["string", "null"], "pattern": "^[0-9]+$"},
                "description": "FIFO queues: one per item, in order (a duplicate's is the first "
                "item's); null for an item refused.",
            },
            "duplicates": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0},
                "description": "FIFO queues: the indexes of items that repeated a dedup_id "
                "within five minutes; each was answered with the first item's id and not "
                "enqueued again.",
            },
            "errors": {
                "type": "array",
                "items": obj(
                    {
                        "index": {"type": "integer", "minimum": 0},
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                    }
                ),
                "description": "Present when some, not all, items were refused.",
            },
        },
    ),
    "Lease": obj(
        {},
        {
            "max_items": integer(1, limits.native_items_max, "At most this many items.", 1),
            "lease_s": integer(
                1, limits.visibility_s_max, "The lease; default the queue's lease_timeout_s."
            ),
            "request_timeout_s": integer(
                0, limits.wait_s_max, "Wait up to this long for the first item.", 0
            ),
        },
    ),
    "LeasedItem": {
        **obj(
            {
                "id": {"type": "string"},
                "handle": {"type": "string", "description": "Names this lease of the item."},
                "attempts": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Leases so far, this one included.",
                },
                "lease_deadline": _time("The lease ends no earlier."),
                "enqueued_at": _time("When the item was produced."),
            },
            {
                "body": {"type": "string", "description": "The payload, when it is UTF-8."},
                "body_base64": {
                    "type": "string",
                    "contentEncoding": "base64",
                    "description": "The payload, when it is not UTF-8.",
                },
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "group": {"type": "string", "description": "FIFO queues: the item's group."},
                "sequence_number": {
                    "type": "string",
                    "pattern": "^[0-9]+$",
                    "description": "FIFO queues: its place in the queue (SQS's SequenceNumber).",
                },
            },
        ),
        "oneOf": [{"required": ["body"]}, {"required": ["body_base64"]}],
    },
    "Leased": obj({"items": {"type": "array", "items": ref("LeasedItem")}}),
    "Handles": obj({"handles": _items(_HANDLE, "Lease handles.")}),
    "Completed": _results("completed", *_STALE),
    "Extend": obj(
        {
            "handles": _items(_HANDLE, "Lease handles."),
            "lease_s": integer(1, limits.visibility_s_max, "The lease's new length, from now."),
        }
    ),
    "Extended": _results("extended", *_STALE),
    "Retry": obj(
        {
            "items": _items(
                obj(
                    {"handle": _HANDLE},
                    {
                        "retry_at": _time(
                            f"Visible again then (at most {limits.visibility_s_max} s ahead); "
                            "absent: now."
                        ),
                        "dead": {
                            "type": "boolean",
                            "description": "Move it to the dead-letter queue now.",
                        },
                    },
                ),
                "The items to retry.",
            )
        }
    ),
    "Retried": _results("retried", "dead", *_STALE),
    "Redrive": obj(
        {},
        {
            "target": ref("QueueName"),
            "max_items": integer(1, 1_000_000, "Move at most this many.", 10_000),
        },
    ),
    "Redriven": obj({"moved": {"type": "integer", "minimum": 0}}),
}

_ROUTING_KEY = {
    "type": "string",
    "maxLength": limits.routing_key_chars_max,
    "default": "",
    "description": "Words separated by '.'; in a topic exchange's binding '*' stands for "
    "exactly one word and '#' for zero or more.",
}
_BINDING = obj({"queue": ref("QueueName"), "routing_key": _ROUTING_KEY})
_PRODUCED = SCHEMAS["Produced"]

SCHEMAS |= {
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
    "Exchange": obj(
        {
            "name": ref("ExchangeName"),
            "type": ref("ExchangeType"),
            "bindings": {
                "type": "array",
                "items": _BINDING,
                "maxItems": limits.exchange_bindings_max,
            },
            "created_at": _time("When the exchange was declared."),
        }
    ),
    "CreateExchange": obj({"name": ref("ExchangeName"), "type": ref("ExchangeType")}),
    "ExchangeList": obj(
        {
            "exchanges": {"type": "array", "items": ref("ExchangeName")},
            "next": {
                "oneOf": [ref("ExchangeName"), {"type": "null"}],
                "description": "Pass as `after` for the next page; null on the last.",
            },
        }
    ),
    "Binding": obj({"queue": ref("QueueName")}, {"routing_key": _ROUTING_KEY}),
    "Publish": obj(
        {"items": _items(ref("Item"), "The items, produced in order to each routed queue.")},
        {"routing_key": _ROUTING_KEY},
    ),
    "Published": obj(
        {
            "routed": {
                "type": "array",
                "description": "One entry per queue reached, each once; empty when none.",
                "items": {
                    **_PRODUCED,
                    "properties": {"queue": ref("QueueName"), **_PRODUCED["properties"]},
                    "required": ["queue", *_PRODUCED["required"]],
                },
            }
        }
    ),
}
