"""AWS's own boto3 SQS examples, unmodified, against a real okuri (local store and S3).

They live outside the project (../shared/clients/aws-doc-sdk-examples beside the checkout, or
the checkout AWS_DOC_SDK_EXAMPLES names; compat/clients) and run in place: their 33 pytest
tests with the botocore Stubber turned off (`--use-real-aws-may-incur-charges`), so every call
reaches okuri, and both usage demos. FIFO queues are among what they create. Where they are
absent (a user's own clone) the tests skip, saying what to fetch and where to put it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from compat.clients import aws_examples, aws_examples_missing
from tests.servers import SQS_KEY, SQS_REGION, SQS_SECRET, ServerProcess

EXAMPLES = aws_examples()
MISSING = aws_examples_missing()
TESTS_EXPECTED = 33
RUN_TIMEOUT_S = 300

pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def _env(server: ServerProcess) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(
        AWS_ENDPOINT_URL=server.url,
        AWS_ACCESS_KEY_ID=SQS_KEY,
        AWS_SECRET_ACCESS_KEY=SQS_SECRET,
        AWS_DEFAULT_REGION=SQS_REGION,
        PYTHONDONTWRITEBYTECODE="1",  # the examples' folder is not ours to write in
    )
    return env


def _run(server: ServerProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=EXAMPLES,  # their conftest finds test_tools relative to the working directory
        env=_env(server),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_their_tests_pass_against_okuri(sqs_server: ServerProcess) -> None:
    done = _run(
        sqs_server,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--use-real-aws-may-incur-charges",
        "test",
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    passed = re.search(r"(\d+) passed", output)
    assert passed is not None and int(passed.group(1)) == TESTS_EXPECTED, output[-2000:]


@pytest.mark.parametrize(
    ("demo", "claim"),
    [
        ("queue_wrapper.py", r"Created queue with URL: \S+\.fifo\."),
        ("message_wrapper.py", r"Successfully reassembled all file lines!"),
    ],
)
def test_their_usage_demos_run_against_okuri(
    sqs_server: ServerProcess, demo: str, claim: str
) -> None:
    done = _run(sqs_server, demo)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert re.search(claim, output), output[-2000:]
    assert "Thanks for watching!" in output, output[-2000:]
