"""`okuri.api.v1.QueueService` (queue_service.proto, beside this file) and its generated
modules: `queue_service_pb2` (the messages) and `queue_service_pb2_grpc` (the service's
stubs). Do not edit the *_pb2* modules by hand: `make proto` rewrites them."""
