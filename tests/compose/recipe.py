"""docs/ci/celery-app/compose.yaml booted in containers as its users boot it, here.

Users run `docker compose up --build --exit-code-from tests` in the recipe's directory with an
okuri checkout in `.okuri`. Here a temporary directory holds a copy of the recipe and, in
`.okuri`, what okuri's Dockerfile copies. Beside the recipe's compose.yaml (copied unchanged) is
one derived file, `compose.test.yaml`, that keeps each service's build context, command,
environment, volumes and `depends_on` and changes only:
- the base image, through build arguments (okuri's OKURI_BASE_IMAGE, the app's PYTHON_IMAGE),
  where no registry serves python:3.12-slim (images.base_image);
- image tags under images.PREFIX, so that a warm run reuses the cached layers and a rebuild
  replaces its image instead of leaving one more behind;
- container names `{project}-{service}`, so that teardown can name what it removes;
- healthchecks in shell form (stack.shell_form: podman-compose 1.0.3 quotes the list form wrongly).

`up --build --exit-code-from tests` is run as its parts, the same way on both engines:
`build`, `up --no-start`, then each service started once the conditions of its `depends_on`
hold, then a bounded wait for `tests` to exit, whose exit code is the run's. podman-compose
1.0.3 ignores those conditions (the tests would race okuri's start), and its `--exit-code-from`
returns when the first container exits, whichever it is.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.ci_recipes import CELERY_APP, COMPOSE_CELERY
from tests.compose import images, stack
from tests.compose.images import Engine

ROOT = Path(__file__).resolve().parents[2]
OKURI_CHECKOUT = ".okuri"  # where the recipe expects okuri, beside its compose file
OKURI_FILES = ("Dockerfile", ".dockerignore", "pyproject.toml", "README.md", "okuri")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
DERIVED = "compose.test.yaml"
BASE_ARGS = {OKURI_CHECKOUT: "OKURI_BASE_IMAGE", ".": "PYTHON_IMAGE"}  # build context -> arg
TAGS = {OKURI_CHECKOUT: f"{images.PREFIX}/celery-app-okuri", ".": f"{images.PREFIX}/celery-app"}
COMPOSE_S = 120.0  # `up --no-start`, `down`: creating or removing a few containers
POLL_S = 1.0


class RecipeFailed(Exception):
    """The recipe did not get as far as its tests' exit; the message says where, with logs."""


@dataclass(frozen=True)
class Run:
    """One boot of the recipe: its project, directory, derived file and that file's document."""

    project: str
    directory: Path
    file: Path
    document: dict[str, Any]

    @property
    def services(self) -> list[str]:
        return list(self.document["services"])

    @property
    def volumes(self) -> list[str]:
        return list(self.document.get("volumes") or {})

    def container(self, service: str) -> str:
        name: str = self.document["services"][service]["container_name"]
        return name


def copy_recipe(work: Path) -> Path:
    """The recipe's directory as a user has it: the example app and compose file, and okuri's
    checkout in `.okuri` (only what okuri's Dockerfile and .dockerignore need)."""
    directory = work / CELERY_APP.name
    shutil.copytree(CELERY_APP, directory, ignore=IGNORED)
    checkout = directory / OKURI_CHECKOUT
    checkout.mkdir()
    for name in OKURI_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, checkout / name, ignore=IGNORED)
        else:
            shutil.copy(source, checkout / name)
    return directory


def _context(build: str | dict[str, Any]) -> str:
    context = build if isinstance(build, str) else build.get("context", ".")
    return str(context).rstrip("/") or "."


def derived_document(recipe: dict[str, Any], project: str, base: str | None) -> dict[str, Any]:
    """The recipe's compose document with only the changes of the module docstring."""
    document = copy.deepcopy(recipe)
    document["name"] = project
    for name, service in document["services"].items():
        service["container_name"] = f"{project}-{name}"
        if "healthcheck" in service:
            service["healthcheck"] = stack.shell_form(service["healthcheck"])
        if "build" not in service:
            continue
        context = _context(service["build"])
        if context not in TAGS:
            raise ValueError(f"{name}: the recipe builds from {context!r}, which this test lacks")
        given = service["build"]
        build: dict[str, Any] = {**(given if isinstance(given, dict) else {}), "context": context}
        if base:
            build["args"] = {**(build.get("args") or {}), BASE_ARGS[context]: base}
        service["build"] = build
        service["image"] = TAGS[context]
    return document


def start_order(services: dict[str, Any]) -> list[str]:
    """Each service after everything it depends on (compose's own order)."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in order:
            return
        if name in path:
            raise ValueError(f"depends_on loops: {' -> '.join((*path, name))}")
        for needed in services[name].get("depends_on") or {}:
            visit(needed, (*path, name))
        order.append(name)

    for name in services:
        visit(name, ())
    return order


def _conditions(service: dict[str, Any]) -> dict[str, str]:
    needs = service.get("depends_on") or {}
    if isinstance(needs, list):
        return {name: "service_started" for name in needs}
    return {name: str(spec.get("condition", "service_started")) for name, spec in needs.items()}


def holds(engine: Engine, container: str, condition: str) -> bool:
    """Whether one `depends_on` condition holds for `container` now."""
    status, code = stack.state(engine, container)
    if condition == "service_completed_successfully":
        return (status, code) == ("exited", 0)
    if status != "running":
        return False
    return condition == "service_started" or stack.healthy(engine, container)


def wait_until(
    check: Callable[[], bool], timeout_s: float, what: str, logs: Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RecipeFailed(f"{what}: not within {timeout_s:.0f} s\n{logs()}")
        time.sleep(POLL_S)


class Compose:
    """The engine's compose command on one project and its derived file."""

    def __init__(self, engine: Engine, run: Run, log: Path) -> None:
        self.engine, self.run, self.log = engine, run, log

    def command(self, *args: str) -> list[str]:
        file, project = str(self.run.file), self.run.project
        return [*shlex.split(self.engine.compose), "-p", project, "-f", file, *args]

    def call(self, *args: str, timeout_s: float = COMPOSE_S, check: bool = True) -> None:
        try:
            done = subprocess.run(
                self.command(*args), cwd=self.run.directory, capture_output=True, text=True,
                timeout=timeout_s, stdin=subprocess.DEVNULL, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired as err:
            raise RecipeFailed(f"compose {' '.join(args)}: not done within {timeout_s} s") from err
        with open(self.log, "a") as out:
            out.write(f"\n$ {shlex.join(self.command(*args))}\n{done.stdout}{done.stderr}")
        if check and done.returncode != 0:
            tail = (done.stdout + done.stderr)[-3000:]
            raise RecipeFailed(f"compose {' '.join(args)} failed ({done.returncode}):\n{tail}")

    def build(self) -> None:
        """`--build`: every image the recipe builds, with the engine's layer cache; the image a
        rebuild replaces under one of our tags is removed (refused, harmlessly, while in use)."""
        tags = sorted({s["image"] for s in self.run.document["services"].values() if "build" in s})
        before = {tag: self.engine.image_id(tag) for tag in tags}
        code = images.run_logged(self.command("build"), self.log, 2 * images.BUILD_S, "recipe")
        if code != 0:
            raise RecipeFailed(f"building the recipe's images failed; see {self.log}")
        for tag, old in before.items():
            if old and self.engine.image_id(tag) != old:
                self.engine.run("rmi", old)

    def output(self, service: str, lines: int | None = None) -> str:
        tail = ["--tail", str(lines)] if lines else []
        done = self.engine.run("logs", *tail, self.run.container(service))
        return (done.stdout + done.stderr).strip()

    def logs(self, lines: int = 60) -> str:
        """Every service's last lines, for a failure's message."""
        return "\n".join(
            f"--- {name} ---\n{self.output(name, lines)}" for name in self.run.services
        )

    def down(self) -> None:
        """`down --volumes`, never raising: the project fixture removes what it leaves."""
        with contextlib.suppress(RecipeFailed):
            self.call("down", "--volumes", check=False)


def prepare(work: Path, project: str, base: str | None) -> Run:
    directory = copy_recipe(work)
    recipe: dict[str, Any] = yaml.safe_load((directory / COMPOSE_CELERY.name).read_text())
    document = derived_document(recipe, project, base)
    file = directory / DERIVED
    file.write_text(yaml.safe_dump(document, sort_keys=False))
    return Run(project, directory, file, document)


def up(compose: Compose, exit_from: str, up_s: float, exit_s: float) -> int:
    """`up --build --exit-code-from EXIT_FROM`, in parts (module docstring): the exit code of
    `exit_from`. Each wait is bounded; a timeout raises RecipeFailed with every service's log."""
    run, engine = compose.run, compose.engine
    compose.build()
    compose.call("up", "--no-build", "--no-start")
    services = run.document["services"]
    for name in start_order(services):
        for needed, condition in _conditions(services[name]).items():
            ready = functools.partial(holds, engine, run.container(needed), condition)
            wait_until(ready, up_s, f"{name} waits for {needed} ({condition})", compose.logs)
        done = engine.run("start", run.container(name))
        if done.returncode != 0:
            raise RecipeFailed(f"starting {name} failed: {done.stderr}\n{compose.logs()}")
    last = run.container(exit_from)

    def exited() -> bool:
        return stack.state(engine, last)[0] == "exited"

    wait_until(exited, exit_s, f"{exit_from} to exit", compose.logs)
    return stack.state(engine, last)[1]
