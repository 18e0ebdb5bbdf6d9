"""A pytest plugin `python -m bench testing` loads into each run of its suite (`-p
bench.testing_timer`): what each fixture's setup and each test's phases took, written as JSON.

Why a plugin rather than --durations: pytest prints durations rounded and only the slowest, and
says nothing of which fixture a setup spent its time in; the bench needs every phase of every
test, and each fixture's own setup, to tell a session's start-up from a test's reset.
The file is the one BENCH_TESTING_TIMES names; without it the plugin records nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

OUT_ENV = "BENCH_TESTING_TIMES"

_record: dict[str, Any] = {"fixtures": [], "phases": []}


def _now() -> float:
    return time.time()  # compared with the bench's own clock, in another process


def pytest_sessionstart(session: pytest.Session) -> None:
    _record["session_start_s"] = _now()


def pytest_collection_finish(session: pytest.Session) -> None:
    _record["collected_s"] = _now()


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, None, None]:
    """Each fixture's own setup (its dependencies are set up before this hook runs)."""
    start = time.perf_counter()
    yield
    took_s = time.perf_counter() - start
    _record["fixtures"].append({"name": fixturedef.argname, "scope": fixturedef.scope, "s": took_s})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _record["phases"].append(
        {"test": report.nodeid, "when": report.when, "outcome": report.outcome,
         "s": report.duration}
    )  # fmt: skip


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    out = os.environ.get(OUT_ENV)
    if out:
        _record["finished_s"] = _now()
        Path(out).write_text(json.dumps(_record))
