"""The native HTTP/JSON API against a real `okuri serve`: every route, SQS interop both ways,
bearer keys with roles and namespaces, reloading keys on SIGHUP, and a table of bad input that
answers clear errors while the server stays healthy, with the same table's rows for the gRPC
surface on the same port (its other tests are in test_native_grpc.py)."""

from __future__ import annotations

import base64
import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from okuri import limits
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.principals.keyfile import create_key
from okuri.principals.local import DEV_ADMIN_KEY
from tests.servers import Response, RoleKeys, ServerProcess, keyed_server, role_keys, start_server

ADMIN = "native-test-admin-key-0123456789"


Keys = RoleKeys  # a key per role, each limited to namespace "ns-"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return role_keys(tmp_path_factory.mktemp("keys"), "ns-")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("native"), ADMIN, keys.file)
    yield proc
    proc.terminate()


def call(
    server: ServerProcess,
    method: str,
    path: str,
    body: Any = None,
    key: str | None = ADMIN,
    raw: bytes | None = None,
) -> Response:
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    return server.request(method, path, data, headers)


def ok(answer: Response) -> Any:
    assert answer.status == 200, answer.text[:1000]
    return json.loads(answer.body)


def error_code(answer: Response, status: int) -> str:
    assert answer.status == status, answer.text[:1000]
    assert answer.headers["content-type"].startswith("application/json")
    error = json.loads(answer.body)["error"]
    assert isinstance(error["message"], str) and error["message"]
    return str(error["code"])


def fresh(prefix: str = "ns-q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


# --- queues ----------------------------------------------------------------------------------


def test_queue_lifecycle_create_get_update_list_purge_delete(server: ServerProcess) -> None:
    name, dlq = fresh(), fresh()
    ok(call(server, "POST", "/v1/queues", {"name": dlq}))
    attrs = {"lease_timeout_s": 45, "max_attempts": 3, "dead_letter_queue": dlq, "delay_s": 0}
    created = ok(call(server, "POST", "/v1/queues", {"name": name, "attributes": attrs}))
    assert created["attributes"] == {
        **attrs,
        "retention_s": limits.retention_s_default,
        "expires_s": None,
    }
    # Again with the same attributes: fine; with others: 409.
    ok(call(server, "POST", "/v1/queues", {"name": name, "attributes": attrs}))
    other = {"name": name, "attributes": {**attrs, "lease_timeout_s": 46}}
    assert error_code(call(server, "POST", "/v1/queues", other), 409) == "queue_exists"

    ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "a"}] * 3}))
    got = ok(call(server, "GET", f"/v1/queues/{name}"))
    assert got["stats"] == {"visible": 3, "leased": 0, "delayed": 0, "dead_lettered": 0}
    ok(call(server, "POST", f"/v1/queues/{name}/lease", {"max_items": 1, "lease_s": 60}))
    stats = ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]
    # The node may lease a few ahead for its next lease (held half a second), as over SQS.
    assert stats["leased"] >= 1 and stats["visible"] + stats["leased"] == 3, stats

    updated = ok(
        call(server, "PATCH", f"/v1/queues/{name}", {"attributes": {"lease_timeout_s": 90}})
    )
    assert updated["attributes"]["lease_timeout_s"] == 90
    assert updated["attributes"]["max_attempts"] == 3  # untouched

    ok(call(server, "POST", f"/v1/queues/{name}/purge"))
    got = ok(call(server, "GET", f"/v1/queues/{name}"))
    assert got["stats"] == {"visible": 0, "leased": 0, "delayed": 0, "dead_lettered": 0}

    ok(call(server, "DELETE", f"/v1/queues/{name}"))
    assert error_code(call(server, "GET", f"/v1/queues/{name}"), 404) == "queue_not_found"


def test_list_is_paged_and_filtered_by_prefix(server: ServerProcess) -> None:
    prefix = fresh("ns-list")
    names = sorted(f"{prefix}-{i}" for i in range(5))
    for n in names:
        ok(call(server, "POST", "/v1/queues", {"name": n}))
    seen: list[str] = []
    after = ""
    for _ in range(5):
        page = ok(call(server, "GET", f"/v1/queues?prefix={prefix}&limit=2&after={after}"))
        seen += page["queues"]
        if page["next"] is None:
            break
        after = page["next"]
    assert seen == names


def test_one_queue_or_exchange_answers_as_itself_not_wrapped(server: ServerProcess) -> None:
    """A GET of one resource answers the resource's own fields at the top, a queue's and an
    exchange's alike, and so do the create and bind that answer "the exchange"."""
    name, exchange = fresh(), fresh("ns-x")
    created_queue = ok(call(server, "POST", "/v1/queues", {"name": name}))
    got_queue = ok(call(server, "GET", f"/v1/queues/{name}"))
    assert set(got_queue) == {"name", "fifo", "attributes", "stats", "created_at"}
    assert got_queue["name"] == name and set(created_queue) == set(got_queue)

    binding = {"queue": name, "routing_key": "a.#"}
    declared = ok(call(server, "POST", "/v1/exchanges", {"name": exchange, "type": "topic"}))
    bound = ok(call(server, "POST", f"/v1/exchanges/{exchange}/bind", binding))
    got = ok(call(server, "GET", f"/v1/exchanges/{exchange}"))
    assert set(got) == {"name", "type", "bindings", "created_at"}
    assert (got["name"], got["type"]) == (exchange, "topic")
    assert got["bindings"] == [binding]
    assert bound == got and declared == {**got, "bindings": []}
    assert ok(call(server, "POST", f"/v1/exchanges/{exchange}/unbind", binding)) == declared
    ok(call(server, "DELETE", f"/v1/exchanges/{exchange}"))
    ok(call(server, "DELETE", f"/v1/queues/{name}"))


# --- messages --------------------------------------------------------------------------------


def test_produce_lease_complete_with_text_binary_and_headers(server: ServerProcess) -> None:
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    binary = bytes(range(256))
    items = [
        {"body": "héllo ✓", "headers": {"kind": "greeting"}},
        {"body_base64": base64.b64encode(binary).decode()},
    ]
    ids = ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": items}))["ids"]
    assert len(ids) == 2 and len(set(ids)) == 2
    twice = {"items": [{"body": "once", "dedup_id": "d-1"}, {"body": "once", "dedup_id": "d-1"}]}
    first, repeat = ok(call(server, "POST", f"/v1/queues/{name}/messages", twice))["ids"]
    assert first == repeat
    ids.append(first)
    leased = ok(
        call(
            server,
            "POST",
            f"/v1/queues/{name}/lease",
            {"max_items": 10, "lease_s": 30, "request_timeout_s": 1},
        )
    )["items"]
    by_id = {item["id"]: item for item in leased}
    assert set(by_id) == set(ids)
    text, blob = by_id[ids[0]], by_id[ids[1]]
    assert by_id[ids[2]]["body"] == "once"
    assert text["body"] == "héllo ✓" and text["headers"] == {"kind": "greeting"}
    assert base64.b64decode(blob["body_base64"]) == binary
    assert text["attempts"] == 1
    deadline = datetime.fromisoformat(text["lease_deadline"])
    assert timedelta(seconds=25) < deadline - datetime.now(UTC) <= timedelta(seconds=31)
    handles = [text["handle"], blob["handle"], by_id[ids[2]]["handle"], "not-a-handle"]
    results = ok(call(server, "POST", f"/v1/queues/{name}/complete", {"handles": handles}))
    assert results["results"] == ["completed", "completed", "completed", "invalid"]
    again = ok(call(server, "POST", f"/v1/queues/{name}/complete", {"handles": handles[:1]}))
    assert again["results"] == ["gone"]


def test_a_lease_of_a_hundred_fills_from_several_engine_receives(server: ServerProcess) -> None:
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    items = [{"body": f"m{i}"} for i in range(limits.native_items_max)]
    ids = ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": items}))["ids"]
    got: list[dict[str, Any]] = []
    for _ in range(5):  # bounded: messages just written may take a moment to be adopted
        got += ok(
            call(
                server,
                "POST",
                f"/v1/queues/{name}/lease",
                {"max_items": 100, "lease_s": 60, "request_timeout_s": 1},
            )
        )["items"]
        if len(got) >= len(ids):
            break
    assert sorted(i["id"] for i in got) == sorted(ids)
    assert sorted(i["body"] for i in got) == sorted(i["body"] for i in items)


def test_retry_now_later_and_dead_then_redrive(server: ServerProcess) -> None:
    name, dlq = fresh(), fresh()
    ok(call(server, "POST", "/v1/queues", {"name": dlq}))
    attrs = {"max_attempts": 5, "dead_letter_queue": dlq}
    ok(call(server, "POST", "/v1/queues", {"name": name, "attributes": attrs}))
    bodies = ["now", "later", "dead"]
    ok(
        call(
            server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": b} for b in bodies]}
        )
    )
    lease = {"max_items": 3, "lease_s": 60, "request_timeout_s": 1}
    leased = ok(call(server, "POST", f"/v1/queues/{name}/lease", lease))["items"]
    h = {i["body"]: i["handle"] for i in leased}
    assert set(h) == set(bodies)
    retry = {
        "items": [
            {"handle": h["now"]},
            {"handle": h["later"], "retry_at": at(3600)},
            {"handle": h["dead"], "dead": True},
        ]
    }
    assert ok(call(server, "POST", f"/v1/queues/{name}/retry", retry))["results"] == [
        "retried",
        "retried",
        "dead",
    ]
    again = ok(call(server, "POST", f"/v1/queues/{name}/lease", lease))["items"]
    assert [(i["body"], i["attempts"]) for i in again] == [("now", 2)]
    stats = ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]
    # "later" is hidden for an hour; "dead" waits in the dead-letter queue.
    assert stats == {"visible": 0, "leased": 2, "delayed": 0, "dead_lettered": 1}
    in_dlq = ok(call(server, "GET", f"/v1/queues/{dlq}"))["stats"]
    assert in_dlq["visible"] == 1

    moved = ok(call(server, "POST", f"/v1/queues/{dlq}/redrive", {"target": name}))
    assert moved == {"moved": 1}
    assert ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]["dead_lettered"] == 0
    back = ok(call(server, "POST", f"/v1/queues/{name}/lease", lease))["items"]
    assert [i["body"] for i in back] == ["dead"]


def test_extend_keeps_a_lease_and_a_stale_handle_is_named(server: ServerProcess) -> None:
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "x"}]}))
    lease = {"max_items": 1, "lease_s": 1, "request_timeout_s": 1}
    (item,) = ok(call(server, "POST", f"/v1/queues/{name}/lease", lease))["items"]
    extend = {"handles": [item["handle"]], "lease_s": 60}
    assert ok(call(server, "POST", f"/v1/queues/{name}/extend", extend))["results"] == ["extended"]
    time.sleep(1.5)  # past the first lease of one second (real server, real time)
    stats = ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]
    assert stats["leased"] == 1 and stats["visible"] == 0


def test_scheduled_produce_near_and_far_and_a_clear_refusal_past_a_year(
    server: ServerProcess,
) -> None:
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    ok(
        call(
            server,
            "POST",
            f"/v1/queues/{name}/messages",
            {"items": [{"body": "s", "enqueue_at": at(600)}]},
        )
    )
    assert ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]["delayed"] == 1
    # An item a week away waits outside the queue (counted once it is within 15 minutes).
    week = {"items": [{"body": "s", "enqueue_at": at(7 * 86400)}]}
    assert len(ok(call(server, "POST", f"/v1/queues/{name}/messages", week))["ids"]) == 1
    assert ok(call(server, "GET", f"/v1/queues/{name}"))["stats"]["delayed"] == 1
    too_far = {"items": [{"body": "s", "enqueue_at": at(400 * 86400)}]}
    answer = call(server, "POST", f"/v1/queues/{name}/messages", too_far)
    assert error_code(answer, 400) == "out_of_range"
    assert "366 days" in json.loads(answer.body)["error"]["message"]


# --- SQS interop -----------------------------------------------------------------------------


def test_native_to_sqs_and_sqs_to_native_with_the_same_text(server: ServerProcess) -> None:
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    text = 'native → SQS: "quoted", <xml-ish> & ünïcode'
    items = [{"body": text, "headers": {"trace": "t-1"}}]
    (native_id,) = ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": items}))["ids"]
    sqs = server.sqs_client()
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    got = sqs.receive_message(
        QueueUrl=url, WaitTimeSeconds=2, MessageAttributeNames=["All"], MaxNumberOfMessages=10
    )
    (message,) = got["Messages"]
    assert message["MessageId"] == native_id and message["Body"] == text
    assert message["MessageAttributes"]["trace"]["StringValue"] == "t-1"
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    binary = b"\xff\x00okuri"  # not UTF-8: SQS bodies are text, so it arrives as base64
    blob = {"items": [{"body_base64": base64.b64encode(binary).decode()}]}
    ok(call(server, "POST", f"/v1/queues/{name}/messages", blob))
    (message,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=2)["Messages"]
    assert base64.b64decode(message["Body"]) == binary
    sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    back = "SQS → native: ✓"
    sent = sqs.send_message(QueueUrl=url, MessageBody=back)
    lease = {"max_items": 10, "lease_s": 30, "request_timeout_s": 2}
    (item,) = ok(call(server, "POST", f"/v1/queues/{name}/lease", lease))["items"]
    assert (item["id"], item["body"]) == (sent["MessageId"], back)
    done = ok(call(server, "POST", f"/v1/queues/{name}/complete", {"handles": [item["handle"]]}))
    assert done["results"] == ["completed"]


# --- keys, roles, namespaces -----------------------------------------------------------------

# Every route: (operation, method, path with {q}, body that would be valid).
ROUTES = [
    ("create_queue", "POST", "/v1/queues", {"name": "{q}"}),
    ("get_queue", "GET", "/v1/queues/{q}", None),
    ("update_queue", "PATCH", "/v1/queues/{q}", {"attributes": {"delay_s": 1}}),
    ("delete_queue", "DELETE", "/v1/queues/{q}", None),
    ("purge_queue", "POST", "/v1/queues/{q}/purge", None),
    ("produce", "POST", "/v1/queues/{q}/messages", {"items": [{"body": "x"}]}),
    ("lease", "POST", "/v1/queues/{q}/lease", {"max_items": 1}),
    ("complete", "POST", "/v1/queues/{q}/complete", {"handles": ["h"]}),
    ("retry", "POST", "/v1/queues/{q}/retry", {"items": [{"handle": "h"}]}),
    ("extend", "POST", "/v1/queues/{q}/extend", {"handles": ["h"], "lease_s": 5}),
    ("redrive", "POST", "/v1/queues/{q}/redrive", {"target": "{q}"}),
    ("browse", "GET", "/v1/queues/{q}/messages", None),
]
READS = {"get_queue"}


def _route(route: tuple[str, str, str, Any], q: str) -> tuple[str, str, Any]:
    _, method, path, body = route
    text = json.dumps(body).replace("{q}", q) if body is not None else None
    return method, path.replace("{q}", q), None if text is None else json.loads(text)


@pytest.mark.parametrize("route", ROUTES, ids=[r[0] for r in ROUTES])
def test_every_route_denies_a_wrong_role_and_a_queue_outside_the_namespace(
    server: ServerProcess, keys: Keys, route: tuple[str, str, str, Any]
) -> None:
    q = fresh("ns-deny")
    ok(call(server, "POST", "/v1/queues", {"name": q}))
    outside = fresh("other")
    ok(call(server, "POST", "/v1/queues", {"name": outside}))
    if route[0] not in READS:
        method, path, body = _route(route, q)
        answer = call(server, method, path, body, key=keys.by_role["readonly"])
        assert error_code(answer, 403) == "forbidden"
    method, path, body = _route(route, outside)
    answer = call(server, method, path, body, key=keys.by_role["admin"])  # namespace "ns-"
    assert error_code(answer, 403) == "forbidden"
    assert ok(call(server, "GET", f"/v1/queues/{q}"))["name"] == q  # nothing happened


def test_roles_allow_their_own_operations_inside_the_namespace(
    server: ServerProcess, keys: Keys
) -> None:
    q = fresh("ns-roles")
    ok(call(server, "POST", "/v1/queues", {"name": q}, key=keys.by_role["admin"]))
    producer, consumer = keys.by_role["producer"], keys.by_role["consumer"]
    ok(call(server, "POST", f"/v1/queues/{q}/messages", {"items": [{"body": "r"}]}, key=producer))
    lease = {"max_items": 1, "request_timeout_s": 2}
    (item,) = ok(call(server, "POST", f"/v1/queues/{q}/lease", lease, key=consumer))["items"]
    done = ok(
        call(
            server, "POST", f"/v1/queues/{q}/complete", {"handles": [item["handle"]]}, key=consumer
        )
    )
    assert done["results"] == ["completed"]
    listed = ok(call(server, "GET", "/v1/queues", key=keys.by_role["readonly"]))["queues"]
    assert q in listed and all(n.startswith("ns-") for n in listed)
    assert error_code(call(server, "GET", "/v1/queues?prefix=other", key=producer), 403)


def test_a_key_created_while_serving_works_after_sighup(server: ServerProcess, keys: Keys) -> None:
    key, _ = create_key(str(keys.file), "readonly", "")
    assert error_code(call(server, "GET", "/v1/queues", key=key), 401) == "bad_key"
    os.kill(server.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 5
    while call(server, "GET", "/v1/queues", key=key).status != 200:
        assert time.monotonic() < deadline, server.log[-2000:]
        time.sleep(0.05)


def test_with_a_keys_file_of_no_bearer_key_the_api_is_closed_and_says_how_to_open_it(
    tmp_path: Path,
) -> None:
    """Keys configured, none of them native: no bearer key opens it, the development key
    neither (a server with nothing configured takes that one: tests/surface/test_dev_key.py)."""
    empty = tmp_path / "keys.json"
    empty.write_text('{"keys": []}')
    env = {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_API_KEYS_FILE": str(empty)}
    closed = start_server(tmp_path, env)
    try:
        for key in (None, DEV_ADMIN_KEY):
            answer = call(closed, "GET", "/v1/queues", key=key)
            assert error_code(answer, 401) == "no_keys_configured"
            assert "OKURI_ADMIN_KEY" in json.loads(answer.body)["error"]["message"]
            assert answer.headers.get("www-authenticate") == "Bearer"
        assert "holds none" in closed.log and DEV_ADMIN_KEY not in closed.log
    finally:
        closed.terminate()


def test_auth_off_opens_the_native_api_as_it_does_sqs(tmp_path: Path) -> None:
    opened = start_server(tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_AUTH": "off"})
    try:
        ok(call(opened, "POST", "/v1/queues", {"name": "open-q"}, key=None))
    finally:
        opened.terminate()


# --- bad input -------------------------------------------------------------------------------

Q = "ns-bad-input"
EX = "ns-bad-input-ex"  # a direct exchange
BIG = "x" * (limits.message_bytes_max + 1)
CASES: list[tuple[str, str, str, Any, bytes | None, str | None, int, str]] = [
    # (id, method, path, body, raw body, key, status, code)
    ("bad json", "POST", f"/v1/queues/{Q}/messages", None, b"{nope", ADMIN, 400, "bad_json"),
    ("not an object", "POST", f"/v1/queues/{Q}/messages", None, b"[1]", ADMIN, 400, "bad_json"),
    ("unknown field", "POST", f"/v1/queues/{Q}/messages", {"items": [{"body": "x"}], "x": 1},
     None, ADMIN, 400, "unknown_field"),
    ("unknown item field", "POST", f"/v1/queues/{Q}/messages", {"items": [{"bdy": "x"}]},
     None, ADMIN, 400, "unknown_field"),
    ("body not text", "POST", f"/v1/queues/{Q}/messages", {"items": [{"body": 5}]},
     None, ADMIN, 400, "wrong_type"),
    ("items not a list", "POST", f"/v1/queues/{Q}/messages", {"items": {"body": "x"}},
     None, ADMIN, 400, "wrong_type"),
    ("no items", "POST", f"/v1/queues/{Q}/messages", {"items": []}, None, ADMIN, 400,
     "out_of_range"),
    ("too many items", "POST", f"/v1/queues/{Q}/messages", {"items": [{"body": "x"}] * 101},
     None, ADMIN, 400, "out_of_range"),
    ("bad base64", "POST", f"/v1/queues/{Q}/messages", {"items": [{"body_base64": "@@"}]},
     None, ADMIN, 400, "wrong_type"),
    ("bad time", "POST", f"/v1/queues/{Q}/messages",
     {"items": [{"body": "x", "enqueue_at": "tomorrow"}]}, None, ADMIN, 400, "wrong_type"),
    ("bad header", "POST", f"/v1/queues/{Q}/messages",
     {"items": [{"body": "x", "headers": {"AWS.x": "v"}}]}, None, ADMIN, 400, "invalid_argument"),
    ("oversize item", "POST", f"/v1/queues/{Q}/messages", {"items": [{"body": BIG}]},
     None, ADMIN, 413, "too_large"),
    ("oversize request", "POST", f"/v1/queues/{Q}/messages", None,
     b'{"items": [{"body": "' + b"x" * (limits.request_bytes_max + 1) + b'"}]}', ADMIN, 413,
     "too_large"),
    ("bool as number", "POST", f"/v1/queues/{Q}/lease", {"max_items": True}, None, ADMIN, 400,
     "wrong_type"),
    ("lease too many", "POST", f"/v1/queues/{Q}/lease", {"max_items": 101}, None, ADMIN, 400,
     "out_of_range"),
    ("wait too long", "POST", f"/v1/queues/{Q}/lease", {"request_timeout_s": 21}, None, ADMIN,
     400, "out_of_range"),
    ("dead and retry_at", "POST", f"/v1/queues/{Q}/retry",
     {"items": [{"handle": "h", "dead": True, "retry_at": "2030-01-01T00:00:00Z"}]}, None,
     ADMIN, 400, "invalid_request"),
    ("bad queue name", "GET", "/v1/queues/bad.name", None, None, ADMIN, 400,
     "invalid_queue_name"),
    ("bad attribute", "POST", "/v1/queues", {"name": "ns-x", "attributes": {"lease_timeout": 1}},
     None, ADMIN, 400, "unknown_field"),
    ("bad limit", "GET", "/v1/queues?limit=lots", None, None, ADMIN, 400, "wrong_type"),
    ("unknown queue", "POST", "/v1/queues/ns-no-such-queue/messages", {"items": [{"body": "x"}]},
     None, ADMIN, 404, "queue_not_found"),
    ("unknown route", "GET", "/v1/nothing", None, None, ADMIN, 404, "not_found"),
    ("wrong method", "PUT", f"/v1/queues/{Q}/messages", {}, None, ADMIN, 405,
     "method_not_allowed"),
    ("missing key", "GET", "/v1/queues", None, None, None, 401, "missing_key"),
    ("bad key", "GET", "/v1/queues", None, None, "not-a-key", 401, "bad_key"),
    # exchanges
    ("exchange of no type", "POST", "/v1/exchanges", {"name": "ns-ex-untyped"}, None, ADMIN,
     400, "missing_field"),
    ("headers exchange", "POST", "/v1/exchanges", {"name": "ns-ex-h", "type": "headers"}, None,
     ADMIN, 400, "invalid_argument"),
    ("exchange type not text", "POST", "/v1/exchanges", {"name": "ns-ex-5", "type": 5}, None,
     ADMIN, 400, "wrong_type"),
    ("bad exchange name", "POST", "/v1/exchanges", {"name": "bad.name", "type": "direct"},
     None, ADMIN, 400, "invalid_exchange_name"),
    ("exchange field unknown", "POST", "/v1/exchanges",
     {"name": "ns-ex-u", "type": "direct", "durable": True}, None, ADMIN, 400, "unknown_field"),
    ("exchange of another type", "POST", "/v1/exchanges", {"name": EX, "type": "fanout"}, None,
     ADMIN, 409, "exchange_exists"),
    ("unknown exchange", "GET", "/v1/exchanges/ns-no-such-ex", None, None, ADMIN, 404,
     "exchange_not_found"),
    ("bind without queue", "POST", f"/v1/exchanges/{EX}/bind", {"routing_key": "k"}, None,
     ADMIN, 400, "missing_field"),
    ("routing key too long", "POST", f"/v1/exchanges/{EX}/bind",
     {"queue": Q, "routing_key": "k" * 256}, None, ADMIN, 400, "out_of_range"),
    ("routing key not text", "POST", f"/v1/exchanges/{EX}/bind", {"queue": Q, "routing_key": 5},
     None, ADMIN, 400, "wrong_type"),
    ("bind an unknown queue", "POST", f"/v1/exchanges/{EX}/bind", {"queue": "ns-no-such-q"},
     None, ADMIN, 404, "queue_not_found"),
    ("publish no items", "POST", f"/v1/exchanges/{EX}/messages", {"routing_key": "k",
     "items": []}, None, ADMIN, 400, "out_of_range"),
    ("publish oversize item", "POST", f"/v1/exchanges/{EX}/messages",
     {"routing_key": "k", "items": [{"body": BIG}]}, None, ADMIN, 413, "too_large"),
    ("publish to no exchange", "POST", "/v1/exchanges/ns-no-such-ex/messages",
     {"routing_key": "k", "items": [{"body": "x"}]}, None, ADMIN, 404, "exchange_not_found"),
    ("bad exchange limit", "GET", "/v1/exchanges?limit=0", None, None, ADMIN, 400,
     "out_of_range"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("method", "path", "body", "raw", "key", "status", "code"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_bad_input_answers_a_clear_error(
    server: ServerProcess,
    method: str,
    path: str,
    body: Any,
    raw: bytes | None,
    key: str | None,
    status: int,
    code: str,
) -> None:
    call(server, "POST", "/v1/queues", {"name": Q})
    call(server, "POST", "/v1/exchanges", {"name": EX, "type": "direct"})
    assert error_code(call(server, method, path, body, key=key, raw=raw), status) == code


# The same kinds of bad input over gRPC: (id, method, request or raw bytes, key, status, code).
GRPC = grpc.StatusCode
BIG_ITEM = pb.ProduceItem(payload=b"x" * (limits.message_bytes_max + 1))


def _ts(seconds_from_now: float) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(datetime.now(UTC) + timedelta(seconds=seconds_from_now))
    return ts


def _produce(*items: pb.ProduceItem, queue: str = Q) -> pb.ProduceRequest:
    return pb.ProduceRequest(queue=queue, items=items)


GRPC_CASES: list[tuple[str, str, Message | bytes, str | None, grpc.StatusCode, str]] = [
    ("garbage bytes", "Lease", b"\xff\xff\xff\x0fnot protobuf", ADMIN, GRPC.INVALID_ARGUMENT,
     "bad_protobuf"),
    ("no items", "Produce", _produce(), ADMIN, GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("too many items", "Produce", _produce(*[pb.ProduceItem(payload=b"x")] * 101), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("bad header", "Produce", _produce(pb.ProduceItem(payload=b"x", headers={"AWS.x": "v"})),
     ADMIN, GRPC.INVALID_ARGUMENT, "invalid_argument"),
    ("empty header", "Produce", _produce(pb.ProduceItem(payload=b"x", headers={"k": ""})),
     ADMIN, GRPC.INVALID_ARGUMENT, "invalid_request"),
    ("bad timestamp", "Produce",
     _produce(pb.ProduceItem(payload=b"x", enqueue_at=Timestamp(seconds=2**62))), ADMIN,
     GRPC.INVALID_ARGUMENT, "wrong_type"),
    ("enqueue too far", "Produce",
     _produce(pb.ProduceItem(payload=b"x", enqueue_at=_ts(400 * 86400))),
     ADMIN, GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("oversize item", "Produce", _produce(BIG_ITEM), ADMIN, GRPC.INVALID_ARGUMENT, "too_large"),
    ("lease too many", "Lease", pb.LeaseRequest(queue=Q, max_items=101), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("negative lease", "Lease", pb.LeaseRequest(queue=Q, lease_s=-1), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("wait too long", "Lease", pb.LeaseRequest(queue=Q, request_timeout_s=21), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("dead and retry_at", "Retry",
     pb.RetryRequest(queue=Q, items=[pb.RetryItem(handle="h", dead=True, retry_at=_ts(60))]),
     ADMIN, GRPC.INVALID_ARGUMENT, "invalid_request"),
    ("extend without lease_s", "Extend", pb.ExtendRequest(queue=Q, handles=["h"]), ADMIN,
     GRPC.INVALID_ARGUMENT, "missing_field"),
    ("empty handle", "Complete", pb.CompleteRequest(queue=Q, handles=[""]), ADMIN,
     GRPC.INVALID_ARGUMENT, "wrong_type"),
    ("bad queue name", "GetQueue", pb.GetQueueRequest(queue="bad.name"), ADMIN,
     GRPC.INVALID_ARGUMENT, "invalid_queue_name"),
    ("no queue name", "GetQueue", pb.GetQueueRequest(), ADMIN, GRPC.INVALID_ARGUMENT,
     "invalid_queue_name"),
    ("update nothing", "UpdateQueue", pb.UpdateQueueRequest(queue=Q), ADMIN,
     GRPC.INVALID_ARGUMENT, "missing_field"),
    ("reset unknown attribute", "UpdateQueue",
     pb.UpdateQueueRequest(queue=Q, reset_attributes=["lease_timeout"]), ADMIN,
     GRPC.INVALID_ARGUMENT, "unknown_field"),
    ("set and reset", "UpdateQueue",
     pb.UpdateQueueRequest(queue=Q, attributes=pb.QueueAttributes(delay_s=1),
                           reset_attributes=["delay_s"]), ADMIN, GRPC.INVALID_ARGUMENT,
     "invalid_argument"),
    ("bad limit", "ListQueues", pb.ListQueuesRequest(limit=0), ADMIN, GRPC.INVALID_ARGUMENT,
     "out_of_range"),
    ("unknown queue", "Produce", _produce(pb.ProduceItem(payload=b"x"), queue="ns-no-such-q"),
     ADMIN, GRPC.NOT_FOUND, "queue_not_found"),
    ("missing key", "ListQueues", pb.ListQueuesRequest(), None, GRPC.UNAUTHENTICATED,
     "missing_key"),
    ("bad key", "ListQueues", pb.ListQueuesRequest(), "not-a-key", GRPC.UNAUTHENTICATED,
     "bad_key"),
    # exchanges
    ("exchange of no type", "CreateExchange", pb.CreateExchangeRequest(name="ns-ex-untyped"),
     ADMIN, GRPC.INVALID_ARGUMENT, "missing_field"),
    ("headers exchange", "CreateExchange",
     pb.CreateExchangeRequest(name="ns-ex-h", type="headers"), ADMIN, GRPC.INVALID_ARGUMENT,
     "invalid_argument"),
    ("bad exchange name", "CreateExchange",
     pb.CreateExchangeRequest(name="bad.name", type="direct"), ADMIN, GRPC.INVALID_ARGUMENT,
     "invalid_exchange_name"),
    ("exchange of another type", "CreateExchange",
     pb.CreateExchangeRequest(name=EX, type="fanout"), ADMIN, GRPC.ALREADY_EXISTS,
     "exchange_exists"),
    ("unknown exchange", "GetExchange", pb.GetExchangeRequest(exchange="ns-no-such-ex"), ADMIN,
     GRPC.NOT_FOUND, "exchange_not_found"),
    ("bind without queue", "BindQueue", pb.BindingRequest(exchange=EX, routing_key="k"), ADMIN,
     GRPC.INVALID_ARGUMENT, "missing_field"),
    ("routing key too long", "BindQueue",
     pb.BindingRequest(exchange=EX, queue=Q, routing_key="k" * 256), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("publish no items", "Publish", pb.PublishRequest(exchange=EX, routing_key="k"), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
    ("publish oversize item", "Publish", pb.PublishRequest(exchange=EX, items=[BIG_ITEM]), ADMIN,
     GRPC.INVALID_ARGUMENT, "too_large"),
    ("publish to no exchange", "Publish",
     pb.PublishRequest(exchange="ns-no-such-ex", items=[pb.ProduceItem(payload=b"x")]), ADMIN,
     GRPC.NOT_FOUND, "exchange_not_found"),
    ("bad exchange limit", "ListExchanges", pb.ListExchangesRequest(limit=0), ADMIN,
     GRPC.INVALID_ARGUMENT, "out_of_range"),
]  # fmt: skip


@pytest.fixture(scope="module")
def channel(server: ServerProcess) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.url.removeprefix("http://")) as ch:
        yield ch


def grpc_call(
    channel: grpc.Channel, method: str, request: Message | bytes, key: str | None
) -> grpc.RpcError:
    """Call `method` with `request` (bytes are sent as they are) and return its refusal."""
    rpc = channel.unary_unary(
        f"/okuri.api.v1.QueueService/{method}",
        request_serializer=None if isinstance(request, bytes) else type(request).SerializeToString,
    )
    try:
        rpc(request, metadata=() if key is None else (("authorization", f"Bearer {key}"),))
    except grpc.RpcError as err:
        return err
    pytest.fail(f"{method} succeeded")


@pytest.mark.parametrize(
    ("method", "request_", "key", "status", "code"),
    [c[1:] for c in GRPC_CASES],
    ids=[c[0] for c in GRPC_CASES],
)
def test_bad_input_over_grpc_answers_a_clear_status(
    server: ServerProcess,
    channel: grpc.Channel,
    method: str,
    request_: Message | bytes,
    key: str | None,
    status: grpc.StatusCode,
    code: str,
) -> None:
    call(server, "POST", "/v1/queues", {"name": Q})
    call(server, "POST", "/v1/exchanges", {"name": EX, "type": "direct"})
    err = grpc_call(channel, method, request_, key)
    assert err.code() == status, err.details()
    assert dict(err.trailing_metadata())["okuri-error-code"] == code
    assert err.details() and "Traceback" not in err.details()


def test_grpc_bounds_a_request_and_names_an_unknown_method(
    server: ServerProcess, channel: grpc.Channel
) -> None:
    """What grpc itself refuses before okuri sees it: over 4 MiB, a method not in the .proto."""
    big = pb.ProduceRequest(queue=Q, items=[BIG_ITEM] * 4)
    too_big = grpc_call(channel, "Produce", big, ADMIN)
    assert too_big.code() == GRPC.RESOURCE_EXHAUSTED, too_big.details()
    assert str(limits.request_bytes_max) in too_big.details()
    unknown = grpc_call(channel, "Nope", pb.ListQueuesRequest(), ADMIN)
    assert unknown.code() == GRPC.UNIMPLEMENTED


def test_the_server_stays_healthy_after_the_table(server: ServerProcess) -> None:
    assert server.get("/readyz").status == 200
    assert "Traceback" not in server.log, server.log[-3000:]
    name = fresh()
    ok(call(server, "POST", "/v1/queues", {"name": name}))
    ok(call(server, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "still here"}]}))


def test_expires_s_is_set_shown_cleared_and_checked(server: ServerProcess) -> None:
    name = fresh()
    made = ok(call(server, "POST", "/v1/queues", {"name": name, "attributes": {"expires_s": 600}}))
    assert made["attributes"]["expires_s"] == 600
    assert ok(call(server, "GET", f"/v1/queues/{name}"))["attributes"]["expires_s"] == 600
    cleared = {"attributes": {"expires_s": None}}
    assert (
        ok(call(server, "PATCH", f"/v1/queues/{name}", cleared))["attributes"]["expires_s"] is None
    )
    for bad, code in (
        (0, "out_of_range"),
        (-5, "out_of_range"),
        (366 * 86400 + 1, "out_of_range"),
        ("60", "wrong_type"),
        (1.5, "wrong_type"),
        (True, "wrong_type"),
    ):
        body = {"name": fresh(), "attributes": {"expires_s": bad}}
        assert error_code(call(server, "POST", "/v1/queues", body), 400) == code, bad
        patch = {"attributes": {"expires_s": bad}}
        assert error_code(call(server, "PATCH", f"/v1/queues/{name}", patch), 400) == code, bad


def test_an_abandoned_queue_is_deleted_by_the_servers_sweeper(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Nobody touches the queue after producing to it: the sweeper (every second here) deletes
    it by itself; listing queues reads no manifest, so it is no use of the queue."""
    tmp = tmp_path_factory.mktemp("expiry")
    env = {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_ADMIN_KEY": ADMIN}
    proc = start_server(tmp, {**env, "OKURI_EXPIRY_SWEEP_S": "1"})
    try:
        name, kept = fresh(), fresh()
        ok(call(proc, "POST", "/v1/queues", {"name": name, "attributes": {"expires_s": 1}}))
        ok(call(proc, "POST", "/v1/queues", {"name": kept}))
        ok(call(proc, "POST", f"/v1/queues/{name}/messages", {"items": [{"body": "x"}]}))
        for _ in range(300):  # up to 30 s; due after 1 s plus a sweep of 0.75 to 1.25 s
            listed = ok(call(proc, "GET", "/v1/queues?prefix=ns-"))["queues"]
            if name not in listed:
                break
            time.sleep(0.1)
        else:
            pytest.fail(f"{name} was never deleted by the sweeper")
        assert kept in listed
        assert error_code(call(proc, "GET", f"/v1/queues/{name}"), 404) == "queue_not_found"
    finally:
        proc.terminate()
