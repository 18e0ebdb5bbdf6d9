"""GET /v1/openapi.json against a real `okuri serve`: served without a key; every path and
method it describes is routed and no other method is; its request examples are accepted as
written; and the real answers of every operation, errors included, validate against the
schemas it gives for them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from okuri.native.openapi import DOCUMENT, EXAMPLE_EXCHANGE, EXAMPLE_QUEUE
from okuri.principals.keyfile import create_key
from tests.openapi_doc import by_id, check_answer, operations
from tests.servers import ServerProcess, keyed_server

ADMIN = "openapi-test-admin-key-0123456789"
PROBED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


@pytest.fixture(scope="module")
def readonly_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return path, create_key(str(path), "readonly", "")[0]


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, readonly_key: tuple[Path, str]
) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("openapi"), ADMIN, readonly_key[0])
    yield proc
    proc.terminate()


@pytest.fixture
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


class Api:
    """Calls described operations and checks each answer against the document."""

    def __init__(self, http: httpx.Client) -> None:
        self.http = http
        self.checked: set[tuple[str, int]] = set()

    def call(
        self,
        operation_id: str,
        queue: str = "",
        body: Any = None,
        key: str | None = ADMIN,
        query: dict[str, str] | None = None,
    ) -> httpx.Response:
        d = by_id(operation_id)
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        answer = self.http.request(
            d.method,
            d.path.replace("{queue}", queue).replace("{exchange}", queue),
            json=body,
            params=query,
            headers=headers,
        )
        check_answer(d, answer.status_code, answer.json())
        self.checked.add((operation_id, answer.status_code))
        return answer

    def ok(self, operation_id: str, queue: str = "", body: Any = None, **kw: Any) -> Any:
        answer = self.call(operation_id, queue, body, **kw)
        assert answer.status_code == 200, answer.text
        return answer.json()


def fresh(prefix: str = "oa") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_the_document_is_served_without_a_key_and_is_the_one_built(http: httpx.Client) -> None:
    answer = http.get("/v1/openapi.json")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json() == DOCUMENT
    assert http.get("/v1/openapi.json/").json() == DOCUMENT
    refused = http.post("/v1/openapi.json", json={})
    assert refused.status_code == 405 and refused.json()["error"]["code"] == "method_not_allowed"


def test_each_documented_path_takes_its_methods_and_refuses_the_others(
    http: httpx.Client,
) -> None:
    """Probe every path the document names with every method: a documented pair reaches its
    operation (here: the key check, 401), any other answers 405 naming the documented ones."""
    described: dict[str, set[str]] = {}
    for d in operations():
        described.setdefault(d.path, set()).add(d.method)
    for path, methods in described.items():
        url = path.replace("{queue}", fresh()).replace("{exchange}", fresh())
        for method in PROBED_METHODS:
            answer = http.request(method, url)
            code = answer.json()["error"]["code"] if answer.status_code != 200 else None
            if method in methods:
                assert answer.status_code in (200, 401), (method, path, answer.text)
            else:
                assert (answer.status_code, code) == (405, "method_not_allowed"), (method, path)
                assert ", ".join(sorted(methods)) in answer.json()["error"]["message"]
    answer = http.get("/v1/queues/q/nothing-here")
    assert (answer.status_code, answer.json()["error"]["code"]) == (404, "not_found")


def test_every_request_example_is_accepted_as_written(http: httpx.Client) -> None:
    """The examples name the queues `emails` and `emails-dlq` (no other test here does); they
    run in the order a reader would use them."""
    api = Api(http)
    order = [
        "create_queue", "get_queue", "update_queue", "list_queues", "produce", "lease",
        "extend", "complete", "retry", "browse", "redrive", "create_exchange", "get_exchange",
        "list_exchanges", "bind", "publish", "unbind", "delete_exchange", "purge_queue",
        "delete_queue",
    ]  # fmt: skip
    assert set(order) | {"openapi"} == {d.operation["operationId"] for d in operations()}
    for operation_id in order:
        d = by_id(operation_id)
        queue = EXAMPLE_QUEUE.get(operation_id, "")
        if "{exchange}" in d.path:
            queue = EXAMPLE_EXCHANGE
        if "requestBody" not in d.operation:
            query = {
                p["name"]: str(p["example"])
                for p in d.operation.get("parameters", [])
                if p["in"] == "query" and "example" in p
            }
            api.ok(operation_id, queue, query=query or None)
            continue
        for name, example in d.operation["requestBody"]["content"]["application/json"][
            "examples"
        ].items():
            answer = api.call(operation_id, queue, example["value"])
            assert answer.status_code == 200, (operation_id, name, answer.text)


def test_real_answers_of_every_operation_validate_against_the_document(
    http: httpx.Client, readonly_key: tuple[Path, str]
) -> None:
    api = Api(http)
    name, dlq = fresh(), fresh()
    api.ok("create_queue", body={"name": dlq})
    api.ok(
        "create_queue",
        body={"name": name, "attributes": {"max_attempts": 2, "dead_letter_queue": dlq}},
    )
    api.ok("get_queue", name)
    api.ok("update_queue", name, {"attributes": {"lease_timeout_s": 90, "max_attempts": None}})
    api.ok("list_queues", query={"prefix": "oa-", "limit": "1"})
    items = [{"body": "text", "headers": {"k": "v"}}, {"body_base64": "AP8="}, {"body": "c"}]
    ids = api.ok("produce", name, {"items": items})["ids"]
    leased = api.ok("lease", name, {"max_items": 10, "lease_s": 60, "request_timeout_s": 5})
    assert {i["id"] for i in leased["items"]} == set(ids)
    assert any("body_base64" in i for i in leased["items"])  # a binary answer validated too
    handles = [i["handle"] for i in leased["items"]]
    api.ok("extend", name, {"handles": handles, "lease_s": 120})
    api.ok("complete", name, {"handles": [handles[0], "okr1bm90aGluZw"]})
    api.ok("retry", name, {"items": [{"handle": handles[1], "dead": True}]})
    api.ok("retry", name, {"items": [{"handle": handles[2]}]})
    (dead,) = api.ok("browse", dlq, query={"limit": "5"})["items"]
    assert dead["dead_letter_source"] == name
    assert [i["state"] for i in api.ok("browse", name)["items"]] == ["visible"]
    assert api.ok("redrive", dlq, {"target": name})["moved"] == 1
    exchange = fresh()
    api.ok("create_exchange", body={"name": exchange, "type": "topic"})
    api.ok("bind", exchange, {"queue": name, "routing_key": "a.#"})
    api.ok("get_exchange", exchange)
    api.ok("list_exchanges", query={"prefix": "oa-", "limit": "1"})
    routed = api.ok("publish", exchange, {"routing_key": "a.b", "items": [{"body": "x"}]})
    assert [r["queue"] for r in routed["routed"]] == [name]
    api.ok("unbind", exchange, {"queue": name, "routing_key": "a.#"})
    api.ok("delete_exchange", exchange)
    assert api.call("get_exchange", exchange).status_code == 404
    api.ok("purge_queue", name)
    api.ok("delete_queue", name)

    # The errors each operation can answer, each against the document's error schema.
    assert api.call("get_queue", name).status_code == 404
    assert (
        api.call("create_queue", body={"name": dlq, "attributes": {"delay_s": 5}}).status_code
        == 409
    )
    assert api.call("lease", dlq, {"lease_s": 0}).status_code == 400
    assert (
        api.call("produce", dlq, {"items": [{"body": "x" * (1024 * 1024 + 1)}]}).status_code == 413
    )
    assert api.call("get_queue", dlq, key=None).status_code == 401
    assert api.call("get_queue", dlq, key="not-a-key-of-this-server").status_code == 401
    assert (
        api.call("produce", dlq, {"items": [{"body": "x"}]}, key=readonly_key[1]).status_code == 403
    )
    assert api.call("list_queues", query={"limit": "0"}).status_code == 400

    statuses = {status for _, status in api.checked}
    assert statuses == {200, 400, 401, 403, 404, 409, 413}
    assert {op for op, status in api.checked if status == 200} == {
        d.operation["operationId"] for d in operations()
    } - {"openapi"}


def test_fifo_answers_validate_against_the_document(http: httpx.Client) -> None:
    """A FIFO queue's answers carry more: content_based_dedup, sequence numbers, duplicates,
    each leased item's group and sequence number."""
    api = Api(http)
    name = fresh() + ".fifo"
    created = api.ok(
        "create_queue",
        body={"name": name, "fifo": True, "attributes": {"content_based_dedup": True}},
    )
    assert created["attributes"]["content_based_dedup"] is True
    api.ok("update_queue", name, {"attributes": {"content_based_dedup": False}})
    items = [
        {"body": "a", "group": "g", "dedup_id": "1"},
        {"body_base64": "AP8=", "group": "g", "dedup_id": "2"},
        {"body": "again", "group": "h", "dedup_id": "1"},
    ]
    produced = api.ok("produce", name, {"items": items})
    assert produced["duplicates"] == [2] and len(produced["sequence_numbers"]) == 3
    leased = api.ok("lease", name, {"max_items": 10})["items"]
    assert [i["group"] for i in leased] == ["g", "g"]
    assert [i["sequence_number"] for i in leased] == produced["sequence_numbers"][:2]
    missing = api.call("produce", name, {"items": [{"body": "x", "dedup_id": "3"}]})
    assert missing.status_code == 400
    assert api.call("get_queue", name).status_code == 200
