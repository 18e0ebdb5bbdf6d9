"""The recorder and the replay, end to end against real `okuri serve` processes.

A query-protocol session (form-encoded POSTs and a GET, XML answers) is recorded through the
RecordingProxy and replayed against a second, fresh okuri: it must match, with queue URLs and
receipt handles carried forward in their percent-encoded forms. The same session with one
recorded answer changed, and the boto3 recording with one field's type changed, must fail, and
say which exchange differs.
"""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from compat.proxy import RecordingProxy
from compat.recording import (
    RECORDINGS,
    Exchange,
    Recording,
    dumps,
    from_json,
    load,
    to_json,
)
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
    path = tmp_path / "query.json"
    path.write_text(dumps(recording))
    recording = load(path)

    second = fresh_server(launch, tmp_path / "second")
    outcomes = replay(recording, second.url, SQS_KEY, SQS_SECRET)
    assert report(recording, outcomes) is None
    assert [o.live.status for o in outcomes] == [e.response.status for e in exchanges]
    # The live receipt handle reached the live DeleteMessage: the queue really is empty after.
    assert b"<Message>" not in outcomes[4].live.body

    changed = copy.deepcopy(to_json(recording))
    receive = changed["exchanges"][2]["response"]
    receive["body"] = receive["body"].replace("<Name>kind</Name>", "<Name>sort</Name>")
    third = fresh_server(launch, tmp_path / "third")
    problem = report(from_json(changed), replay(from_json(changed), third.url, SQS_KEY, SQS_SECRET))
    assert problem is not None
    assert "1 of 7 exchanges differ" in problem
    assert "recorded exchange 2 (ReceiveMessage)" in problem
    assert '-            "Name": "sort",' in problem
    assert '+            "Name": "kind",' in problem


def test_a_recording_with_one_field_retyped_fails_replay(launch: Launch, tmp_path: Path) -> None:
    original = load(RECORDINGS / "boto3.json")
    index = next(
        i
        for i, e in enumerate(original.exchanges)
        if e.action == "GetQueueAttributes" and b'"VisibilityTimeout":"20"' in e.response.body
    )
    data = to_json(original)
    recorded = data["exchanges"][index]["response"]
    recorded["body"] = recorded["body"].replace(
        '"VisibilityTimeout":"20"', '"VisibilityTimeout":20'
    )
    retyped = from_json(json.loads(json.dumps(data)))
    server = fresh_server(launch, tmp_path / "data")
    problem = report(retyped, replay(retyped, server.url, SQS_KEY, SQS_SECRET))
    assert problem is not None
    assert f"recorded exchange {index} (GetQueueAttributes)" in problem
    assert '-      "VisibilityTimeout": 20' in problem
    assert '+      "VisibilityTimeout": "20"' in problem
