"""The `okuri` command line: version, usage errors, verbatim hand-off to `dst`, and where the
benchmarks went (`python -m bench`, outside the package)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from okuri.server.cli import BENCH_MOVED, DELEGATES, build_parser, main


def fake_module(monkeypatch: pytest.MonkeyPatch, name: str, code: int | None) -> list[list[str]]:
    calls: list[list[str]] = []

    def cli_main(argv: list[str]) -> int | None:
        calls.append(argv)
        return code

    module = types.ModuleType(name)
    module.cli_main = cli_main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, name, module)
    return calls


def test_version_prints_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == "okuri 0.0.1"


@pytest.mark.parametrize("argv", [[], ["frob"], ["serve", "x"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage: okuri" in capsys.readouterr().err


def test_dst_hands_its_arguments_over_verbatim(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = fake_module(monkeypatch, "okuri.sim.runner", 3)
    assert main(["dst", "--seeds", "5", "--start", "7"]) == 3
    assert main(["dst", "42"]) == 3
    assert main(["dst", "--help"]) == 3
    assert calls == [["--seeds", "5", "--start", "7"], ["42"], ["--help"]]


@pytest.mark.parametrize("argv", [["bench"], ["bench", "cost", "--json"], ["bench", "speed"]])
def test_okuri_bench_says_in_one_line_where_the_bench_went(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == BENCH_MOVED + "\n"
    assert "python -m bench" in err


@pytest.mark.parametrize(
    ("argv", "command", "module"),
    [
        (["dst", "1"], "okuri dst", "okuri.sim.runner"),
        (["keys", "create"], "okuri keys create", "okuri.principals.keyfile"),
    ],
)
def test_a_missing_delegate_is_a_clear_error(
    argv: list[str],
    command: str,
    module: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        f"okuri: error: `{command}` needs {module}, which this build lacks\n"
    )


def test_serving_loads_no_tool() -> None:
    """`okuri serve` imports the server, never the benchmarks, the simulator, or the client
    and the admin commands built on it."""
    tools = ("bench", "okuri.sim", "okuri.client", "okuri.admin")
    probe = (
        "import sys, okuri.server.cli, okuri.server.process; "
        f"print(sorted(m for m in sys.modules if m.startswith({tools!r})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_delegate_without_cli_main_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "okuri.sim.runner", types.ModuleType("okuri.sim.runner"))
    assert main(["dst"]) == 1
    assert "okuri: error: `okuri dst` cannot load: cannot import name 'cli_main'" in (
        capsys.readouterr().err
    )


def test_serve_with_a_bad_setting_exits_2_before_starting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OKURI_LINGER_MS", "abc")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err == (
        "okuri: error: OKURI_LINGER_MS='abc': expected a whole number of milliseconds\n"
    )
    assert main(["serve", "--linger-ms", "5", "--listen", "8080"]) == 2
    assert "--listen='8080'" in capsys.readouterr().err


LOUD_DST = """
import sys, types
runner = types.ModuleType("okuri.sim.runner")
def cli_main(argv):
    for i in range(1_000_000):
        print("seed", i)
    return 0
runner.cli_main = cli_main
sys.modules["okuri.sim.runner"] = runner
from okuri.server.cli import main
sys.exit(main(["dst"]))
"""


def test_a_delegate_piped_into_head_stops_quietly(tmp_path: Path) -> None:
    """`okuri dst ... | head -1`: no BrokenPipeError traceback, and the exit status of a tool
    killed by SIGPIPE, long before the million lines it had to print."""
    (tmp_path / "loud_dst.py").write_text(LOUD_DST)
    script = f"{sys.executable} loud_dst.py | head -1; echo ${{PIPESTATUS[0]}}"
    proc = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    first, code = proc.stdout.splitlines()
    assert first == "seed 0"
    assert code == "141"
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr


def every_command() -> list[tuple[str, ...]]:
    """Every command and subcommand the parser knows, with the delegates' own words: found by
    walking the parser, so a command added later is covered without editing this test."""
    found: list[tuple[str, ...]] = [()]

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append((*words, name))
                    walk(sub, (*words, name))

    walk(build_parser(), ())
    return sorted(set(found) | set(DELEGATES))


@pytest.mark.parametrize("words", every_command(), ids=lambda w: " ".join(w) or "okuri")
def test_every_command_renders_its_help(words: tuple[str, ...]) -> None:
    """`okuri ... --help` in a process of its own, as a user types it: usage printed, exit 0, no
    traceback (a bare % in a help text once crashed `okuri serve --help`)."""
    probe = "import sys; from okuri.server.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", probe, *words, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.startswith("usage: okuri"), done.stdout
    if words == ("serve",):
        assert "+-25 %" in done.stdout  # the text that crashed it, rendered
