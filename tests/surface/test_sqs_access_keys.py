"""SQS access keys with roles and namespaces against a real `okuri serve`: one boto3 client per
role, signed with keys from the same keys file as the native API's bearer keys. A consumer
cannot purge, delete, create or send; a producer cannot receive; readonly only reads; every key
stays inside its namespace; the environment's pair is an admin of everything; refusals are
AWS's AccessDenied on both protocols; a key made while serving works after SIGHUP."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri.principals.keyfile import create_access_key, create_key
from okuri.principals.keys import AccessKey
from okuri.sqs.query import XMLNS
from tests.servers import SQS_REGION, ServerProcess, http, start_server

NS = "orders-"
ROLES = ("admin", "producer", "consumer", "readonly")
RELOAD_S = 5.0


class Keys(NamedTuple):
    file: Path
    sqs: dict[str, AccessKey]  # role -> an SQS access key limited to NS
    bearer: str  # a native readonly bearer key limited to NS, in the same file


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    sqs = {role: create_access_key(str(path), role, NS) for role in ROLES}
    bearer, _ = create_key(str(path), "readonly", NS)
    return Keys(path, sqs, bearer)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("sqs-keys")
    proc = start_server(
        tmp, {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_API_KEYS_FILE": str(keys.file)}
    )
    yield proc
    proc.terminate()


def client(server: ServerProcess, key: AccessKey) -> Any:
    return server.sqs_client(key.access_key_id, key.secret_access_key, retries={"max_attempts": 1})


def denied(call: Callable[..., Any], **params: Any) -> str:
    """Run a boto3 call that must be refused as AWS refuses it; its message."""
    with pytest.raises(ClientError) as caught:
        call(**params)
    error = caught.value.response["Error"]
    assert error["Code"] == "AccessDenied", caught.value.response
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    return str(error["Message"])


def fresh(prefix: str = NS) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


def test_a_consumer_receives_and_deletes_but_cannot_purge_delete_create_or_send(
    server: ServerProcess, keys: Keys
) -> None:
    admin, consumer = server.sqs_client(), client(server, keys.sqs["consumer"])
    url = admin.create_queue(QueueName=fresh())["QueueUrl"]
    admin.send_message(QueueUrl=url, MessageBody="job")
    got = consumer.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    handle = got[0]["ReceiptHandle"]
    consumer.change_message_visibility(QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=30)
    consumer.delete_message(QueueUrl=url, ReceiptHandle=handle)

    message = denied(consumer.purge_queue, QueueUrl=url)
    key_id = keys.sqs["consumer"].access_key_id
    assert message.startswith(
        f"User: arn:aws:iam::000000000000:user/{key_id} is not authorized to perform: "
        f"sqs:PurgeQueue on resource: arn:aws:sqs:us-east-1:000000000000:{url.rsplit('/', 1)[1]}"
    )
    denied(consumer.delete_queue, QueueUrl=url)
    denied(consumer.create_queue, QueueName=fresh())
    denied(consumer.send_message, QueueUrl=url, MessageBody="not mine to send")
    denied(consumer.set_queue_attributes, QueueUrl=url, Attributes={"DelaySeconds": "1"})
    # Nothing a refusal touched changed: the queue is there and empty.
    counts = admin.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert counts["ApproximateNumberOfMessages"] == "0"


def test_a_producer_sends_but_cannot_receive_or_delete(server: ServerProcess, keys: Keys) -> None:
    admin, producer = server.sqs_client(), client(server, keys.sqs["producer"])
    url = admin.create_queue(QueueName=fresh())["QueueUrl"]
    producer.send_message(QueueUrl=url, MessageBody="made")
    sent = producer.send_message_batch(
        QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}]
    )
    assert len(sent["Successful"]) == 2
    denied(producer.receive_message, QueueUrl=url)
    message = denied(
        producer.delete_message_batch, QueueUrl=url, Entries=[{"Id": "a", "ReceiptHandle": "h"}]
    )
    assert "perform: sqs:DeleteMessage on" in message  # a batch is its single action
    got = admin.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert sorted(m["Body"] for m in got["Messages"]) == ["a", "b", "made"]


def test_readonly_reads_queues_and_nothing_else(server: ServerProcess, keys: Keys) -> None:
    admin, reader = server.sqs_client(), client(server, keys.sqs["readonly"])
    name = fresh()
    url = admin.create_queue(QueueName=name, tags={"team": "orders"})["QueueUrl"]
    assert reader.get_queue_url(QueueName=name)["QueueUrl"] == url
    assert (
        "QueueArn"
        in reader.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    )
    assert url in reader.list_queues()["QueueUrls"]
    assert reader.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "orders"}
    denied(reader.send_message, QueueUrl=url, MessageBody="x")
    denied(reader.receive_message, QueueUrl=url)
    denied(reader.tag_queue, QueueUrl=url, Tags={"x": "y"})
    denied(reader.delete_queue, QueueUrl=url)


def test_every_key_stays_inside_its_namespace(server: ServerProcess, keys: Keys) -> None:
    admin = server.sqs_client()
    outside_name = fresh("billing-")
    outside = admin.create_queue(QueueName=outside_name)["QueueUrl"]
    inside = admin.create_queue(QueueName=fresh())["QueueUrl"]
    consumer = client(server, keys.sqs["consumer"])
    message = denied(consumer.receive_message, QueueUrl=outside)
    assert "outside the key's namespace 'orders-'" in message
    reader = client(server, keys.sqs["readonly"])
    listed = reader.list_queues()["QueueUrls"]
    assert inside in listed and outside not in listed
    assert all(u.rsplit("/", 1)[1].startswith(NS) for u in listed)
    denied(reader.list_queues, QueueNamePrefix="billing-")
    denied(reader.get_queue_url, QueueName=outside_name)

    ns_admin = client(server, keys.sqs["admin"])
    ns_admin.purge_queue(QueueUrl=inside)  # an admin of its namespace may purge there
    denied(ns_admin.purge_queue, QueueUrl=outside)
    denied(ns_admin.create_queue, QueueName=fresh("billing-"))
    arn = admin.get_queue_attributes(QueueUrl=outside, AttributeNames=["QueueArn"])
    policy = json.dumps(
        {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "3"}
    )
    message = denied(ns_admin.create_queue, QueueName=fresh(), Attributes={"RedrivePolicy": policy})
    assert f"resource: arn:aws:sqs:us-east-1:000000000000:{outside_name} " in message


def test_the_environments_pair_is_an_admin_of_every_queue(server: ServerProcess) -> None:
    admin = server.sqs_client()
    url = admin.create_queue(QueueName=fresh("anything-"))["QueueUrl"]
    admin.send_message(QueueUrl=url, MessageBody="x")
    admin.tag_queue(QueueUrl=url, Tags={"a": "b"})
    admin.purge_queue(QueueUrl=url)
    assert any(u == url for u in admin.list_queues()["QueueUrls"])
    admin.delete_queue(QueueUrl=url)


def test_the_same_keys_file_still_serves_native_bearer_keys(
    server: ServerProcess, keys: Keys
) -> None:
    name = fresh()
    server.sqs_client().create_queue(QueueName=name)
    answer = server.request(
        "GET", f"/v1/queues?prefix={NS}", headers={"Authorization": f"Bearer {keys.bearer}"}
    )
    assert answer.status == 200, answer.text
    assert name in json.loads(answer.body)["queues"]
    # An SQS secret is no bearer key.
    secret = keys.sqs["admin"].secret_access_key
    refused = server.request("GET", "/v1/queues", headers={"Authorization": f"Bearer {secret}"})
    assert refused.status == 401


def test_an_unknown_key_or_a_wrong_secret_is_refused_as_before(
    server: ServerProcess, keys: Keys
) -> None:
    unknown = server.sqs_client("OKAKNOSUCHKEY0000000", "x" * 40, retries={"max_attempts": 1})
    with pytest.raises(ClientError) as caught:
        unknown.list_queues()
    assert caught.value.response["Error"]["Code"] == "InvalidClientTokenId"
    wrong = server.sqs_client(
        keys.sqs["admin"].access_key_id, "y" * 40, retries={"max_attempts": 1}
    )
    with pytest.raises(ClientError) as caught:
        wrong.list_queues()
    assert caught.value.response["Error"]["Code"] == "SignatureDoesNotMatch"


def test_a_refusal_over_the_query_protocol_is_aws_xml(server: ServerProcess, keys: Keys) -> None:
    url = server.sqs_client().create_queue(QueueName=fresh())["QueueUrl"]
    key = keys.sqs["consumer"]
    body = f"Action=PurgeQueue&Version=2012-11-05&QueueUrl={url}"
    request = AWSRequest(
        method="POST",
        url=server.url + "/",
        data=body.encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    credentials = Credentials(key.access_key_id, key.secret_access_key)
    SigV4Auth(credentials, "sqs", SQS_REGION).add_auth(request)
    answer = http("POST", server.url + "/", body.encode(), dict(request.headers.items()))
    assert answer.status == 403, answer.text
    error = ET.fromstring(answer.body).find(f"{{{XMLNS}}}Error")
    assert error is not None
    assert error.findtext(f"{{{XMLNS}}}Code") == "AccessDenied"
    assert error.findtext(f"{{{XMLNS}}}Type") == "Sender"
    assert "sqs:PurgeQueue" in (error.findtext(f"{{{XMLNS}}}Message") or "")


def test_an_access_key_made_while_serving_works_after_sighup_and_a_loose_file_is_warned_of(
    server: ServerProcess, keys: Keys
) -> None:
    made = create_access_key(str(keys.file), "producer", "")
    fresh_client = client(server, made)
    with pytest.raises(ClientError) as caught:
        fresh_client.list_queues()
    assert caught.value.response["Error"]["Code"] == "InvalidClientTokenId"
    keys.file.chmod(0o640)
    try:
        os.kill(server.proc.pid, signal.SIGHUP)
        deadline = time.monotonic() + RELOAD_S
        while "readable by group or others" not in server.log:
            assert time.monotonic() < deadline, server.log[-2000:]
            time.sleep(0.05)
    finally:
        keys.file.chmod(0o600)
    url = server.sqs_client().create_queue(QueueName=fresh("elsewhere-"))["QueueUrl"]
    fresh_client.send_message(QueueUrl=url, MessageBody="from a new key")
    denied(fresh_client.receive_message, QueueUrl=url)
