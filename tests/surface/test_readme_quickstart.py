"""The README's set-up and quickstart, run exactly as written on a fresh clone.

The clone is the checkout's files (tracked and new, nothing ignored: no `.venv`, no build
metadata) in a directory of their own. `make serve` runs there as the README says, from a shell
with a clean PATH (what a new shell has: no `.venv/bin`), and must install everything the
quickstart's snippets use: they then run verbatim in that clone, in a second shell, against the
server it started. Only addresses change: the server listens on free loopback ports
(`OKURI_LISTEN`, `OKURI_HEALTH_LISTEN`) and the environment block's endpoint names that port.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.launch import answers, free_ports
from okuri import __version__
from tests.readme import README, README_ENDPOINT, block, environment, run_shell

SERVE_READY_S = 600.0  # the first `make serve` installs okuri and its clients from the index
STOP_S = 15.0

# The first `make serve` installs, then the quickstart runs: more than the default test timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(SERVE_READY_S + 300)]


@dataclass
class Clone:
    root: Path
    endpoint: str

    def run(self, script: str) -> str:
        """The environment block, pointed at this clone's server, then `script`, in one shell
        from the clone; its output."""
        env_text = block("quickstart-env")
        assert README_ENDPOINT in env_text, env_text
        proc = run_shell(env_text.replace(README_ENDPOINT, self.endpoint) + script, self.root)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
        return proc.stdout


def copy_checkout(to: Path) -> None:
    """What a fresh clone has: the files git would hand over, as they are in this checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=README.parent,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        source = README.parent / os.fsdecode(name)
        if source.is_file():  # a tracked file deleted in the work tree is not in the clone
            target = to / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Clone]:
    root = tmp_path_factory.mktemp("fresh-clone")
    copy_checkout(root)
    port, health = free_ports(2)
    env = {
        **environment(),
        "OKURI_LISTEN": f"127.0.0.1:{port}",
        "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health}",
    }
    log_path = root / "make-serve.log"
    with open(log_path, "wb") as log:
        serving = subprocess.Popen(
            ["make", "serve"],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # make and the okuri it starts: one group, stopped together
        )
    try:
        deadline = time.monotonic() + SERVE_READY_S
        while not answers(f"http://127.0.0.1:{health}/readyz"):
            if serving.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    f"`make serve` is not serving (exit {serving.returncode}):\n"
                    + log_path.read_text(errors="replace")[-4000:]
                )
            time.sleep(0.5)
        yield Clone(root, f"http://localhost:{port}")
    finally:
        if serving.poll() is None:
            os.killpg(serving.pid, signal.SIGTERM)
            try:
                serving.wait(STOP_S)
            except subprocess.TimeoutExpired:
                os.killpg(serving.pid, signal.SIGKILL)
                serving.wait(STOP_S)


def test_make_serve_says_what_it_installs_and_serves(clone: Clone) -> None:
    log = (clone.root / "make-serve.log").read_text()
    assert "Installing okuri, its runtime dependencies and the quickstarts' clients" in log, log
    assert "Traceback" not in log and "ERROR" not in log, log


def test_readme_cli_quickstart_runs_unchanged_after_make_serve(clone: Clone) -> None:
    assert "hello from okuri" in clone.run(block("quickstart-cli"))


def test_readme_admin_lines_run_unchanged_after_make_serve(clone: Clone) -> None:
    """With no key given: `make serve` takes the development key from this machine. Only the
    address changes, by OKURI_URL (the README's server is on 127.0.0.1:8080)."""
    out = clone.run(f"export OKURI_URL={clone.endpoint}\n" + block("quickstart-admin"))
    listed = [line.split() for line in out.splitlines()]
    assert ["readme-demo", "standard"] in listed and ["name", "readme-demo"] in listed, out


def test_readme_boto3_quickstart_runs_unchanged_after_make_serve(clone: Clone) -> None:
    out = clone.run(f"python - <<'PY'\n{block('quickstart-boto3')}PY\n")
    assert out == "hello from boto3\n", out


def test_the_clone_environment_is_consistent_after_make_serve(clone: Clone) -> None:
    """boto3 and the AWS CLI beside okuri leave okuri's own S3 adapter (aiobotocore) intact."""
    out = clone.run("python -m pip check --disable-pip-version-check 2>/dev/null\n")
    assert "No broken requirements found." in out, out


def test_readme_engine_example_runs_unchanged_after_make_serve(
    clone: Clone, tmp_path: Path
) -> None:
    """In a directory of its own (it makes ./okuri-data), with the clone's environment
    activated; run twice, since the second finds its queue already there."""
    script = f". {clone.root}/.venv/bin/activate\npython - <<'PY'\n{block('quickstart-engine')}PY\n"
    for _ in range(2):
        proc = run_shell(script, tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "b'hello' 1\n"
    assert (tmp_path / "okuri-data").is_dir()


def test_readme_install_lines_resolve_into_a_consistent_environment_of_your_own(
    clone: Clone, tmp_path: Path
) -> None:
    """The README's install block, verbatim, from the clone into a new virtualenv: okuri runs,
    and boto3, Celery and kombu sit beside it without breaking its S3 adapter. okuri's kombu
    transport then installs beside it, its `okuri-queue` requirement met by the clone's."""
    subprocess.run(["python3", "-m", "venv", str(tmp_path / "own")], check=True, env=environment())
    script = (
        f". {tmp_path}/own/bin/activate\n"
        + block("install-own-environment")
        + "pip install --quiet ./integrations/kombu\n"
    )
    proc = run_shell(script, clone.root, timeout_s=SERVE_READY_S)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    checked = run_shell(
        f". {tmp_path}/own/bin/activate\npython -m pip check --disable-pip-version-check\n"
        "okuri --version\npython -c 'import boto3, celery, kombu, aiobotocore, okuri_kombu'\n",
        tmp_path,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "No broken requirements found." in checked.stdout
    assert f"okuri {__version__}" in checked.stdout
    assert "okuri: warning" not in checked.stderr, checked.stderr
