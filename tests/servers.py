"""Real `okuri serve` processes for tests: start, wait, talk to, stop by pid.

Starting one is bench/launch.py's job (the one launcher of tests, bench and compat): configured
only through environment variables, as a container would configure it, on free loopback ports
retried when a race took one. Every process a test starts is stopped by its own pid at teardown,
and every wait is bounded.
Tests talk to one through raw HTTP (`request`) or a boto3 SQS client of it (`sqs_client`), or
run a client program against it with `client_environ` (compat/clients/README.md's contract).
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import boto3
import pytest
from botocore.config import Config

from bench import launch
from bench.launch import LaunchError
from bench.launch import clean_environ as clean_environ  # re-exported for the tests' use
from compat.clients import Client
from okuri.principals.keyfile import create_key

START_S = 30.0  # a cold interpreter importing aiobotocore can take a few seconds on CI
STOP_S = 10.0
SQS_KEY, SQS_SECRET = "AKIDOKURITEST", "okuri-test-secret"  # the pair start_server gives okuri
SQS_REGION = "us-east-1"
LOG_TAIL_CHARS = 4000


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

    def sqs_client(self, key: str = SQS_KEY, secret: str = SQS_SECRET, **config: Any) -> Any:
        """A boto3 SQS client of the main listener, signing with `key` and `secret`; `config`
        goes to botocore's Config (`retries={"max_attempts": 1}`, `parameter_validation=False`)."""
        return boto3.client(
            "sqs",
            endpoint_url=self.url,
            region_name=SQS_REGION,
            aws_access_key_id=key,
            aws_secret_access_key=secret,
            config=Config(**config) if config else None,
        )

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
        if not launch.terminate(self.proc, timeout_s):
            pytest.fail(f"okuri did not stop within {timeout_s} s of SIGTERM:\n{self.log}")
        return self.proc.returncode

    def kill(self) -> None:
        launch.kill(self.proc, STOP_S)

    @classmethod
    def of(cls, served: launch.Served) -> ServerProcess:
        return cls(
            served.process.proc,
            served.url,
            served.health_url,
            served.process.log_path,
            served.env,
        )


def serve(settings: dict[str, str], log_path: Path, ready_path: str = "/readyz") -> ServerProcess:
    """A ready `okuri serve` with `settings` (bench/launch.py); the test fails with its log's
    tail if it does not become ready."""
    try:
        served = launch.start_serve(
            settings, log_path, ready_path=ready_path, timeout_s=START_S, stop_s=STOP_S
        )
    except LaunchError as err:
        pytest.fail(str(err), pytrace=False)
    return ServerProcess.of(served)


class Launch(Protocol):
    def __call__(self, env: dict[str, str] | None = None) -> ServerProcess: ...


class RunToExit(Protocol):
    def __call__(self, env: dict[str, str]) -> subprocess.CompletedProcess[str]: ...


# --- one real server per store for the SQS surface suites -----------------------------------


def start_server(tmp: Path, env: dict[str, str]) -> ServerProcess:
    settings = {
        "OKURI_ACCESS_KEY_ID": SQS_KEY,
        "OKURI_SECRET_ACCESS_KEY": SQS_SECRET,
        "OKURI_LINGER_MS": "10",
        **env,
    }
    return serve(settings, tmp / "okuri.log")


# --- a server with native API keys: the environment's admin key, and a keys file --------------

BEARER_ROLES = ("admin", "producer", "consumer", "readonly")


class RoleKeys(NamedTuple):
    """A keys file, and the bearer key it holds for each role (all limited to one namespace)."""

    file: Path
    by_role: dict[str, str]


def role_keys(
    directory: Path, namespace: str = "", roles: Iterable[str] = BEARER_ROLES
) -> RoleKeys:
    """`okuri keys create` once per role into `directory`/keys.json, as an operator would."""
    path = directory / "keys.json"
    return RoleKeys(path, {role: create_key(str(path), role, namespace)[0] for role in roles})


def keyed_server(tmp: Path, admin_key: str, keys_file: Path) -> ServerProcess:
    """A real `okuri serve` on `tmp`/data with `OKURI_ADMIN_KEY` and `OKURI_API_KEYS_FILE` set."""
    env = {
        "OKURI_DATA_DIR": str(tmp / "data"),
        "OKURI_ADMIN_KEY": admin_key,
        "OKURI_API_KEYS_FILE": str(keys_file),
    }
    return start_server(tmp, env)


# --- queues set up through a boto3 SQS client, as a user would -------------------------------


class DeadLetterPair(NamedTuple):
    url: str  # the queue's URL
    dlq: str  # its dead-letter queue's URL
    dlq_arn: str


def create_with_dead_letter_queue(
    sqs: Any, name: str, max_receive_count: int, **attributes: str
) -> DeadLetterPair:
    """Create `<name>-dlq`, read its QueueArn, and create `name` redriving to it after
    `max_receive_count` receives, with any other `attributes`."""
    dlq = str(sqs.create_queue(QueueName=f"{name}-dlq")["QueueUrl"])
    got = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
    arn = str(got["Attributes"]["QueueArn"])
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": str(max_receive_count)})
    url = sqs.create_queue(QueueName=name, Attributes={**attributes, "RedrivePolicy": policy})
    return DeadLetterPair(str(url["QueueUrl"]), dlq, arn)


# --- client programs run against a server ----------------------------------------------------


def client_environ(
    server: ServerProcess, client: Client, scenario: str, home: Path
) -> dict[str, str]:
    """What the contract gives a scenario program, and nothing from a developer's AWS setup."""
    env = {k: v for k, v in clean_environ().items() if not k.startswith("AWS_")}
    return {
        **env,
        "AWS_ENDPOINT_URL": server.url,
        "AWS_ACCESS_KEY_ID": SQS_KEY,
        "AWS_SECRET_ACCESS_KEY": SQS_SECRET,
        "AWS_REGION": SQS_REGION,
        "AWS_DEFAULT_REGION": SQS_REGION,
        "AWS_CONFIG_FILE": str(home / "aws-config"),  # absent: no profile settings
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "OKURI_SCENARIO_PREFIX": client.prefix,
        "OKURI_SCENARIO": scenario,
        **client.environ(),
    }


def explain(what: str, out: str, err: str, server: ServerProcess) -> str:
    """A failure message with the program's output and the tail of the server's log."""
    return (
        f"{what}\n--- stdout ---\n{out}\n--- stderr ---\n{err}\n"
        f"--- okuri log (tail) ---\n{server.log[-LOG_TAIL_CHARS:]}"
    )


def run_or_fail(
    argv: list[str],
    what: str,
    server: ServerProcess,
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
) -> subprocess.CompletedProcess[str]:
    """Run a client program to its end against `server`; fail the test, with its output and the
    server's log, when it does not finish within `timeout_s` or exits non-zero."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:  # subprocess.run has killed it by its pid
        why = f"{what} did not finish in {timeout_s} s"
        pytest.fail(explain(why, text(exc.stdout), text(exc.stderr), server), pytrace=False)
    if done.returncode != 0:
        why = f"{what} exited {done.returncode}"
        pytest.fail(explain(why, done.stdout, done.stderr, server), pytrace=False)
    return done


def text(data: str | bytes | None) -> str:
    """Captured output as text, whatever subprocess handed back (TimeoutExpired gives bytes)."""
    if isinstance(data, bytes):
        return data.decode(errors="replace")
    return data or ""
