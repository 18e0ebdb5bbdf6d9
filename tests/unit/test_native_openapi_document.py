"""The OpenAPI document of the native API (okuri/native/openapi.py), without a server: it is
valid OpenAPI 3.1, it describes exactly the routes of the route table the listener dispatches
on, and its request examples are valid requests by its own schemas. Against a real server:
tests/surface/test_native_openapi.py."""

from __future__ import annotations

from openapi_spec_validator import OpenAPIV31SpecValidator

from okuri.native.openapi import DOCUMENT
from okuri.native.routes import ROUTES
from okuri.principals.roles import OPERATIONS
from tests.openapi_doc import operations, request_schema, validator


def test_the_document_is_valid_openapi_3_1() -> None:
    assert DOCUMENT["openapi"].startswith("3.1.")
    errors = list(OpenAPIV31SpecValidator(DOCUMENT).iter_errors())
    assert not errors, [e.message for e in errors[:5]]


def test_the_document_describes_exactly_the_routes_the_listener_dispatches() -> None:
    described = {(d.path, d.method): d.operation["operationId"] for d in operations()}
    assert described == dict(ROUTES)
    # Every operation a key may be granted is a route, and only the document itself is not.
    assert set(ROUTES.values()) == {*OPERATIONS, "openapi"}


def test_only_the_document_itself_needs_no_key() -> None:
    assert DOCUMENT["security"] == [{"bearer": []}]
    open_ones = [d.operation["operationId"] for d in operations() if "security" in d.operation]
    assert open_ones == ["openapi"]
    assert by_path("/v1/openapi.json")["security"] == []


def test_every_request_example_is_valid_by_the_documents_own_schema() -> None:
    checked = 0
    for d in operations():
        body = d.operation.get("requestBody")
        if body is None:
            continue
        examples = body["content"]["application/json"]["examples"]
        check = validator(request_schema(d))
        for name, example in examples.items():
            errors = [e.message for e in check.iter_errors(example["value"])]
            assert not errors, f"{d.operation['operationId']} example {name}: {errors}"
            checked += 1
    assert checked >= 10


def test_the_schemas_refuse_what_the_server_refuses() -> None:
    """A few of the server's rules, spot-checked through the document: bounds, unknown fields,
    exactly one of body and body_base64."""
    produce = validator({"$ref": "#/components/schemas/Produce"})
    assert not produce.is_valid({"items": []})
    assert not produce.is_valid({"items": [{"body": "x", "body_base64": "eA=="}]})
    assert not produce.is_valid({"items": [{"payload": "x"}]})
    assert produce.is_valid({"items": [{"body_base64": "eA=="}]})
    lease = validator({"$ref": "#/components/schemas/Lease"})
    assert not lease.is_valid({"request_timeout_s": 21})
    assert not lease.is_valid({"max_items": True}) and lease.is_valid({"max_items": 100})
    name = validator({"$ref": "#/components/schemas/QueueName"})
    assert name.is_valid("jobs.fifo") and not name.is_valid("a/b") and not name.is_valid("")


def by_path(path: str) -> dict[str, object]:
    [found] = [d.operation for d in operations() if d.path == path]
    return found
