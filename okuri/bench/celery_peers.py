"""The peer brokers of `okuri bench celery`: Debian's redis-server and rabbitmq-server on loopback.

Why a module of its own: each peer is a real server started here, on a free 127.0.0.1 port, with
every file it writes in the run's temporary directory, and stopped by the pid started for it
(never by name). A binary that is not installed is not an error: `start` returns None and the
bench prints what to install (`missing`), measuring the brokers it has.

Redis runs with its defaults (RDB snapshots, no append-only file: a task acknowledged by Redis
is in memory, not on disk). RabbitMQ runs its `rabbitmq-server` script with RUNNING_UNDER_SYSTEMD
set, so the script execs the Erlang VM in place and the pid started is the broker's own; an epmd
of its own, on a free loopback port, is started first (the VM would otherwise daemonize one that
no pid here names). Both run in sessions of their own; stopping SIGTERMs the pid, then SIGKILLs
the process group it leads (its erl_child_setup and the like) by that pid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from okuri.bench.servers import LOOPBACK, BenchError, clean_environ, free_port, tail

REDIS_SERVER = "redis-server"
RABBITMQ_SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server"
EPMD = "epmd"
REDIS_START_S = 15.0
RABBITMQ_START_S = 90.0  # the Erlang VM boots its applications in 5-20 s on a busy 2-core box
STOP_S = 20.0
POLL_S = 0.1
INSTALL_HINT = "apt-get install -y redis-server rabbitmq-server"


@dataclass
class Peer:
    """A broker process started here: its Celery URL, stopped by its own pid."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    helpers: list[subprocess.Popen[bytes]]

    def stop(self) -> None:
        for proc in [self.proc, *self.helpers]:
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_S)
    # the group it leads (its session, started here): children the VM spawned, if any are left
    # (Linux does not reuse a pid while a process group of that id still has members)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_S)


def _spawn(argv: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _accepts(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((LOOPBACK, port), timeout=1.0):
        return True
    return False


def missing() -> list[str]:
    """Which peer binaries are absent (by name), for the bench's message."""
    gone = []
    if shutil.which(REDIS_SERVER) is None:
        gone.append("redis-server")
    if not os.access(RABBITMQ_SERVER, os.X_OK) or shutil.which(EPMD) is None:
        gone.append("rabbitmq-server")
    return gone


def _redis_ready(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def start_redis(workdir: Path) -> Peer:
    binary = shutil.which(REDIS_SERVER)
    if binary is None:
        raise BenchError(f"redis-server is not installed ({INSTALL_HINT})")
    home = workdir / "redis"
    home.mkdir()
    log_path = workdir / "redis.log"
    port = free_port()
    argv = [binary, "--bind", LOOPBACK, "--port", str(port), "--dir", str(home),
            "--daemonize", "no", "--protected-mode", "yes", "--unixsocket", ""]  # fmt: skip
    proc = _spawn(argv, clean_environ(), log_path)
    peer = Peer("redis", f"redis://{LOOPBACK}:{port}/0", proc, log_path, [])
    deadline = time.monotonic() + REDIS_START_S
    while time.monotonic() < deadline and proc.poll() is None:
        if _redis_ready(port):
            return peer
        time.sleep(POLL_S)
    peer.stop()
    raise BenchError(f"redis-server did not answer within {REDIS_START_S:g} s:\n{tail(log_path)}")


def start_rabbitmq(workdir: Path) -> Peer:
    if not os.access(RABBITMQ_SERVER, os.X_OK) or shutil.which(EPMD) is None:
        raise BenchError(f"rabbitmq-server is not installed ({INSTALL_HINT})")
    home = workdir / "rabbitmq"
    home.mkdir()
    (home / "enabled_plugins").write_text("[].\n")
    port, dist_port, epmd_port = free_port(), free_port(), free_port()
    env = {
        **clean_environ(),
        "HOME": str(home),  # the Erlang cookie is written here
        "ERL_EPMD_ADDRESS": LOOPBACK,
        "ERL_EPMD_PORT": str(epmd_port),
        "RUNNING_UNDER_SYSTEMD": "true",  # exec the VM in place: the pid started is the broker
        "RABBITMQ_NODENAME": f"okuri-bench-{os.getpid()}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": LOOPBACK,
        "RABBITMQ_NODE_PORT": str(port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(home / "mnesia"),
        "RABBITMQ_LOG_BASE": str(home / "log"),
        "RABBITMQ_LOGS": str(home / "log" / "rabbit.log"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(home / "enabled_plugins"),
        "RABBITMQ_CONFIG_FILE": str(home / "rabbitmq"),  # absent: the defaults
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(home / "advanced.config"),
        "RABBITMQ_CONF_ENV_FILE": str(home / "rabbitmq-env.conf"),
        "RABBITMQ_PID_FILE": str(home / "rabbit.pid"),
    }
    epmd_binary = shutil.which(EPMD) or EPMD
    epmd_argv = [epmd_binary, "-address", LOOPBACK, "-port", str(epmd_port)]
    epmd = _spawn(epmd_argv, env, workdir / "epmd.log")
    log_path = workdir / "rabbitmq.log"
    proc = _spawn([RABBITMQ_SERVER], env, log_path)
    peer = Peer("rabbitmq", f"amqp://guest:guest@{LOOPBACK}:{port}//", proc, log_path, [epmd])
    deadline = time.monotonic() + RABBITMQ_START_S
    while time.monotonic() < deadline and proc.poll() is None:
        if _accepts(port):
            return peer
        time.sleep(POLL_S)
    peer.stop()
    raise BenchError(
        f"rabbitmq-server did not accept on {port} within {RABBITMQ_START_S:g} s:\n"
        f"{tail(log_path)}{tail(home / 'log' / 'rabbit.log')}"
    )


@contextlib.contextmanager
def running(peer: Peer) -> Iterator[Peer]:
    try:
        yield peer
    finally:
        peer.stop()
