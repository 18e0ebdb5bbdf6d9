"""The brokers `python -m bench celery` measures, each started for its turn and stopped by pid.

- `okuri`: `okuri serve` on a fresh local directory (bench.servers), through okuri's own
  kombu transport, `okuri://` (integrations/kombu), with an admin bearer key (OKURI_ADMIN_KEY);
- `okuri-unconfirmed`: the same with the transport option `confirm_publish` off: a publish
  returns at once and a thread sends publishes in batches (as RabbitMQ without confirms);
- `okuri-files`: `okuri` on a directory holding a file per object (OKURI_LOCAL_STORE=files),
  the layout before the journal, to set the two side by side (not run unless named);
- `sqs`: another such `okuri serve`, through kombu's stock SQS transport, `sqs://`;
- `ministack`: ministack (bench.ministack: the fastest in-memory SQS emulator installable
  here, in a virtualenv of its own, not durable) through the same `sqs://`, the peer `sqs` is
  measured against;
- `moto`: moto's server (another in-memory SQS emulator) through the same `sqs://`;
- `redis`: Debian's `redis-server` (package redis-server) with its default persistence (RDB
  snapshots, no append-only file), in a temporary directory;
- `redis-always`: the same with `appendonly yes` and `appendfsync always`: each write is in
  the append-only file and fsynced before Redis answers, as durable as a confirmed send;
- `rabbitmq`: Debian's RabbitMQ (package rabbitmq-server), its Erlang VM run directly with
  RABBITMQ_* variables: a node name of its own, AMQP on a free port, Erlang distribution on
  another, mnesia and logs in a temporary directory, no plugins, and an `epmd` of its own on a
  third port (ERL_EPMD_PORT), so that nothing of the machine's is used or left behind;
- `rabbitmq-confirm`: the same broker, the producers with publisher confirms (py-amqp's
  transport option `confirm_publish`): `apply_async` returns once the broker has written the
  persistent message to disk and confirmed it.

Everything binds 127.0.0.1. A broker whose programs or Python client are missing is skipped
with a message saying what to install (`Unavailable`), never a crash.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.ministack import ACCESS_KEY_ID as MINISTACK_ACCESS_KEY_ID
from bench.ministack import SECRET_ACCESS_KEY as MINISTACK_SECRET_ACCESS_KEY
from bench.ministack import ministack_server
from bench.servers import (
    BIND_ATTEMPTS,
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    LOOPBACK,
    MOTO_ACCESS_KEY_ID,
    MOTO_SECRET_ACCESS_KEY,
    READY_POLL_S,
    REGION,
    BenchError,
    Process,
    StoreSpec,
    Unavailable,
    clean_environ,
    free_port,
    free_ports,
    moto_server,
    spawn,
    start_node,
    tail,
)

BROKERS = (
    "okuri",
    "okuri-files",
    "okuri-unconfirmed",
    "sqs",
    "ministack",
    "moto",
    "redis",
    "redis-always",
    "rabbitmq",
    "rabbitmq-confirm",
)
DEFAULT_BROKERS = tuple(b for b in BROKERS if b != "okuri-files")
OKURI_NATIVE = ("okuri", "okuri-files", "okuri-unconfirmed")
REDIS_START_S = 15.0
RABBITMQ_START_S = 90.0  # an Erlang VM booting RabbitMQ on a busy machine: ten seconds or more
EPMD_START_S = 10.0
PROBE_TIMEOUT_S = 1.0
OKURI_LEASE_S = 60
OKURI_WAIT_S = 10  # okuri://'s long poll, as docs/celery.md section 10 configures it
SQS_VISIBILITY_S = 60
RABBITMQ_ERL_ARGS = "-kernel inet_dist_use_interface {127,0,0,1}"


@dataclass
class Broker:
    """A running broker: how Celery reaches it, and what the report says about it."""

    name: str
    url: str
    transport_options: dict[str, Any]
    described: str
    needs_okuri_kombu: bool = False
    pids: list[int] = field(default_factory=list)
    health_url: str = ""  # okuri's health listener: its /metrics counts store requests


@dataclass(frozen=True)
class SqsSettings:
    wait_time_seconds: int
    polling_interval: float


def _needs_module(module: str, broker: str, install: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise Unavailable(f"{broker}: the Python package {module!r} is missing ({install})")


def _program(name: str, broker: str, package: str, *candidates: str) -> str:
    for path in (shutil.which(name), *candidates):
        if path and os.access(path, os.X_OK):
            return path
    raise Unavailable(f"{broker}: {name} not found (install it: apt-get install {package})")


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def _redis_pongs(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=PROBE_TIMEOUT_S) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _wait_for(process: Process, ready: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and process.running():
        if ready():
            return True
        time.sleep(READY_POLL_S)
    return False


# --- okuri -------------------------------------------------------------------------------------


@contextlib.contextmanager
def okuri_broker(name: str, workdir: Path, sqs: SqsSettings) -> Iterator[Broker]:
    """`okuri serve` on a fresh directory; `okuri://` (names "okuri", "okuri-unconfirmed") or
    `sqs://` ("sqs")."""
    if name in OKURI_NATIVE:
        _needs_module("okuri_kombu", name, "pip install ./integrations/kombu from okuri's checkout")
    else:
        _needs_sqs_transport(name)
    key = secrets.token_urlsafe(24)
    data_dir = workdir / f"okuri-{name}-data"
    env = {"OKURI_ADMIN_KEY": key}
    if name == "okuri-files":
        env["OKURI_LOCAL_STORE"] = "files"
    node = start_node(0, StoreSpec(data_dir=data_dir), workdir, env)
    try:
        layout = ", a file per object" if name == "okuri-files" else ""
        store = f"local directory{layout} (fresh tmp), durable: a send returns once committed"
        if name in OKURI_NATIVE:
            confirm = name != "okuri-unconfirmed"
            yield Broker(
                name,
                f"okuri://:{key}@{LOOPBACK}:{node.port}",
                {"lease_s": OKURI_LEASE_S, "wait_time_s": OKURI_WAIT_S, "confirm_publish": confirm},
                f"okuri serve via okuri:// (okuri_kombu), {store}"
                if confirm
                else "okuri serve via okuri:// (okuri_kombu) with confirm_publish off: a publish "
                "returns at once and is committed a few ms later",
                needs_okuri_kombu=True,
                pids=[node.pid or 0],
                health_url=node.health_url,
            )
        else:
            yield Broker(
                name,
                f"sqs://{DEV_ACCESS_KEY_ID}:{DEV_SECRET_ACCESS_KEY}@{LOOPBACK}:{node.port}",
                _sqs_options(sqs),
                f"okuri serve via kombu's sqs:// ({_sqs_settings(sqs)}), {store}",
                pids=[node.pid or 0],
                health_url=node.health_url,
            )
    finally:
        node.stop()


def _sqs_options(sqs: SqsSettings) -> dict[str, Any]:
    return {
        "region": REGION,
        "is_secure": False,
        "visibility_timeout": SQS_VISIBILITY_S,
        "wait_time_seconds": sqs.wait_time_seconds,
        "polling_interval": sqs.polling_interval,
    }


def _sqs_settings(sqs: SqsSettings) -> str:
    return f"wait_time_seconds {sqs.wait_time_seconds}, polling_interval {sqs.polling_interval:g}"


@contextlib.contextmanager
def moto_broker(workdir: Path, sqs: SqsSettings) -> Iterator[Broker]:
    """moto's server, in memory, through kombu's sqs://: the emulator `sqs` is compared with."""
    _needs_module("moto", "moto", "pip install 'moto[server]'")
    _needs_sqs_transport("moto")
    with moto_server(workdir, "moto-celery") as moto:
        keys = (MOTO_ACCESS_KEY_ID, MOTO_SECRET_ACCESS_KEY)
        yield _emulator_broker("moto", "moto server", moto.endpoint, keys, moto.process, sqs)


@contextlib.contextmanager
def ministack_broker(workdir: Path, sqs: SqsSettings) -> Iterator[Broker]:
    """ministack, in memory, through kombu's sqs://: the fastest emulator `sqs` is compared with
    (installed into its own virtualenv on first use; Unavailable if it cannot be)."""
    _needs_sqs_transport("ministack")
    with ministack_server(workdir, "ministack-celery") as server:
        keys = (MINISTACK_ACCESS_KEY_ID, MINISTACK_SECRET_ACCESS_KEY)
        yield _emulator_broker("ministack", "ministack", server.endpoint, keys, server.process, sqs)


def _needs_sqs_transport(broker: str) -> None:
    _needs_module("boto3", broker, "pip install 'celery[sqs]'")
    _needs_module("pycurl", broker, "pip install 'celery[sqs]'")


def _emulator_broker(
    name: str, what: str, endpoint: str, keys: tuple[str, str], process: Process, sqs: SqsSettings
) -> Broker:
    """An in-memory SQS emulator at `endpoint` as a broker through kombu's sqs://."""
    port = endpoint.rsplit(":", 1)[1]
    return Broker(
        name,
        f"sqs://{keys[0]}:{keys[1]}@{LOOPBACK}:{port}",
        _sqs_options(sqs),
        f"{what} via kombu's sqs:// ({_sqs_settings(sqs)}), in memory: not durable",
        pids=[process.pid or 0],
    )


# --- redis -------------------------------------------------------------------------------------


@contextlib.contextmanager
def redis_broker(workdir: Path, always: bool = False) -> Iterator[Broker]:
    """`redis-server`; `always`: every write fsynced to its append-only file before it
    answers (`redis-always`)."""
    name = "redis-always" if always else "redis"
    _needs_module("redis", name, "pip install redis")
    program = _program("redis-server", name, "redis-server", "/usr/bin/redis-server")
    home = workdir / "redis"
    home.mkdir()
    log_path = workdir / "redis.log"
    durable = ["--appendonly", "yes", "--appendfsync", "always"] if always else []
    for _ in range(BIND_ATTEMPTS):
        port = free_port()
        argv = [program, "--port", str(port), "--bind", LOOPBACK, "--dir", str(home),
                "--daemonize", "no", "--protected-mode", "yes", *durable]  # fmt: skip
        process = spawn(argv, clean_environ(), log_path)
        if _wait_for(process, lambda p=port: _redis_pongs(p), REDIS_START_S):
            break
        process.stop()
    else:
        raise BenchError(f"redis-server did not answer PING:\n{tail(log_path)}")
    try:
        yield Broker(
            name,
            f"redis://{LOOPBACK}:{port}/0",
            {},
            "redis-server, appendonly yes, appendfsync always: a send returns once fsynced"
            if always
            else "redis-server, its default persistence (RDB snapshots, no append-only file): "
            "a send returns before it is on disk",
            pids=[process.pid],
        )
    finally:
        process.stop()


# --- rabbitmq ----------------------------------------------------------------------------------


@contextlib.contextmanager
def _epmd(program: str, workdir: Path) -> Iterator[int]:
    """An epmd of this run's own, in the foreground on a free loopback port; its port."""
    log_path = workdir / "epmd.log"
    for _ in range(BIND_ATTEMPTS):
        port = free_port()
        process = spawn([program, "-port", str(port), "-address", LOOPBACK], {}, log_path)
        if _wait_for(process, lambda p=port: _port_answers(p), EPMD_START_S):
            break
        process.stop()
    else:
        raise BenchError(f"epmd did not start:\n{tail(log_path)}")
    try:
        yield port
    finally:
        process.stop()


def _rabbitmq_env(home: Path, port: int, dist_port: int, epmd_port: int) -> dict[str, str]:
    (home / "enabled_plugins").write_text("[].\n")
    (home / "rabbitmq-env.conf").write_text("")
    return {
        **clean_environ(),
        "HOME": str(home),  # the Erlang cookie goes here
        "ERL_EPMD_PORT": str(epmd_port),
        # With input allowed the start script execs the VM itself: the pid started is the
        # broker's, and SIGTERM stops it cleanly. Its stdin is a pipe held open until then.
        "RABBITMQ_ALLOW_INPUT": "1",
        "RABBITMQ_NODENAME": f"okuri-bench-{os.getpid()}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": LOOPBACK,
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(home / "mnesia"),
        "RABBITMQ_LOG_BASE": str(home / "log"),
        "RABBITMQ_CONF_ENV_FILE": str(home / "rabbitmq-env.conf"),
        "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq"),  # absent: the defaults
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(home / "advanced.config"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": RABBITMQ_ERL_ARGS,
    }


@contextlib.contextmanager
def rabbitmq_broker(workdir: Path, confirm: bool = False) -> Iterator[Broker]:
    """RabbitMQ; `confirm`: producers wait for publisher confirms (`rabbitmq-confirm`)."""
    _needs_module("amqp", "rabbitmq", "pip install amqp")
    server = _program(
        "rabbitmq-server", "rabbitmq", "rabbitmq-server", "/usr/lib/rabbitmq/bin/rabbitmq-server"
    )
    if server.startswith("/usr/sbin/"):  # Debian's wrapper switches to the rabbitmq user
        packaged = "/usr/lib/rabbitmq/bin/rabbitmq-server"
        server = packaged if os.access(packaged, os.X_OK) else server
    epmd = _program("epmd", "rabbitmq", "rabbitmq-server (it brings erlang-base)")
    home = workdir / "rabbitmq"
    home.mkdir()
    log_path = workdir / "rabbitmq.log"
    with _epmd(epmd, workdir) as epmd_port:
        port, dist_port = free_ports(2)
        env = _rabbitmq_env(home, port, dist_port, epmd_port)
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [server], env=env, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT
            )
        process = Process(proc, log_path)
        try:
            if not _wait_for(process, lambda: _port_answers(port), RABBITMQ_START_S):
                raise BenchError(
                    f"rabbitmq-server did not listen within {RABBITMQ_START_S:g} s:\n"
                    f"{tail(log_path)}"
                )
            yield Broker(
                "rabbitmq-confirm" if confirm else "rabbitmq",
                f"pyamqp://guest:guest@{LOOPBACK}:{port}//",
                {"confirm_publish": True} if confirm else {},
                "rabbitmq-server, Celery's durable queues and persistent messages, publisher "
                "confirms: a send returns once the broker has it on disk"
                if confirm
                else "rabbitmq-server, Celery's durable queues and persistent messages, no "
                "publisher confirms: a send returns before the broker has it",
                pids=[process.pid],
            )
        finally:
            process.stop()
            if proc.stdin is not None:
                proc.stdin.close()


@contextlib.contextmanager
def broker(name: str, workdir: Path, sqs: SqsSettings) -> Iterator[Broker]:
    """Broker `name` started in `workdir`; Unavailable if it cannot run here."""
    if name in (*OKURI_NATIVE, "sqs"):
        with okuri_broker(name, workdir, sqs) as b:
            yield b
    elif name == "ministack":
        with ministack_broker(workdir, sqs) as b:
            yield b
    elif name == "moto":
        with moto_broker(workdir, sqs) as b:
            yield b
    elif name in ("redis", "redis-always"):
        with redis_broker(workdir, always=name == "redis-always") as b:
            yield b
    elif name in ("rabbitmq", "rabbitmq-confirm"):
        with rabbitmq_broker(workdir, confirm=name == "rabbitmq-confirm") as b:
            yield b
    else:
        raise BenchError(f"unknown broker {name!r}; known: {', '.join(BROKERS)}")
