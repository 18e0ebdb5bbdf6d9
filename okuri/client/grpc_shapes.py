"""The client's documents as `okuri.api.v1.QueueService` messages, both ways: the API's one
converter (okuri/api/grpc_codec.py), which the server's gRPC surface reads and writes with too.

A request document, with the queue or exchange it acts on as its path field, becomes the
message whose server-side reading is that document again; an answer message becomes exactly
the document the HTTP answer would be, so okuri/client/operations.py reads both wires with the
same parsers. tests/unit/test_client_grpc.py holds every operation to that, through the
server's own shapes. What protobuf says otherwise than JSON is listed in grpc_codec's docstring
and docs/native-api.md's gRPC section.

A document that protobuf cannot carry (a number past int32, a field it has no place for) is
refused here as a `BadRequestError`, before anything is sent; an answer that is not a document
(a time out of range) is a `bad_answer`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from google.protobuf.message import Message

from okuri.api import grpc_codec
from okuri.api.grpc_codec import CodecError, message_class
from okuri.api.operations import SPECS
from okuri.api.shapes import SHAPES
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


@dataclass(frozen=True, slots=True)
class Rpc:
    """One RPC: its method path and its request and response messages."""

    path: str
    request: type[Message]
    response: type[Message]


RPC: Mapping[Operation, Rpc] = {
    name: Rpc(
        f"/{SERVICE.full_name}/{spec.rpc}", message_class(spec.request), message_class(spec.answer)
    )
    for name, spec in SPECS.items()
}


def to_message(request: Request) -> Message:
    """The RPC's request message for `request`."""
    spec = SPECS[request.operation]
    doc: Doc = dict(request.doc)
    if spec.path_field is not None:
        doc[spec.path_field.name] = request.queue
    try:
        return grpc_codec.write(spec.request, doc)
    except CodecError as err:
        raise BadRequestError(400, err.code, err.message) from err


def from_message(message: Message) -> Doc:
    """The document the HTTP answer to the same request would be."""
    if message.DESCRIPTOR.name not in SHAPES:
        raise bad_answer(f"a {message.DESCRIPTOR.full_name} message")
    try:
        return grpc_codec.read_answer(message)
    except CodecError as err:
        raise bad_answer(err.message) from None
