"""An in-memory okuri native API behind `httpx.MockTransport`, for okuri_kombu's unit tests,
with `fake_transport`, an okuri_kombu Transport talking to it, and `ManualKeeper`, okuri_kombu's
lease keeper turned by hand.

It answers the routes okuri.client sends (okuri/client/http.py's ROUTES) with the shapes the
server answers, keeps queues, items and exchanges in dicts, and reads time from `now` (seconds),
which tests move by hand: a lease runs out when `now` passes its deadline, a queue with
`expires_s` unused that long is gone (checked on each request, as the server's sweep would).
Exchanges route as the server's do (direct, topic with AMQP's `*` and `#`, fanout), to each
bound queue once, skipping and unbinding queues that no longer exist. Tests assert on its state
(`items`, `queues`, `exchanges`) and on the requests it answered (`requests`), never on mocks.

Fault model: none by default; `fail_next(operation, status, code)` makes the next request of
an operation answer that error once, `crash_next(operation)` makes it raise in the client.
Long polls do not wait: a lease answers at once with what is visible; finding nothing, it moves
`now` on by its `request_timeout_s`, as if it had waited.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import httpx
from okuri_kombu.keeper import LeaseKeeper
from okuri_kombu.transport import Transport

from okuri.client import Client

BASE_URL = "http://okuri.test:8080"
KEY = "unit-test-key-0123456789"
URL = f"okuri://{KEY}@{BASE_URL.removeprefix('http://')}"
QUEUE_DEFAULTS = {
    "lease_timeout_s": 30,
    "max_attempts": None,
    "dead_letter_queue": None,
    "retention_s": 345600,
    "delay_s": 0,
    "expires_s": None,
}
EXCHANGE_TYPES = ("direct", "topic", "fanout")


class ManualKeeper(LeaseKeeper):
    """okuri_kombu's lease keeper without its thread: a test sends what it owes with
    run_once(), in the fake's time."""

    def start(self) -> None:
        pass


@dataclass
class FakeItem:
    id: str
    body: bytes
    headers: dict[str, str]
    enqueued_at: float
    attempts: int = 0
    handle: str | None = None  # the newest lease's
    leased_until: float = 0.0
    done: str | None = None  # "completed" or "dead"


@dataclass
class FakeQueue:
    name: str
    attributes: dict[str, Any]
    items: list[FakeItem] = field(default_factory=list)
    used_at: float = 0.0  # a lease, a get or a re-declare (expires_s counts from here)


@dataclass
class FakeExchange:
    name: str
    type: str
    bindings: list[tuple[str, str]] = field(default_factory=list)  # (queue, routing key)

    def routes(self, routing_key: str) -> list[str]:
        """The bound queues `routing_key` reaches, each once, in binding order."""
        queues: list[str] = []
        for queue, key in self.bindings:
            if queue not in queues and _matches(self.type, key, routing_key):
                queues.append(queue)
        return queues


def _matches(type: str, binding_key: str, routing_key: str) -> bool:
    if type == "fanout":
        return True
    if type == "direct":
        return binding_key == routing_key
    return _topic(binding_key.split("."), routing_key.split("."))


def _topic(pattern: list[str], words: list[str]) -> bool:
    """AMQP topic matching: `*` is exactly one word, `#` zero or more."""
    if not pattern:
        return not words
    head, rest = pattern[0], pattern[1:]
    if head == "#":
        return any(_topic(rest, words[i:]) for i in range(len(words) + 1))
    return bool(words) and head in ("*", words[0]) and _topic(rest, words[1:])


@dataclass
class Seen:
    """One request the fake answered: its operation, queue and document."""

    operation: str
    queue: str
    doc: dict[str, Any]


class FakeOkuri:
    def __init__(self) -> None:
        self.now = 1_000.0
        self.queues: dict[str, FakeQueue] = {}
        self.exchanges: dict[str, FakeExchange] = {}
        self.requests: list[Seen] = []
        self._ids = 0
        self._faults: dict[str, tuple[int, str]] = {}
        self._crashes: set[str] = set()
        self.forbid_create = False  # a producer or consumer key: no queues, no exchanges
        self.forbid_bind = False  # a producer key: no bindings either

    # --- for tests ---------------------------------------------------------------------------

    def clock(self) -> float:
        return self.now

    def client(self, key: str = KEY) -> Client:
        return Client(BASE_URL, key, http=httpx.Client(transport=httpx.MockTransport(self.handle)))

    def fail_next(self, operation: str, status: int, code: str = "unavailable") -> None:
        self._faults[operation] = (status, code)

    def crash_next(self, operation: str) -> None:
        """The next request of `operation` raises in the client (as a bug would)."""
        self._crashes.add(operation)

    def seen(self, operation: str) -> list[Seen]:
        return [r for r in self.requests if r.operation == operation]

    def live(self, queue: str) -> list[FakeItem]:
        return [i for i in self.queues[queue].items if i.done is None]

    def visible(self, queue: str) -> list[FakeItem]:
        return [i for i in self.live(queue) if i.leased_until <= self.now]

    def produce(self, queue: str, body: bytes, headers: dict[str, str] | None = None) -> str:
        item = FakeItem(self._id("item"), body, headers or {}, self.now)
        self.queues[queue].items.append(item)
        return item.id

    # --- the API -----------------------------------------------------------------------------

    ROUTES = [
        ("GET", r"/v1/queues", "list_queues"),
        ("POST", r"/v1/queues", "create_queue"),
        ("GET", r"/v1/queues/([^/]+)", "get_queue"),
        ("DELETE", r"/v1/queues/([^/]+)", "delete_queue"),
        ("POST", r"/v1/queues/([^/]+)/purge", "purge_queue"),
        ("POST", r"/v1/queues/([^/]+)/messages", "produce"),
        ("POST", r"/v1/queues/([^/]+)/lease", "lease"),
        ("POST", r"/v1/queues/([^/]+)/complete", "complete"),
        ("POST", r"/v1/queues/([^/]+)/retry", "retry"),
        ("POST", r"/v1/queues/([^/]+)/extend", "extend"),
        ("POST", r"/v1/exchanges", "create_exchange"),
        ("GET", r"/v1/exchanges/([^/]+)", "get_exchange"),
        ("DELETE", r"/v1/exchanges/([^/]+)", "delete_exchange"),
        ("POST", r"/v1/exchanges/([^/]+)/bind", "bind"),
        ("POST", r"/v1/exchanges/([^/]+)/unbind", "unbind"),
        ("POST", r"/v1/exchanges/([^/]+)/messages", "publish"),
    ]
    EXCHANGE_OPERATIONS = {"get_exchange", "delete_exchange", "bind", "unbind", "publish"}

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return _error(401, "bad_key", "The key is not known.")
        for method, pattern, operation in self.ROUTES:
            match = re.fullmatch(pattern, request.url.path)
            if request.method == method and match:
                queue = unquote(match.group(1)) if match.groups() else ""
                doc = json.loads(request.content) if request.content else dict(request.url.params)
                self.requests.append(Seen(operation, queue, doc))
                if operation in self._crashes:
                    self._crashes.discard(operation)
                    raise RuntimeError(f"{operation} crashed on purpose")
                if operation in self._faults:
                    status, code = self._faults.pop(operation)
                    return _error(status, code, f"{operation} failed on purpose")
                self.expire()
                if operation in self.EXCHANGE_OPERATIONS:
                    if queue not in self.exchanges:
                        return _error(404, "exchange_not_found", f"No exchange {queue}.")
                elif queue and operation != "create_queue" and queue not in self.queues:
                    return _error(404, "queue_not_found", f"No queue {queue}.")
                if operation in ("lease", "get_queue"):
                    self.queues[queue].used_at = self.now
                answer: httpx.Response = getattr(self, f"_{operation}")(queue, doc)
                return answer
        return _error(404, "not_found", "No such route.")

    def _list_queues(self, _: str, doc: dict[str, Any]) -> httpx.Response:
        names = sorted(n for n in self.queues if n.startswith(doc.get("prefix", "")))
        return _ok({"queues": names[: int(doc.get("limit", 1000))], "next": None})

    def _create_queue(self, _: str, doc: dict[str, Any]) -> httpx.Response:
        if self.forbid_create:
            return _error(403, "forbidden", "This key may not create queues.")
        name = doc["name"]
        attributes = {**QUEUE_DEFAULTS, **doc.get("attributes", {})}
        if name in self.queues:
            if self.queues[name].attributes != attributes:
                return _error(409, "queue_exists", "The queue exists with other attributes.")
        else:
            self.queues[name] = FakeQueue(name, attributes)
        self.queues[name].used_at = self.now
        return _ok(self._queue_doc(self.queues[name]))

    def _get_queue(self, name: str, _: dict[str, Any]) -> httpx.Response:
        return _ok(self._queue_doc(self.queues[name]))

    def _delete_queue(self, name: str, _: dict[str, Any]) -> httpx.Response:
        del self.queues[name]
        return _ok({})

    def _purge_queue(self, name: str, _: dict[str, Any]) -> httpx.Response:
        self.queues[name].items.clear()
        return _ok({})

    def _produce(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        ids = []
        for entry in doc["items"]:
            if "body" in entry:
                body = entry["body"].encode()
            else:
                body = base64.b64decode(entry["body_base64"])
            ids.append(self.produce(name, body, entry.get("headers")))
        return _ok({"ids": ids})

    def _lease(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        queue = self.queues[name]
        lease_s = doc.get("lease_s", queue.attributes["lease_timeout_s"])
        most = queue.attributes["max_attempts"]
        leased = []
        for item in self.visible(name):
            if len(leased) == doc.get("max_items", 1):
                break
            if most is not None and item.attempts >= most:
                self._dead_letter(queue, item)
                continue
            item.attempts += 1
            item.handle = self._id("handle")
            item.leased_until = self.now + lease_s
            leased.append(self._item_doc(item))
        if not leased:  # the long poll ran its course
            self.now += doc.get("request_timeout_s", 0)
        return _ok({"items": leased})

    def _complete(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        results = []
        for handle in doc["handles"]:
            item = self._by_handle(name, handle)
            if item is None:
                results.append("invalid")
            elif item.done:
                results.append("gone")
            else:
                item.done = "completed"
                results.append("completed")
        return _ok({"results": results})

    def _retry(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        results = []
        for entry in doc["items"]:
            item = self._by_handle(name, entry["handle"])
            if item is None:
                results.append("invalid")
            elif item.done:
                results.append("gone")
            elif entry.get("dead"):
                if item.leased_until <= self.now:
                    results.append("stale")
                else:
                    self._dead_letter(self.queues[name], item)
                    results.append("dead")
            else:
                item.leased_until = self.now
                results.append("retried")
        return _ok({"results": results})

    def _extend(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        results = []
        for handle in doc["handles"]:
            item = self._by_handle(name, handle)
            if item is None:
                results.append("invalid")
            elif item.done:
                results.append("gone")
            elif item.leased_until <= self.now:
                results.append("stale")
            else:
                item.leased_until = self.now + doc["lease_s"]
                results.append("extended")
        return _ok({"results": results})

    def expire(self) -> None:
        """Delete every queue unused for its expires_s (the server's sweep, at once)."""
        for name, queue in list(self.queues.items()):
            expires_s = queue.attributes.get("expires_s")
            if expires_s is not None and self.now - queue.used_at >= expires_s:
                del self.queues[name]
                for exchange in self.exchanges.values():
                    exchange.bindings = [b for b in exchange.bindings if b[0] != name]

    # --- exchanges ---------------------------------------------------------------------------

    def _create_exchange(self, _: str, doc: dict[str, Any]) -> httpx.Response:
        if self.forbid_create:
            return _error(403, "forbidden", "This key may not create exchanges.")
        name, type = doc["name"], doc["type"]
        if type not in EXCHANGE_TYPES:
            return _error(400, "invalid_request", f"No exchange type {type}.")
        exchange = self.exchanges.setdefault(name, FakeExchange(name, type))
        if exchange.type != type:
            return _error(409, "exchange_exists", "The exchange exists with another type.")
        return _ok(self._exchange_doc(exchange))

    def _get_exchange(self, name: str, _: dict[str, Any]) -> httpx.Response:
        return _ok(self._exchange_doc(self.exchanges[name]))

    def _delete_exchange(self, name: str, _: dict[str, Any]) -> httpx.Response:
        del self.exchanges[name]
        return httpx.Response(204)

    def _bind(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        if self.forbid_bind:
            return _error(403, "forbidden", "This key may not bind.")
        if doc["queue"] not in self.queues:
            return _error(404, "queue_not_found", f"No queue {doc['queue']}.")
        exchange = self.exchanges[name]
        binding = (doc["queue"], doc.get("routing_key", ""))
        if binding not in exchange.bindings:
            exchange.bindings.append(binding)
        return _ok(self._exchange_doc(exchange))

    def _unbind(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        if self.forbid_bind:
            return _error(403, "forbidden", "This key may not unbind.")
        exchange = self.exchanges[name]
        binding = (doc["queue"], doc.get("routing_key", ""))
        exchange.bindings = [b for b in exchange.bindings if b != binding]
        return _ok(self._exchange_doc(exchange))

    def _publish(self, name: str, doc: dict[str, Any]) -> httpx.Response:
        exchange = self.exchanges[name]
        exchange.bindings = [b for b in exchange.bindings if b[0] in self.queues]
        routed = []
        for queue in exchange.routes(doc.get("routing_key", "")):
            answer = json.loads(self._produce(queue, doc).content)
            routed.append({"queue": queue, "ids": answer["ids"]})
        return _ok({"routed": routed})

    def _exchange_doc(self, exchange: FakeExchange) -> dict[str, Any]:
        return {
            "name": exchange.name,
            "type": exchange.type,
            "bindings": [{"queue": q, "routing_key": k} for q, k in exchange.bindings],
            "created_at": _time(0),
        }

    # --- helpers -----------------------------------------------------------------------------

    def _id(self, kind: str) -> str:
        self._ids += 1
        return f"{kind}-{self._ids}"

    def _by_handle(self, name: str, handle: str) -> FakeItem | None:
        return next((i for i in self.queues[name].items if i.handle == handle), None)

    def _dead_letter(self, queue: FakeQueue, item: FakeItem) -> None:
        target = queue.attributes["dead_letter_queue"] or f"{queue.name}-dlq"
        self.queues.setdefault(target, FakeQueue(target, dict(QUEUE_DEFAULTS)))
        self.queues[target].items.append(FakeItem(item.id, item.body, item.headers, self.now))
        item.done = "dead"

    def _queue_doc(self, queue: FakeQueue) -> dict[str, Any]:
        live = [i for i in queue.items if i.done is None]
        visible = sum(1 for i in live if i.leased_until <= self.now)
        return {
            "name": queue.name,
            "fifo": False,
            "attributes": queue.attributes,
            "stats": {"visible": visible, "leased": len(live) - visible, "delayed": 0},
            "created_at": _time(0),
        }

    def _item_doc(self, item: FakeItem) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": item.id,
            "handle": item.handle,
            "attempts": item.attempts,
            "lease_deadline": _time(item.leased_until),
            "enqueued_at": _time(item.enqueued_at),
        }
        try:
            doc["body"] = item.body.decode()
        except UnicodeDecodeError:
            doc["body_base64"] = base64.b64encode(item.body).decode()
        if item.headers:
            doc["headers"] = item.headers
        return doc


def _ok(doc: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=doc)


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def fake_transport(fake: FakeOkuri) -> type[Transport]:
    """A Transport class whose client is `fake`'s, whose keeper is a ManualKeeper, and whose
    clock is `fake.now`, which its waits between polls move on instead of sleeping."""

    class FakeTransport(Transport):
        def __init__(self, client: Any, **kwargs: Any) -> None:
            super().__init__(client, **kwargs)
            self.clock = fake.clock
            self.wall_clock = fake.clock  # the fake stamps enqueued_at with `now` too

        def new_client(self) -> Client:
            assert self.base_url() == BASE_URL
            return fake.client(self.key())

        def new_keeper(self, client: Client) -> LeaseKeeper:
            return ManualKeeper(client, self.options.lease_s, clock=self.clock, pace_s=0.0)

        def pause(self, seconds: float) -> None:
            fake.now += seconds  # the drain's wait between polls, in the fake's time

    return FakeTransport
