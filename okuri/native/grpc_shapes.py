"""The gRPC surface's messages as the native operations' documents, both ways: the API's one
converter (okuri/api/grpc_codec.py) with its refusals as the HTTP surface's 400s.

Each request becomes exactly the document its HTTP/JSON twin would send after parsing (path
fields apart), and each operation's answer is written back into the response message, so
`Queues`, `Messages` and `Exchanges` stay the one implementation of every rule: a bad value is
refused with the same words on both surfaces.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from okuri.api import grpc_codec
from okuri.api.grpc_codec import CodecError
from okuri.api.shapes import SHAPES
from okuri.native import codec
from okuri.native.errors import NativeError, bad_request


def request_doc(message: Message) -> codec.Obj:
    """The document of a request message: its body and query fields (not its path's)."""
    shape = SHAPES[message.DESCRIPTOR.name]
    try:
        doc = grpc_codec.read_request(message)
    except CodecError as err:
        raise bad_request(err.message, err.code) from None
    for f in shape.fields:
        if f.location == "path":
            doc.pop(f.name, None)
    return doc


def answer(shape_name: str, doc: dict[str, Any]) -> Message:
    """The answer message `shape_name` for an operation's answer document."""
    try:
        return grpc_codec.write(shape_name, doc)
    except CodecError as err:  # an answer the server wrote: its own fault
        raise NativeError(500, "internal", err.message) from err
