"""A throwaway `okuri serve` for compat's tools (the recorder and the boto3 examples runner).

`okuri_serve(workdir, settings)` starts okuri on free 127.0.0.1 ports with its data in
`workdir/data` and its log in `workdir/okuri.log`, waits until /readyz answers (trying fresh
ports when it lost a race for one), yields its SQS URL and stops it by its pid, never by name.
The server sees none of the caller's AWS_* or OKURI_* settings, only those given.
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
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout holding `okuri/` and `compat/`
SERVER_START_S = 30.0
SERVER_STOP_S = 10.0
POLL_S = 0.05
BIND_ATTEMPTS = 3  # a probed free port can be taken before okuri binds it
LOG_TAIL_CHARS = 4000


class ServerError(RuntimeError):
    """okuri did not become ready."""


def clean_environ() -> dict[str, str]:
    """This environment minus the AWS_* and OKURI_* settings a developer's shell may have."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_"))}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to this pid only, then SIGKILL if it outlives SERVER_STOP_S."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=SERVER_STOP_S)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=SERVER_STOP_S)


@contextlib.contextmanager
def okuri_serve(workdir: Path, settings: Mapping[str, str]) -> Iterator[str]:
    """A fresh, ready `okuri serve` with `settings` (OKURI_* variables); yields its SQS URL."""
    log_path = workdir / "okuri.log"
    pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    for _ in range(BIND_ATTEMPTS):
        port, health_port = free_port(), free_port()
        env = {
            **clean_environ(),
            **settings,
            "OKURI_LISTEN": f"127.0.0.1:{port}",
            "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health_port}",
            "OKURI_DATA_DIR": str(workdir / "data"),
            "PYTHONPATH": pythonpath,
        }
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "okuri.server.cli", "serve"],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.perf_counter() + SERVER_START_S
        ready_url = f"http://127.0.0.1:{health_port}/readyz"
        while proc.poll() is None and time.perf_counter() < deadline:
            if _ready(ready_url):
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=POLL_S)
        if proc.poll() is None and _ready(ready_url):
            break
        stop(proc)
        log_text = log_path.read_text(errors="replace")
        if "cannot listen" not in log_text:  # not a lost race for the port: give up
            raise ServerError(f"okuri did not become ready:\n{log_text[-LOG_TAIL_CHARS:]}")
    else:
        raise ServerError(f"okuri could not bind free ports in {BIND_ATTEMPTS} attempts")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)
