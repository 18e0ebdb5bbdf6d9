"""The README's quickstart, run exactly as written against a real `okuri serve`.

The environment block of the README (endpoint, keys, region) is the only thing supplied here,
with the test server's address; the CLI commands and the boto3 script run verbatim.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess

README = Path(__file__).resolve().parents[2] / "README.md"


def block(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```\w+\n(.*?)```", README.read_text(), re.S)
    assert match, f"README has no {marker} block"
    return match.group(1)


def environment(server: ServerProcess) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_"))}
    aws_cli_dir = str(Path(sys.executable).parent)
    return {
        **base,
        "PATH": aws_cli_dir + os.pathsep + base.get("PATH", ""),
        "AWS_ENDPOINT_URL": server.url,
        "AWS_ACCESS_KEY_ID": SQS_KEY,
        "AWS_SECRET_ACCESS_KEY": SQS_SECRET,
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def run(command: list[str], server: ServerProcess) -> str:
    """Run a README block as a reader would; its standard output."""
    proc = subprocess.run(
        command,
        env=environment(server),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_readme_cli_quickstart_runs_unchanged(sqs_server: ServerProcess) -> None:
    out = run(["bash", "-euo", "pipefail", "-c", block("quickstart-cli")], sqs_server)
    assert "hello from okuri" in out


def test_readme_boto3_quickstart_runs_unchanged(sqs_server: ServerProcess) -> None:
    out = run([sys.executable, "-c", block("quickstart-boto3")], sqs_server)
    assert "hello from boto3" in out
