"""No bearer key, SQS secret or signature ever leaves a real `okuri serve` in what it writes:
its log, its answers (bodies and headers), its metrics.

One recognisable bearer key and one recognisable SQS secret are sent, each in a form a careless
or hostile client might send them, down every failure path a client can reach: HTTP aiohttp
cannot parse (bare LFs, a bad header value, a bad request line, headers over the size limit),
a wrong bearer key, a wrong SigV4 signature, an unknown SQS action, an unknown native route,
malformed JSON, garbage after the gRPC preface, gRPC calls with a wrong key, and junk to the
peer endpoint. It runs at debug in both log formats: text mode then also writes aiohttp's own
access lines, which quote each request line (a presigned URL's X-Amz-Signature with it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.server.app import Server
from okuri.server.settings import Settings
from tests import rawhttp
from tests.rawhttp import PREFACE, exchange, presigned, request, signed
from tests.servers import SQS_KEY, ServerProcess, role_keys, start_server

KEY = "BEARERdontlogme0123456789abcdefXYZ"  # the admin bearer key
SECRET = "SQSSECRETdontlogme0123456789abcdef"  # the SQS secret access key
SERVICE = "/okuri.api.v1.QueueService"
FORMATS = ["text", "json"]


@pytest.fixture(scope="module", params=FORMATS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp(f"secrets-{request.param}")
    env = {
        "OKURI_DATA_DIR": str(tmp / "data"),
        "OKURI_ADMIN_KEY": KEY,
        "OKURI_API_KEYS_FILE": str(role_keys(tmp).file),
        "OKURI_SECRET_ACCESS_KEY": SECRET,
        "OKURI_LOG_FORMAT": request.param,
        "OKURI_LOG_LEVEL": "debug",
    }
    proc = start_server(tmp, env)
    yield proc
    proc.terminate()


def bearer(key: str = KEY) -> tuple[str, str]:
    return ("Authorization", f"Bearer {key}")


def http_failures(server: ServerProcess) -> tuple[list[bytes], list[str]]:
    """Every HTTP failure path, each carrying the key or the secret (or a signature made with
    it); the raw answers, and the signatures sent (credential-equivalents, never to be logged)."""
    auth = f"Authorization: Bearer {KEY}"
    sends = [
        # aiohttp cannot parse these; its parser's message quotes the request.
        f"GET /v1/queues HTTP/1.1\nHost: x\n{auth}\n\n".encode(),
        f"POST / HTTP/1.1\nHost: x\nAuthorization: AWS4-HMAC-SHA256 Signature={SECRET}\n\n"
        .encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\n{auth}\x01\r\n\r\n".encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\n{auth}\x00x\r\n\r\n".encode(),
        f"GET /v1/queues?key={KEY} HTT/1.1\r\nHost: x\r\n{auth}\r\n\r\n".encode(),
        f"G@T /v1/{KEY} HTTP/1.1\r\nHost: x\r\n\r\n".encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\n{auth}{'x' * 20000}\r\n\r\n".encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\n{auth}\r\nX-Pad: {'x' * 20000}\r\n\r\n".encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\n{KEY}{'x' * 9000}: y\r\n\r\n".encode(),
        f"GET /v1/queues HTTP/1.1\r\nHost: x\r\nContent-Length: {KEY}\r\n\r\n".encode(),
        f"POST /v1/queues HTTP/1.1\r\nHost: x\r\n{auth}\r\nTransfer-Encoding: chunked\r\n\r\n"
        f"{KEY}\r\n\r\n".encode(),
        # Well-formed HTTP that okuri refuses.
        request("GET", "/v1/queues", [bearer(KEY + "x")]),
        request("GET", "/v1/queues", [("Authorization", f"Basic {KEY}")]),
        request("GET", "/v1/queues", [("Authorization", KEY)]),
        request("GET", "/v1/no-such-route", [bearer()]),
        request("POST", "/v1/queues", [bearer(), ("Content-Type", "application/json")],
                b'{"name": "' + KEY.encode() + b'", '),
        request("POST", "/v1/queues", [], f'{{"name": "q", "key": "{KEY}"}}'.encode()),
        request("POST", "/v1/queues/q/lease", [bearer()], f'{{"max_items": "{KEY}"}}'.encode()),
        request("POST", "/", [bearer(), ("X-Amz-Target", "AmazonSQS.ListQueues")], b"{}"),
        request("GET", f"/?Action=ListQueues&X-Amz-Signature={SECRET}"),
        request("POST", "/_okuri/peer/commit", [("X-Okuri-Peer-Signature", f"1:{SECRET}"),
                                                ("X-Okuri-Peer-Scope", KEY)], KEY.encode()),
        request("POST", "/_okuri/peer/commit", [bearer(), ("X-Okuri-Peer-Signature", KEY)],
                b"\x00" * 64),
    ]  # fmt: skip
    answers = [exchange(server, data) for data in sends]
    signatures = []
    for key, secret, target in [
        (SQS_KEY, SECRET + "-wrong", "AmazonSQS.ListQueues"),
        (SQS_KEY, SECRET, "AmazonSQS.NoSuchAction"),
        (SQS_KEY, SECRET, "AmazonSQS.GetQueueUrl"),
        ("AKIDNOSUCHKEY", SECRET, "AmazonSQS.ListQueues"),
    ]:
        data, signature = signed(server, key, secret, target=target, body=b'{"QueueName": "x"}')
        answers.append(exchange(server, data))
        signatures.append(signature)
    for secret, query in [
        (SECRET, "Action=ListQueues&Version=2012-11-05"),
        (SECRET + "-wrong", "Action=ListQueues&Version=2012-11-05"),
        (SECRET, "Action=NoSuchAction&Version=2012-11-05"),
    ]:
        data, signature = presigned(server, SQS_KEY, secret, query)
        answers.append(exchange(server, data))
        signatures.append(signature)
    form = b"Action=SendMessageBatch&QueueUrl=x&SendMessageBatchRequestEntry.1.Id=" + KEY.encode()
    data, signature = signed(server, SQS_KEY, SECRET, body=form,
                             content_type="application/x-www-form-urlencoded")  # fmt: skip
    answers.append(exchange(server, data))
    signatures.append(signature)
    # Half a body, then the client hangs up (answered to nobody; logged at most at DEBUG).
    exchange(
        server, request("POST", "/v1/queues", [bearer()], b'{"name": "', length=100), hang_up=True
    )
    exchange(server, request("POST", "/", [bearer()], b"{" * 10, length=4000), hang_up=True)
    return answers, signatures


def grpc_failures(server: ServerProcess) -> list[str]:
    """gRPC garbage and calls with a wrong key; what came back (details and metadata)."""
    for garbage in [PREFACE + KEY.encode() * 8, PREFACE + b"\x00\x00\x04\x01\x04" + KEY.encode()]:
        exchange(server, garbage)
    seen = []
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        for method, body in [
            ("ListQueues", pb.ListQueuesRequest().SerializeToString()),
            ("CreateQueue", pb.CreateQueueRequest(name="q", fifo=True).SerializeToString()),
            ("CreateQueue", KEY.encode()),
            ("NoSuchMethod", b""),
        ]:
            for metadata in [
                (("authorization", f"Bearer {KEY}x"),),
                (("authorization", KEY),),
                (("authorization", f"Bearer {KEY}"), ("x-amz-security-token", SECRET)),
            ]:
                call = channel.unary_unary(f"{SERVICE}/{method}")
                try:
                    _, done = call.with_call(body, metadata=metadata, timeout=5)
                    seen.append(repr(done.initial_metadata()) + repr(done.trailing_metadata()))
                except grpc.RpcError as err:
                    assert isinstance(err, grpc.Call)
                    assert err.code() not in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)
                    seen.append(f"{err.details()} {err.initial_metadata()!r}")
                    seen.append(repr(err.trailing_metadata()))
    return seen


def test_no_key_secret_or_signature_is_written_or_answered(server: ServerProcess) -> None:
    answers, signatures = http_failures(server)
    grpc_seen = grpc_failures(server)
    assert server.get("/readyz").status == 200  # every path above was taken and answered
    written = {
        "log": server.log,
        "answers": b"\n".join(answers).decode("utf-8", "replace"),
        "grpc": "\n".join(grpc_seen),
        "metrics": server.get("/metrics").text,
    }
    for where, text in written.items():
        for secret in [KEY, SECRET, *signatures]:
            at = text.find(secret)
            assert at < 0, f"{secret!r} in the {where}: ...{text[max(0, at - 300) : at + 100]}"
    assert "Traceback" not in server.log, server.log[-3000:]
    statuses = [rawhttp.status(a) for a in answers]
    assert all(200 <= s < 500 for s in statuses), statuses


def test_a_presigned_request_is_logged_without_its_signature(server: ServerProcess) -> None:
    """Text mode at debug writes aiohttp's access line for each request: the presigned URL's
    path and action stay readable, its signature does not. JSON lines have okuri's own access
    record instead, which never holds the URL."""
    data, signature = presigned(server, SQS_KEY, SECRET, "Action=ListQueues&Version=2012-11-05")
    assert rawhttp.status(exchange(server, data)) == 200
    assert signature not in server.log
    lines = [line for line in server.log.splitlines() if "Action=ListQueues" in line]
    if server.env["OKURI_LOG_FORMAT"] == "text":
        assert lines and all("X-Amz-Signature=[redacted]" in line for line in lines), lines
    else:
        assert not lines, lines
        assert '"action":"ListQueues"' in server.log


async def test_a_program_embedding_okuri_logs_and_answers_a_malformed_request_by_its_kind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An embedded server's logging is the host program's, not okuri serve's: the listener's
    answer and aiohttp's record still carry the kind of mistake, not the request."""
    # As a fresh program: no filter left on aiohttp's logger by an earlier test in this process.
    monkeypatch.setattr(logging.getLogger("aiohttp.server"), "filters", [])
    settings = {
        "OKURI_LISTEN": "127.0.0.1:0",
        "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
        "OKURI_DATA_DIR": str(tmp_path / "data"),
        "OKURI_ADMIN_KEY": KEY,
    }
    server = Server(Settings.load(settings))
    await server.start()
    try:
        host, port = server.urls[0].removeprefix("http://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(f"GET /v1/queues HTTP/1.1\nHost: x\nAuthorization: Bearer {KEY}\n\n".encode())
        answer = await asyncio.wait_for(reader.read(), rawhttp.TIMEOUT_S)
        writer.close()
    finally:
        assert await server.stop() is True
    assert answer.startswith(b"HTTP/1.0 400 Bad Request") and KEY.encode() not in answer
    refusals = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert refusals and all(KEY not in r.getMessage() and not r.exc_info for r in refusals)
