"""The example app's test: a task sent through okuri, run by the stack's worker, its result read
back from the shared result backend."""

from __future__ import annotations

from myapp import add

RESULT_S = 60


def test_add_runs_on_the_worker() -> None:
    assert add.delay(2, 3).get(timeout=RESULT_S) == 5
