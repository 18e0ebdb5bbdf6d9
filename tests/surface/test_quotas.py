"""The operator's quotas against a real `okuri serve`, as each surface answers them.

A server with small bounds (6 queues per region, 2 per key namespace, 4 KiB of stored
attributes per queue): SQS answers a create past a bound, or attributes past their bytes,
with 403 OverLimit on both protocols; the native API with 403 `quota_exceeded`, gRPC with
FAILED_PRECONDITION. A Policy over SQS's own 8,192 bytes answers as SQS answers it.
"""

from __future__ import annotations

import json
import urllib.parse
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import grpc
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.principals.keyfile import create_access_key, create_key
from okuri.sqs import query
from tests.servers import SQS_KEY, SQS_SECRET, Response, ServerProcess, http, start_server

ADMIN = "quotas-test-admin-key-0123456789"
QUEUES_MAX, NAMESPACE_QUEUES_MAX, ATTRIBUTES_BYTES_MAX = 6, 2, 4096


class Keys(NamedTuple):
    native_team: str  # an admin bearer key limited to "team-"
    sqs_id: str  # an admin SQS access key limited to "sqs-"
    sqs_secret: str


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Keys]:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    native, _ = create_key(str(path), "admin", "team-")
    sqs = create_access_key(str(path), "admin", "sqs-")
    return path, Keys(native, sqs.access_key_id, sqs.secret_access_key)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, keys_file: tuple[Path, Keys]
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("quotas")
    env = {
        "OKURI_DATA_DIR": str(tmp / "data"),
        "OKURI_ADMIN_KEY": ADMIN,
        "OKURI_API_KEYS_FILE": str(keys_file[0]),
        "OKURI_QUEUES_MAX": str(QUEUES_MAX),
        "OKURI_NAMESPACE_QUEUES_MAX": str(NAMESPACE_QUEUES_MAX),
        "OKURI_QUEUE_ATTRIBUTES_BYTES_MAX": str(ATTRIBUTES_BYTES_MAX),
    }
    proc = start_server(tmp, env)
    yield proc
    proc.terminate()


def _native(server: ServerProcess, method: str, path: str, body: Any, key: str) -> Response:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {key}"}
    return server.request(method, path, json.dumps(body).encode(), headers)


def _sqs_refusal(err: pytest.ExceptionInfo[ClientError]) -> tuple[int, str, str]:
    r = err.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r["Error"]["Message"]


def _query(server: ServerProcess, params: dict[str, str], key: str, secret: str) -> tuple[int, str]:
    """A query-protocol call by `key`: (status, error code or "")."""
    body = urllib.parse.urlencode({"Version": "2012-11-05", **params})
    request = AWSRequest("POST", server.url, data=body, headers={"Content-Type": query.FORM_TYPE})
    SigV4Auth(Credentials(key, secret), "sqs", "us-east-1").add_auth(request)
    got = http("POST", server.url, body.encode(), dict(request.headers.items()))
    if got.status == 200:
        return 200, ""
    root = ET.fromstring(got.body)
    return got.status, root.findtext("s:Error/s:Code", namespaces={"s": query.XMLNS}) or ""


def test_each_surface_refuses_queues_past_the_namespace_and_region_bounds(
    server: ServerProcess, keys_file: tuple[Path, Keys]
) -> None:
    keys = keys_file[1]
    # SQS, a key limited to "sqs-": two queues, then OverLimit; re-declaring still works.
    sqs = server.sqs_client(keys.sqs_id, keys.sqs_secret, retries={"max_attempts": 1})
    urls = [sqs.create_queue(QueueName=f"sqs-{i}")["QueueUrl"] for i in range(2)]
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName="sqs-2")
    status, code, message = _sqs_refusal(err)
    assert (status, code) == (403, "OverLimit")
    assert "would exceed the maximum number of queues in the namespace 'sqs-'" in message
    assert sqs.create_queue(QueueName="sqs-0")["QueueUrl"] == urls[0]
    create = {"Action": "CreateQueue", "QueueName": "sqs-3"}
    assert _query(server, create, keys.sqs_id, keys.sqs_secret) == (403, "OverLimit")

    # Native, a key limited to "team-": two queues, then 403 quota_exceeded; over gRPC too.
    for i in range(2):
        made = _native(server, "POST", "/v1/queues", {"name": f"team-{i}"}, keys.native_team)
        assert made.status == 200, made.text
    refused = _native(server, "POST", "/v1/queues", {"name": "team-2"}, keys.native_team)
    assert refused.status == 403, refused.text
    assert json.loads(refused.body)["error"]["code"] == "quota_exceeded"
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        team = (("authorization", f"Bearer {keys.native_team}"),)
        with pytest.raises(grpc.RpcError) as caught:
            stub.CreateQueue(pb.CreateQueueRequest(name="team-2"), metadata=team)
        failed: Any = caught.value
        assert failed.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert dict(failed.trailing_metadata())["okuri-error-code"] == "quota_exceeded"

        # Keys of every queue: the region's bound, 6 in all (4 made above).
        admin = (("authorization", f"Bearer {ADMIN}"),)
        stub.CreateQueue(pb.CreateQueueRequest(name="ops-0"), metadata=admin)
        server.sqs_client().create_queue(QueueName="ops-1")
        with pytest.raises(grpc.RpcError) as caught:
            stub.CreateQueue(pb.CreateQueueRequest(name="ops-2"), metadata=admin)
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    with pytest.raises(ClientError) as err:
        server.sqs_client(retries={"max_attempts": 1}).create_queue(QueueName="ops-2")
    status, code, message = _sqs_refusal(err)
    assert (status, code) == (403, "OverLimit")
    assert f"would exceed the maximum number of queues: {QUEUES_MAX}" in message
    # The refusals created nothing.
    listed = server.sqs_client().list_queues()["QueueUrls"]
    assert len(listed) == QUEUES_MAX


def test_a_policy_past_sqs_bound_or_attributes_past_the_operators_are_over_limit(
    server: ServerProcess,
) -> None:
    sqs = server.sqs_client(retries={"max_attempts": 1})
    url = sqs.get_queue_url(QueueName="ops-1")["QueueUrl"]

    def policy(chars: int) -> str:
        doc = {"Version": "2012-10-17", "Id": "x" * chars, "Statement": []}
        return json.dumps(doc)

    # Past SQS's own 8,192 bytes: SQS's answer, on both protocols.
    with pytest.raises(ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": policy(9000)})
    assert _sqs_refusal(err) == (403, "OverLimit", "Submitted policy is over max allowed size.")
    # Within SQS's bound, past the operator's 4 KiB for all of a queue's stored attributes.
    with pytest.raises(ClientError) as err:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": policy(5000)})
    status, code, message = _sqs_refusal(err)
    assert (status, code) == (403, "OverLimit")
    assert f"would exceed the maximum of {ATTRIBUTES_BYTES_MAX} bytes per queue" in message
    tags = {f"k{i:02}": "v" * 200 for i in range(25)}  # 25 tags: within SQS's 50
    with pytest.raises(ClientError) as err:
        sqs.tag_queue(QueueUrl=url, Tags=tags)
    assert _sqs_refusal(err)[:2] == (403, "OverLimit")
    assert (
        "Policy" not in sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    )
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": policy(1000)})  # fits
    params = {
        "Action": "SetQueueAttributes",
        "QueueUrl": url,
        "Attribute.1.Name": "Policy",
        "Attribute.1.Value": policy(9000),
    }
    assert _query(server, params, SQS_KEY, SQS_SECRET) == (403, "OverLimit")
