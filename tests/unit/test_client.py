"""okuri.client against httpx.MockTransport, each test for the blocking and the asyncio client:
the request every method sends, how answers and errors are read, what is retried and how
waits are paced (recorded, never slept), and the transport seam. The same client against a
real server is tests/surface/test_native_client.py."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import httpx
import pytest

from okuri.client import (
    OPERATIONS,
    AuthError,
    BadRequestError,
    Client,
    ConflictError,
    ForbiddenError,
    Item,
    NotFoundError,
    OkuriClientError,
    OverloadedError,
    PartialProduceError,
    Request,
    RetryPolicy,
    ServerError,
    TooLargeError,
    TransportError,
    UnavailableError,
)
from okuri.client.http import ROUTES as CLIENT_ROUTES
from okuri.client.retries import next_wait_s
from okuri.native.routes import ROUTES as SERVER_ROUTES
from tests.clients import KINDS, open_client
from tests.openapi_doc import by_id, check_answer

URL = "http://okuri.test:8080"
KEY = "test-key-0123456789"
T0 = "2026-12-01T10:00:00.000Z"
QUEUE_DOC = {
    "name": "emails",
    "fifo": False,
    "attributes": {
        "lease_timeout_s": 60,
        "max_attempts": 5,
        "dead_letter_queue": "emails-dlq",
        "retention_s": 345600,
        "delay_s": 0,
    },
    "stats": {"visible": 1, "leased": 2, "delayed": 3},
    "created_at": T0,
}


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, str]
    doc: Any
    headers: httpx.Headers
    timeout: dict[str, float | None] = field(default_factory=dict)


class FakeServer:
    """Answers from a script (one answer per request, the last repeated), recording requests."""

    def __init__(self, *answers: httpx.Response | Exception | Callable[[Seen], Any]) -> None:
        self.answers = list(answers)
        self.seen: list[Seen] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        seen = Seen(
            request.method,
            request.url.path,
            dict(request.url.params),
            json.loads(body) if body else None,
            request.headers,
            request.extensions.get("timeout", {}),
        )
        self.seen.append(seen)
        answer = self.answers[min(len(self.seen), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return httpx.Response(200, json=answer(seen))
        # A fresh copy: a response is read once, and a script may answer several times.
        return httpx.Response(answer.status_code, headers=answer.headers, content=answer.content)

    def client(self, kind: str, **options: Any) -> Any:
        return open_client(kind, URL, KEY, mock=httpx.MockTransport(self), **options)


def ok(doc: Any) -> httpx.Response:
    return httpx.Response(200, json=doc)


def error(status: int, code: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"code": code, "message": f"{code} happened"}}
    return httpx.Response(status, json=body, headers=headers)


def leased(**fields: Any) -> dict[str, Any]:
    return {
        "id": "id-1",
        "handle": "h-1",
        "attempts": 1,
        "lease_deadline": T0,
        "enqueued_at": T0,
        **fields,
    }


def canned(seen: Seen) -> Any:
    """A well-formed answer to whatever route `seen` asked."""
    action = seen.path.rsplit("/", 1)[-1]
    if seen.path == "/v1/queues" and seen.method == "GET":
        return {"queues": ["emails"], "next": None}
    if seen.method == "DELETE" or action == "purge":
        return {}
    return {
        "messages": {"ids": ["id-1"]},
        "lease": {"items": [leased(body="hi")]},
        "complete": {"results": ["completed"]},
        "retry": {"results": ["retried"]},
        "extend": {"results": ["extended"]},
        "redrive": {"moved": 3},
    }.get(action, QUEUE_DOC)


# --- what each method sends ------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_every_method_sends_its_route_and_document_with_the_bearer_key(kind: str) -> None:
    server = FakeServer(canned)
    at = datetime(2026, 12, 1, 10, 5, tzinfo=UTC)
    with server.client(kind) as c:
        c.create_queue("emails", lease_timeout_s=60, max_attempts=None)
        c.get_queue("emails")
        c.update_queue("emails", dead_letter_queue="emails-dlq")
        c.list_queues("em", limit=2, after="a")
        c.delete_queue("emails")
        c.purge_queue("emails")
        c.produce("emails", ["hi"])
        c.lease("emails", 10, lease_s=30, request_timeout_s=5)
        c.complete("emails", ["h-1"])
        c.retry("emails", ["h-1"], at=at)
        c.extend("emails", ["h-1"], 90)
        c.redrive("emails-dlq", target="emails", max_items=7)
    got = [(s.method, s.path, s.query, s.doc) for s in server.seen]
    retry_at = "2026-12-01T10:05:00.000+00:00"
    assert got == [
        ("POST", "/v1/queues", {},
         {"name": "emails", "attributes": {"lease_timeout_s": 60, "max_attempts": None}}),
        ("GET", "/v1/queues/emails", {}, None),
        ("PATCH", "/v1/queues/emails", {}, {"attributes": {"dead_letter_queue": "emails-dlq"}}),
        ("GET", "/v1/queues", {"prefix": "em", "limit": "2", "after": "a"}, None),
        ("DELETE", "/v1/queues/emails", {}, None),
        ("POST", "/v1/queues/emails/purge", {}, {}),
        ("POST", "/v1/queues/emails/messages", {}, {"items": [{"body": "hi"}]}),
        ("POST", "/v1/queues/emails/lease", {},
         {"max_items": 10, "request_timeout_s": 5, "lease_s": 30}),
        ("POST", "/v1/queues/emails/complete", {}, {"handles": ["h-1"]}),
        ("POST", "/v1/queues/emails/retry", {},
         {"items": [{"handle": "h-1", "retry_at": retry_at}]}),
        ("POST", "/v1/queues/emails/extend", {}, {"handles": ["h-1"], "lease_s": 90}),
        ("POST", "/v1/queues/emails-dlq/redrive", {}, {"target": "emails", "max_items": 7}),
    ]  # fmt: skip
    assert {s.headers["authorization"] for s in server.seen} == {f"Bearer {KEY}"}
    assert all(s.headers["content-type"] == "application/json" for s in server.seen if s.doc)


@pytest.mark.parametrize("kind", KINDS)
def test_bytes_travel_as_base64_text_as_text_and_item_options_as_given(kind: str) -> None:
    server = FakeServer(lambda seen: {"ids": [f"id-{i}" for i in range(4)]})
    later = datetime(2026, 12, 1, 19, 0, tzinfo=timezone(timedelta(hours=9)))
    items = [
        bytes(range(256)),
        "héllo",
        Item("x", headers={"to": "ada"}, dedup_id="d-1", enqueue_at=later),
        Item(b"\xff"),
    ]
    with server.client(kind) as c:
        ids = c.produce("emails", items)
        c.produce("emails", b"one alone")
    assert ids == ["id-0", "id-1", "id-2", "id-3"]
    sent = server.seen[0].doc["items"]
    assert base64.b64decode(sent[0]["body_base64"]) == bytes(range(256))
    assert sent[1] == {"body": "héllo"}
    assert sent[2] == {
        "body": "x",
        "headers": {"to": "ada"},
        "dedup_id": "d-1",
        "enqueue_at": "2026-12-01T19:00:00.000+09:00",
    }
    assert sent[3] == {"body_base64": "/w=="}
    assert server.seen[1].doc == {
        "items": [{"body_base64": base64.b64encode(b"one alone").decode()}]
    }


@pytest.mark.parametrize("kind", KINDS)
def test_a_naive_time_or_at_with_dead_is_refused_before_anything_is_sent(kind: str) -> None:
    server = FakeServer(canned)
    c = server.client(kind)
    with c, pytest.raises(ValueError, match="timezone-aware"):
        c.produce("emails", [Item("x", enqueue_at=datetime(2026, 12, 1))])
        with pytest.raises(ValueError, match="timezone-aware"):
            c.retry("emails", ["h"], at=datetime(2026, 12, 1))
        with pytest.raises(ValueError, match="not both"):
            c.retry("emails", ["h"], at=datetime.now(UTC), dead=True)
    assert server.seen == []


@pytest.mark.parametrize("kind", KINDS)
def test_finishing_takes_leased_items_or_handles_and_dead_is_a_flag(kind: str) -> None:
    server = FakeServer(canned)
    with server.client(kind) as c:
        [item] = c.lease("emails")
        c.complete("emails", item)
        c.retry("emails", [item, "h-2"], dead=True)
    assert server.seen[1].doc == {"handles": ["h-1"]}
    assert server.seen[2].doc == {
        "items": [{"handle": "h-1", "dead": True}, {"handle": "h-2", "dead": True}]
    }


# --- answers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_answers_are_typed_values_and_leased_bodies_are_exact_bytes(kind: str) -> None:
    server = FakeServer(
        ok(QUEUE_DOC),
        ok(
            {
                "items": [
                    leased(body="héllo", headers={"k": "v"}, attempts=2),
                    leased(id="id-2", handle="h-2", body_base64="AAH/"),
                ]
            }
        ),
    )
    with server.client(kind) as c:
        queue = c.get_queue("emails")
        text, blob = c.lease("emails", 2)
    assert queue.attributes.max_attempts == 5 and queue.attributes.dead_letter_queue == "emails-dlq"
    assert (queue.stats.visible, queue.stats.leased, queue.stats.delayed) == (1, 2, 3)
    assert queue.created_at == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert text.body == "héllo".encode() and text.text == "héllo" and text.headers == {"k": "v"}
    assert text.attempts == 2 and text.lease_deadline == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert blob.body == b"\x00\x01\xff" and blob.headers == {}
    with pytest.raises(UnicodeDecodeError):
        _ = blob.text


EXCHANGE_DOC = {
    "name": "events",
    "type": "topic",
    "bindings": [{"queue": "emails", "routing_key": "email.#"}],
    "created_at": T0,
}


@pytest.mark.parametrize("kind", KINDS)
def test_an_exchange_answer_is_the_bare_exchange_the_document_describes(kind: str) -> None:
    """Get, declare, bind and unbind answer the exchange itself, as a get of a queue answers
    the queue; the client reads that shape, the OpenAPI document's, and no wrapped one."""
    for operation in ("get_exchange", "create_exchange", "bind", "unbind"):
        check_answer(by_id(operation), 200, EXCHANGE_DOC)
    server = FakeServer(ok(EXCHANGE_DOC), ok({"exchange": EXCHANGE_DOC}))
    with server.client(kind) as c:
        got = c.get_exchange("events")
        with pytest.raises(ServerError) as caught:
            c.get_exchange("events")
    assert (got.name, got.type) == ("events", "topic")
    assert got.created_at == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert [(b.queue, b.routing_key) for b in got.bindings] == [("emails", "email.#")]
    assert caught.value.code == "bad_answer"


@pytest.mark.parametrize("kind", KINDS)
def test_iterating_queues_follows_next_across_pages(kind: str) -> None:
    server = FakeServer(
        ok({"queues": ["a", "b"], "next": "b"}),
        ok({"queues": ["c"], "next": None}),
    )
    with server.client(kind) as c:
        assert list(c.iter_queues("", page_size=2)) == ["a", "b", "c"]
    assert [s.query for s in server.seen] == [{"limit": "2"}, {"limit": "2", "after": "b"}]


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_that_pages_in_a_circle_is_refused_not_followed_forever(kind: str) -> None:
    server = FakeServer(ok({"queues": ["a"], "next": "a"}))
    with server.client(kind) as c, pytest.raises(ServerError, match="where this one did"):
        list(c.iter_queues())
    assert len(server.seen) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_partly_refused_produce_raises_with_the_ids_that_were_enqueued(kind: str) -> None:
    answer = {
        "ids": ["id-0", None],
        "errors": [{"index": 1, "code": "internal", "message": "no room"}],
    }
    server = FakeServer(ok(answer))
    with server.client(kind) as c, pytest.raises(PartialProduceError) as caught:
        c.produce("emails", ["a", "b"])
    assert caught.value.ids == ["id-0", None]
    assert caught.value.errors == [(1, "internal", "no room")]
    assert caught.value.code == "internal"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "answer",
    [
        httpx.Response(200, text="<html>proxy</html>"),
        ok({"items": [leased(body_base64="not base64!")]}),
        ok({"items": [leased(body="x", attempts="1")]}),
        ok({"items": [{"id": "only"}]}),
    ],
)
def test_an_answer_not_shaped_as_promised_is_a_server_error_not_a_half_value(
    kind: str, answer: httpx.Response
) -> None:
    server = FakeServer(answer)
    with server.client(kind) as c, pytest.raises(ServerError) as caught:
        c.lease("emails")
    assert caught.value.code == "bad_answer"
    assert len(server.seen) == 1  # not retried: another try would read the same


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "code", "kind_of_error"),
    [
        (400, "out_of_range", BadRequestError),
        (401, "bad_key", AuthError),
        (403, "forbidden", ForbiddenError),
        (404, "queue_not_found", NotFoundError),
        (405, "method_not_allowed", BadRequestError),
        (409, "queue_exists", ConflictError),
        (413, "too_large", TooLargeError),
        (429, "overloaded", OverloadedError),
        (500, "internal", ServerError),
        (503, "unavailable", UnavailableError),
    ],
)
def test_each_error_answer_is_its_own_kind_with_status_code_and_message(
    kind: str, status: int, code: str, kind_of_error: type[OkuriClientError]
) -> None:
    server = FakeServer(error(status, code))
    c = server.client(kind, retries=RetryPolicy(attempts_max=1))
    with c, pytest.raises(kind_of_error) as caught:
        c.get_queue("emails")
    err = caught.value
    assert isinstance(err, OkuriClientError)
    assert (err.status, err.code, err.message) == (status, code, f"{code} happened")
    assert str(status) in str(err) and code in str(err)


@pytest.mark.parametrize("kind", KINDS)
def test_an_error_page_that_is_not_the_api_keeps_its_status_and_text(kind: str) -> None:
    server = FakeServer(httpx.Response(502, text="Bad Gateway from a proxy"))
    with server.client(kind) as c, pytest.raises(ServerError) as caught:
        c.get_queue("emails")
    assert caught.value.status == 502 and caught.value.code == "http_502"
    assert "Bad Gateway" in caught.value.message


# --- retries ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_429_is_waited_out_for_its_retry_after_then_the_answer_is_returned(kind: str) -> None:
    server = FakeServer(
        error(429, "overloaded", {"Retry-After": "2"}),
        error(429, "overloaded", {"Retry-After": "1"}),
        ok({"ids": ["id-1"]}),
    )
    slept: list[float] = []
    policy = RetryPolicy(backoff_s_base=0.1)
    with server.client(kind, slept=slept, retries=policy) as c:
        assert c.produce("emails", ["x"]) == ["id-1"]  # produce too: nothing was done
    assert len(server.seen) == 3
    assert 2 <= slept[0] < 2.1 and 1 <= slept[1] < 1.1


@pytest.mark.parametrize("kind", KINDS)
def test_tries_are_bounded_and_the_last_error_is_raised(kind: str) -> None:
    server = FakeServer(error(503, "unavailable"))
    slept: list[float] = []
    policy = RetryPolicy(attempts_max=3, backoff_s_base=0.5, backoff_s_max=0.75)
    c = server.client(kind, slept=slept, retries=policy)
    with c, pytest.raises(UnavailableError):
        c.get_queue("emails")
    assert len(server.seen) == 3
    assert len(slept) == 2 and 0 <= slept[0] < 0.5 and 0 <= slept[1] < 0.75


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "failure",
    [error(503, "unavailable"), httpx.ReadTimeout("read"), httpx.RemoteProtocolError("gone")],
)
def test_produce_is_not_retried_when_the_items_may_have_been_enqueued(
    kind: str, failure: httpx.Response | Exception
) -> None:
    server = FakeServer(failure, ok({"ids": ["id-1"]}))
    with server.client(kind, slept=[]) as c, pytest.raises((UnavailableError, TransportError)):
        c.produce("emails", ["x"])
    assert len(server.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_produce_is_retried_when_the_connection_could_not_be_opened(kind: str) -> None:
    server = FakeServer(httpx.ConnectError("refused"), ok({"ids": ["id-1"]}))
    with server.client(kind, slept=[]) as c:
        assert c.produce("emails", ["x"]) == ["id-1"]
    assert len(server.seen) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_other_operations_are_retried_through_timeouts_and_lost_connections(kind: str) -> None:
    server = FakeServer(httpx.ReadTimeout("read"), httpx.RemoteProtocolError("gone"), canned)
    with server.client(kind, slept=[]) as c:
        assert c.complete("emails", ["h-1"]) == ["completed"]
    assert len(server.seen) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_a_transport_failure_that_outlasts_the_tries_is_a_transport_error(kind: str) -> None:
    server = FakeServer(httpx.ConnectError("refused"))
    c = server.client(kind, slept=[], retries=RetryPolicy(attempts_max=2))
    with c, pytest.raises(TransportError) as caught:
        c.get_queue("emails")
    assert caught.value.status is None and caught.value.sent is False
    assert caught.value.code == "connection_failed"
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize("kind", KINDS)
def test_a_retry_after_beyond_the_bound_is_raised_at_once_not_waited(kind: str) -> None:
    server = FakeServer(error(429, "overloaded", {"Retry-After": "120"}))
    slept: list[float] = []
    c = server.client(kind, slept=slept, retries=RetryPolicy(retry_after_s_max=30))
    with c, pytest.raises(OverloadedError) as caught:
        c.get_queue("emails")
    assert caught.value.retry_after_s == 120 and slept == [] and len(server.seen) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_mistakes_are_not_retried(kind: str) -> None:
    server = FakeServer(error(400, "out_of_range"), canned)
    with server.client(kind, slept=[]) as c, pytest.raises(BadRequestError):
        c.lease("emails", 1000)
    assert len(server.seen) == 1


def test_backoff_grows_to_its_cap_and_the_draw_is_its_jitter() -> None:
    policy = RetryPolicy(attempts_max=10, backoff_s_base=0.1, backoff_s_max=1.0)
    busy = UnavailableError(503, "unavailable", "busy")
    waits = [next_wait_s(policy, "get_queue", busy, tries, 0.999999) for tries in range(1, 10)]
    assert waits[:4] == pytest.approx([0.1, 0.2, 0.4, 0.8], rel=1e-5)
    assert waits[4:] == pytest.approx([1.0] * 5, rel=1e-5)
    assert next_wait_s(policy, "get_queue", busy, 3, 0.0) == 0.0
    assert next_wait_s(policy, "get_queue", busy, 10, 0.5) is None


# --- the wire --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_a_long_poll_lengthens_the_request_timeout_by_its_wait(kind: str) -> None:
    server = FakeServer(canned)
    with server.client(kind, timeout_s=3) as c:
        c.lease("emails", request_timeout_s=20)
        c.get_queue("emails")
    assert server.seen[0].timeout["read"] == 23
    assert server.seen[1].timeout["read"] == 3


def test_the_clients_routes_are_the_servers_route_table() -> None:
    served = {route: key for key, route in SERVER_ROUTES.items() if route != "openapi"}
    assert set(OPERATIONS) == set(served)
    assert {op: (m, p) for op, (p, m) in served.items()} == dict(CLIENT_ROUTES)


def test_another_transport_plugs_in_and_speaks_operations_and_documents() -> None:
    sent: list[Request] = []

    class Recording:
        def send(self, request: Request) -> dict[str, Any]:
            sent.append(request)
            return {"moved": 4}

        def close(self) -> None:
            pass

    with Client(transport=Recording()) as c:
        assert c.redrive("emails-dlq", target="emails") == 4
    assert sent == [Request("redrive", "emails-dlq", {"target": "emails"})]


def test_a_url_that_is_not_http_is_refused_when_the_client_is_made() -> None:
    with pytest.raises(ValueError, match="http"):
        Client("localhost:8080", KEY)
