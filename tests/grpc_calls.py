"""One gRPC request per native operation, naming a given queue: the gRPC half of the role
matrix (tests/surface/test_native_grpc.py and tests/surface/test_role_matrix.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from okuri.api.v1 import queue_service_pb2 as pb

# (operation, RPC, request naming the queue)
RPCS: list[tuple[str, str, Callable[[str], Any]]] = [
    ("create_queue", "CreateQueue", lambda q: pb.CreateQueueRequest(name=q)),
    ("get_queue", "GetQueue", lambda q: pb.GetQueueRequest(queue=q)),
    ("update_queue", "UpdateQueue",
     lambda q: pb.UpdateQueueRequest(queue=q, attributes=pb.QueueAttributes(delay_s=1))),
    ("delete_queue", "DeleteQueue", lambda q: pb.DeleteQueueRequest(queue=q)),
    ("purge_queue", "PurgeQueue", lambda q: pb.PurgeQueueRequest(queue=q)),
    ("produce", "Produce",
     lambda q: pb.ProduceRequest(queue=q, items=[pb.ProduceItem(payload=b"x")])),
    ("lease", "Lease", lambda q: pb.LeaseRequest(queue=q, max_items=1)),
    ("complete", "Complete", lambda q: pb.CompleteRequest(queue=q, handles=["h"])),
    ("retry", "Retry", lambda q: pb.RetryRequest(queue=q, items=[pb.RetryItem(handle="h")])),
    ("extend", "Extend", lambda q: pb.ExtendRequest(queue=q, handles=["h"], lease_s=5)),
    ("redrive", "Redrive", lambda q: pb.RedriveRequest(queue=q, target=q)),
    ("browse", "Browse", lambda q: pb.BrowseRequest(queue=q, limit=5)),
]  # fmt: skip
