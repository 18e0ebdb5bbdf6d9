"""Shared fixtures: a moto S3 server in a real subprocess on 127.0.0.1, and a fresh bucket per test.

moto runs out of process so the S3 adapter is exercised over real HTTP, exactly as against a
bucket. The server is stopped by its pid, never by name.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
# `okuri` is not installed into the venv; make the checkout importable however pytest is started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

S3_REGION = "us-east-1"
S3_KEY_ID = "testing"
S3_SECRET = "testing"
MOTO_START_S = 30.0
MOTO_STOP_S = 10.0


def free_port() -> int:
    """A port nothing listens on right now (another process could still take it; rare)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/moto-api/", timeout=1):
            return True
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)  # this pid only
        try:
            proc.wait(timeout=MOTO_STOP_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=MOTO_STOP_S)


@pytest.fixture(scope="session")
def moto_s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {**os.environ, "AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET}
    for _ in range(3):  # the free port may be taken between probing and binding
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
            )
        deadline = time.monotonic() + MOTO_START_S
        while proc.poll() is None and time.monotonic() < deadline and not _answers(url):
            time.sleep(0.05)
        if proc.poll() is None and _answers(url):
            break
        _stop(proc)
    else:
        pytest.fail(f"moto server did not start; see {log_path}:\n{log_path.read_text()[-2000:]}")
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def moto_s3_client(moto_s3_endpoint: str) -> Any:
    """A plain boto3 client, to set up and inspect buckets behind the adapter's back."""
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=moto_s3_endpoint,
        region_name=S3_REGION,
        aws_access_key_id=S3_KEY_ID,
        aws_secret_access_key=S3_SECRET,
    )


@pytest.fixture
def s3_bucket(moto_s3_client: Any) -> str:
    name = f"okuri-test-{uuid.uuid4().hex[:20]}"
    moto_s3_client.create_bucket(Bucket=name)
    return name


@pytest.fixture
def s3_store_args(moto_s3_endpoint: str, s3_bucket: str) -> dict[str, Any]:
    """Everything `S3Store(...)` needs except the prefix, pointing at a fresh moto bucket."""
    return {
        "bucket": s3_bucket,
        "endpoint_url": moto_s3_endpoint,
        "region": S3_REGION,
        "access_key_id": S3_KEY_ID,
        "secret_access_key": S3_SECRET,
    }
