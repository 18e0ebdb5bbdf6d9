"""Shared fixtures: a moto S3 server in a real subprocess on 127.0.0.1, and a fresh bucket per test.

moto runs out of process so the S3 adapter is exercised over real HTTP, exactly as against a
bucket. The server is stopped by its pid, never by name.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[1]
# `okuri` is not installed into the venv; make the checkout importable however pytest is started.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.launch import BIND_ATTEMPTS, free_port, free_ports  # noqa: E402
from bench.launch import spawn as spawn_process  # noqa: E402
from bench.servers import MOTO_MODULE  # noqa: E402
from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY  # noqa: E402
from tests.servers import (  # noqa: E402  (after the sys.path fix)
    START_S,
    Launch,
    RunToExit,
    ServerProcess,
    clean_environ,
    serve,
    start_server,
)

# pytester: the tests of okuri's pytest plugin (tests/surface/test_pytest_plugin*.py) run users'
# suites through it.
pytest_plugins = ["pytester"]

# The configuration of every users' suite pytester runs. pytest-asyncio is in okuri's test
# toolchain, so it loads in those suites too, and warns in each run of a suite whose
# configuration leaves its fixture loop scope unset; a user with pytest-asyncio sets it.
USERS_INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

S3_REGION = "us-east-1"
S3_KEY_ID = "testing"
S3_SECRET = "testing"
MOTO_START_S = 30.0
MOTO_STOP_S = 10.0

# pytest-timeout's limit for the tiers whose tests run real processes for minutes; the others
# have pyproject.toml's `timeout` (300 s). A test's own @pytest.mark.timeout wins over both.
TIER_TIMEOUT_S = {
    "compat": 600,  # SDK programs and the AWS CLI, each program's run bounded at 300 s
    "smoke": 600,  # Celery workers, Flower, PHP started per test, each wait bounded at 60 s
    "cluster": 1200,  # three nodes under kill -9, then a drain of up to 60 s, on a slow machine
    "compose": 3600,  # a first run builds five images (each bounded at 900 s), then the stack
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = ROOT / "tests"
    for item in items:
        if not item.path.is_relative_to(tests) or item.get_closest_marker("timeout"):
            continue
        timeout_s = TIER_TIMEOUT_S.get(item.path.relative_to(tests).parts[0])
        if timeout_s is not None:
            item.add_marker(pytest.mark.timeout(timeout_s))


@pytest.fixture
def pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """pytester, its suite configured as a user's would be (USERS_INI, in tox.ini): a test that
    configures more adds its lines to that file."""
    pytester.makeini(USERS_INI)
    return pytester


@pytest.fixture(scope="session")
def moto_s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {**clean_environ(), "AWS_ACCESS_KEY_ID": S3_KEY_ID, "AWS_SECRET_ACCESS_KEY": S3_SECRET}
    for _ in range(BIND_ATTEMPTS):  # the free port may be taken between probing and binding
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        argv = [sys.executable, "-m", MOTO_MODULE, "-H", "127.0.0.1", "-p", str(port)]
        process = spawn_process(argv, env, log_path, stop_s=MOTO_STOP_S)
        if process.wait_ready(url + "/moto-api/", MOTO_START_S):
            break
        process.stop()
    else:
        pytest.fail(f"moto server did not start; see {log_path}:\n{log_path.read_text()[-2000:]}")
    try:
        yield url
    finally:
        process.stop()


@pytest.fixture(scope="session")
def moto_s3_client(moto_s3_endpoint: str) -> Any:
    """A plain boto3 client, to set up and inspect buckets behind the adapter's back."""
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


# --- real okuri servers (helpers in tests/servers.py) -------------------------------------


@pytest.fixture
def run_to_exit(tmp_path: Path) -> RunToExit:
    """Run `okuri serve` expecting it to give up on its own (bad settings, unusable store).

    Free ports and a fresh data dir are filled in unless `env` names its own.
    """

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        port, health_port = free_ports(2)
        defaults = {
            "OKURI_DATA_DIR": str(tmp_path / "data"),
            "OKURI_LISTEN": f"127.0.0.1:{port}",
            "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health_port}",
        }
        return subprocess.run(
            [sys.executable, "-m", "okuri.server.cli", "serve"],
            env={**clean_environ(), **defaults, **env},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=START_S,
        )

    return run


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start `okuri serve` on free 127.0.0.1 ports with a fresh data dir; waits for /healthz."""
    started: list[ServerProcess] = []

    def start(env: dict[str, str] | None = None) -> ServerProcess:
        settings = {"OKURI_DATA_DIR": str(tmp_path / "data"), **(env or {})}
        server = serve(settings, tmp_path / f"okuri-{len(started)}.log", ready_path="/healthz")
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.kill()


@pytest.fixture(scope="module", params=["local", "s3"])
def sqs_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp(f"sqs-{request.param}")
    if request.param == "local":
        env = {"OKURI_DATA_DIR": str(tmp / "data")}
    else:
        bucket = f"okuri-{uuid.uuid4().hex[:12]}"
        request.getfixturevalue("moto_s3_client").create_bucket(Bucket=bucket)
        env = {
            "OKURI_S3_ENDPOINT": request.getfixturevalue("moto_s3_endpoint"),
            "OKURI_S3_BUCKET": bucket,
            "OKURI_S3_ACCESS_KEY_ID": S3_KEY_ID,
            "OKURI_S3_SECRET_ACCESS_KEY": S3_SECRET,
        }
    srv = start_server(tmp, env)
    yield srv
    srv.terminate()


@pytest.fixture(scope="module")
def readme_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`okuri serve` with nothing but its address and store set: the README's key pair, for the
    tests that run the README's blocks (tests/readme.py)."""
    tmp = tmp_path_factory.mktemp("readme")
    server = start_server(
        tmp,
        {
            "OKURI_DATA_DIR": str(tmp / "data"),
            "OKURI_ACCESS_KEY_ID": DEV_ACCESS_KEY_ID,
            "OKURI_SECRET_ACCESS_KEY": DEV_SECRET_ACCESS_KEY,
        },
    )
    yield server
    server.terminate()
