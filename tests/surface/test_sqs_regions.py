"""Regions on one endpoint: the region a request is signed for picks its queues, as on AWS."""

from __future__ import annotations

import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri.sqs import query
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, http, start_server


def _client(server: ServerProcess, region: str) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=server.url,
        region_name=region,
        aws_access_key_id=SQS_KEY,
        aws_secret_access_key=SQS_SECRET,
    )


def test_one_name_in_two_regions_is_two_queues(sqs_server: ServerProcess) -> None:
    home, other = _client(sqs_server, "us-east-1"), _client(sqs_server, "eu-west-1")
    name = f"regional-{uuid.uuid4().hex[:8]}"
    home_url = home.create_queue(QueueName=name)["QueueUrl"]
    other_url = other.create_queue(QueueName=name, Attributes={"DelaySeconds": "0"})["QueueUrl"]
    assert home_url != other_url and "/eu-west-1/" in other_url
    assert other.get_queue_url(QueueName=name)["QueueUrl"] == other_url

    home.send_message(QueueUrl=home_url, MessageBody="home")
    other.send_message(QueueUrl=other_url, MessageBody="other")
    got = other.receive_message(QueueUrl=other_url, WaitTimeSeconds=2)["Messages"]
    assert [m["Body"] for m in got] == ["other"]
    got = home.receive_message(QueueUrl=home_url, WaitTimeSeconds=2)["Messages"]
    assert [m["Body"] for m in got] == ["home"]

    arn = other.get_queue_attributes(QueueUrl=other_url, AttributeNames=["QueueArn"])
    assert arn["Attributes"]["QueueArn"].startswith("arn:aws:sqs:eu-west-1:")
    assert other_url in other.list_queues(QueueNamePrefix=name).get("QueueUrls", [])
    assert home.list_queues(QueueNamePrefix=name)["QueueUrls"] == [home_url]

    other.delete_queue(QueueUrl=other_url)
    with pytest.raises(ClientError):
        other.get_queue_url(QueueName=name)
    assert home.get_queue_url(QueueName=name)["QueueUrl"] == home_url


def test_a_queue_url_of_another_region_is_a_queue_path_for_the_query_protocol() -> None:
    assert query.queue_path("/000000000000/jobs")
    assert query.queue_path("/eu-west-1/000000000000/jobs")
    assert not query.queue_path("/")


# --- a queue URL naming another region ---------------------------------------------------------
#
# AWS answers a queue URL of another region than the one a request is signed for with
# QueueDoesNotExist (the AWS CLI, given a us-west-2 queue's URL while signing for us-east-2,
# reports AWS.SimpleQueueService.NonExistentQueue "The specified queue does not exist.":
# danvk/mapsnap#436). okuri answers so whether or not the signing region has a queue of that
# name: it never serves one region's queue for another's URL.


def _missing(err: pytest.ExceptionInfo[ClientError]) -> None:
    e = err.value.response["Error"]
    assert (e["Code"], e["QueryErrorCode"], e["Message"]) == (
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "The specified queue does not exist.",
    )
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def _bodies(client: Any, url: str) -> list[str]:
    got = client.receive_message(QueueUrl=url, WaitTimeSeconds=1, MaxNumberOfMessages=10)
    return [m["Body"] for m in got.get("Messages", [])]


def test_another_regions_queue_url_is_refused_not_served_from_the_signing_region(
    sqs_server: ServerProcess,
) -> None:
    home, other = _client(sqs_server, "us-east-1"), _client(sqs_server, "eu-west-1")
    name = f"regional-url-{uuid.uuid4().hex[:8]}"
    home_url = home.create_queue(QueueName=name)["QueueUrl"]
    other_url = other.create_queue(QueueName=name)["QueueUrl"]
    assert f"/eu-west-1/000000000000/{name}" in other_url

    calls: list[tuple[str, dict[str, Any]]] = [
        ("send_message", {"MessageBody": "strayed"}),
        ("receive_message", {}),
        ("get_queue_attributes", {"AttributeNames": ["All"]}),
        ("tag_queue", {"Tags": {"team": "blue"}}),
        ("purge_queue", {}),
        ("delete_queue", {}),
    ]
    for method, params in calls:
        with pytest.raises(ClientError) as err:
            getattr(home, method)(QueueUrl=other_url, **params)
        _missing(err)
    # Neither region's queue was touched: both still exist, empty and untagged.
    assert _bodies(home, home_url) == [] and _bodies(other, other_url) == []
    assert "Tags" not in home.list_queue_tags(QueueUrl=home_url)
    assert "Tags" not in other.list_queue_tags(QueueUrl=other_url)

    # SQS's own URL shapes name their region in the host.
    aws_other = f"https://sqs.eu-west-1.amazonaws.com/000000000000/{name}"
    with pytest.raises(ClientError) as err:
        home.send_message(QueueUrl=aws_other, MessageBody="strayed")
    _missing(err)
    other.send_message(QueueUrl=aws_other, MessageBody="eu")
    home.send_message(
        QueueUrl=f"https://sqs.us-east-1.amazonaws.com/000000000000/{name}", MessageBody="us"
    )
    assert _bodies(other, other_url) == ["eu"] and _bodies(home, home_url) == ["us"]


def test_a_queue_only_another_region_has_is_missing_from_the_signing_region(
    sqs_server: ServerProcess,
) -> None:
    home, other = _client(sqs_server, "us-east-1"), _client(sqs_server, "eu-west-1")
    name = f"regional-only-{uuid.uuid4().hex[:8]}"
    other_url = other.create_queue(QueueName=name)["QueueUrl"]
    with pytest.raises(ClientError) as err:
        home.get_queue_attributes(QueueUrl=other_url, AttributeNames=["QueueArn"])
    _missing(err)
    with pytest.raises(ClientError) as err:
        home.get_queue_url(QueueName=name)
    assert err.value.response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"


def test_a_queue_url_naming_no_region_addresses_the_signing_regions_queue(
    sqs_server: ServerProcess,
) -> None:
    home, other = _client(sqs_server, "us-east-1"), _client(sqs_server, "eu-west-1")
    name = f"regional-bare-{uuid.uuid4().hex[:8]}"
    home_url = home.create_queue(QueueName=name)["QueueUrl"]
    other_url = other.create_queue(QueueName=name)["QueueUrl"]
    bare = f"{sqs_server.url}/000000000000/{name}"
    assert home_url == bare  # the configured region's URLs name no region
    home.send_message(QueueUrl=bare, MessageBody="us")
    other.send_message(QueueUrl=bare, MessageBody="eu")
    other.send_message(QueueUrl=name, MessageBody="eu by name")
    assert _bodies(home, home_url) == ["us"]
    assert sorted(_bodies(other, other_url)) == ["eu", "eu by name"]


def _query(
    server: ServerProcess, params: dict[str, str], region: str, path: str = "/"
) -> tuple[int, str, str]:
    """A query-protocol POST signed for `region`: (status, error code, error message)."""
    body = urllib.parse.urlencode({"Version": "2012-11-05", **params})
    request = AWSRequest(
        "POST",
        server.url + path,
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", region).add_auth(request)
    got = http("POST", server.url + path, body.encode(), dict(request.headers.items()))
    if got.status == 200:
        return got.status, "", ""
    root = ET.fromstring(got.body)
    ns = {"s": query.XMLNS}
    return (
        got.status,
        root.findtext("s:Error/s:Code", namespaces=ns) or "",
        root.findtext("s:Error/s:Message", namespaces=ns) or "",
    )


def test_the_query_protocol_refuses_another_regions_queue_url_alike(
    sqs_server: ServerProcess,
) -> None:
    home, other = _client(sqs_server, "us-east-1"), _client(sqs_server, "eu-west-1")
    name = f"regional-query-{uuid.uuid4().hex[:8]}"
    home_url = home.create_queue(QueueName=name)["QueueUrl"]
    other_url = other.create_queue(QueueName=name)["QueueUrl"]
    path = urllib.parse.urlsplit(other_url).path
    missing = (
        400,
        "AWS.SimpleQueueService.NonExistentQueue",
        "The specified queue does not exist for this wsdl version.",
    )
    send = {"Action": "SendMessage", "MessageBody": "strayed"}
    assert _query(sqs_server, {**send, "QueueUrl": other_url}, "us-east-1") == missing
    assert _query(sqs_server, send, "us-east-1", path) == missing  # posted to the queue's URL
    assert _query(sqs_server, send | {"MessageBody": "eu"}, "eu-west-1", path)[0] == 200
    assert _bodies(home, home_url) == [] and _bodies(other, other_url) == ["eu"]


# --- which regions are served -------------------------------------------------------------------
#
# AWS's own regions (okuri.sqs.aws_regions) and those named in OKURI_REGIONS, beside the home
# region; any other is refused as SQS refuses a credential scoped to an invalid region: 403
# SignatureDoesNotMatch "Credential should be scoped to a valid region, not 'queue'. "
# (boto/boto#3690; okuri.sqs.sigv4_errors). So invented regions cannot fill the table of the
# regions a node serves and push a real one into the home region's queues.

FAKE_REGIONS = [f"zz-fake-{i}" for i in range(1, 65)]


def _invalid_region(region: str) -> tuple[int, str, str]:
    return (
        403,
        "SignatureDoesNotMatch",
        f"Credential should be scoped to a valid region, not '{region}'. ",
    )


@pytest.fixture(scope="module")
def regions_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("regions")
    env = {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_REGIONS": "xx-private-1, xx-private-2"}
    proc = start_server(tmp, env)
    yield proc
    proc.terminate()


def test_invented_regions_are_refused_and_never_crowd_out_a_real_one_over_json(
    regions_server: ServerProcess,
) -> None:
    for region in FAKE_REGIONS:
        with pytest.raises(ClientError) as err:
            _client(regions_server, region).list_queues()
        e = err.value.response
        got = (e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"], e["Error"]["Message"])
        assert got == _invalid_region(region)
    home, north = _client(regions_server, "us-east-1"), _client(regions_server, "eu-north-1")
    name = f"regional-north-{uuid.uuid4().hex[:8]}"
    url = north.create_queue(QueueName=name)["QueueUrl"]
    assert "/eu-north-1/" in url
    assert "QueueUrls" not in home.list_queues(QueueNamePrefix=name)
    assert north.list_queues(QueueNamePrefix=name)["QueueUrls"] == [url]
    # A region the operator named is served as AWS's own are; a name not of a region's form too
    # is refused (it used to reach the home region's queues).
    private = _client(regions_server, "xx-private-2")
    assert "/xx-private-2/" in private.create_queue(QueueName=name)["QueueUrl"]
    with pytest.raises(ClientError) as err:
        _client(regions_server, "local").create_queue(QueueName=name)
    assert err.value.response["Error"]["Code"] == "SignatureDoesNotMatch"
    assert home.list_queues(QueueNamePrefix=name).get("QueueUrls") is None


def test_invented_regions_are_refused_over_the_query_protocol(
    regions_server: ServerProcess,
) -> None:
    for region in FAKE_REGIONS[:8]:
        got = _query(regions_server, {"Action": "ListQueues"}, region)
        assert got == _invalid_region(region)
    name = f"regional-query-north-{uuid.uuid4().hex[:8]}"
    assert (
        _query(regions_server, {"Action": "CreateQueue", "QueueName": name}, "eu-north-1")[0] == 200
    )
    assert (
        _query(regions_server, {"Action": "CreateQueue", "QueueName": name}, "xx-private-1")[0]
        == 200
    )
    assert "QueueUrls" not in _client(regions_server, "us-east-1").list_queues(QueueNamePrefix=name)
    assert (
        len(_client(regions_server, "eu-north-1").list_queues(QueueNamePrefix=name)["QueueUrls"])
        == 1
    )
