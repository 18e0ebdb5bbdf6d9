"""docs/testing.md's Compose recipe for a Celery app (docs/ci/celery-app/compose.yaml), booted for
real: okuri built from its Dockerfile in `.okuri`, the app's worker and its test runner, built
from the app's Dockerfile, run until the tests exit (tests/compose/recipe.py says how, and what
differs from a user's run). The run passes when the tests container exits 0 having passed its
tests, and the worker container ran the task they sent.

A failure anywhere still takes the stack down: `compose down --volumes`, then the project
fixture removes whatever of this project is left, by name, and fails if anything remains.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.compose import recipe, stack
from tests.compose.images import Engine
from tests.compose.recipe import Compose, RecipeFailed

UP_S = 180.0  # okuri's /readyz: a cold interpreter on a busy 2-core machine
TESTS_S = 300.0  # the app's pytest: one task, each result waited for up to 60 s


@pytest.fixture
def recipe_project(compose_engine: Engine) -> Iterator[str]:
    project = f"okuri-recipe-{os.getpid()}"
    yield project
    services = ("okuri", "worker", "tests")
    left = stack.remove_project(compose_engine, project, services, volumes=("results",))
    if left:
        pytest.fail(f"containers or volumes of {project} outlived the test: {left}")


def test_the_recipes_tests_pass_against_its_worker_and_okuri_in_containers(
    compose_engine: Engine, compose_base: str | None, recipe_project: str, tmp_path: Path
) -> None:
    run = recipe.prepare(tmp_path, recipe_project, compose_base)
    assert set(run.services) == {"okuri", "worker", "tests"}, "the recipe's services changed"
    compose = Compose(compose_engine, run, tmp_path / "compose.log")
    try:
        code = recipe.up(compose, "tests", UP_S, TESTS_S)
        tests, worker, every = compose.output("tests"), compose.output("worker"), compose.logs()
    except RecipeFailed as err:
        pytest.fail(str(err), pytrace=False)
    finally:
        compose.down()
    assert code == 0, f"the tests exited {code}:\n{every}"
    assert re.search(r"\b1 passed\b", tests), tests[-3000:]
    assert re.search(r"Task myapp\.add\[[^]]+\] succeeded", worker), worker[-3000:]
