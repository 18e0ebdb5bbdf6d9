"""The real `okuri serve`, as a subprocess configured only by environment variables.

These check what an operator and a container orchestrator see: health, readiness through the
store, metrics, the SQS listener's refusal of unsigned requests, a clean SIGTERM, and
one-line refusals to start.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

from okuri.clock import SystemClock
from okuri.engine import Engine, SendRequest
from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from okuri.store.directory import layout_of, open_local
from okuri.store.journal import JournalStore

if TYPE_CHECKING:
    from tests.servers import Launch, Response, RunToExit, ServerProcess

S3_KEY_ID = S3_SECRET = "testing"


def metrics(server: ServerProcess) -> dict[str, float]:
    response = server.get("/metrics")
    assert response.status == 200
    samples = {}
    for line in response.text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            samples[name] = float(value)
    return samples


def assert_one_line_refusal(stderr: str, *needles: str) -> None:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    refusals = [line for line in lines if line.startswith("okuri: error: ")]
    assert len(refusals) == 1, stderr
    for needle in needles:
        assert needle in refusals[0], stderr


def test_serve_from_environment_is_live_ready_and_exposes_metrics(launch: Launch) -> None:
    server = launch()
    healthz = server.get("/healthz")
    assert (healthz.status, healthz.text) == (200, "ok\n")
    ready = server.wait_for("/readyz")
    assert ready.text == "ready\n"
    response = server.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = metrics(server)
    assert samples["okuri_up"] == 1
    # The start-up probe's create-only puts and the readiness LIST went through the counted store.
    assert samples['okuri_store_requests_total{class="put"}'] >= 2
    assert samples['okuri_store_requests_total{class="list"}'] >= 1
    assert set(re.findall(r'okuri_store_requests_total\{class="(\w+)"\}', response.text)) == {
        "put",
        "cas",
        "get",
        "list",
        "delete",
    }
    assert "serving SQS on " + server.url in server.log
    assert "store: local directory" in server.log


def unsigned_create_queue(server: ServerProcess, name: str) -> Response:
    return server.request(
        "POST",
        "/",
        body=json.dumps({"QueueName": name}).encode(),
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": "AmazonSQS.CreateQueue",
        },
    )


def test_main_listener_refuses_unsigned_requests_in_the_sqs_error_shape(launch: Launch) -> None:
    server = launch()
    server.wait_for("/readyz")
    response = unsigned_create_queue(server, "jobs")
    assert response.status == 403
    assert response.headers["content-type"].startswith("application/x-amz-json-1.0")
    assert response.headers["x-amzn-query-error"] == "MissingAuthenticationToken;Sender"
    body = json.loads(response.body)
    assert body["__type"] == "com.amazonaws.sqs#MissingAuthenticationToken"

    index = server.request("GET", "/")
    assert index.status == 200
    assert json.loads(index.body) == {"service": "okuri", "version": "0.0.1"}


def test_auth_off_serves_unsigned_requests(launch: Launch) -> None:
    server = launch({"OKURI_AUTH": "off"})
    server.wait_for("/readyz")
    response = unsigned_create_queue(server, "open")
    assert response.status == 200
    assert json.loads(response.body)["QueueUrl"].endswith("/000000000000/open")


def test_sigterm_drains_and_exits_zero_within_seconds(launch: Launch) -> None:
    server = launch()
    server.wait_for("/readyz")
    started_s = time.monotonic()
    assert server.terminate(timeout_s=10) == 0
    assert time.monotonic() - started_s < 10
    assert "received SIGTERM" in server.log
    assert "stopped" in server.log
    assert "Traceback" not in server.log


def test_sigterm_answers_waiting_long_polls_at_once_instead_of_draining_for_them(
    launch: Launch,
) -> None:
    """Idle consumers long-polling for 20 s must not hold a shutdown for the whole grace period:
    their receives answer, empty, and the process exits within a few seconds."""
    server = launch()
    server.wait_for("/readyz")
    sqs = server.sqs_client(DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY)
    url = sqs.create_queue(QueueName="idle")["QueueUrl"]
    answers: list[Any] = []

    def poll() -> None:
        answers.append(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=20))

    pollers = [threading.Thread(target=poll) for _ in range(3)]
    for t in pollers:
        t.start()
    time.sleep(1.0)  # all three are waiting in the server
    started_s = time.monotonic()
    assert server.terminate(timeout_s=15) == 0
    assert time.monotonic() - started_s < 5
    for t in pollers:
        t.join(5)
    assert len(answers) == 3 and all(not a.get("Messages") for a in answers), answers
    assert "Traceback" not in server.log


def test_the_configured_data_dir_holds_the_store(launch: Launch, tmp_path: Path) -> None:
    data_dir = tmp_path / "elsewhere"
    server = launch({"OKURI_DATA_DIR": str(data_dir)})
    server.wait_for("/readyz")
    # The start-up probe wrote (and removed) its keys there, leaving the lock directory behind.
    assert data_dir.is_dir() and any(data_dir.iterdir())

    async def create_queue_beside_the_server() -> None:
        engine = Engine(open_local(str(data_dir)), SystemClock(), linger_ms=0)
        await engine.create_queue("beside")
        await engine.send_one("beside", SendRequest(b"hello"))
        await engine.close()

    asyncio.run(create_queue_beside_the_server())
    assert layout_of(str(data_dir)) == "journal"  # a new directory's layout, for both
    assert asyncio.run(JournalStore(data_dir).get("m/beside")).data
    # The server's readiness probe lists the same directory, now holding a queue, and still passes.
    lists_before = metrics(server)['okuri_store_requests_total{class="list"}']
    deadline = time.monotonic() + 10
    while metrics(server)['okuri_store_requests_total{class="list"}'] == lists_before:
        assert time.monotonic() < deadline, "readiness never probed the store again"
        assert server.get("/readyz").status == 200
        time.sleep(0.1)
    assert server.terminate() == 0


def test_an_unusable_data_dir_refuses_to_start_with_one_line(
    run_to_exit: RunToExit, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    result = run_to_exit({"OKURI_DATA_DIR": str(blocker / "data")})
    assert result.returncode == 1
    assert_one_line_refusal(result.stderr, "cannot use data directory", str(blocker))


def test_a_directory_of_the_other_layout_refuses_to_start_with_one_line(
    run_to_exit: RunToExit, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    asyncio.run(open_local(str(data_dir), "files").put_if_absent("m/q", b"{}"))
    result = run_to_exit({"OKURI_DATA_DIR": str(data_dir), "OKURI_LOCAL_STORE": "journal"})
    assert result.returncode == 1
    assert_one_line_refusal(result.stderr, "cannot use data directory", "OKURI_LOCAL_STORE")
    assert layout_of(str(data_dir)) == "files"  # left as it was
    result = run_to_exit({"OKURI_DATA_DIR": str(data_dir), "OKURI_LOCAL_STORE": "sideways"})
    assert result.returncode == 2 and "OKURI_LOCAL_STORE" in result.stderr


def test_a_non_numeric_linger_exits_2_with_one_line_and_no_traceback(
    run_to_exit: RunToExit, tmp_path: Path
) -> None:
    result = run_to_exit({"OKURI_LINGER_MS": "abc", "OKURI_DATA_DIR": str(tmp_path)})
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "okuri: error: OKURI_LINGER_MS='abc': expected a whole number of milliseconds"
    )
    assert not any(tmp_path.iterdir())  # refused before touching the store


def test_other_bad_settings_exit_2_naming_the_variable(
    run_to_exit: RunToExit, tmp_path: Path
) -> None:
    for env, needle in [
        ({"OKURI_LINGER_MS": "-5"}, "OKURI_LINGER_MS='-5'"),
        ({"OKURI_LISTEN": "127.0.0.1:http"}, "OKURI_LISTEN='127.0.0.1:http'"),
        ({"OKURI_S3_ACCESS_KEY_ID": "AKIA", "OKURI_S3_BUCKET": "b"}, "OKURI_S3_SECRET_ACCESS_KEY"),
        ({"OKURI_LOG_FORMAT": "logfmt"}, "OKURI_LOG_FORMAT='logfmt': expected one of text, json"),
    ]:
        result = run_to_exit({**env, "OKURI_DATA_DIR": str(tmp_path)})
        assert result.returncode == 2, result.stderr
        assert_one_line_refusal(result.stderr, needle)


def s3_client(endpoint: str) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id=S3_KEY_ID,
        aws_secret_access_key=S3_SECRET,
    )


def s3_env(endpoint: str, bucket: str) -> dict[str, str]:
    return {
        "OKURI_S3_ENDPOINT": endpoint,
        "OKURI_S3_BUCKET": bucket,
        "OKURI_S3_ACCESS_KEY_ID": S3_KEY_ID,
        "OKURI_S3_SECRET_ACCESS_KEY": S3_SECRET,
        "OKURI_S3_PREFIX": "node-a",
    }


def test_serve_on_an_s3_bucket_is_ready(launch: Launch, moto_s3_endpoint: str) -> None:
    bucket = f"okuri-serve-{uuid.uuid4().hex[:16]}"
    s3_client(moto_s3_endpoint).create_bucket(Bucket=bucket)
    sqs_secret = "sqs-secret-never-logged"
    server = launch({**s3_env(moto_s3_endpoint, bucket), "OKURI_SECRET_ACCESS_KEY": sqs_secret})
    assert server.wait_for("/readyz").text == "ready\n"
    samples = metrics(server)
    assert samples['okuri_store_requests_total{class="put"}'] >= 2
    assert f"store: s3://{bucket}/node-a at {moto_s3_endpoint}" in server.log
    assert sqs_secret not in server.log and S3_SECRET not in server.log
    assert "development key" not in server.log
    # The probe cleaned up after itself: nothing is left under the prefix.
    listed = s3_client(moto_s3_endpoint).list_objects_v2(Bucket=bucket)
    assert listed.get("KeyCount", 0) == 0
    assert server.terminate() == 0


def test_a_missing_bucket_refuses_to_start_with_one_line(
    run_to_exit: RunToExit, moto_s3_endpoint: str
) -> None:
    result = run_to_exit(s3_env(moto_s3_endpoint, f"okuri-absent-{uuid.uuid4().hex[:16]}"))
    assert result.returncode == 1
    assert_one_line_refusal(result.stderr, "refusing to start", "NoSuchBucket")
