"""The recorder and the replay, end to end against real `okuri serve` processes.

A query-protocol session (form-encoded POSTs and a GET, XML answers) is recorded through the
RecordingProxy, saved as a vcrpy cassette, read back with vcrpy and replayed against a second,
fresh okuri: it must match, with queue URLs and receipt handles carried forward in their
percent-encoded forms. The same session with one recorded answer changed, and the boto3
cassette with one field's type changed, must fail, and say which exchange differs. The
recorder itself (`python -m compat.record`) records boto3 with vcrpy into a cassette that
replays.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from compat.cassette import CASSETTES, Exchange, Recording, load, save
from compat.clients import CLIENTS
from compat.proxy import RecordingProxy
from compat.record import record
from compat.replay import replay, report
from tests.servers import SQS_KEY, SQS_SECRET, Launch, ServerProcess

NS = {"q": "http://queue.amazonaws.com/doc/2012-11-05/"}
FORM = "application/x-www-form-urlencoded; charset=utf-8"


def fresh_server(launch: Launch, data_dir: Path) -> ServerProcess:
    server = launch(
        {
            "OKURI_DATA_DIR": str(data_dir),
            "OKURI_ACCESS_KEY_ID": SQS_KEY,
            "OKURI_SECRET_ACCESS_KEY": SQS_SECRET,
        }
    )
    server.wait_for("/readyz")
    return server


async def query_call(
    http: aiohttp.ClientSession, endpoint: str, params: dict[str, str], method: str = "POST"
) -> ET.Element:
    """One signed query-protocol request, as the query SDKs send it; the parsed XML answer."""
    form = urlencode({**params, "Version": "2012-11-05"})
    if method == "POST":
        url, body, headers = endpoint + "/", form.encode(), {"Content-Type": FORM}
    else:
        url, body, headers = f"{endpoint}/?{form}", b"", {}
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", "us-east-1").add_auth(request)
    async with http.request(method, url, data=body, headers=dict(request.headers.items())) as r:
        return ET.fromstring(await r.read())


async def record_query_session(endpoint: str) -> list[Exchange]:
    async with RecordingProxy(endpoint) as proxy, aiohttp.ClientSession() as http:
        created = await query_call(
            http,
            proxy.url,
            {
                "Action": "CreateQueue",
                "QueueName": "recorder-q",
                "Attribute.1.Name": "VisibilityTimeout",
                "Attribute.1.Value": "30",
            },
        )
        queue_url = created.findtext(".//q:QueueUrl", namespaces=NS)
        assert queue_url and queue_url.startswith(proxy.url), ET.tostring(created)
        await query_call(
            http,
            proxy.url,
            {
                "Action": "SendMessage",
                "QueueUrl": queue_url,
                "MessageBody": "hello + / = query",
                "MessageAttribute.1.Name": "kind",
                "MessageAttribute.1.Value.DataType": "String",
                "MessageAttribute.1.Value.StringValue": "recorded",
            },
        )
        received = await query_call(
            http,
            proxy.url,
            {
                "Action": "ReceiveMessage",
                "QueueUrl": queue_url,
                "AttributeName.1": "All",
                "MessageAttributeName.1": "All",
                "WaitTimeSeconds": "5",
            },
        )
        handle = received.findtext(".//q:ReceiptHandle", namespaces=NS)
        assert handle, ET.tostring(received)
        await query_call(
            http,
            proxy.url,
            {"Action": "DeleteMessage", "QueueUrl": queue_url, "ReceiptHandle": handle},
        )
        await query_call(  # deleted already: must still succeed, and nothing is left
            http,
            proxy.url,
            {"Action": "ReceiveMessage", "QueueUrl": queue_url, "WaitTimeSeconds": "0"},
        )
        await query_call(http, proxy.url, {"Action": "GetQueueUrl", "QueueName": "nope"})
        await query_call(http, proxy.url, {"Action": "ListQueues"}, method="GET")
        return proxy.exchanges


async def test_a_query_session_records_and_replays_and_a_changed_answer_fails(
    launch: Launch, tmp_path: Path
) -> None:
    first = fresh_server(launch, tmp_path / "first")
    exchanges = await record_query_session(first.url)
    assert [e.action for e in exchanges] == [
        "CreateQueue",
        "SendMessage",
        "ReceiveMessage",
        "DeleteMessage",
        "ReceiveMessage",
        "GetQueueUrl",
        "ListQueues",
    ]
    assert (
        exchanges[-1].request.method == "GET" and "Action=ListQueues" in exchanges[-1].request.query
    )
    assert exchanges[5].response.status == 400
    recording = Recording("test", "0", "query-session", "2025-01-01", "0.0.1", exchanges)
    assert recording.protocols == ["query"]
    path = tmp_path / "query.yaml"
    save(recording, path)
    recording = load(path)
    assert recording.exchanges == exchanges

    second = fresh_server(launch, tmp_path / "second")
    outcomes = replay(recording, second.url, SQS_KEY, SQS_SECRET)
    assert report(recording, outcomes) is None
    assert [o.live.status for o in outcomes] == [e.response.status for e in exchanges]
    # The live receipt handle reached the live DeleteMessage: the queue really is empty after.
    assert b"<Message>" not in outcomes[4].live.body

    changed = with_answer(
        recording, 2, lambda body: body.replace(b"<Name>kind</Name>", b"<Name>sort</Name>")
    )
    third = fresh_server(launch, tmp_path / "third")
    problem = report(changed, replay(changed, third.url, SQS_KEY, SQS_SECRET))
    assert problem is not None
    assert "1 of 7 exchanges differ" in problem
    assert "recorded exchange 2 (ReceiveMessage)" in problem
    assert '-            "Name": "sort",' in problem
    assert '+            "Name": "kind",' in problem


def with_answer(recording: Recording, index: int, change: Callable[[bytes], bytes]) -> Recording:
    """`recording` with the recorded answer of exchange `index` changed (its body)."""
    exchanges = list(recording.exchanges)
    old = exchanges[index]
    body = change(old.response.body)
    assert body != old.response.body, "the change must change something"
    exchanges[index] = Exchange(old.request, dataclasses.replace(old.response, body=body))
    return dataclasses.replace(recording, exchanges=exchanges)


def test_a_cassette_with_one_field_retyped_fails_replay(launch: Launch, tmp_path: Path) -> None:
    original = load(CASSETTES / "boto3.yaml")
    index = next(
        i
        for i, e in enumerate(original.exchanges)
        if e.action == "GetQueueAttributes" and b'"VisibilityTimeout":"20"' in e.response.body
    )
    retyped = with_answer(
        original,
        index,
        lambda body: body.replace(b'"VisibilityTimeout":"20"', b'"VisibilityTimeout":20'),
    )
    path = tmp_path / "retyped.yaml"
    save(retyped, path)
    retyped = load(path)
    server = fresh_server(launch, tmp_path / "data")
    problem = report(retyped, replay(retyped, server.url, SQS_KEY, SQS_SECRET))
    assert problem is not None
    assert f"recorded exchange {index} (GetQueueAttributes)" in problem
    assert '-      "VisibilityTimeout": 20' in problem
    assert '+      "VisibilityTimeout": "20"' in problem


@pytest.mark.parametrize(
    ("name", "recorder"), [("boto3", "vcrpy"), ("boto3-query", "vcrpy"), ("aws-sdk-go-v2", "proxy")]
)
def test_the_recorder_writes_a_cassette_of_a_real_sdk_that_replays(
    name: str, recorder: str, launch: Launch, tmp_path: Path
) -> None:
    """`python -m compat.record`'s one run: vcrpy inside the Python clients' own interpreters
    (boto3-query's is its own virtualenv), the proxy for the Go program; a fresh okuri each."""
    client = CLIENTS[name]
    assert ("vcrpy" if client.vcrpy else "proxy") == recorder
    missing = client.missing()
    if missing is not None:
        pytest.fail(f"{name} cannot run: {missing}; run `make clients`", pytrace=False)
    path, count = record(client, "sqs-fifo", tmp_path / "out")
    assert path == tmp_path / "out" / f"{name}.sqs-fifo.yaml"
    recording = load(path)
    assert count == len(recording.exchanges) == 27  # the 26 steps; step 25 sends two requests
    assert (recording.client, recording.scenario) == (name, "sqs-fifo")
    assert recording.protocols == (["json"] if name == "boto3" else ["query"])
    assert recording.sdk_version and recording.okuri_version
    # vcrpy records the requests botocore handed urllib3; the proxy, the Host header on the wire.
    hosts = {e.request.header("host") for e in recording.exchanges}
    assert hosts == ({None} if recorder == "vcrpy" else {recording.exchanges[0].request.host})

    server = fresh_server(launch, tmp_path / "replay")
    assert report(recording, replay(recording, server.url, SQS_KEY, SQS_SECRET)) is None
