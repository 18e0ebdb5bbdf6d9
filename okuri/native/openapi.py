"""The native HTTP API described as an OpenAPI 3.1 document, served at GET /v1/openapi.json.

Built here from okuri's own tables rather than kept as a JSON file beside them: the paths come
from the route table (okuri/native/routes.py), the schemas from okuri/native/openapi_schemas.py
(bounds from okuri.limits), so the document cannot drift from what the server checks. Each
request body carries examples that the tests send to a real server; each answer's schema is
checked against real answers (tests/surface/test_native_openapi.py).
"""

from __future__ import annotations

from typing import Any

from okuri import __version__, limits
from okuri.native.openapi_schemas import SCHEMAS, Schema, integer, ref
from okuri.native.routes import EXCHANGE, QUEUE, ROUTES, Route

_EXAMPLE_HANDLE = "okr1ZXhhbXBsZQ"  # shaped like a lease handle; names none: "invalid"

# --- errors ----------------------------------------------------------------------------------

_ERRORS: dict[str, tuple[str, str]] = {  # status -> (response name, what it means)
    "400": (
        "BadRequest",
        "The request is malformed: bad_json, unknown_field, wrong_type, missing_field, "
        "out_of_range, invalid_queue_name, invalid_exchange_name, invalid_argument, "
        "invalid_request.",
    ),
    "401": ("Unauthorized", "No valid bearer key: missing_key, bad_key, no_keys_configured."),
    "403": ("Forbidden", "forbidden: the key's role, or its namespace, does not allow this."),
    "404": ("NotFound", "queue_not_found, exchange_not_found."),
    "409": (
        "Conflict",
        "queue_exists: the queue exists with other attributes; exchange_exists: the exchange "
        "exists with another type.",
    ),
    "413": ("TooLarge", "too_large: an item over the queue's size, or a request over 4 MiB."),
    "429": (
        "Overloaded",
        "The server is shedding load and did nothing; retry after Retry-After seconds.",
    ),
    "500": ("Internal", "internal: the request could not be processed."),
    "503": (
        "Unavailable",
        "unavailable: the bucket did not answer in time; the outcome is unknown.",
    ),
}


def _error_response(status: str) -> Schema:
    description = _ERRORS[status][1]
    doc: Schema = {
        "description": description,
        "content": {"application/json": {"schema": ref("Error")}},
    }
    if status == "401":
        doc["headers"] = {"WWW-Authenticate": {"schema": {"type": "string", "const": "Bearer"}}}
    if status == "429":
        doc["headers"] = {
            "Retry-After": {
                "schema": {"type": "integer", "minimum": 0},
                "description": "Seconds to wait before retrying.",
            }
        }
    return doc


# --- operations ------------------------------------------------------------------------------

# route -> (summary, request schema or None, answer schema, extra error statuses, examples)
_OPS: dict[Route, tuple[str, str | None, str, tuple[str, ...], dict[str, Any]]] = {
    "list_queues": ("List queues, a page at a time.", None, "QueueList", (), {}),
    "create_queue": (
        "Create a queue (again with the same attributes: the same answer).",
        "CreateQueue",
        "Queue",
        ("409",),
        {
            "dead_letter_queue": {"name": "emails-dlq"},
            "queue": {
                "name": "emails",
                "attributes": {
                    "lease_timeout_s": 60,
                    "max_attempts": 5,
                    "dead_letter_queue": "emails-dlq",
                },
            },
        },
    ),
    "get_queue": ("A queue's attributes and live counts.", None, "Queue", ("404",), {}),
    "update_queue": (
        "Change some of a queue's attributes.",
        "UpdateQueue",
        "Queue",
        ("404",),
        {"longer_leases": {"attributes": {"lease_timeout_s": 120}}},
    ),
    "delete_queue": ("Delete a queue and its items.", None, "Empty", ("404",), {}),
    "purge_queue": ("Delete every item of a queue.", None, "Empty", ("404",), {}),
    "produce": (
        "Enqueue items.",
        "Produce",
        "Produced",
        ("404", "413"),
        {
            "text_and_bytes": {
                "items": [
                    {"body": "hello", "headers": {"to": "ada@example.com"}},
                    {"body_base64": "AAEC/w==", "dedup_id": "upload-7"},
                ]
            }
        },
    ),
    "lease": (
        "Lease items, waiting for the first up to request_timeout_s.",
        "Lease",
        "Leased",
        ("404",),
        {"long_poll": {"max_items": 10, "lease_s": 30, "request_timeout_s": 1}},
    ),
    "complete": (
        "Finish leased items.",
        "Handles",
        "Completed",
        ("404",),
        {"one": {"handles": [_EXAMPLE_HANDLE]}},
    ),
    "retry": (
        "Make leased items visible again now or at a time, or send them to the dead-letter queue.",
        "Retry",
        "Retried",
        ("404",),
        {
            "now": {"items": [{"handle": _EXAMPLE_HANDLE}]},
            "at_a_time": {
                "items": [{"handle": _EXAMPLE_HANDLE, "retry_at": "2026-01-01T00:00:00Z"}]
            },
            "dead": {"items": [{"handle": _EXAMPLE_HANDLE, "dead": True}]},
        },
    ),
    "extend": (
        "Lengthen leases.",
        "Extend",
        "Extended",
        ("404",),
        {"one": {"handles": [_EXAMPLE_HANDLE], "lease_s": 60}},
    ),
    "redrive": (
        "Move a dead-letter queue's items back to `target`, else each to the queue it came from.",
        "Redrive",
        "Redriven",
        ("404",),
        {"back": {"target": "emails"}},
    ),
    "list_exchanges": ("List exchanges, a page at a time.", None, "ExchangeList", (), {}),
    "create_exchange": (
        "Declare an exchange (again with the same type: the same answer).",
        "CreateExchange",
        "Exchange",
        ("409",),
        {"topic": {"name": "events", "type": "topic"}},
    ),
    "get_exchange": ("An exchange and its bindings.", None, "Exchange", ("404",), {}),
    "delete_exchange": ("Delete an exchange (its queues stay).", None, "Empty", ("404",), {}),
    "bind": (
        "Bind a queue to the exchange under a routing key (again: no change).",
        "Binding",
        "Exchange",
        ("404",),
        {"all_email_events": {"queue": "emails", "routing_key": "email.#"}},
    ),
    "unbind": (
        "Remove a binding (one that is not there: no change).",
        "Binding",
        "Exchange",
        ("404",),
        {"all_email_events": {"queue": "emails", "routing_key": "email.#"}},
    ),
    "publish": (
        "Produce items to every queue the routing key reaches, each queue once.",
        "Publish",
        "Published",
        ("404", "413"),
        {"sent": {"routing_key": "email.sent", "items": [{"body": "hello"}]}},
    ),
}

# The queue each operation's examples name (a redrive starts from the dead-letter queue).
EXAMPLE_QUEUE: dict[Route, str] = {route: "emails" for route in _OPS} | {"redrive": "emails-dlq"}
# The exchange each exchange operation's examples name.
EXAMPLE_EXCHANGE = "events"

_LIST_QUERY = [
    {
        "name": "prefix",
        "in": "query",
        "schema": {"type": "string", "maxLength": limits.queue_name_chars_max},
        "description": "Only queues whose names start with this.",
        "example": "email",
    },
    {
        "name": "limit",
        "in": "query",
        "schema": integer(1, limits.native_list_max, "Queues per page.", limits.native_list_max),
        "example": 100,
    },
    {
        "name": "after",
        "in": "query",
        "schema": {"type": "string", "maxLength": limits.queue_name_chars_max},
        "description": "The previous page's `next`.",
    },
]

_EXCHANGE_LIST_QUERY = [
    {
        "name": "prefix",
        "in": "query",
        "schema": {"type": "string", "maxLength": limits.exchange_name_chars_max},
        "description": "Only exchanges whose names start with this.",
        "example": "ev",
    },
    {
        "name": "limit",
        "in": "query",
        "schema": integer(1, limits.native_list_max, "Exchanges per page.", limits.native_list_max),
        "example": 100,
    },
    {
        "name": "after",
        "in": "query",
        "schema": {"type": "string", "maxLength": limits.exchange_name_chars_max},
        "description": "The previous page's `next`.",
    },
]


def _operation(route: Route, path: str) -> Schema:
    if route == "openapi":
        return {
            "operationId": "openapi",
            "summary": "This document. Needs no key: it describes the API and holds no secret.",
            "security": [],
            "responses": {
                "200": {
                    "description": "The OpenAPI document.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    summary, request, answer, errors, examples = _OPS[route]
    op: Schema = {"operationId": route, "summary": summary}
    if path.startswith(QUEUE):
        op["parameters"] = [
            {
                "name": "queue",
                "in": "path",
                "required": True,
                "schema": ref("QueueName"),
                "example": EXAMPLE_QUEUE[route],
            }
        ]
    elif path.startswith(EXCHANGE):
        op["parameters"] = [
            {
                "name": "exchange",
                "in": "path",
                "required": True,
                "schema": ref("ExchangeName"),
                "example": EXAMPLE_EXCHANGE,
            }
        ]
    elif route == "list_queues":
        op["parameters"] = _LIST_QUERY
    elif route == "list_exchanges":
        op["parameters"] = _EXCHANGE_LIST_QUERY
    if request is not None:
        content: Schema = {"schema": ref(request)}
        if examples:
            content["examples"] = {name: {"value": value} for name, value in examples.items()}
        op["requestBody"] = {"required": True, "content": {"application/json": content}}
    statuses = ("400", "401", "403", *errors, "429", "500", "503")
    op["responses"] = {
        "200": {
            "description": "Done.",
            "content": {"application/json": {"schema": ref(answer)}},
        },
        **{s: {"$ref": f"#/components/responses/{_ERRORS[s][0]}"} for s in sorted(statuses)},
    }
    return op


def _paths() -> Schema:
    paths: Schema = {}
    for (path, method), route in ROUTES.items():
        paths.setdefault(path, {})[method.lower()] = _operation(route, path)
    return paths


DESCRIPTION = """\
okuri's own HTTP/JSON API, beside its SQS API on the same listener: leases with explicit
complete and retry, retry at a time, dead-lettering on demand, manual redrive, and bearer keys
limited by role and queue-name namespace. Every error is `{"error": {"code", "message"}}`; a
path that is not routed answers 404 `not_found`, a method a path does not take 405
`method_not_allowed`. See docs/native-api.md."""

DOCUMENT: Schema = {
    "openapi": "3.1.0",
    "info": {"title": "okuri native API", "version": __version__, "description": DESCRIPTION},
    "servers": [{"url": "/"}],
    "security": [{"bearer": []}],
    "paths": _paths(),
    "components": {
        "securitySchemes": {
            "bearer": {
                "type": "http",
                "scheme": "bearer",
                "description": "A key from OKURI_ADMIN_KEY or `okuri keys create`.",
            }
        },
        "schemas": SCHEMAS,
        "responses": {name: _error_response(s) for s, (name, _) in _ERRORS.items()},
    },
}
