"""The checked-in gRPC modules are what `make proto` writes from the .proto today, and the
service implements every RPC the .proto declares."""

from __future__ import annotations

from pathlib import Path

from okuri.api import generate
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.clock import SystemClock
from okuri.engine import Engine
from okuri.native.grpc_service import SERVICE, QueueService
from okuri.store.memory import MemoryStore


def test_checked_in_modules_match_a_fresh_generation_from_the_proto() -> None:
    fresh = generate.render()
    assert sorted(fresh) == sorted(generate.OUTPUTS)
    stale = [
        name for name, data in fresh.items() if (generate.HERE / name).read_bytes() != data
    ]
    assert not stale, f"{stale} differ from the .proto; run `make proto` and commit the result"


def test_the_modules_sit_in_the_python_package_named_as_the_proto_package() -> None:
    stubs = generate.render()["queue_service_pb2_grpc.py"].decode()
    assert "from okuri.api.v1 import queue_service_pb2 as" in stubs
    assert Path(pb.__file__).resolve().parent == generate.HERE
    assert pb.DESCRIPTOR.package == "okuri.api.v1"
    assert pb.DESCRIPTOR.name == generate.PROTO


def test_every_rpc_of_the_proto_has_an_implementation() -> None:
    declared = set(SERVICE.methods_by_name)
    assert declared == {
        "CreateQueue", "GetQueue", "UpdateQueue", "ListQueues", "DeleteQueue", "PurgeQueue",
        "Produce", "Lease", "Complete", "Retry", "Extend", "Redrive", "Browse",
        "CreateExchange", "GetExchange", "ListExchanges", "DeleteExchange", "BindQueue",
        "UnbindQueue", "Publish",
    }  # fmt: skip
    service = QueueService(Engine(MemoryStore(), SystemClock()), SystemClock(), None)
    assert set(service.rpcs) == declared
    assert service.handler().service_name() == "okuri.api.v1.QueueService"
