"""Reading okuri's OpenAPI document (okuri/native/openapi.py) in tests: the operations it
describes, and JSON Schema validators of its request bodies and answers (its `$ref`s resolved
within the document, as OpenAPI 3.1's JSON Schema 2020-12 resolves them)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from okuri.native.openapi import DOCUMENT

URI = "urn:okuri:native-openapi"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class Described(NamedTuple):
    path: str
    method: str  # upper case, as HTTP has it
    operation: dict[str, Any]


def operations(doc: dict[str, Any] = DOCUMENT) -> Iterator[Described]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield Described(path, method.upper(), item[method])


def by_id(operation_id: str) -> Described:
    [found] = [d for d in operations() if d.operation["operationId"] == operation_id]
    return found


def validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator of `schema`, a part of the document (its refs point into the document)."""
    registry: Registry[Any] = Registry().with_resource(
        URI, Resource.from_contents(DOCUMENT, default_specification=DRAFT202012)
    )
    return Draft202012Validator({"$id": URI + "/part", **_rebased(schema)}, registry=registry)


def _rebased(schema: Any) -> Any:
    """`schema` with its document-local refs (`#/...`) made absolute, since it is validated
    outside the document."""
    if isinstance(schema, dict):
        return {
            k: (
                URI + v if k == "$ref" and isinstance(v, str) and v.startswith("#") else _rebased(v)
            )
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_rebased(v) for v in schema]
    return schema


def request_schema(described: Described) -> dict[str, Any]:
    return dict(described.operation["requestBody"]["content"]["application/json"]["schema"])


def answer_schema(described: Described, status: int) -> dict[str, Any]:
    """The schema of `described`'s answer of `status`; fails when the document lists none."""
    responses = described.operation["responses"]
    assert str(status) in responses, (
        f"{described.method} {described.path} answered {status}, which the document does not "
        f"list ({', '.join(responses)})"
    )
    response = responses[str(status)]
    if "$ref" in response:
        response = DOCUMENT["components"]["responses"][response["$ref"].rsplit("/", 1)[-1]]
    return dict(response["content"]["application/json"]["schema"])


def check_answer(described: Described, status: int, body: Any) -> None:
    """`body`, answered with `status`, is as the document says; raises naming every mismatch."""
    errors = list(validator(answer_schema(described, status)).iter_errors(body))
    assert not errors, f"{described.method} {described.path} {status}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
    )
