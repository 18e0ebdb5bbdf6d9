"""`python -m bench testing`: its arithmetic on made-up timer records, the suite's shape, and one
real run at the smallest size (one test per scenario) that must report both runs' figures.

No figure is compared with a target here: the machine is shared; only the shape of what is
printed, and that both runs passed every test, are checked.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from typing import Any

import pytest

from bench import testing
from bench.launch import ROOT, clean_environ
from bench.testing_report import Run, compare, figures, render

SMALLEST = testing.SCENARIOS
RUN_S = 600


def _record(setups: list[float], session: float) -> dict[str, Any]:
    phases = []
    for i, setup_s in enumerate(setups):
        test = f"test_app.py::test_x[{i}]"
        phases += [
            {"test": test, "when": "setup", "outcome": "passed", "s": setup_s},
            {"test": test, "when": "call", "outcome": "passed", "s": 0.004},
            {"test": test, "when": "teardown", "outcome": "passed", "s": 0.001},
        ]
    fixtures = [{"name": "okuri_server", "scope": "session", "s": session}] + [
        {"name": "okuri_sqs", "scope": "function", "s": 0.002} for _ in setups
    ]
    return {"session_start_s": 100.5, "collected_s": 101.0, "phases": phases,
            "fixtures": fixtures}  # fmt: skip


def test_a_tests_reset_leaves_out_the_first_test_whose_setup_starts_the_session() -> None:
    run = Run("okuri", 3.0, 0, 100.0, _record([0.6, 0.003, 0.005, 0.004], session=0.59))
    got = figures(run)
    assert got["reset_ms_p50"] == 5.0  # setups 3, 5, 4 ms, each with 1 ms of teardown
    assert got["session_startup_s"] == 0.59
    assert got["session_fixtures_s"] == {"okuri_server": 0.59}
    assert got["test_fixtures_ms_p50"] == {"okuri_sqs": 2.0}
    assert got["before_first_test_s"] == 1.0
    assert (got["tests"], got["passed"], got["failed"]) == (4, 4, 0)


def test_failed_calls_and_broken_setups_both_count_as_failed() -> None:
    record = _record([0.01, 0.01, 0.01], session=0.0)
    record["phases"][1]["outcome"] = "failed"  # the first test's call
    record["phases"][6] = {**record["phases"][6], "outcome": "failed"}  # the third's setup
    del record["phases"][7]  # a test whose setup failed has no call
    got = figures(Run("moto", 1.0, 1, 0.0, record))
    assert (got["passed"], got["failed"]) == (1, 2)


def test_the_comparison_says_which_targets_okuri_met() -> None:
    moto = figures(Run("moto", 4.0, 0, 100.0, _record([0.01] * 3, session=0.0)))
    okuri = figures(Run("okuri", 5.0, 0, 100.0, _record([0.6, 0.03, 0.03], session=0.5)))
    verdict = compare(moto, okuri)
    assert verdict["okuri_over_moto_wall"] == 1.25
    assert verdict["targets"] == {
        "wall_at_most_moto": False,
        "startup_under_1_s": True,
        "reset_under_20_ms": False,
    }


def test_both_runs_run_the_same_bodies_differing_only_in_their_sqs_fixture() -> None:
    suite = ast.parse((testing.SUITE / "test_app.py").read_text())
    tests = [n.name for n in suite.body if isinstance(n, ast.FunctionDef)
             and n.name.startswith("test_")]  # fmt: skip
    assert len(tests) == testing.SCENARIOS
    for conftest in testing.CONFTESTS.values():
        tree = ast.parse((testing.SUITE / conftest).read_text())
        functions = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
        assert functions == ["sqs"], conftest


@pytest.mark.slow  # two pytest processes, moto's and okuri's: `make test`, not `make check`
@pytest.mark.timeout(RUN_S)
def test_a_smallest_run_reports_both_wall_times_and_okuris_start_up_and_reset() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "testing", "--tests", str(SMALLEST), "--json"],
        capture_output=True, text=True, timeout=RUN_S - 30, cwd=ROOT, env=clean_environ(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout)
    for name in ("moto", "okuri"):
        run = result["runs"][name]
        assert (run["tests"], run["passed"], run["failed"]) == (SMALLEST, SMALLEST, 0), run
        assert run["wall_s"] > 0 and run["reset_ms_p50"] is not None
    okuri = result["runs"]["okuri"]
    assert okuri["session_startup_s"] > 0 and okuri["session_fixtures_s"]
    assert result["comparison"]["okuri_over_moto_wall"] > 0
    assert result["machine"]["python_loop_10m_s"] > 0
    text = render(result)
    for line in ("moto ", "okuri ", "okuri/moto wall time: ", "okuri session start-up: ",
                 "okuri per-test reset: ", "10-million-step Python loop"):  # fmt: skip
        assert line in text, text
