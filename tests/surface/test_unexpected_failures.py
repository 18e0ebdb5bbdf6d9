"""A failure nobody planned for (a bug, not a store error) answers in each surface's own shape,
with no traceback on the wire, and its traceback is logged under the request id the client got:
SQS's `x-amzn-RequestId`, the native HTTP `x-request-id`, gRPC's trailing `x-request-id`. An
operator holding a client's error can find its traceback; in-process, so the engine can be made
to raise on demand."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import boto3
import grpc
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.server.app import Server
from okuri.server.settings import Settings

ADMIN = "unexpected-test-admin-key-0123456789"
BUG = "an unplanned bug in list_queues"


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    env = {
        "OKURI_LISTEN": "127.0.0.1:0",
        "OKURI_HEALTH_LISTEN": "127.0.0.1:0",
        "OKURI_DATA_DIR": str(tmp_path / "data"),
        "OKURI_ADMIN_KEY": ADMIN,
    }
    node = Server(Settings.load(env))
    await node.start()
    assert node.engine is not None

    async def broken(*args: object, **kwargs: object) -> list[str]:
        raise RuntimeError(BUG)

    node.engine.list_queues = broken  # type: ignore[method-assign]
    try:
        yield node
    finally:
        await node.stop()


def logged_under(caplog: pytest.LogCaptureFixture, request_id: str) -> logging.LogRecord:
    (record,) = [r for r in caplog.records if request_id in r.getMessage()]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert BUG in str(record.exc_info[1])
    return record


async def test_sqs_answers_internal_failure_and_logs_the_traceback_under_its_id(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    settings = server.settings
    sqs = boto3.client(
        "sqs",
        endpoint_url=server.urls[0],
        region_name=settings.region,
        aws_access_key_id=settings.access_key_id,
        aws_secret_access_key=settings.secret_access_key,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    with caplog.at_level(logging.ERROR), pytest.raises(ClientError) as caught:
        await asyncio.to_thread(sqs.list_queues)
    answer = caught.value.response
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 500
    assert answer["Error"]["Code"] == "InternalFailure"
    assert BUG not in str(answer) and "Traceback" not in str(answer)
    logged_under(caplog, answer["ResponseMetadata"]["RequestId"])


async def test_native_http_answers_internal_and_logs_the_traceback_under_its_id(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    with caplog.at_level(logging.ERROR):
        async with (
            aiohttp.ClientSession() as http,
            http.get(server.urls[0] + "/v1/queues", headers=auth) as response,
        ):
            status, body = response.status, await response.json()
            request_id = response.headers["x-request-id"]
    assert status == 500 and body["error"]["code"] == "internal", body
    assert BUG not in str(body)
    logged_under(caplog, request_id)


async def test_grpc_answers_internal_and_logs_the_traceback_under_its_id(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    target = server.urls[0].removeprefix("http://")
    with caplog.at_level(logging.ERROR):
        async with grpc.aio.insecure_channel(target) as channel:
            call = pb_grpc.QueueServiceStub(channel).ListQueues(
                pb.ListQueuesRequest(), metadata=(("authorization", f"Bearer {ADMIN}"),), timeout=10
            )
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
    err = caught.value
    assert err.code() == grpc.StatusCode.INTERNAL
    assert BUG not in (err.details() or "")
    trailers = dict(err.trailing_metadata() or ())
    record = logged_under(caplog, str(trailers["x-request-id"]))
    assert "ListQueues" in record.getMessage()
