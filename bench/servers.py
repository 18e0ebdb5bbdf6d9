"""The processes a benchmark starts: `okuri serve` nodes and moto's server, on 127.0.0.1 only.

Why a module of its own: `python -m bench sqs` and `python -m bench cluster` both start real
servers, and they must do it the same careful way. A node is configured only by environment
variables, as a container would be; it binds free loopback ports (probed, retried when one is
taken before the server binds it); every wait is bounded; every process is stopped by its own
pid, never by name. A `Node` keeps its ports for life, so the chaos test can SIGKILL it and
start it again on the same address that its clients already know.

okuri's built-in development credentials are repeated here because the bench sits below the
server in the layering and cannot import okuri.server.settings.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

START_S = 30.0  # a cold interpreter importing aiobotocore or moto can take seconds
STOP_S = 15.0  # SIGTERM, then SIGKILL after this long
READY_POLL_S = 0.05
PROBE_TIMEOUT_S = 1.0
BIND_ATTEMPTS = 3  # a probed free port can be taken before the server binds it
LOG_TAIL_CHARS = 3000

DEV_ACCESS_KEY_ID = "okuri"
DEV_SECRET_ACCESS_KEY = "okuri-local-secret"
REGION = "us-east-1"
MOTO_ACCESS_KEY_ID = "bench"  # moto accepts any pair; these name who is asking
MOTO_SECRET_ACCESS_KEY = "bench"
LOOPBACK = "127.0.0.1"
# moto's server as S3 stands in for it, with conditional writes atomic (bench/moto_s3.py)
MOTO_MODULE = "bench.moto_s3"


class BenchError(Exception):
    """The benchmark cannot run (a server did not start, a queue could not be made)."""


class Unavailable(Exception):
    """A peer or broker cannot run here (a program or package is missing, or cannot be
    installed): the bench skips it with this one line, which says what to install."""


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports: each socket stays bound until all are chosen, since
    the kernel may hand a port just released straight back to the next bind."""
    with contextlib.ExitStack() as stack:
        sockets = [
            stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            for _ in range(count)
        ]
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


def answers(url: str, status: int = 200) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as reply:
            return bool(reply.status == status)
    except (urllib.error.URLError, OSError):
        return False


def tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


def clean_environ() -> dict[str, str]:
    """This process's environment minus any OKURI_* the caller's shell may have set."""
    return {k: v for k, v in os.environ.items() if not k.startswith("OKURI_")}


@dataclass
class Process:
    """A process this benchmark started: stopped by its own pid only."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, url: str, timeout_s: float | None = None) -> bool:
        """Poll `url` until it answers 200 (at most START_S unless told); False if it never did."""
        deadline = time.monotonic() + (START_S if timeout_s is None else timeout_s)
        while time.monotonic() < deadline and self.running():
            if answers(url):
                return True
            time.sleep(READY_POLL_S)
        return False

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_S; the exit code (None if it would not die)."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL this pid, as a crash would; reaped so the pid cannot be reused under us."""
        if self.running():
            os.kill(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=STOP_S)


def spawn(argv: list[str], env: dict[str, str], log_path: Path) -> Process:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    return Process(proc, log_path)


# --- the store the nodes share ----------------------------------------------------------------


@dataclass(frozen=True)
class S3Bucket:
    """A bucket on an S3-compatible endpoint, and the pair to sign with."""

    endpoint: str
    bucket: str
    access_key_id: str = MOTO_ACCESS_KEY_ID
    secret_access_key: str = MOTO_SECRET_ACCESS_KEY
    region: str = REGION


@dataclass(frozen=True)
class StoreSpec:
    """Where every node of one run keeps its state: a directory, or a bucket."""

    data_dir: Path | None = None
    s3: S3Bucket | None = None

    @property
    def kind(self) -> str:
        return "s3" if self.s3 is not None else "local"

    def describe(self) -> str:
        if self.s3 is not None:
            return f"S3 bucket {self.s3.bucket} at {self.s3.endpoint}"
        return "local directory (fresh tmp)"

    def env(self) -> dict[str, str]:
        if self.s3 is not None:
            return {
                "OKURI_S3_ENDPOINT": self.s3.endpoint,
                "OKURI_S3_BUCKET": self.s3.bucket,
                "OKURI_S3_ACCESS_KEY_ID": self.s3.access_key_id,
                "OKURI_S3_SECRET_ACCESS_KEY": self.s3.secret_access_key,
                "OKURI_S3_REGION": self.s3.region,
            }
        if self.data_dir is None:
            raise BenchError("a store needs a data directory or a bucket")
        return {"OKURI_DATA_DIR": str(self.data_dir)}


def botocore_client(
    service: str,
    endpoint: str,
    key: str,
    secret: str,
    region: str = REGION,
    connect_timeout_s: float = 5,
    read_timeout_s: float = 30,
    attempts: int = 3,
    connections_max: int = 10,
) -> Any:
    """A blocking botocore client of `service` at `endpoint` (imported only when asked for:
    the bench's own clients do without botocore)."""
    import botocore.session
    from botocore.config import Config

    return botocore.session.get_session().create_client(
        service,
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=Config(
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            retries={"max_attempts": attempts},
            max_pool_connections=connections_max,
        ),
    )


def create_bucket(endpoint: str, name: str, key: str, secret: str, region: str = REGION) -> None:
    """Create `name` on an S3-compatible endpoint (botocore, synchronously: setup only)."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = botocore_client("s3", endpoint, key, secret, region)
    try:
        client.create_bucket(Bucket=name)
    except (BotoCoreError, ClientError) as err:
        raise BenchError(f"cannot create bucket {name!r} at {endpoint}: {err}") from err
    finally:
        client.close()


def bucket_store(endpoint: str, name: str) -> StoreSpec:
    """A fresh bucket `name` on an S3-compatible endpoint (moto's pair), as the nodes' store."""
    s3 = S3Bucket(endpoint, name)
    create_bucket(s3.endpoint, s3.bucket, s3.access_key_id, s3.secret_access_key, s3.region)
    return StoreSpec(s3=s3)


# --- okuri serve -------------------------------------------------------------------------------


@dataclass
class Node:
    """One `okuri serve` on fixed loopback ports; it can be killed and started again on them."""

    index: int
    port: int
    health_port: int
    env: dict[str, str]
    log_path: Path
    process: Process | None = None
    starts: int = 0
    exit_codes: list[int | None] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def health_url(self) -> str:
        return f"http://{LOOPBACK}:{self.health_port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def spawn(self) -> None:
        argv = [sys.executable, "-m", "okuri.server.cli", "serve"]
        self.process = spawn(argv, self.env, self.log_path)
        self.starts += 1

    def ready(self) -> bool:
        return (
            self.process is not None
            and self.process.running()
            and answers(self.health_url + "/readyz")
        )

    def start(self, timeout_s: float | None = None) -> bool:
        """Spawn and wait until /readyz answers 200; False if it exited or never did."""
        self.spawn()
        assert self.process is not None
        return self.process.wait_ready(self.health_url + "/readyz", timeout_s)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.exit_codes.append(self.process.proc.returncode)

    def stop(self) -> int | None:
        if self.process is None:
            return None
        code = self.process.stop()
        self.exit_codes.append(code)
        return code


def node_env(
    port: int,
    health_port: int,
    store: StoreSpec,
    access_key_id: str = DEV_ACCESS_KEY_ID,
    secret_access_key: str = DEV_SECRET_ACCESS_KEY,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    return {
        **clean_environ(),
        "OKURI_LISTEN": f"{LOOPBACK}:{port}",
        "OKURI_HEALTH_LISTEN": f"{LOOPBACK}:{health_port}",
        "OKURI_ACCESS_KEY_ID": access_key_id,
        "OKURI_SECRET_ACCESS_KEY": secret_access_key,
        **store.env(),
        **(extra or {}),
    }


def start_node(
    index: int, store: StoreSpec, workdir: Path, extra_env: dict[str, str] | None = None
) -> Node:
    """A ready node on fresh free ports (retried when a probed port was taken meanwhile)."""
    log_path = workdir / f"okuri-{index}.log"
    for _ in range(BIND_ATTEMPTS):
        port, health = free_ports(2)
        node = Node(index, port, health, node_env(port, health, store, extra=extra_env), log_path)
        if node.start():
            return node
        node.stop()
    raise BenchError(f"okuri serve did not become ready within {START_S:g} s:\n{tail(log_path)}")


@contextlib.contextmanager
def cluster(
    count: int, store: StoreSpec, workdir: Path, extra_env: dict[str, str] | None = None
) -> Iterator[list[Node]]:
    """`count` ready nodes on one store, each stopped by its pid on the way out."""
    nodes: list[Node] = []
    try:
        for index in range(count):
            nodes.append(start_node(index, store, workdir, extra_env))
        yield nodes
    finally:
        for node in nodes:
            node.stop()


# --- moto -----------------------------------------------------------------------------------


@dataclass
class Moto:
    endpoint: str
    process: Process


@contextlib.contextmanager
def moto_server(workdir: Path, name: str = "moto") -> Iterator[Moto]:
    """moto's server (SQS, S3 and the rest) on a free loopback port, stopped by its pid."""
    log_path = workdir / f"{name}.log"
    env = {
        **clean_environ(),
        "AWS_ACCESS_KEY_ID": MOTO_ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": MOTO_SECRET_ACCESS_KEY,
        "AWS_DEFAULT_REGION": REGION,
    }
    for _ in range(BIND_ATTEMPTS):
        port = free_port()
        argv = [sys.executable, "-m", MOTO_MODULE, "-H", LOOPBACK, "-p", str(port)]
        process = spawn(argv, env, log_path)
        endpoint = f"http://{LOOPBACK}:{port}"
        if process.wait_ready(endpoint + "/moto-api/"):
            break
        process.stop()
    else:
        raise BenchError(
            f"moto server did not become ready within {START_S:g} s:\n{tail(log_path)}"
        )
    try:
        yield Moto(endpoint, process)
    finally:
        process.stop()
