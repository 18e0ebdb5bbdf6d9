"""`python -m bench`: the benchmarks' entry point beside okuri, and okuri's pointer to it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bench.__main__ import COMMANDS, load, main
from bench.launch import ROOT, clean_environ

# The subcommands `okuri bench` had before the bench left the package.
FORMER_OKURI_BENCH = {"cost", "sqs", "native", "cluster", "celery", "floor", "scaleout"}
ADDED_SINCE = {"testing", "readme", "consumers"}


def test_every_former_okuri_bench_subcommand_is_here_and_loads() -> None:
    assert set(COMMANDS) == FORMER_OKURI_BENCH | ADDED_SINCE
    for name in COMMANDS:
        assert callable(load(name))


def test_help_lists_every_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m bench SUB")
    assert all(f"  {name}" in out for name in COMMANDS)


@pytest.mark.parametrize("argv", [[], ["speed"]])
def test_no_or_an_unknown_subcommand_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert "usage: python -m bench SUB" in capsys.readouterr().err


def test_a_subcommand_gets_its_arguments_verbatim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []

    def cli_main(argv: list[str]) -> int:
        calls.append(argv)
        return 1

    monkeypatch.setattr("bench.__main__.load", lambda name: cli_main)
    assert main(["cluster", "--store", "s3", "--json"]) == 1
    assert calls == [["--store", "s3", "--json"]]


def test_python_m_bench_runs_a_subcommands_help_from_the_checkout() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "cost", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=clean_environ(),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m bench cost")
