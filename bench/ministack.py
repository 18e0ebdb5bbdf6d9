"""ministack, an in-memory AWS emulator and the fastest SQS emulator installable here, as a
peer for the benches (`python -m bench sqs --peer ministack`, `python -m bench celery` broker
`ministack`).

Why a virtualenv of its own: ministack pins a botocore that okuri's does not allow, so it cannot
share okuri's environment. It is installed on first use (`python -m venv`, then pip, each with a
bounded time) into a cache directory beside the checkout, `.bench-peers/ministack-VERSION`
(git-ignored), marked complete by a stamp file and reused after that; a lock file keeps two
benches (or test workers) from installing at once. When it cannot be installed (no package
registry, pip fails) the caller skips the peer with one line saying what to install
(`Unavailable`), never a traceback.

Its server is started as moto's is (bench.servers): configured by environment variables
only, on a free 127.0.0.1 port (retried when taken), ready when its health endpoint answers,
within a bound, and stopped by its pid. Its scratch files (pid file, state) go to the run's
working directory, not the machine's /tmp.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.servers import (
    BIND_ATTEMPTS,
    LOOPBACK,
    READY_POLL_S,
    START_S,
    BenchError,
    Process,
    Unavailable,
    clean_environ,
    free_port,
    spawn,
    tail,
)

VERSION = "1.5.33"  # measured here; a newer one may pin yet another botocore
PACKAGE = f"ministack=={VERSION}"
VENV_S = 120.0  # `python -m venv` bootstraps pip: seconds, more on a loaded machine
PIP_S = 300.0  # the whole install; a reachable registry takes about ten seconds
PIP_READ_TIMEOUT_S = 15  # per connection attempt: an unreachable registry fails fast
PIP_RETRIES = 1
LOCK_WAIT_S = VENV_S + PIP_S + 30.0  # another process's install, bounded as ours is
ACCESS_KEY_ID = "bench"  # ministack accepts any pair; these name who is asking
SECRET_ACCESS_KEY = "bench"
HEALTH_PATH = "/_ministack/health"
# Variables that would point its interpreter at okuri's packages (and okuri's botocore).
FOREIGN_ENV = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")


def cache_root() -> Path:
    """`.bench-peers` in okuri's checkout; in the user's cache when okuri is installed."""
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file():
        return checkout / ".bench-peers"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "okuri" / "bench-peers"


def _environ() -> dict[str, str]:
    env = clean_environ()
    for name in FOREIGN_ENV:
        env.pop(name, None)
    return env


@dataclass(frozen=True)
class Install:
    """Where ministack lives once installed: its virtualenv and the stamp that says it is whole."""

    root: Path

    @property
    def venv(self) -> Path:
        return self.root / f"ministack-{VERSION}"

    @property
    def program(self) -> Path:
        return self.venv / "bin" / "ministack"

    @property
    def stamp(self) -> Path:
        return self.venv / ".installed"

    @property
    def log_path(self) -> Path:
        return self.root / f"ministack-{VERSION}.install.log"

    def ready(self) -> bool:
        return self.program.is_file() and self.stamp.is_file()


def _step(argv: list[str], log_path: Path, timeout_s: float, what: str) -> str | None:
    """Run one install step with its output in the log; why it failed, or None."""
    with open(log_path, "ab") as log:
        try:
            done = subprocess.run(
                argv, env=_environ(), stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"{what} took over {timeout_s:g} s"
        except OSError as err:
            return f"{what} could not run: {err}"
    return None if done.returncode == 0 else f"{what} exited {done.returncode}"


def _install(where: Install, python: str) -> str | None:
    """A fresh virtualenv with ministack; why not, or None."""
    shutil.rmtree(where.venv, ignore_errors=True)
    venv_python = str(where.venv / "bin" / "python")
    pip = [venv_python, "-m", "pip", "install", "--no-input", "--quiet",
           "--disable-pip-version-check", "--timeout", str(PIP_READ_TIMEOUT_S),
           "--retries", str(PIP_RETRIES), PACKAGE]  # fmt: skip
    why = _step([python, "-m", "venv", str(where.venv)], where.log_path, VENV_S, "python -m venv")
    why = why or _step(pip, where.log_path, PIP_S, f"pip install {PACKAGE}")
    if why is None and not where.program.is_file():
        why = f"pip installed no {where.program.name} program"
    if why is None:
        where.stamp.write_text(PACKAGE + "\n")
    else:
        shutil.rmtree(where.venv, ignore_errors=True)
    return why


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as lock:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unavailable(
                        f"ministack: another process has been installing it for over "
                        f"{LOCK_WAIT_S:g} s (lock {path})"
                    ) from None
                time.sleep(READY_POLL_S * 10)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure(root: Path | None = None, python: str | None = None) -> Install:
    """ministack installed under `root` (default `cache_root()`), installing it if need be with
    `python`'s venv (default this interpreter's); Unavailable, saying what to install, if it
    cannot be."""
    where = Install(root or cache_root())
    if where.ready():
        return where
    try:
        where.root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise Unavailable(f"ministack: cannot make {where.root}: {err}") from err
    with _locked(where.root / f"ministack-{VERSION}.lock"):
        if where.ready():  # another process installed it while we waited
            return where
        print(f"python -m bench: installing {PACKAGE} into {where.venv} (first use only)...",
              file=sys.stderr)  # fmt: skip
        why = _install(where, python or sys.executable)
    if why is not None:
        raise Unavailable(
            f"ministack: {why} (log: {where.log_path}); it needs the package registry, or "
            f"install it yourself: python -m venv {where.venv} && {where.venv}/bin/pip install "
            f"{PACKAGE} && touch {where.stamp}"
        )
    return where


# --- the server --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ministack:
    endpoint: str
    process: Process


def server_env(port: int, scratch: Path) -> dict[str, str]:
    """SQS only, on 127.0.0.1:`port`, quiet, every scratch file under `scratch`."""
    return {
        **_environ(),
        "BIND_HOST": LOOPBACK,
        "GATEWAY_PORT": str(port),
        "SERVICES": "sqs",
        "LOG_LEVEL": "WARNING",
        "PERSIST_STATE": "0",
        "TMPDIR": str(scratch),  # its pid file
        "STATE_DIR": str(scratch / "state"),
        "S3_DATA_DIR": str(scratch / "s3"),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY,
    }


@contextlib.contextmanager
def ministack_server(
    workdir: Path, name: str = "ministack", root: Path | None = None
) -> Iterator[Ministack]:
    """ministack's SQS on a free loopback port (installed first if need be), stopped by its pid.

    Unavailable when it cannot be installed; BenchError when installed but it will not start."""
    where = ensure(root)
    log_path = workdir / f"{name}.log"
    scratch = workdir / f"{name}-tmp"
    scratch.mkdir(exist_ok=True)
    for _ in range(BIND_ATTEMPTS):
        port = free_port()
        process = spawn([str(where.program)], server_env(port, scratch), log_path)
        endpoint = f"http://{LOOPBACK}:{port}"
        if process.wait_ready(endpoint + HEALTH_PATH):
            break
        process.stop()
    else:
        raise BenchError(
            f"ministack did not become ready within {START_S:g} s:\n{tail(log_path)}"
        )
    try:
        yield Ministack(endpoint, process)
    finally:
        process.stop()
