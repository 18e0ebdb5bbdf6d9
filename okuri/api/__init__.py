"""The native API's wire definitions, shared by the two sides that speak it: the server's gRPC
surface (okuri/native/grpc_service.py) and the Python client's gRPC transport (okuri/client/).

`okuri.api.v1` is the proto package `okuri.api.v1` as a Python package: the .proto and the
modules protoc writes from it, checked in (`make proto`, okuri/api/generate.py, regenerates
them). It imports nothing of okuri (import-linter holds it to that), so the client can use it
without reaching into the server.
"""
