"""The README's blocks, read by the tests that run them verbatim, and the shell they run in.

A block is the fenced code right after an HTML comment naming it (`<!-- quickstart-env -->`).
The tests run blocks from the checkout with a clean PATH (what a new shell has: no `.venv/bin`)
and none of this process's AWS or okuri settings, and replace nothing but the address
`README_ENDPOINT` (the `readme_server` fixture of tests/conftest.py serves the README's key pair).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from tests.servers import ServerProcess

README = Path(__file__).resolve().parents[1] / "README.md"
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
README_ENDPOINT = "http://localhost:8080"


def block(marker: str, doc: Path = README) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```\w+\n(.*?)```", doc.read_text(), re.S)
    assert match, f"{doc.name} has no {marker} block"
    return match.group(1)


def run_shell(
    script: str, cwd: Path, timeout_s: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run blocks as a reader types them: one `bash -euo pipefail` from `cwd`, with
    `environment()` unless told otherwise, no stdin; its output captured."""
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=environment() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )


def environment() -> dict[str, str]:
    """This process's environment without anything a README block sets up itself."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_", "PYTHON"))}
    return {**base, "PATH": CLEAN_PATH}


def env_block(server: ServerProcess) -> str:
    """The quickstart's environment block (run from the checkout), pointed at `server`."""
    text = block("quickstart-env")
    assert README_ENDPOINT in text and f"AWS_ACCESS_KEY_ID={DEV_ACCESS_KEY_ID} " in text, text
    assert f"AWS_SECRET_ACCESS_KEY={DEV_SECRET_ACCESS_KEY} " in text, text
    return text.replace(README_ENDPOINT, server.url)
