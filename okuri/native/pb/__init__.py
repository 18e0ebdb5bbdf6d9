"""Generated from okuri/native/proto/okuri/api/v1/queue_service.proto by generate.py; do not
edit the *_pb2* modules by hand (`make proto` rewrites them)."""
