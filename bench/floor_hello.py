"""The hello-world server of `python -m bench floor`: valid canned answers to every call it times.

Why: a call's floor is what the same client pays for the same call against a server that does
nothing, on okuri's own HTTP stack (aiohttp, orjson, uvloop when installed, no access log), plus
the store writes the call must wait for. This server is that nothing: it reads and parses each
request, as any server must, and answers in the shape the client checks, without signatures,
keys, queues or state. Ids come from a counter.

- SQS, JSON protocol (`X-Amz-Target: AmazonSQS.<Action>`), as botocore speaks it: CreateQueue
  and GetQueueUrl a queue URL; SendMessage a MessageId and the MD5 of the body it received (so
  a client's checksum check passes); ReceiveMessage one message of `RECEIVED_BODY`, with its
  MD5; DeleteMessage, DeleteQueue and PurgeQueue `{}`.
- the native API (docs/native-api.md) in the shapes okuri.client reads: list, create, get and
  delete a queue; produce (an id per item); lease (one item); complete (a result per handle);
  and what the okuri:// kombu transport asks to publish: declare an exchange, bind, publish.
- `GET /ready`: 200, the bench's readiness probe.

Run it as a process (`hello_server()` here, which stops it by its pid), or build the app with
`app()` in a test.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from bench.daemon import helper, run_until_signalled
from bench.servers import LOOPBACK, Process

MODULE = "bench.floor_hello"  # run as a process: `python -m` this
READY_PATH = "/ready"
AWS_JSON = "application/x-amz-json-1.0"
TARGET_PREFIX = "AmazonSQS."
ACCOUNT = "000000000000"
REQUEST_BYTES_MAX = 4 * 1024 * 1024  # okuri's own bound on a request (limits.request_bytes_max)
RECEIVED_BODY = "x" * 256
CANNED_TIME = "2026-01-01T00:00:00.000+00:00"
QUEUE_ATTRIBUTES = {
    "lease_timeout_s": 30,
    "max_attempts": None,
    "dead_letter_queue": None,
    "retention_s": 345_600,
    "delay_s": 0,
}
QUEUE_STATS = {"visible": 0, "leased": 0, "delayed": 0, "dead_lettered": 0}


def md5_hex(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


class _Ids:
    """Ids from a counter: unique for the life of the process, and cheap."""

    def __init__(self) -> None:
        self._next = 0

    def __call__(self) -> str:
        self._next += 1
        return f"{self._next:032x}"


def _json(doc: Any, status: int = 200, content_type: str = "application/json") -> web.Response:
    return web.Response(status=status, body=orjson.dumps(doc), content_type=content_type)


async def _doc(request: web.Request) -> dict[str, Any]:
    """The request's JSON object ({} for none); a 400 for a body that is not one."""
    body = await request.read()
    if not body:
        return {}
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        raise web.HTTPBadRequest(
            body=orjson.dumps({"error": {"code": "bad_json", "message": "not a JSON object"}}),
            content_type="application/json",
        )
    return doc


# --- SQS --------------------------------------------------------------------------------------


def _sqs_answer(action: str, doc: dict[str, Any], base: str, new_id: _Ids) -> dict[str, Any] | None:
    """The answer to SQS `action`; None for an action this server does not answer."""
    if action in ("CreateQueue", "GetQueueUrl"):
        return {"QueueUrl": f"{base}/{ACCOUNT}/{doc.get('QueueName', '')}"}
    if action == "SendMessage":
        return {"MessageId": new_id(), "MD5OfMessageBody": md5_hex(str(doc.get("MessageBody")))}
    if action == "ReceiveMessage":
        message = {
            "MessageId": new_id(),
            "ReceiptHandle": new_id(),
            "MD5OfBody": md5_hex(RECEIVED_BODY),
            "Body": RECEIVED_BODY,
        }
        return {"Messages": [message]}
    if action in ("DeleteMessage", "DeleteQueue", "PurgeQueue"):
        return {}
    return None


# --- the native API ---------------------------------------------------------------------------


def _queue(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "fifo": name.endswith(".fifo"),
        "attributes": QUEUE_ATTRIBUTES,
        "stats": QUEUE_STATS,
        "created_at": CANNED_TIME,
    }


def _exchange(name: str, type: str, bindings: list[dict[str, str]]) -> dict[str, Any]:
    return {"name": name, "type": type, "bindings": bindings, "created_at": CANNED_TIME}


def _leased(new_id: _Ids) -> dict[str, Any]:
    return {
        "id": new_id(),
        "handle": new_id(),
        "attempts": 1,
        "lease_deadline": CANNED_TIME,
        "enqueued_at": CANNED_TIME,
        "body": RECEIVED_BODY,
    }


@dataclass
class Hello:
    """The handlers; `new_id` is the only state."""

    new_id: _Ids

    async def ready(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def sqs(self, request: web.Request) -> web.Response:
        doc = await _doc(request)
        target = request.headers.get("X-Amz-Target", "")
        action = target.removeprefix(TARGET_PREFIX)
        base = f"{request.scheme}://{request.host}"
        answer = _sqs_answer(action, doc, base, self.new_id) if target != action else None
        if answer is None:
            error = {"__type": "com.amazonaws.sqs#UnsupportedOperation", "message": target}
            return _json(error, 400, AWS_JSON)
        response = _json(answer, content_type=AWS_JSON)
        response.headers["x-amzn-RequestId"] = self.new_id()
        return response

    async def list_queues(self, request: web.Request) -> web.Response:
        return _json({"queues": [], "next": None})

    async def create_queue(self, request: web.Request) -> web.Response:
        return _json(_queue(str((await _doc(request)).get("name", ""))))

    async def queue(self, request: web.Request) -> web.Response:
        if request.method == "DELETE":
            return _json({})
        await _doc(request)  # PATCH carries attributes
        return _json(_queue(request.match_info["queue"]))

    async def queue_operation(self, request: web.Request) -> web.Response:
        doc = await _doc(request)
        op = request.match_info["op"]
        if op == "messages":
            return _json({"ids": [self.new_id() for _ in doc.get("items") or ()]})
        if op == "lease":
            return _json({"items": [_leased(self.new_id)]})
        if op in ("complete", "retry", "extend"):
            handles = doc.get("handles") or doc.get("items") or ()
            return _json({"results": ["completed" for _ in handles]})
        if op == "purge":
            return _json({})
        raise web.HTTPNotFound()

    async def create_exchange(self, request: web.Request) -> web.Response:
        doc = await _doc(request)
        return _json(_exchange(str(doc.get("name", "")), str(doc.get("type", "direct")), []))

    async def exchange(self, request: web.Request) -> web.Response:
        if request.method == "DELETE":
            return _json({})
        return _json(_exchange(request.match_info["exchange"], "direct", []))

    async def exchange_operation(self, request: web.Request) -> web.Response:
        doc = await _doc(request)
        name, op = request.match_info["exchange"], request.match_info["op"]
        if op in ("bind", "unbind"):
            queue, key = str(doc.get("queue", "")), str(doc.get("routing_key", ""))
            binding = {"queue": queue, "routing_key": key}
            return _json(_exchange(name, "direct", [binding] if op == "bind" else []))
        if op == "messages":
            ids = [self.new_id() for _ in doc.get("items") or ()]
            return _json({"routed": [{"queue": str(doc.get("routing_key", "")), "ids": ids}]})
        raise web.HTTPNotFound()


def app() -> web.Application:
    hello = Hello(_Ids())
    a = web.Application(client_max_size=REQUEST_BYTES_MAX)
    add = a.router.add_route
    add("GET", READY_PATH, hello.ready)
    add("POST", "/", hello.sqs)
    add("GET", "/v1/queues", hello.list_queues)
    add("POST", "/v1/queues", hello.create_queue)
    add("*", "/v1/queues/{queue}", hello.queue)
    add("POST", "/v1/queues/{queue}/{op}", hello.queue_operation)
    add("POST", "/v1/exchanges", hello.create_exchange)
    add("*", "/v1/exchanges/{exchange}", hello.exchange)
    add("POST", "/v1/exchanges/{exchange}/{op}", hello.exchange_operation)
    return a


# --- as a process ------------------------------------------------------------------------------


@dataclass
class HelloServer:
    endpoint: str
    process: Process

    @property
    def pid(self) -> int:
        return self.process.pid


@contextlib.contextmanager
def hello_server(workdir: Path) -> Iterator[HelloServer]:
    """The hello-world server as a process on a free loopback port; stopped by its pid."""
    with helper(workdir, "hello-world", MODULE, [], READY_PATH) as (endpoint, process):
        yield HelloServer(endpoint, process)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="python -m bench floor's hello-world server")
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args(argv)

    async def begin() -> Callable[[], Awaitable[None]]:
        runner = web.AppRunner(app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, LOOPBACK, args.port).start()
        return runner.cleanup

    run_until_signalled(begin)


if __name__ == "__main__":
    main()
