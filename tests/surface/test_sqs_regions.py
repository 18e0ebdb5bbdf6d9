"""Regions on one endpoint: the region a request is signed for picks its queues, as on AWS."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from okuri.sqs import query
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess


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
