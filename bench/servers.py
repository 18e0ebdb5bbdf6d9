"""The processes a benchmark starts: `okuri serve` nodes and moto's server, on 127.0.0.1 only.

Why a module of its own: `python -m bench sqs` and `python -m bench cluster` both start real
servers, and they must do it the same careful way, which bench/launch.py (shared with the tests
and compat) owns: configured only by environment variables, free loopback ports retried on a
lost race, bounded waits, stopped by pid. Here: the stores the nodes share, and a `Node` that
keeps its ports for life, so the chaos test can SIGKILL it and start it again on the same
address that its clients already know.

Each node is given its SQS key pair explicitly (OKURI_ACCESS_KEY_ID, OKURI_SECRET_ACCESS_KEY),
so the bench depends on no default inside okuri. The pair is the development pair the README
documents for `okuri serve`, so `python -m bench sqs --endpoint URL` against `make serve` works
without flags.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.launch import (
    BIND_ATTEMPTS,
    LOOPBACK,
    READY_POLL_S,
    SERVE_ARGV,
    START_S,
    STOP_S,
    LaunchError,
    Process,
    answers,
    clean_environ,
    free_port,
    free_ports,
    serve_env,
    spawn,
    start_serve,
    tail,
)

__all__ = [
    "BIND_ATTEMPTS",
    "LOOPBACK",
    "READY_POLL_S",
    "START_S",
    "STOP_S",
    "BenchError",
    "Node",
    "Process",
    "StoreSpec",
    "Unavailable",
    "answers",
    "clean_environ",
    "free_port",
    "free_ports",
    "spawn",
    "tail",
]

DEV_ACCESS_KEY_ID = "okuri"  # the README's development pair, given to every node explicitly
DEV_SECRET_ACCESS_KEY = "okuri-local-secret"
REGION = "us-east-1"
MOTO_ACCESS_KEY_ID = "bench"  # moto accepts any pair; these name who is asking
MOTO_SECRET_ACCESS_KEY = "bench"
# moto's server as S3 stands in for it, with conditional writes atomic (bench/moto_s3.py)
MOTO_MODULE = "bench.moto_s3"


class BenchError(Exception):
    """The benchmark cannot run (a server did not start, a queue could not be made)."""


class Unavailable(Exception):
    """A peer or broker cannot run here (a program or package is missing, or cannot be
    installed): the bench skips it with this one line, which says what to install."""


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
        self.process = spawn(SERVE_ARGV, self.env, self.log_path)
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
    settings = {
        "OKURI_ACCESS_KEY_ID": access_key_id,
        "OKURI_SECRET_ACCESS_KEY": secret_access_key,
        **store.env(),
        **(extra or {}),
    }
    return serve_env(port, health_port, settings)


def start_node(
    index: int, store: StoreSpec, workdir: Path, extra_env: dict[str, str] | None = None
) -> Node:
    """A ready node on fresh free ports (bench/launch.py retries a lost port race)."""
    log_path = workdir / f"okuri-{index}.log"
    settings = {
        "OKURI_ACCESS_KEY_ID": DEV_ACCESS_KEY_ID,
        "OKURI_SECRET_ACCESS_KEY": DEV_SECRET_ACCESS_KEY,
        **store.env(),
        **(extra_env or {}),
    }
    try:
        served = start_serve(settings, log_path)
    except LaunchError as err:
        raise BenchError(str(err)) from err
    return Node(
        index, served.port, served.health_port, served.env, log_path, served.process, starts=1
    )


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
