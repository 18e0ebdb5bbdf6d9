"""The suite's `sqs` under moto (copied in as conftest.py by `python -m bench testing`): a boto3
client inside `mock_aws`, started afresh for every test, as moto's documentation shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

REGION = "us-east-1"


@pytest.fixture
def sqs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")  # moto's advice: never a real key, even by accident
    with mock_aws():
        yield boto3.client("sqs", region_name=REGION)
