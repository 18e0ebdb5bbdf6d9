"""docs/embedding.md's examples, run verbatim: the engine in a process (in a fresh working
directory, twice over the same data directory), a whole server on a thread reached with the
native client, and the pytest fixture example run by pytest itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.readme import block, environment

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "embedding.md"


def run(args: list[str], cwd: Path) -> list[str]:
    done = subprocess.run(
        args,
        cwd=cwd,
        env={**environment(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout.splitlines()


def test_the_engine_example_runs_and_keeps_its_queue_on_disk(tmp_path: Path) -> None:
    printed = run([sys.executable, "-c", block("embedded-engine", DOC)], tmp_path)
    assert printed == ["sent 2", "cat.jpg 1", "dog.jpg 1", "['acked', 'acked']", "['thumbnails'] 1"]
    assert (tmp_path / "okuri-data").is_dir()


def test_the_server_example_runs_and_stops(tmp_path: Path) -> None:
    printed = run([sys.executable, "-c", block("embedded-server", DOC)], tmp_path)
    assert printed == ["hello ['completed']", "True"]
    assert list(tmp_path.iterdir()) == []  # its temporary data directory is gone


def test_the_pytest_fixture_example_passes_under_pytest(tmp_path: Path) -> None:
    (tmp_path / "test_with_okuri.py").write_text(block("embedded-pytest", DOC))
    printed = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_with_okuri.py"],
        tmp_path,
    )
    assert "1 passed" in printed[-1], printed
