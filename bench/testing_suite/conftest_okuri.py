"""The suite's `sqs` under okuri (copied in as conftest.py by `python -m bench testing`): the
okuri pytest plugin's boto3 SQS client, on its one server for the session, each test starting
with no queues."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def sqs(okuri_sqs: Any) -> Any:
    return okuri_sqs
