"""Starting and stopping real `okuri serve` processes: the one launcher of the bench, the tests
and compat's tools.

Why one module: they all need the same careful start, and three copies had drifted (one retried
on any failure, one never, one only on a lost port). Here a server is configured only by
environment variables, as a container would be; it gets distinct free loopback ports; a port
probed free but taken before the server bound it (its log says `cannot listen`) is retried on
fresh ports, any other failure is reported at once with the log's tail; every wait is bounded;
and a process is stopped by its own pid (SIGTERM, then SIGKILL), never by name.

It sits in `bench/` because the bench is the heaviest user and both tests/ and compat/ may
import a tool beside okuri, while nothing in okuri may import them. It imports nothing of okuri:
the server is a program it runs, found as `python -m okuri.server.cli`.
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[1]  # the checkout holding okuri/, bench/ and compat/
SERVE_ARGV = (sys.executable, "-m", "okuri.server.cli", "serve")
LOST_PORT = "cannot listen"  # what okuri serve logs when it cannot bind its address

START_S = 30.0  # a cold interpreter importing aiobotocore or moto can take seconds
STOP_S = 15.0  # SIGTERM, then SIGKILL after this long
READY_POLL_S = 0.05
PROBE_TIMEOUT_S = 1.0
BIND_ATTEMPTS = 3  # a probed free port can be taken before the server binds it
LOG_TAIL_CHARS = 3000


class LaunchError(Exception):
    """A server did not become ready (its log's tail is in the message)."""


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


def clean_environ(drop: Iterable[str] = ("OKURI_",), checkout: bool = True) -> dict[str, str]:
    """This process's environment minus the variables starting with `drop` (a developer's shell
    may set OKURI_* or AWS_*); with `checkout`, the checkout first on PYTHONPATH, so that
    `python -m bench.X` and `python -m okuri...` run this checkout's code from any directory."""
    prefixes = tuple(drop)
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    if not checkout:
        return env
    paths = [str(ROOT), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def answers(url: str, status: int = 200) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as reply:
            return bool(reply.status == status)
    except (urllib.error.URLError, OSError):
        return False


def tail(path: Path, start: int = 0, chars: int = LOG_TAIL_CHARS) -> str:
    """The last `chars` of a log from byte `start` on ("" if it cannot be read)."""
    try:
        with open(path, "rb") as log:
            log.seek(start)
            return log.read().decode(errors="replace")[-chars:]
    except OSError:
        return ""


def terminate(proc: subprocess.Popen[bytes], stop_s: float = STOP_S) -> bool:
    """SIGTERM this pid, then SIGKILL if it outlives `stop_s`; True if SIGTERM was enough."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=stop_s)
        except subprocess.TimeoutExpired:
            kill(proc, stop_s)
            return False
    return True


def kill(proc: subprocess.Popen[bytes], wait_s: float = STOP_S) -> None:
    """SIGKILL this pid, as a crash would; reaped so the pid cannot be reused under us."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=wait_s)


@dataclass
class Process:
    """A process we started: stopped by its own pid only."""

    proc: subprocess.Popen[bytes]
    log_path: Path
    stop_s: float = STOP_S

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, url: str, timeout_s: float | None = None) -> bool:
        """Poll `url` until it answers 200 (at most START_S unless told); False if it never did
        or the process exited."""
        deadline = time.monotonic() + (START_S if timeout_s is None else timeout_s)
        while time.monotonic() < deadline and self.running():
            if answers(url):
                return True
            time.sleep(READY_POLL_S)
        return False

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after stop_s; the exit code (None if it would not die)."""
        terminate(self.proc, self.stop_s)
        return self.proc.returncode

    def kill(self) -> None:
        kill(self.proc, self.stop_s)


def spawn(
    argv: Iterable[str],
    env: Mapping[str, str],
    log_path: Path,
    cwd: Path | None = None,
    stop_s: float = STOP_S,
) -> Process:
    """Start `argv` with exactly `env`, its output appended to `log_path`."""
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    return Process(proc, log_path, stop_s)


@dataclass
class Served:
    """A ready `okuri serve`: its process, its two ports and the environment it was given."""

    process: Process
    port: int
    health_port: int
    env: dict[str, str]

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def health_url(self) -> str:
        return f"http://{LOOPBACK}:{self.health_port}"


def serve_env(
    port: int, health_port: int, settings: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """What `okuri serve` on these ports sees: `base` (clean_environ() unless given), the
    caller's OKURI_* `settings`, and the two listen addresses."""
    return {
        **(clean_environ() if base is None else base),
        **settings,
        "OKURI_LISTEN": f"{LOOPBACK}:{port}",
        "OKURI_HEALTH_LISTEN": f"{LOOPBACK}:{health_port}",
    }


def start_serve(
    settings: Mapping[str, str],
    log_path: Path,
    *,
    base: Mapping[str, str] | None = None,
    ready_path: str = "/readyz",
    timeout_s: float | None = None,
    stop_s: float = STOP_S,
    cwd: Path | None = None,
) -> Served:
    """`okuri serve` with `settings` on fresh free ports, once `ready_path` of its health
    listener answers 200; fresh ports again (up to BIND_ATTEMPTS) when it lost one to a race.
    Raises LaunchError with the log's tail otherwise. `timeout_s`: START_S unless given."""
    timeout_s = START_S if timeout_s is None else timeout_s
    why = f"okuri serve could not bind free ports in {BIND_ATTEMPTS} attempts"
    for _ in range(BIND_ATTEMPTS):
        port, health_port = free_ports(2)
        env = serve_env(port, health_port, settings, base)
        start = log_path.stat().st_size if log_path.exists() else 0
        process = spawn(SERVE_ARGV, env, log_path, cwd, stop_s)
        ready_url = f"http://{LOOPBACK}:{health_port}{ready_path}"
        if process.wait_ready(ready_url, timeout_s):
            return Served(process, port, health_port, env)
        process.stop()
        log = tail(log_path, start)
        if LOST_PORT not in log:
            why = f"okuri serve did not become ready within {timeout_s:g} s:\n{log}"
            break
    raise LaunchError(why)
