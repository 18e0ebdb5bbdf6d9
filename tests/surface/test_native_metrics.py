"""/metrics counts native API requests by operation and outcome, against a real `okuri serve`,
beside the SQS surface's counts, which keep their names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.native.routes import ROUTES
from okuri.principals.keyfile import create_key
from tests.servers import ServerProcess, keyed_server

ADMIN = "native-metrics-test-admin-key-0123456789"
FAMILY = "okuri_native_requests_total"


@pytest.fixture(scope="module")
def readonly(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return path, create_key(str(path), "readonly", "")[0]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, readonly: tuple[Path, str]
) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("native-metrics"), ADMIN, readonly[0])
    yield proc
    proc.terminate()


def native_counts(server: ServerProcess, transport: str = "http") -> dict[tuple[str, str], int]:
    """(operation, outcome) -> count of one transport, from /metrics."""
    text = server.get("/metrics").text
    assert f"# TYPE {FAMILY} counter" in text
    found = re.findall(
        rf'^{FAMILY}{{transport="{transport}",operation="([a-z_]+)",outcome="([a-z_]+)"}} '
        r"(\d+)$",
        text,
        re.MULTILINE,
    )
    return {(op, outcome): int(n) for op, outcome, n in found}


def send(
    server: ServerProcess, method: str, path: str, body: object = None, key: str | None = ADMIN
) -> int:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    raw = body if isinstance(body, bytes) else None if body is None else json.dumps(body).encode()
    return server.request(method, path, raw, headers).status


def test_each_native_request_is_counted_by_operation_and_outcome(
    server: ServerProcess, readonly: tuple[Path, str]
) -> None:
    before = native_counts(server)
    sent = [
        (send(server, "POST", "/v1/queues", {"name": "metered"}), "create_queue", "ok"),
        (
            send(server, "POST", "/v1/queues/metered/messages", {"items": [{"body": "a"}]}),
            "produce",
            "ok",
        ),
        (
            send(server, "POST", "/v1/queues/metered/messages", {"items": [{"body": "b"}]}),
            "produce",
            "ok",
        ),
        (send(server, "POST", "/v1/queues/metered/messages", b"{nope"), "produce", "bad_json"),
        (send(server, "POST", "/v1/queues/absent/lease", {}), "lease", "queue_not_found"),
        (
            send(server, "POST", "/v1/queues/metered/purge", {}, key=readonly[1]),
            "purge_queue",
            "forbidden",
        ),
        (send(server, "GET", "/v1/queues", key=None), "list_queues", "missing_key"),
        (send(server, "GET", "/v1/openapi.json", key=None), "openapi", "ok"),
        (send(server, "GET", "/v1/nothing"), "unknown", "not_found"),
        (send(server, "PUT", "/v1/queues/metered/messages"), "unknown", "method_not_allowed"),
    ]
    assert [s for s, _, _ in sent] == [200, 200, 200, 400, 404, 403, 401, 200, 404, 405]
    after = native_counts(server)
    expected = dict(before)
    for _, operation, outcome in sent:
        expected[(operation, outcome)] = expected.get((operation, outcome), 0) + 1
    assert after == expected
    # Every operation label but "unknown" is a route's name.
    assert {op for op, _ in after} - {"unknown"} <= set(ROUTES.values())


def test_the_sqs_counts_keep_their_family_beside_the_native_ones(server: ServerProcess) -> None:
    sqs = server.sqs_client(retries={"max_attempts": 1})
    sqs.list_queues()
    text = server.get("/metrics").text
    assert re.search(
        r'^okuri_sqs_requests_total{action="ListQueues",outcome="ok"} [1-9]', text, re.M
    )
    assert text.count(f"# TYPE {FAMILY} counter") == 1


def test_grpc_calls_are_counted_in_the_same_family_as_transport_grpc(
    server: ServerProcess, readonly: tuple[Path, str]
) -> None:
    before = native_counts(server, "grpc")
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        admin = (("authorization", f"Bearer {ADMIN}"),)
        stub.CreateQueue(pb.CreateQueueRequest(name="grpc-counted"), metadata=admin)
        stub.Produce(
            pb.ProduceRequest(queue="grpc-counted", items=[pb.ProduceItem(payload=b"x")]),
            metadata=admin,
        )
        with pytest.raises(grpc.RpcError):
            stub.PurgeQueue(
                pb.PurgeQueueRequest(queue="grpc-counted"),
                metadata=(("authorization", f"Bearer {readonly[1]}"),),
            )
    after = native_counts(server, "grpc")
    for cell in (("create_queue", "ok"), ("produce", "ok"), ("purge_queue", "forbidden")):
        assert after.get(cell, 0) == before.get(cell, 0) + 1, (cell, after)
