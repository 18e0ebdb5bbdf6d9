"""`python -m bench testing`'s arithmetic and printout: the figures of one pytest run of the
suite from what bench/testing_timer.py recorded, and the two runs side by side.

Why apart from running them: these are pure functions of recorded numbers, so the unit tests
check them on made-up records without starting pytest, moto or okuri.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

# The targets for okuri's fixtures (printed beside the figures, never asserted).
RATIO_MAX = 1.0  # okuri's wall time at most moto's
STARTUP_S_MAX = 1.0  # the session's fixtures set up in under a second
RESET_MS_MAX = 20.0  # each test's own setup and teardown under 20 ms


@dataclass(frozen=True)
class Run:
    """One pytest run of the suite: how it went from outside, and its timer record."""

    name: str
    wall_s: float
    exit_code: int
    spawned_s: float  # the bench's wall clock just before it started pytest
    record: dict[str, Any]


def _median_ms(values: list[float]) -> float | None:
    return round(statistics.median(values) * 1000, 2) if values else None


def figures(run: Run) -> dict[str, Any]:
    """The run's figures. A test's reset is its setup plus its teardown, the first test's left
    out: its setup also starts whatever the session shares, counted as start-up instead."""
    phases = run.record.get("phases", [])
    by_test: dict[str, dict[str, float]] = defaultdict(dict)
    outcomes: dict[str, int] = defaultdict(int)
    for phase in phases:
        by_test[phase["test"]][phase["when"]] = phase["s"]
        if phase["when"] == "call" or phase["outcome"] == "failed":
            outcomes[phase["outcome"] if phase["when"] == "call" else "error"] += 1
    tests = list(by_test.values())
    resets = [t.get("setup", 0.0) + t.get("teardown", 0.0) for t in tests[1:]]
    shared: dict[str, float] = defaultdict(float)
    per_test: dict[str, list[float]] = defaultdict(list)
    for fixture in run.record.get("fixtures", []):
        if fixture["scope"] == "function":
            per_test[fixture["name"]].append(fixture["s"])
        else:
            shared[fixture["name"]] += fixture["s"]
    collected = run.record.get("collected_s")
    return {
        "wall_s": round(run.wall_s, 3),
        "exit_code": run.exit_code,
        "tests": len(tests),
        "passed": outcomes["passed"],
        "failed": outcomes["failed"] + outcomes["error"],
        "before_first_test_s": (None if collected is None else round(collected - run.spawned_s, 3)),
        "session_startup_s": round(sum(shared.values()), 3),
        "session_fixtures_s": {
            name: round(s, 3) for name, s in sorted(shared.items(), key=lambda kv: -kv[1])
        },
        "reset_ms_p50": _median_ms(resets),
        "call_ms_p50": _median_ms([t["call"] for t in tests if "call" in t]),
        "test_fixtures_ms_p50": {
            name: _median_ms(values)
            for name, values in sorted(per_test.items(), key=lambda kv: -sum(kv[1]))
        },
    }


def compare(moto: dict[str, Any], okuri: dict[str, Any]) -> dict[str, Any]:
    """okuri beside moto, and okuri beside the issue's targets."""
    ratio = okuri["wall_s"] / moto["wall_s"] if moto["wall_s"] > 0 else None
    reset = okuri["reset_ms_p50"]
    return {
        "okuri_over_moto_wall": None if ratio is None else round(ratio, 3),
        "targets": {
            "wall_at_most_moto": ratio is not None and ratio <= RATIO_MAX,
            "startup_under_1_s": okuri["session_startup_s"] < STARTUP_S_MAX,
            "reset_under_20_ms": reset is not None and reset < RESET_MS_MAX,
        },
    }


def _fixtures(values: dict[str, Any], unit: str, shown: int = 4) -> str:
    top = list(values.items())[:shown]
    return ", ".join(f"{name} {value:g} {unit}" for name, value in top if value) or "none"


def _met(ok: bool) -> str:
    return "met" if ok else "MISSED"


def render(result: dict[str, Any]) -> str:
    """The printout: one row per run, then okuri's three figures beside their targets."""
    runs, verdict = result["runs"], result["comparison"]
    lines = [
        f"python -m bench testing: the same {result['tests']}-test application suite under "
        "moto's mock_aws, then under okuri's pytest fixtures (one pytest process each)",
        f"machine: {result['machine']['python_loop_10m_s']:.3f} s for a 10-million-step "
        f"Python loop, {result['machine']['cpus']} CPUs",
        "",
        f"{'run':<6} {'wall s':>7} {'passed':>7} {'failed':>7} {'to 1st test s':>14} "
        f"{'start-up s':>11} {'reset ms p50':>13} {'body ms p50':>12}",
    ]
    for name in ("moto", "okuri"):
        f = runs[name]
        lines.append(
            f"{name:<6} {f['wall_s']:>7.2f} {f['passed']:>7} {f['failed']:>7} "
            f"{_num(f['before_first_test_s'], 2):>14} {f['session_startup_s']:>11.3f} "
            f"{_num(f['reset_ms_p50'], 2):>13} {_num(f['call_ms_p50'], 2):>12}"
        )
    lines.append(
        "(to 1st test: from starting pytest to the suite collected, imports included; start-up: "
        "the setup of fixtures wider than a test; reset: a test's setup and teardown, the "
        "first test's left out; body: a test's call)"
    )
    okuri, targets = runs["okuri"], verdict["targets"]
    ratio = verdict["okuri_over_moto_wall"]
    lines += [
        "",
        f"okuri/moto wall time: {_num(ratio, 2)} (target at most {RATIO_MAX:g}: "
        f"{_met(targets['wall_at_most_moto'])})",
        f"okuri session start-up: {okuri['session_startup_s']:.3f} s "
        f"({_fixtures(okuri['session_fixtures_s'], 's')}; target under {STARTUP_S_MAX:g} s: "
        f"{_met(targets['startup_under_1_s'])})",
        f"okuri per-test reset: {_num(okuri['reset_ms_p50'], 2)} ms p50 of each test's setup "
        f"and teardown, hooks included (target under {RESET_MS_MAX:g} ms: "
        f"{_met(targets['reset_under_20_ms'])}; its test-scoped fixtures: "
        f"{_fixtures(okuri['test_fixtures_ms_p50'], 'ms')})",
        f"moto per-test reset: {_num(runs['moto']['reset_ms_p50'], 2)} ms p50 (its test-scoped "
        f"fixtures: {_fixtures(runs['moto']['test_fixtures_ms_p50'], 'ms')})",
    ]
    return "\n".join(lines)


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
