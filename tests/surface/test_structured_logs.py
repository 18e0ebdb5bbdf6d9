"""OKURI_LOG_FORMAT=json against a real `okuri serve`: every log line is one JSON object, each
request on each surface has one access record with every field, the request id a client sees
(x-amzn-RequestId, x-request-id, gRPC trailing metadata) is the one logged, and no secret is
ever written. Text mode writes what it always has: no access records."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from botocore.exceptions import ClientError

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, start_server

ADMIN = "structured-logs-test-admin-key-0123456789"
FIELDS = {
    "time", "level", "node", "logger", "message", "request_id", "surface", "action", "queue",
    "key_id", "status", "duration_ms",
}  # fmt: skip
WAIT_S = 5.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("json-logs")
    env = {
        "OKURI_DATA_DIR": str(tmp / "data"),
        "OKURI_ADMIN_KEY": ADMIN,
        "OKURI_LOG_FORMAT": "json",
    }
    proc = start_server(tmp, env)
    yield proc
    proc.terminate()


def lines(server: ServerProcess) -> list[dict[str, Any]]:
    """Every line of the log, each of which must be one JSON object."""
    out = []
    for line in server.log.splitlines():
        doc = json.loads(line)
        assert isinstance(doc, dict), line
        out.append(doc)
    return out


def access_record(server: ServerProcess, request_id: str) -> dict[str, Any]:
    """The one access record of `request_id`, waiting a little for it to reach the log."""
    deadline = time.monotonic() + WAIT_S
    while True:
        found = [d for d in lines(server) if d.get("request_id") == request_id]
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(found) == 1, f"{len(found)} records of {request_id}:\n{server.log[-3000:]}"
    record = found[0]
    assert set(record) >= FIELDS, record
    assert record["logger"] == "okuri.access"
    assert record["time"].endswith("Z") and record["time"][10] == "T"
    assert isinstance(record["duration_ms"], float | int) and record["duration_ms"] >= 0
    return record


def test_an_sqs_send_and_an_sqs_error_are_logged_under_the_id_the_client_got(
    server: ServerProcess,
) -> None:
    sqs = server.sqs_client()
    url = sqs.create_queue(QueueName="logged")["QueueUrl"]
    sent = sqs.send_message(QueueUrl=url, MessageBody="hello")
    record = access_record(server, sent["ResponseMetadata"]["RequestId"])
    assert {k: record[k] for k in ("surface", "action", "queue", "key_id", "status")} == {
        "surface": "sqs",
        "action": "SendMessage",
        "queue": "logged",
        "key_id": SQS_KEY,
        "status": 200,
    }
    assert record["level"] == "info"
    with pytest.raises(ClientError) as caught:
        sqs.send_message(QueueUrl=url + "-missing", MessageBody="hello")
    failed = access_record(server, caught.value.response["ResponseMetadata"]["RequestId"])
    assert (failed["action"], failed["queue"], failed["status"]) == (
        "SendMessage",
        "logged-missing",
        400,
    )
    assert failed["node"] == record["node"] and record["node"]


def test_a_badly_signed_sqs_request_logs_the_key_id_it_claims(server: ServerProcess) -> None:
    sqs = server.sqs_client(secret="not-the-secret")
    with pytest.raises(ClientError) as caught:
        sqs.list_queues()
    record = access_record(server, caught.value.response["ResponseMetadata"]["RequestId"])
    assert (record["action"], record["key_id"], record["status"]) == ("ListQueues", SQS_KEY, 403)


def test_native_http_answers_and_logs_its_request_id(server: ServerProcess) -> None:
    auth = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    made = server.request("POST", "/v1/queues", b'{"name": "native-logged"}', auth)
    assert made.status == 200, made.text
    record = access_record(server, made.headers["x-request-id"])
    assert (record["surface"], record["action"], record["queue"], record["status"]) == (
        "native-http",
        "create_queue",
        "native-logged",
        200,
    )
    got = server.request("GET", "/v1/queues/native-logged", None, {**auth, "x-request-id": "c-1"})
    record = access_record(server, got.headers["x-request-id"])
    assert got.headers["x-request-id"] != "c-1"  # okuri's own id; the client's is kept beside
    assert (record["queue"], record["key_id"], record["client_request_id"]) == (
        "native-logged",
        "admin-key",
        "c-1",
    )
    refused = server.request("GET", "/v1/queues/native-logged")  # no key
    assert refused.status == 401
    record = access_record(server, refused.headers["x-request-id"])
    assert (record["action"], record["status"], record["key_id"]) == ("get_queue", 401, None)


def test_grpc_calls_carry_their_request_id_in_trailing_metadata(server: ServerProcess) -> None:
    target = server.url.removeprefix("http://")
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        metadata = (("authorization", f"Bearer {ADMIN}"),)
        _, call = stub.CreateQueue.with_call(
            pb.CreateQueueRequest(name="rpc-logged"), metadata=metadata
        )
        ids = dict(call.trailing_metadata() or ())
        record = access_record(server, ids["x-request-id"])
        assert {k: record[k] for k in ("surface", "action", "queue", "status", "key_id")} == {
            "surface": "native-grpc",
            "action": "CreateQueue",
            "queue": "rpc-logged",
            "status": "OK",
            "key_id": "admin-key",
        }
        with pytest.raises(grpc.RpcError) as caught:
            stub.GetQueue(pb.GetQueueRequest(queue="rpc-missing"), metadata=metadata)
        failed: Any = caught.value
        ids = dict(failed.trailing_metadata() or ())
        record = access_record(server, ids["x-request-id"])
        assert (record["queue"], record["status"]) == ("rpc-missing", "NOT_FOUND")


def test_health_answers_carry_a_request_id_and_log_only_at_debug(server: ServerProcess) -> None:
    answer = server.get("/healthz")
    assert answer.headers["x-request-id"]
    time.sleep(0.2)
    assert not [d for d in lines(server) if d.get("request_id") == answer.headers["x-request-id"]]


def test_no_secret_is_ever_written(server: ServerProcess) -> None:
    server.sqs_client().list_queues()
    log = server.log
    assert SQS_SECRET not in log
    assert ADMIN not in log
    assert sum(1 for d in lines(server) if d["logger"] == "okuri.server") >= 1  # start-up too


def test_text_mode_writes_no_access_records(tmp_path: Path) -> None:
    proc = start_server(tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data")})
    try:
        sqs = proc.sqs_client()
        sqs.create_queue(QueueName="quiet")
        log = proc.log
    finally:
        proc.terminate()
    assert " INFO okuri.server: okuri " in log
    assert "okuri.access" not in log and "CreateQueue" not in log
    assert not any(line.startswith("{") for line in log.splitlines())
