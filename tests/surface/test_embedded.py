"""okuri.embedded beyond its documented examples: an engine in memory is gone with its block,
one on a directory hands its queues to a server on the same directory and back, and a server
that cannot start says why in the `with` that started it."""

from __future__ import annotations

from pathlib import Path

import boto3
import httpx
import pytest

from okuri.client import Client
from okuri.embedded import Embedded, serve_in_thread
from okuri.engine import SendRequest
from okuri.server.settings import SettingsError
from okuri.server.startup import StartupError


async def test_an_engine_in_memory_keeps_nothing_after_its_block() -> None:
    embedded = Embedded()
    async with embedded as engine:
        await engine.create_queue("scratch")
        await engine.send("scratch", [SendRequest(b"x")])
        assert (await engine.counts("scratch")).visible == 1
        assert embedded.engine is engine
    with pytest.raises(RuntimeError, match="async with"):
        _ = embedded.engine
    async with Embedded() as engine:
        assert await engine.list_queues() == []


async def test_an_engine_and_a_server_on_one_directory_see_the_same_queues(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    async with Embedded(data) as engine:
        await engine.create_queue("handover")
        await engine.send("handover", [SendRequest(b"from the engine")])
    with serve_in_thread(data, admin_key="embedded-test-admin-key-0123") as okuri:
        assert okuri.data_dir == str(data)
        headers = {"Authorization": "Bearer embedded-test-admin-key-0123"}
        with httpx.Client(base_url=okuri.url, headers=headers, timeout=10) as http:
            leased = http.post("/v1/queues/handover/lease", json={"max_items": 10}).json()
            assert [i["body"] for i in leased["items"]] == ["from the engine"]
            done = http.post(
                "/v1/queues/handover/complete", json={"handles": [leased["items"][0]["handle"]]}
            )
            assert done.json() == {"results": ["completed"]}
            sent = http.post("/v1/queues/handover/messages", json={"items": [{"body": "back"}]})
            assert sent.status_code == 200
        assert httpx.get(okuri.health_url + "/readyz").status_code == 200
    async with Embedded(data) as engine:  # the server flushed what it took before it stopped
        got = await engine.receive("handover", 10, 30, 0)
        assert [d.message.body for d in got] == [b"back"]


def test_a_setting_the_server_refuses_raises_before_anything_starts() -> None:
    with (
        pytest.raises(SettingsError, match="OKURI_ADMIN_KEY"),
        serve_in_thread(admin_key="short"),
    ):
        pytest.fail("the block must not run")


def test_a_server_that_cannot_start_raises_its_reason(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    with (
        pytest.raises(StartupError, match="data directory"),
        serve_in_thread(not_a_directory),
    ):
        pytest.fail("the block must not run")


def test_a_server_in_memory_resets_to_no_queues_in_any_region_nor_exchanges() -> None:
    with serve_in_thread(memory=True) as okuri:
        assert okuri.data_dir is None
        with Client(okuri.url, okuri.admin_key) as client:
            client.create_queue("home")
            client.produce("home", ["from before the reset"])
            client.create_exchange("news", "fanout")
            other = boto3.client(
                "sqs",
                endpoint_url=okuri.url,
                region_name="eu-west-1",
                aws_access_key_id=okuri.access_key_id,
                aws_secret_access_key=okuri.secret_access_key,
            )
            other.create_queue(QueueName="abroad")
            okuri.reset()
            assert client.list_queues().queues == ()
            assert client.list_exchanges().exchanges == ()
            assert other.list_queues().get("QueueUrls", []) == []
            client.create_queue("home")  # the same name again: a new, empty queue
            assert client.get_queue("home").stats.visible == 0


def test_a_fifo_queue_made_again_after_a_reset_forgets_its_deduplication_ids() -> None:
    with serve_in_thread(memory=True) as okuri:
        sqs = boto3.client(
            "sqs",
            endpoint_url=okuri.url,
            region_name=okuri.region,
            aws_access_key_id=okuri.access_key_id,
            aws_secret_access_key=okuri.secret_access_key,
        )
        for _ in range(2):
            url = sqs.create_queue(QueueName="orders.fifo", Attributes={"FifoQueue": "true"})[
                "QueueUrl"
            ]
            sqs.send_message(
                QueueUrl=url, MessageBody="o1", MessageGroupId="g", MessageDeduplicationId="d1"
            )
            got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
            assert [m["Body"] for m in got] == ["o1"]
            okuri.reset()


def test_a_memory_server_takes_no_data_dir_too() -> None:
    with pytest.raises(ValueError, match="not both"), serve_in_thread("somewhere", memory=True):
        pytest.fail("the block must not run")
