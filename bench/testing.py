"""`python -m bench testing`: one application's SQS tests under moto's mock_aws, then under
okuri's pytest fixtures, with what each costs.

Why: the issue behind okuri's pytest plugin promises that testing an application against okuri
costs no more than against moto, the usual in-process fake. Both runs here run the same test
bodies (bench/testing_suite/test_app.py: queues, sends, receives, deletes, a FIFO group's order
and a duplicate, a dead-letter queue), each in a pytest process of its own in a fresh
directory, differing only in the conftest that provides their `sqs` client. Printed: each
run's wall time and its split (to the first test, the session's start-up, each test's reset and
body, from bench/testing_timer.py), okuri's wall time over moto's, and the machine's speed, so
a slow run can be told from a slow machine. No figure is asserted: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.flags import bounded
from bench.floor import machine_loop_s
from bench.launch import clean_environ, tail
from bench.testing_report import Run, compare, figures, render
from bench.testing_timer import OUT_ENV

SUITE = Path(__file__).resolve().parent / "testing_suite"
CONFTESTS = {"moto": "conftest_moto.py", "okuri": "conftest_okuri.py"}
SCENARIOS = 10  # the test functions of testing_suite/test_app.py: each runs at least once
TESTS_MAX = 10_000
RUN_S_MAX = 1800.0
# okuri's pytest plugin (its pytest11 entry point) is left out of moto's run, as in a project
# that does not depend on okuri; every other installed plugin loads in both.
OKURI_PLUGIN = "okuri"


class SuiteFailed(Exception):
    """A run did not pass its whole suite; the message ends with its output's tail."""


def run_suite(name: str, tests: int, work: Path, timeout_s: float) -> Run:
    """One pytest process running the suite with `name`'s conftest in a directory of its own."""
    where = work / name
    where.mkdir()
    shutil.copy(SUITE / "test_app.py", where / "test_app.py")
    shutil.copy(SUITE / CONFTESTS[name], where / "conftest.py")
    times, log = where / "times.json", where / "pytest.log"
    env = {
        **clean_environ(drop=("OKURI_", "AWS_", "PYTEST_")),
        "BENCH_TESTS": str(tests),
        OUT_ENV: str(times),
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
            "-p", "bench.testing_timer", str(where)]  # fmt: skip
    if name != "okuri":
        argv[3:3] = ["-p", f"no:{OKURI_PLUGIN}"]
    spawned = time.time()
    start = time.perf_counter()
    with open(log, "wb") as out:
        try:
            done = subprocess.run(argv, cwd=where, env=env, stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=timeout_s)  # fmt: skip
        except subprocess.TimeoutExpired:  # subprocess.run has killed it by its pid
            raise SuiteFailed(f"{name}: no end in {timeout_s:g} s\n{tail(log)}") from None
    wall_s = time.perf_counter() - start
    if done.returncode != 0 or not times.is_file():
        raise SuiteFailed(f"{name}: pytest exited {done.returncode}\n{tail(log)}")
    return Run(name, wall_s, done.returncode, spawned, json.loads(times.read_text()))


def measure(tests: int, timeout_s: float) -> dict[str, Any]:
    loop_s = machine_loop_s()
    with tempfile.TemporaryDirectory(prefix="okuri-bench-testing-") as tmp:
        runs = {name: figures(run_suite(name, tests, Path(tmp), timeout_s)) for name in CONFTESTS}
    return {
        "tests": tests,
        "machine": {"cpus": os.cpu_count(), "python_loop_10m_s": round(loop_s, 3)},
        "runs": runs,
        "comparison": compare(runs["moto"], runs["okuri"]),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench testing",
        description="The same application test suite under moto's mock_aws and under okuri's "
        "pytest fixtures: wall times, their ratio, okuri's start-up and per-test reset.",
    )
    add = p.add_argument
    add("--tests", type=bounded(int, SCENARIOS, TESTS_MAX), default=100,
        help=f"tests in each run, shared out over the suite's {SCENARIOS} scenarios")  # fmt: skip
    add("--timeout-s", type=bounded(float, 10, RUN_S_MAX), default=600.0,
        help="at most this long for each pytest run")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object")
    return p


def cli_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = measure(args.tests, args.timeout_s)
    except SuiteFailed as err:
        print(f"python -m bench testing: error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else render(result))
    return 0
