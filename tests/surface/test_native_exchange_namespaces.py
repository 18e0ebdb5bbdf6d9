"""A publish through an exchange reaches no further than the key's namespace, over HTTP and
gRPC against a real `okuri serve`.

An admin of every queue may bind a namespace's exchange to any queue; a producer limited to
the namespace must still not deliver into a queue it may not produce to. The whole publish is
refused (403 `forbidden`, gRPC PERMISSION_DENIED), naming the queue, and nothing is delivered
to any queue, inside the namespace or not.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from tests.servers import Response, RoleKeys, ServerProcess, keyed_server, role_keys

ADMIN = "exchange-ns-test-admin-key-0123456789"  # every queue (the empty namespace)
NAMESPACE = "team-"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> RoleKeys:
    return role_keys(tmp_path_factory.mktemp("keys"), NAMESPACE)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: RoleKeys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("exchange-ns"), ADMIN, keys.file)
    yield proc
    proc.terminate()


def call(server: ServerProcess, method: str, path: str, body: Any, key: str) -> Response:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    data = None if body is None else json.dumps(body).encode()
    return server.request(method, path, data, headers)


def ok(answer: Response) -> Any:
    assert answer.status == 200, answer.text[:1000]
    return json.loads(answer.body)


def refused(answer: Response) -> str:
    """The message of a 403 `forbidden` in the native API's error shape."""
    assert answer.status == 403, answer.text[:1000]
    error = json.loads(answer.body)["error"]
    assert error["code"] == "forbidden"
    return str(error["message"])


def visible(server: ServerProcess, queue: str) -> int:
    return int(ok(call(server, "GET", f"/v1/queues/{queue}", None, ADMIN))["stats"]["visible"])


class Setup:
    """team-ex (direct) bound by the admin to team-a with key "k", and to other-b (outside the
    namespace) with keys "k" and "wide"."""

    def __init__(self, server: ServerProcess) -> None:
        tag = uuid.uuid4().hex[:8]
        self.exchange = f"{NAMESPACE}ex-{tag}"
        self.inside = f"{NAMESPACE}a-{tag}"
        self.outside = f"other-b-{tag}"
        for queue in (self.inside, self.outside):
            ok(call(server, "POST", "/v1/queues", {"name": queue}, ADMIN))
        ok(call(server, "POST", "/v1/exchanges", {"name": self.exchange, "type": "direct"}, ADMIN))
        for queue, key in ((self.inside, "k"), (self.outside, "k"), (self.outside, "wide")):
            binding = {"queue": queue, "routing_key": key}
            ok(call(server, "POST", f"/v1/exchanges/{self.exchange}/bind", binding, ADMIN))


def publish_body(routing_key: str) -> dict[str, Any]:
    return {"routing_key": routing_key, "items": [{"body": "hello"}]}


def test_a_publish_routed_outside_the_namespace_is_refused_whole_over_http(
    server: ServerProcess, keys: RoleKeys
) -> None:
    s = Setup(server)
    producer = keys.by_role["producer"]
    path = f"/v1/exchanges/{s.exchange}/messages"
    # Producing to the outside queue directly is refused; publishing there must be too.
    direct = {"items": [{"body": "x"}]}
    refused(call(server, "POST", f"/v1/queues/{s.outside}/messages", direct, producer))
    message = refused(call(server, "POST", path, publish_body("k"), producer))
    assert s.outside in message and s.exchange in message
    refused(call(server, "POST", path, publish_body("wide"), producer))
    # Nothing was delivered anywhere: not even into the queue the key may produce to.
    assert visible(server, s.inside) == 0 and visible(server, s.outside) == 0

    # A routing key that reaches only queues of the namespace publishes as before.
    routed = ok(call(server, "POST", path, publish_body("nowhere"), producer))["routed"]
    assert routed == []
    ok(call(server, "POST", f"/v1/exchanges/{s.exchange}/unbind",
            {"queue": s.outside, "routing_key": "k"}, ADMIN))  # fmt: skip
    routed = ok(call(server, "POST", path, publish_body("k"), producer))["routed"]
    assert [r["queue"] for r in routed] == [s.inside]
    assert visible(server, s.inside) == 1 and visible(server, s.outside) == 0

    # A key of every queue publishes through the same exchange to both.
    routed = ok(call(server, "POST", path, publish_body("wide"), ADMIN))["routed"]
    assert [r["queue"] for r in routed] == [s.outside]


def test_a_publish_routed_outside_the_namespace_is_permission_denied_over_grpc(
    server: ServerProcess, keys: RoleKeys
) -> None:
    s = Setup(server)
    producer = (("authorization", f"Bearer {keys.by_role['producer']}"),)
    request = pb.PublishRequest(
        exchange=s.exchange, routing_key="k", items=[pb.ProduceItem(payload=b"hello")]
    )
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            stub.Publish(request, metadata=producer)
        err: Any = caught.value
        assert err.code() == grpc.StatusCode.PERMISSION_DENIED
        assert s.outside in err.details()
        assert dict(err.trailing_metadata())["okuri-error-code"] == "forbidden"
        assert visible(server, s.inside) == 0 and visible(server, s.outside) == 0
        admin = (("authorization", f"Bearer {ADMIN}"),)
        routed = stub.Publish(request, metadata=admin).routed
        assert sorted(r.queue for r in routed) == sorted([s.inside, s.outside])


def test_declaring_binding_and_deleting_exchanges_stay_inside_the_namespace(
    server: ServerProcess, keys: RoleKeys
) -> None:
    s = Setup(server)
    admin_ns, consumer = keys.by_role["admin"], keys.by_role["consumer"]
    other_exchange = f"other-ex-{uuid.uuid4().hex[:8]}"
    refused(call(server, "POST", "/v1/exchanges", {"name": other_exchange, "type": "fanout"},
                 admin_ns))  # fmt: skip
    ok(call(server, "POST", "/v1/exchanges", {"name": other_exchange, "type": "fanout"}, ADMIN))
    for key in (admin_ns, consumer):
        # Neither an exchange of the namespace to a queue outside it, nor the other way round.
        to_outside = {"queue": s.outside, "routing_key": "z"}
        refused(call(server, "POST", f"/v1/exchanges/{s.exchange}/bind", to_outside, key))
        refused(call(server, "POST", f"/v1/exchanges/{s.exchange}/unbind", to_outside, key))
        from_outside = {"queue": s.inside, "routing_key": "z"}
        refused(call(server, "POST", f"/v1/exchanges/{other_exchange}/bind", from_outside, key))
    refused(call(server, "DELETE", f"/v1/exchanges/{other_exchange}", None, admin_ns))
    bindings = ok(call(server, "GET", f"/v1/exchanges/{s.exchange}", None, ADMIN))["bindings"]
    assert {"queue": s.outside, "routing_key": "z"} not in bindings
    refused(call(server, "GET", "/v1/exchanges?prefix=other-", None, admin_ns))
    listed = ok(call(server, "GET", "/v1/exchanges", None, admin_ns))["exchanges"]
    assert s.exchange in listed and other_exchange not in listed
