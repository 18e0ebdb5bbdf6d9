"""The README's quickstart, run exactly as written against a real `okuri serve`, from the
checkout with a clean PATH (what a new shell has: no `.venv/bin`).

Only the address in the environment block is replaced, by the test server's, and its key pair
is the server's default development pair; the CLI commands and the boto3 script run verbatim.
"""

from __future__ import annotations

from pathlib import Path

from tests.readme import README, block, env_block, run_shell
from tests.servers import ServerProcess


def run(script: str, server: ServerProcess) -> str:
    """Run the environment block, then `script`, in one shell from the checkout; its output."""
    proc = run_shell(env_block(server) + script, README.parent)
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
        proc = run_shell(script, tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "b'hello' 1\n"
    assert (tmp_path / "okuri-data").is_dir()
