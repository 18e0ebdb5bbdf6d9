"""The native API's definition and wire, shared by the two sides that speak it: the server's
surfaces (okuri/native/) and the Python client (okuri/client/).

`okuri.api.operations` lists the operations once (name, RPC, HTTP method and path, request and
answer documents, long poll) and `okuri.api.shapes` describes each document once; the HTTP
routes, the OpenAPI document, the key roles and the client's models follow from them.
`okuri.api.grpc_codec` converts documents to and from protobuf messages for both sides.

`okuri.api.v1` is the proto package `okuri.api.v1` as a Python package: the .proto and the
modules protoc writes from it, checked in (`make proto`, okuri/api/generate.py, regenerates
them); tests/unit/test_api_agreement.py holds the .proto to the shapes. This package imports
nothing else of okuri (import-linter holds it to that), so the client can use it without
reaching into the server; only grpc_codec and v1 load protobuf.
"""
