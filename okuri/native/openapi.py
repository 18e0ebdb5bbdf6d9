"""The native HTTP API described as an OpenAPI 3.1 document, served at GET /v1/openapi.json.

Built here from okuri's own tables rather than kept as a JSON file beside them: the paths,
summaries and query parameters from the API's one table of operations (okuri/api/operations.py,
through the route table okuri/native/routes.py), the schemas from its shapes
(okuri/native/openapi_schemas.py, bounds from okuri.limits), so the document cannot drift from
what the server checks. What is only the document's is here: error statuses and examples. Each
request body carries examples that the tests send to a real server; each answer's schema is
checked against real answers (tests/surface/test_native_openapi.py).
"""

from __future__ import annotations

from typing import Any

from okuri import __version__
from okuri.api.operations import SPECS, Operation, OperationSpec
from okuri.native.openapi_schemas import ANSWERS, REQUESTS, SCHEMAS, Schema, field_schema, ref
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
    "401": (
        "Unauthorized",
        "No valid bearer key: missing_key, bad_key, no_keys_configured, dev_key_not_local (the "
        "published development key, from another machine).",
    ),
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

# operation -> (extra error statuses, request examples); the rest is the operation's spec.
_OPS: dict[Operation, tuple[tuple[str, ...], dict[str, Any]]] = {
    "list_queues": ((), {}),
    "create_queue": (
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
    "get_queue": (("404",), {}),
    "update_queue": (("404",), {"longer_leases": {"attributes": {"lease_timeout_s": 120}}}),
    "delete_queue": (("404",), {}),
    "purge_queue": (("404",), {}),
    "produce": (
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
    "lease": (("404",), {"long_poll": {"max_items": 10, "lease_s": 30, "request_timeout_s": 1}}),
    "complete": (("404",), {"one": {"handles": [_EXAMPLE_HANDLE]}}),
    "retry": (
        ("404",),
        {
            "now": {"items": [{"handle": _EXAMPLE_HANDLE}]},
            "at_a_time": {
                "items": [{"handle": _EXAMPLE_HANDLE, "retry_at": "2026-01-01T00:00:00Z"}]
            },
            "dead": {"items": [{"handle": _EXAMPLE_HANDLE, "dead": True}]},
        },
    ),
    "extend": (("404",), {"one": {"handles": [_EXAMPLE_HANDLE], "lease_s": 60}}),
    "redrive": (("404",), {"back": {"target": "emails"}}),
    "browse": (("404",), {}),
    "list_exchanges": ((), {}),
    "create_exchange": (("409",), {"topic": {"name": "events", "type": "topic"}}),
    "get_exchange": (("404",), {}),
    "delete_exchange": (("404",), {}),
    "bind": (("404",), {"all_email_events": {"queue": "emails", "routing_key": "email.#"}}),
    "unbind": (("404",), {"all_email_events": {"queue": "emails", "routing_key": "email.#"}}),
    "publish": (
        ("404", "413"),
        {"sent": {"routing_key": "email.sent", "items": [{"body": "hello"}]}},
    ),
}

# The queue each operation's examples name (a redrive starts from the dead-letter queue).
EXAMPLE_QUEUE: dict[Route, str] = {route: "emails" for route in SPECS}
EXAMPLE_QUEUE["redrive"] = "emails-dlq"
EXAMPLE_QUEUE["browse"] = "emails-dlq"
# The exchange each exchange operation's examples name.
EXAMPLE_EXCHANGE = "events"

_EXAMPLES_QUERY: dict[Operation, dict[str, Any]] = {
    "list_queues": {"prefix": "email", "limit": 100},
    "list_exchanges": {"prefix": "ev", "limit": 100},
    "browse": {"limit": 20},
}


def _query(spec: OperationSpec) -> list[Schema]:
    """The operation's query parameters, from its request shape."""
    shape = spec.request_shape
    params = []
    for f in shape.fields:
        if f.location != "query":
            continue
        schema = field_schema(shape, f, "request")
        param: Schema = {"name": f.name, "in": "query", "schema": schema}
        if "description" in schema and f.type == "string":  # words beside a text, as before
            param["description"] = schema.pop("description")
        example = _EXAMPLES_QUERY.get(spec.name, {}).get(f.name)
        if example is not None:
            param["example"] = example
        params.append(param)
    return params


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
    spec = SPECS[route]
    errors, examples = _OPS[route]
    request = REQUESTS.get(spec.request)
    answer = ANSWERS[spec.answer]
    op: Schema = {"operationId": route, "summary": spec.summary}
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
    if _query(spec):
        op["parameters"] = [*op.get("parameters", []), *_query(spec)]
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
