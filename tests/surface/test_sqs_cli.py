"""The AWS CLI, unmodified, against a real `okuri serve`: every core action and an error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess

AWS = shutil.which("aws") or str(Path(sys.executable).with_name("aws"))


def aws(server: ServerProcess, *args: str, ok: bool = True) -> Any:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_"))},
        "AWS_ACCESS_KEY_ID": SQS_KEY,
        "AWS_SECRET_ACCESS_KEY": SQS_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_MAX_ATTEMPTS": "1",
    }
    proc = subprocess.run(
        [AWS, "sqs", *args, "--endpoint-url", server.url, "--output", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    if not ok:
        assert proc.returncode != 0, proc.stdout
        return proc.stderr
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout) if proc.stdout.strip() else {}


def test_every_core_action_through_the_cli(sqs_server: ServerProcess) -> None:
    s = sqs_server
    name = f"cli-{uuid.uuid4().hex[:8]}"
    url = aws(s, "create-queue", "--queue-name", name, "--attributes", "VisibilityTimeout=20")[
        "QueueUrl"
    ]
    assert aws(s, "get-queue-url", "--queue-name", name)["QueueUrl"] == url
    assert url in aws(s, "list-queues", "--queue-name-prefix", "cli-")["QueueUrls"]
    aws(s, "set-queue-attributes", "--queue-url", url, "--attributes", "DelaySeconds=0")
    attrs = aws(s, "get-queue-attributes", "--queue-url", url, "--attribute-names", "All")[
        "Attributes"
    ]
    assert attrs["VisibilityTimeout"] == "20"
    sent = aws(s, "send-message", "--queue-url", url, "--message-body", "hello from the cli")
    assert len(sent["MD5OfMessageBody"]) == 32
    batch = aws(
        s,
        "send-message-batch",
        "--queue-url",
        url,
        "--entries",
        json.dumps([{"Id": "a", "MessageBody": "two"}, {"Id": "b", "MessageBody": "three"}]),
    )
    assert len(batch["Successful"]) == 2
    got: list[dict[str, Any]] = []
    for _ in range(5):
        got += aws(
            s,
            "receive-message",
            "--queue-url",
            url,
            "--max-number-of-messages",
            "10",
            "--wait-time-seconds",
            "2",
            "--attribute-names",
            "All",
        ).get("Messages", [])
        if len(got) >= 3:
            break
    assert sorted(m["Body"] for m in got) == ["hello from the cli", "three", "two"]
    aws(
        s,
        "change-message-visibility",
        "--queue-url",
        url,
        "--receipt-handle",
        got[0]["ReceiptHandle"],
        "--visibility-timeout",
        "60",
    )
    cmv = aws(
        s,
        "change-message-visibility-batch",
        "--queue-url",
        url,
        "--entries",
        json.dumps(
            [{"Id": "x", "ReceiptHandle": got[1]["ReceiptHandle"], "VisibilityTimeout": 60}]
        ),
    )
    assert [e["Id"] for e in cmv["Successful"]] == ["x"]
    aws(s, "delete-message", "--queue-url", url, "--receipt-handle", got[0]["ReceiptHandle"])
    deleted = aws(
        s,
        "delete-message-batch",
        "--queue-url",
        url,
        "--entries",
        json.dumps(
            [{"Id": f"d{i}", "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got[1:])]
        ),
    )
    assert len(deleted["Successful"]) == 2
    aws(s, "purge-queue", "--queue-url", url)
    aws(s, "delete-queue", "--queue-url", url)
    err = aws(s, "get-queue-url", "--queue-name", name, ok=False)
    assert "NonExistentQueue" in err or "QueueDoesNotExist" in err


def test_cli_adds_and_removes_a_permission(sqs_server: ServerProcess) -> None:
    url = aws(sqs_server, "create-queue", "--queue-name", f"cli-u-{uuid.uuid4().hex[:6]}")[
        "QueueUrl"
    ]
    grant = ["--queue-url", url, "--label", "l", "--aws-account-ids", "111111111111"]
    aws(sqs_server, "add-permission", *grant, "--actions", "SendMessage")
    policy = aws(
        sqs_server, "get-queue-attributes", "--queue-url", url, "--attribute-names", "Policy"
    )
    [statement] = json.loads(policy["Attributes"]["Policy"])["Statement"]
    assert (statement["Sid"], statement["Action"]) == ("l", "SQS:SendMessage")
    err = aws(sqs_server, "add-permission", *grant, "--actions", "CreateQueue", ok=False)
    assert "InvalidParameterValue" in err
    aws(sqs_server, "remove-permission", "--queue-url", url, "--label", "l")
    err = aws(sqs_server, "remove-permission", "--queue-url", url, "--label", "l", ok=False)
    assert "can't find label" in err


@pytest.fixture(autouse=True)
def _cli_present() -> None:
    assert Path(AWS).exists(), "the AWS CLI is a dev dependency (pip install awscli)"
