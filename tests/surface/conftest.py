"""Fixtures for surface tests: free ports, and the real `okuri serve` started as a subprocess.

The server is configured only through environment variables, as a container would configure it.
Every process a test starts is stopped by its own pid at teardown, and every wait is bounded.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import boto3
import pytest

START_S = 30.0  # a cold interpreter importing aiobotocore can take a few seconds on CI
STOP_S = 10.0
BIND_ATTEMPTS = 3  # a probed free port can be taken before the server binds it


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


def http(
    method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None
) -> Response:
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return Response(r.status, {k.lower(): v for k, v in r.headers.items()}, r.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, {k.lower(): v for k, v in err.headers.items()}, err.read())


def clean_environ() -> dict[str, str]:
    """The test process's environment minus any OKURI_* a developer's shell may have set."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OKURI_")}


@dataclass
class ServerProcess:
    proc: subprocess.Popen[bytes]
    url: str
    health_url: str
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def get(self, path: str) -> Response:
        """A GET on the health listener."""
        return http("GET", self.health_url + path)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """A request to the main (SQS) listener."""
        return http(method, self.url + path, body, headers)

    def wait_for(self, path: str, status: int = 200, timeout_s: float = START_S) -> Response:
        """Poll the health listener until `path` answers `status`; fail with the server's log."""
        deadline = time.monotonic() + timeout_s
        last: Response | str = "no answer"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"okuri exited with {self.proc.returncode}:\n{self.log[-3000:]}")
            try:
                last = self.get(path)
                if last.status == status:
                    return last
            except (urllib.error.URLError, OSError) as err:
                last = repr(err)
            time.sleep(0.05)
        pytest.fail(f"{path} did not answer {status} in {timeout_s} s ({last}):\n{self.log}")

    def terminate(self, timeout_s: float = STOP_S) -> int:
        """SIGTERM this pid only; the exit code (SIGKILL and a failure if it will not stop)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"okuri did not stop within {timeout_s} s of SIGTERM:\n{self.log}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=STOP_S)


def spawn(env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "okuri.server.cli", "serve"],
            env={**clean_environ(), **env},
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


class Launch(Protocol):
    def __call__(self, env: dict[str, str] | None = None) -> ServerProcess: ...


class RunToExit(Protocol):
    def __call__(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]: ...


@pytest.fixture
def run_to_exit(tmp_path: Path) -> RunToExit:
    """Run `okuri serve` expecting it to give up on its own (bad settings, unusable store).

    Free ports and a fresh data dir are filled in unless `env` names its own.
    """

    def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        defaults = {
            "OKURI_DATA_DIR": str(tmp_path / "data"),
            "OKURI_LISTEN": f"127.0.0.1:{free_port()}",
            "OKURI_HEALTH_LISTEN": f"127.0.0.1:{free_port()}",
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
        env = {"OKURI_DATA_DIR": str(tmp_path / "data"), **(env or {})}
        log_path = tmp_path / f"okuri-{len(started)}.log"
        for _ in range(BIND_ATTEMPTS):
            port, health_port = free_port(), free_port()
            env = {
                **env,
                "OKURI_LISTEN": f"127.0.0.1:{port}",
                "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health_port}",
            }
            server = ServerProcess(
                spawn(env, log_path),
                f"http://127.0.0.1:{port}",
                f"http://127.0.0.1:{health_port}",
                log_path,
                env,
            )
            started.append(server)
            deadline = time.monotonic() + START_S
            while time.monotonic() < deadline and server.proc.poll() is None:
                try:
                    if server.get("/healthz").status == 200:
                        return server
                except (urllib.error.URLError, OSError):
                    pass
                time.sleep(0.05)
            if server.proc.poll() is None or "cannot listen" not in server.log:
                break
        pytest.fail(f"okuri did not come up (exit {server.proc.poll()}):\n{server.log[-3000:]}")

    try:
        yield start
    finally:
        for server in started:
            server.kill()


# --- one real server per store for the SQS surface suites -----------------------------------

SQS_KEY, SQS_SECRET = "AKIDOKURITEST", "okuri-test-secret"


def _start(tmp: Path, env: dict[str, str]) -> ServerProcess:
    port, health = free_port(), free_port()
    env = {
        "OKURI_LISTEN": f"127.0.0.1:{port}",
        "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health}",
        "OKURI_ACCESS_KEY_ID": SQS_KEY,
        "OKURI_SECRET_ACCESS_KEY": SQS_SECRET,
        "OKURI_LINGER_MS": "10",
        **env,
    }
    server = ServerProcess(
        spawn(env, tmp / "okuri.log"),
        f"http://127.0.0.1:{port}",
        f"http://127.0.0.1:{health}",
        tmp / "okuri.log",
        env,
    )
    server.wait_for("/readyz")
    return server


@pytest.fixture(scope="module", params=["local", "s3"])
def sqs_server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp(f"sqs-{request.param}")
    if request.param == "local":
        env = {"OKURI_DATA_DIR": str(tmp / "data")}
    else:
        endpoint = request.getfixturevalue("moto_s3_endpoint")
        bucket = f"okuri-{uuid.uuid4().hex[:12]}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=bucket)
        env = {
            "OKURI_S3_ENDPOINT": endpoint,
            "OKURI_S3_BUCKET": bucket,
            "OKURI_S3_ACCESS_KEY_ID": "testing",
            "OKURI_S3_SECRET_ACCESS_KEY": "testing",
        }
    srv = _start(tmp, env)
    yield srv
    srv.terminate()
