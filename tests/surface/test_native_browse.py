"""Browsing a queue against a real `okuri serve`: over HTTP/JSON, over gRPC, and through
okuri.client (sync and async, both wires). A browse shows visible, leased and delayed items
with their state, pages oldest first, shows where a dead letter came from, refuses producer and
read-only keys and bad input with the surface's own errors, and changes nothing: the stats,
attempts and lease deadlines read before and after are the same."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import grpc
import pytest

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.client import BrowsedItem, ForbiddenError
from tests.clients import CLIENTS, open_client
from tests.servers import Response, RoleKeys, ServerProcess, keyed_server, role_keys

ADMIN = "browse-test-admin-key-0123456789"
NS = "nb-"


Keys = RoleKeys


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return role_keys(tmp_path_factory.mktemp("keys"), NS)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("browse"), ADMIN, keys.file)
    yield proc
    proc.terminate()


def call(server: ServerProcess, method: str, path: str, body: Any = None, key: str = ADMIN) -> Any:
    answer = raw(server, method, path, body, key)
    assert answer.status == 200, answer.text[:1000]
    return json.loads(answer.body)


def raw(
    server: ServerProcess, method: str, path: str, body: Any = None, key: str = ADMIN
) -> Response:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    data = None if body is None else json.dumps(body).encode()
    return server.request(method, path, data, headers)


def fresh() -> str:
    return f"{NS}{uuid.uuid4().hex[:10]}"


def with_dead_letter(server: ServerProcess) -> tuple[str, str]:
    """A queue holding one visible, one leased and one delayed item, and its dead-letter queue
    holding one item dead-lettered from it."""
    name, dlq = fresh(), fresh()
    call(server, "POST", "/v1/queues", {"name": dlq})
    attrs = {"max_attempts": 5, "dead_letter_queue": dlq}
    call(server, "POST", "/v1/queues", {"name": name, "attributes": attrs})
    items = [{"body": "poison", "headers": {"kind": "bad"}}, {"body": "held"}]
    call(server, "POST", f"/v1/queues/{name}/messages", {"items": items})
    lease = {"max_items": 2, "lease_s": 600, "request_timeout_s": 2}
    answer = call(server, "POST", f"/v1/queues/{name}/lease", lease)
    leased = {i["body"]: i for i in answer["items"]}
    retry = {"items": [{"handle": leased["poison"]["handle"], "dead": True}]}
    assert call(server, "POST", f"/v1/queues/{name}/retry", retry)["results"] == ["dead"]
    call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "soon"}]})
    call(server, "PATCH", f"/v1/queues/{name}", {"attributes": {"delay_s": 900}})
    call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "delayed"}]})
    return name, dlq


def test_browse_over_http_shows_states_and_changes_nothing(server: ServerProcess) -> None:
    name, dlq = with_dead_letter(server)
    before = call(server, "GET", f"/v1/queues/{name}")["stats"]

    page = call(server, "GET", f"/v1/queues/{name}/messages")

    assert page["next"] is None
    states = [(i["body"], i["state"], i["attempts"]) for i in page["items"]]
    assert states == [("held", "leased", 1), ("soon", "visible", 0), ("delayed", "delayed", 0)]
    held, soon, delayed = page["items"]
    assert "until" in held and "first_leased_at" in held
    assert "until" not in soon and "first_leased_at" not in soon
    assert delayed["until"] > delayed["enqueued_at"]
    assert call(server, "GET", f"/v1/queues/{name}")["stats"] == before
    assert call(server, "GET", f"/v1/queues/{name}/messages") == page  # nothing moved

    (dead,) = call(server, "GET", f"/v1/queues/{dlq}/messages")["items"]
    assert dead["body"] == "poison" and dead["headers"] == {"kind": "bad"}
    assert dead["dead_letter_source"] == name
    assert dead["state"] == "visible" and dead["attempts"] == 1


def test_browse_pages_oldest_first_with_after(server: ServerProcess) -> None:
    name = fresh()
    call(server, "POST", "/v1/queues", {"name": name})
    bodies = [f"m{i:02}" for i in range(12)]
    call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": b} for b in bodies]})
    seen: list[str] = []
    path = f"/v1/queues/{name}/messages?limit=5"
    for _ in range(5):
        page = call(server, "GET", path)
        seen.extend(i["body"] for i in page["items"])
        if page["next"] is None:
            break
        path = f"/v1/queues/{name}/messages?limit=5&after={page['next']}"
    assert seen == bodies


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("limit=0", "out_of_range"),
        ("limit=101", "out_of_range"),
        ("limit=many", "wrong_type"),
        ("after=nonsense", "invalid_argument"),
        ("color=red", "unknown_field"),
    ],
)
def test_bad_browse_input_is_a_400_in_the_apis_shape(
    server: ServerProcess, query: str, code: str
) -> None:
    name = fresh()
    call(server, "POST", "/v1/queues", {"name": name})
    answer = raw(server, "GET", f"/v1/queues/{name}/messages?{query}")
    assert answer.status == 400, answer.text
    assert json.loads(answer.body)["error"]["code"] == code


def test_browsing_a_missing_queue_is_a_404(server: ServerProcess) -> None:
    answer = raw(server, "GET", f"/v1/queues/{fresh()}/messages")
    assert answer.status == 404, answer.text


def test_consumer_and_admin_may_browse_producer_and_readonly_may_not(
    server: ServerProcess, keys: Keys
) -> None:
    name = fresh()
    call(server, "POST", "/v1/queues", {"name": name})
    call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "secret"}]})
    for role in ("admin", "consumer"):
        page = call(server, "GET", f"/v1/queues/{name}/messages", key=keys.by_role[role])
        assert [i["body"] for i in page["items"]] == ["secret"]
    for role in ("producer", "readonly"):
        answer = raw(server, "GET", f"/v1/queues/{name}/messages", key=keys.by_role[role])
        assert answer.status == 403, answer.text
        assert json.loads(answer.body)["error"]["code"] == "forbidden"


def test_browse_over_grpc(server: ServerProcess, keys: Keys) -> None:
    name, dlq = with_dead_letter(server)
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        admin = (("authorization", f"Bearer {ADMIN}"),)
        page = stub.Browse(pb.BrowseRequest(queue=name, limit=2), metadata=admin)
        assert [(i.payload, i.state) for i in page.items] == [
            (b"held", "leased"),
            (b"soon", "visible"),
        ]
        assert page.items[0].HasField("until") and not page.items[1].HasField("until")
        assert page.HasField("next")
        rest = stub.Browse(pb.BrowseRequest(queue=name, after=page.next), metadata=admin)
        assert [(i.payload, i.state) for i in rest.items] == [(b"delayed", "delayed")]
        assert not rest.HasField("next")
        (dead,) = stub.Browse(pb.BrowseRequest(queue=dlq), metadata=admin).items
        assert dead.dead_letter_source == name and dead.attempts == 1
        producer = (("authorization", f"Bearer {keys.by_role['producer']}"),)
        with pytest.raises(grpc.RpcError) as denied:
            stub.Browse(pb.BrowseRequest(queue=name), metadata=producer)
        assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED  # type: ignore[attr-defined]
        with pytest.raises(grpc.RpcError) as bad:
            stub.Browse(pb.BrowseRequest(queue=name, limit=0), metadata=admin)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_client_browses(server: ServerProcess, keys: Keys, kind: str) -> None:
    name, dlq = with_dead_letter(server)
    with open_client(kind, server.url, ADMIN) as okuri:
        first = okuri.browse(name, limit=2)
        rest = okuri.browse(name, after=first.next)
        items: list[BrowsedItem] = [*first.items, *rest.items]
        assert [(i.text, i.state, i.attempts) for i in items] == [
            ("held", "leased", 1),
            ("soon", "visible", 0),
            ("delayed", "delayed", 0),
        ]
        assert items[0].until is not None and items[0].first_leased_at is not None
        assert items[1].until is None and items[1].first_leased_at is None
        assert rest.next is None
        (dead,) = okuri.browse(dlq).items
        assert (dead.text, dead.dead_letter_source, dead.headers) == (
            "poison",
            name,
            {"kind": "bad"},
        )
    with (
        open_client(kind, server.url, keys.by_role["readonly"]) as reader,
        pytest.raises(ForbiddenError),
    ):
        reader.browse(name)
