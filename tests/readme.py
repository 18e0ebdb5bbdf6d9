"""The README's blocks, read by the tests that run them verbatim, and the shell they run in.

A block is the fenced code right after an HTML comment naming it (`<!-- quickstart-env -->`).
The tests run blocks from the checkout with a clean PATH (what a new shell has: no `.venv/bin`)
and none of this process's AWS or okuri settings, and replace nothing but the address
`README_ENDPOINT` (the `readme_server` fixture of tests/conftest.py serves the README's key pair).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from tests.servers import ServerProcess

README = Path(__file__).resolve().parents[1] / "README.md"
CLEAN_PATH = "/usr/local/bin:/usr/bin:/bin"
README_ENDPOINT = "http://localhost:8080"


def block(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```\w+\n(.*?)```", README.read_text(), re.S)
    assert match, f"README has no {marker} block"
    return match.group(1)


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
