"""The native API is defined once (okuri/api/operations.py and okuri/api/shapes.py); everything
else that describes it must say the same: the .proto's service and messages, the OpenAPI
document, the client's models and the key roles. Each check below returns the disagreements it
finds, so a field added to one place and not the others fails here by name, and the last tests
show that each check does catch one."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from okuri import client
from okuri.api import operations
from okuri.api.operations import OPERATIONS, SPECS
from okuri.api.shapes import SHAPES, Field, Shape
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.client import models
from okuri.client.transport import OPERATIONS as CLIENT_OPERATIONS
from okuri.native.openapi import DOCUMENT
from okuri.native.openapi_schemas import ANSWERS, REQUESTS
from okuri.principals import roles
from tests.openapi_doc import by_id

SERVICE = pb.DESCRIPTOR.services_by_name["QueueService"]
# A shape's JSON type -> the protobuf types that carry it.
PROTO_TYPES: Mapping[str, set[int]] = {
    "string": {FieldDescriptor.TYPE_STRING},
    "integer": {FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_INT64},
    "boolean": {FieldDescriptor.TYPE_BOOL},
    "payload": {FieldDescriptor.TYPE_BYTES},
}
# Each client model and the shape it reads (an Item is what a produce sends).
MODELS: Mapping[type[Any], str] = {
    models.Item: "ProduceItem",
    models.QueueAttributes: "QueueAttributes",
    models.QueueStats: "QueueStats",
    models.Queue: "Queue",
    models.QueuePage: "ListQueuesResponse",
    models.Binding: "Binding",
    models.Exchange: "Exchange",
    models.ExchangePage: "ListExchangesResponse",
    models.LeasedItem: "LeasedItem",
    models.BrowsedItem: "BrowsedItem",
    models.BrowsePage: "BrowseResponse",
}


# --- the checks ----------------------------------------------------------------------------------


def proto_disagreements(shapes: Mapping[str, Shape]) -> list[str]:
    """Where the shapes and the .proto's messages differ: names, fields, types, lists."""
    out: list[str] = []
    messages = set(pb.DESCRIPTOR.message_types_by_name)
    if set(shapes) != messages:
        out.append(f"shapes {sorted(set(shapes) ^ messages)} are not both in the .proto")
    for name in sorted(set(shapes) & messages):
        out += _message_disagreements(shapes[name], pb.DESCRIPTOR.message_types_by_name[name])
    return out


def _message_disagreements(shape: Shape, message: Descriptor) -> list[str]:
    out: list[str] = []
    proto = dict(message.fields_by_name)
    expected = {*shape.names, *(f"reset_{f.name}" for f in shape.fields if f.resets)}
    if set(proto) != expected:
        out.append(f"{shape.name}: fields {sorted(set(proto) ^ expected)} differ from the .proto")
    for f in shape.fields:
        d = proto.get(f.name)
        if d is None:
            continue
        where = f"{shape.name}.{f.name}"
        is_map = d.message_type is not None and d.message_type.GetOptions().map_entry
        if f.type == "headers":
            if not is_map:
                out.append(f"{where}: headers are a map<string, string> in the .proto")
            continue
        if d.is_repeated != f.repeated:
            out.append(f"{where}: repeated in one and not the other")
        if f.type == "time":
            ok = d.message_type is not None and d.message_type.full_name.endswith("Timestamp")
        elif f.type in SHAPES or f.type not in PROTO_TYPES:
            ok = d.message_type is not None and d.message_type.name == f.type
        else:
            ok = d.type in PROTO_TYPES[f.type]
        if not ok:
            out.append(f"{where}: {f.type} is not the .proto's type")
        if f.absent == "null" and not d.has_presence:
            out.append(f"{where}: may be null, so the .proto must say whether it is set")
    return out


def service_disagreements() -> list[str]:
    """Where the operations' table and the .proto's service differ."""
    out: list[str] = []
    rpcs = {spec.rpc: spec for spec in SPECS.values()}
    if set(rpcs) != set(SERVICE.methods_by_name):
        out.append(f"RPCs {sorted(set(rpcs) ^ set(SERVICE.methods_by_name))} differ")
    for name, method in SERVICE.methods_by_name.items():
        spec = rpcs.get(name)
        if spec is not None and (spec.request, spec.answer) != (
            method.input_type.name,
            method.output_type.name,
        ):
            out.append(f"{name}: takes or answers other messages than {spec.name}'s")
    return out


def json_names(shape: Shape, locations: tuple[str, ...] = ("body", "query")) -> set[str]:
    """The names a document of `shape` may carry in JSON."""
    names: set[str] = set()
    for f in shape.fields:
        if f.location not in locations:
            continue
        if f.inline:
            names |= json_names(SHAPES[f.type])
        elif f.type == "payload":
            names |= {"body", "body_base64"}
        else:
            names.add(f.name)
    return names


def openapi_disagreements(shapes: Mapping[str, Shape], document: Any = DOCUMENT) -> list[str]:
    """Where the OpenAPI document's operations and schemas differ from the specs and shapes."""
    out: list[str] = []
    components = document["components"]["schemas"]
    for name, spec in SPECS.items():
        d = by_id(name)
        if (d.path, d.method, d.operation["summary"]) != (spec.path, spec.method, spec.summary):
            out.append(f"{name}: path, method or summary differ")
        shape = shapes[spec.request]
        params = {p["name"]: p["in"] for p in d.operation.get("parameters", [])}
        fields = {f.name: f.location for f in shape.fields if f.location != "body"}
        if params != fields:
            out.append(f"{name}: parameters {params} are not the request's {fields}")
        body = d.operation.get("requestBody")
        if (body is None) != (spec.request not in REQUESTS):
            out.append(f"{name}: a request body where the shape has none, or none where it has")
    for names in (REQUESTS, ANSWERS):
        for shape_name, component in names.items():
            have = set(components[component]["properties"])
            want = json_names(shapes[shape_name], ("body",))
            if have != want:
                out.append(
                    f"{component}: properties {sorted(have ^ want)} differ from {shape_name}"
                )
    return out


def model_disagreements(shapes: Mapping[str, Shape]) -> list[str]:
    """Where the client's models have other attributes than the shapes they read have fields."""
    out: list[str] = []
    for model, shape_name in MODELS.items():
        attributes = {f.name for f in dataclasses.fields(model)}
        fields = {"body" if f.type == "payload" else f.name for f in shapes[shape_name].fields}
        if attributes != fields:
            out.append(f"{model.__name__}: {sorted(attributes ^ fields)} differ from {shape_name}")
    return out


# --- the API as it is ----------------------------------------------------------------------------


def test_the_operations_are_one_list_in_one_order_read_by_roles_and_the_client() -> None:
    assert tuple(SPECS) == OPERATIONS
    assert roles.OPERATIONS is OPERATIONS and CLIENT_OPERATIONS is OPERATIONS
    assert client.OPERATIONS is OPERATIONS
    assert set(roles.GRANTS["admin"]) == set(OPERATIONS)
    assert [spec.name for spec in SPECS.values() if spec.long_poll] == ["lease"]
    for spec in SPECS.values():
        assert spec.request in SHAPES and spec.answer in SHAPES
        path = spec.path_field
        assert (path.name if path else None) == (
            "queue" if "{queue}" in spec.path else "exchange" if "{exchange}" in spec.path else None
        ), spec.name
    assert operations.BY_RPC["BindQueue"].name == "bind"


def test_every_shape_is_a_message_of_the_proto_with_the_same_fields() -> None:
    assert proto_disagreements(SHAPES) == []


def test_every_operation_is_an_rpc_of_the_proto_with_its_shapes() -> None:
    assert service_disagreements() == []


def test_the_openapi_document_describes_the_specs_and_their_shapes() -> None:
    assert openapi_disagreements(SHAPES) == []


def test_the_client_models_have_the_shapes_fields() -> None:
    assert model_disagreements(SHAPES) == []


def test_field_types_and_locations_are_known_ones() -> None:
    for shape in SHAPES.values():
        for f in shape.fields:
            assert f.type in ("string", "integer", "boolean", "time", "payload", "headers", *SHAPES)
            assert f.absent in ("never", "null", "empty") or f.absent in shape.names
            assert f.location != "path" or f.type == "string"


# --- each check catches a field added to one place only ------------------------------------------


def _with_field(shape_name: str, field: Field) -> dict[str, Shape]:
    shape = SHAPES[shape_name]
    return {**SHAPES, shape_name: dataclasses.replace(shape, fields=(*shape.fields, field))}


@pytest.mark.parametrize(
    ("shape", "check"),
    [
        ("LeaseRequest", proto_disagreements),
        ("Queue", proto_disagreements),
        ("LeaseRequest", openapi_disagreements),
        ("Exchange", openapi_disagreements),
        ("LeasedItem", model_disagreements),
        ("QueueAttributes", model_disagreements),
    ],
)
def test_a_field_added_to_the_shapes_alone_is_found(shape: str, check: Any) -> None:
    found = check(_with_field(shape, Field("priority", "integer")))
    assert found and any("priority" in line for line in found), found
