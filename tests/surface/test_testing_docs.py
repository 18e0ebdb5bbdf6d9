"""docs/testing.md's examples, run verbatim as a user would: the pytest examples by pytest in a
directory of their own (the plugin comes with the installed okuri), the unittest one by
`python -m unittest`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme import block, environment

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env={**environment(), "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def pytest_in(directory: Path) -> str:
    done = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], directory)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return done.stdout.splitlines()[-1]


@pytest.mark.parametrize(("marker", "passed"), [("testing-pytest", 3), ("testing-shared", 2)])
def test_the_pytest_examples_pass(tmp_path: Path, marker: str, passed: int) -> None:
    (tmp_path / "test_example.py").write_text(block(marker, DOC))
    assert f"{passed} passed" in pytest_in(tmp_path)


def test_the_celery_example_runs_a_task_through_okuri(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(block("testing-celery-conftest", DOC))
    (tmp_path / "test_tasks.py").write_text(block("testing-celery", DOC))
    assert "1 passed" in pytest_in(tmp_path)


def test_the_unittest_example_passes(tmp_path: Path) -> None:
    (tmp_path / "test_orders.py").write_text(block("testing-unittest", DOC))
    done = run([sys.executable, "-m", "unittest", "-v", "test_orders"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Ran 2 tests" in done.stderr and done.stderr.rstrip().endswith("OK"), done.stderr
