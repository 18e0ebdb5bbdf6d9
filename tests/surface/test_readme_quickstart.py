"""The README's quickstart, run exactly as written against a real `okuri serve`, from the
checkout with a clean PATH (what a new shell has: no `.venv/bin`).

Only the address in the environment block is replaced, by the test server's, and its key pair
is the server's default development pair; the CLI commands and the boto3 script run verbatim.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from tests.servers import ServerProcess, start_server

README = Path(__file__).resolve().parents[2] / "README.md"


def block(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```\w+\n(.*?)```", README.read_text(), re.S)
    assert match, f"README has no {marker} block"
    return match.group(1)


CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(scope="module")
def readme_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """`okuri serve` with nothing but its address and store set: the README's key pair."""
    tmp = tmp_path_factory.mktemp("readme")
    server = start_server(
        tmp,
        {
            "OKURI_DATA_DIR": str(tmp / "data"),
            "OKURI_ACCESS_KEY_ID": DEV_ACCESS_KEY_ID,
            "OKURI_SECRET_ACCESS_KEY": DEV_SECRET_ACCESS_KEY,
        },
    )
    yield server
    server.terminate()


README_ENDPOINT = "http://localhost:8080"


def environment() -> dict[str, str]:
    """This process's environment without anything a README block sets up itself."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_", "PYTHON"))}
    return {**base, "PATH": CLEAN_PATH}


def env_block(server: ServerProcess) -> str:
    text = block("quickstart-env")
    assert README_ENDPOINT in text and f"AWS_ACCESS_KEY_ID={DEV_ACCESS_KEY_ID} " in text, text
    assert f"AWS_SECRET_ACCESS_KEY={DEV_SECRET_ACCESS_KEY} " in text, text
    return text.replace(README_ENDPOINT, server.url)


def run(script: str, server: ServerProcess) -> str:
    """Run the environment block, then `script`, in one shell from the checkout; its output."""
    proc = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", env_block(server) + script],
        cwd=README.parent,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_readme_cli_quickstart_runs_unchanged(readme_server: ServerProcess) -> None:
    out = run(block("quickstart-cli"), readme_server)
    assert "hello from okuri" in out


def test_readme_boto3_quickstart_runs_unchanged(readme_server: ServerProcess) -> None:
    script = block("quickstart-boto3")
    out = run(f"python - <<'PY'\n{script}PY\n", readme_server)
    assert "hello from boto3" in out


def test_readme_engine_example_runs_unchanged(tmp_path: Path) -> None:
    """In a directory of its own (it makes ./okuri-data), with okuri's environment activated;
    run twice, since the second finds its queue already there."""
    script = (
        f". {README.parent}/.venv/bin/activate\npython - <<'PY'\n{block('quickstart-engine')}PY\n"
    )
    for _ in range(2):
        proc = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "b'hello' 1\n"
    assert (tmp_path / "okuri-data").is_dir()
