"""The CI recipes of docs/ci/ (docs/testing.md, "CI recipes"), read the way their tests need them.

Why a module: the same workflow is checked without anything running (tests/unit/test_ci_recipes.py:
its schema, the variables it gives okuri) and run for real against `okuri serve` (the smoke
tests), and both must read it alike. A workflow's steps run on a GitHub runner where okuri's
container publishes 127.0.0.1:8080 and :9090; here `okuri serve` takes free ports instead, and
`localised` rewrites a step's script to them, changing nothing else.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "docs" / "ci"
PYTEST_WORKFLOW = CI / "github-actions.yml"
LARAVEL_WORKFLOW = CI / "github-actions-laravel.yml"
CELERY_APP = CI / "celery-app"  # an example Celery app, its image and its compose file
COMPOSE_CELERY = CELERY_APP / "compose.yaml"
WORKFLOWS = (PYTEST_WORKFLOW, LARAVEL_WORKFLOW)
RUNNER_HOST = "127.0.0.1"
SQS_PORT, HEALTH_PORT = 8080, 9090  # what the recipes publish okuri's two listeners on
START_STEP, READY_STEP = "Start okuri", "Wait until okuri is ready"
SCHEMA = "vendor.github-workflows"  # check-jsonschema's vendored GitHub workflow schema
RUN_SHELL = ("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c")  # how a runner runs `run:`


def load(path: Path) -> dict[str, Any]:
    """A workflow as a mapping; YAML 1.1 reads the key `on` as True, so it is put back."""
    document: dict[Any, Any] = yaml.safe_load(path.read_text())
    if True in document:
        document["on"] = document.pop(True)
    return document


def only_job(workflow: dict[str, Any]) -> dict[str, Any]:
    [job] = workflow["jobs"].values()
    job_: dict[str, Any] = job
    return job_


def step(job: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [s for s in job["steps"] if s.get("name") == name]
    found_: dict[str, Any] = found
    return found_


def env_blocks(workflow: dict[str, Any]) -> list[dict[str, str]]:
    """Every `env:` the workflow sets: its own, each job's and each step's."""
    blocks = [workflow.get("env") or {}]
    for job in workflow["jobs"].values():
        blocks.append(job.get("env") or {})
        blocks += [s.get("env") or {} for s in job.get("steps", [])]
    return [{str(k): str(v) for k, v in block.items()} for block in blocks]


@dataclass(frozen=True)
class DockerRun:
    """The parts of a `docker run` command line the recipes' checks care about."""

    name: str | None
    image: str
    published: list[tuple[str, int, int]]  # (host address, host port, container port)
    env: dict[str, str | None]  # --env NAME (None: passed on from the step's env) or NAME=VALUE


def docker_run(script: str) -> DockerRun:
    words = shlex.split(script)
    assert words[:2] == ["docker", "run"], script
    name, published, env, positional = None, [], {}, []
    rest = iter(words[2:])
    for word in rest:
        if word in ("--name",):
            name = next(rest)
        elif word in ("--publish", "-p"):
            host, port, target = next(rest).rsplit(":", 2)
            published.append((host, int(port), int(target)))
        elif word in ("--env", "-e"):
            key, eq, value = next(rest).partition("=")
            env[key] = value if eq else None
        elif word in ("--detach", "-d", "--rm"):
            continue
        else:
            assert not word.startswith("-"), f"unexpected docker run option {word}"
            positional.append(word)
    assert len(positional) == 1, f"expected one image and no command: {positional}"
    return DockerRun(name, positional[0], published, env)


def okuri_environment(start: dict[str, Any]) -> dict[str, str]:
    """What the start step's container gets: the step's env for each `--env NAME`, and the
    values of `--env NAME=VALUE`."""
    run = docker_run(start["run"])
    step_env = {str(k): str(v) for k, v in (start.get("env") or {}).items()}
    return {k: step_env[k] if v is None else v for k, v in run.env.items()}


def localised(script: str, sqs_port: int, health_port: int) -> str:
    """A step's script with the runner's okuri addresses replaced by a local server's."""
    return script.replace(f"{RUNNER_HOST}:{SQS_PORT}", f"{RUNNER_HOST}:{sqs_port}").replace(
        f"{RUNNER_HOST}:{HEALTH_PORT}", f"{RUNNER_HOST}:{health_port}"
    )


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def check_jsonschema(path: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema (a dev dependency) run on `path` with GitHub's workflow schema."""
    tool = Path(sys.executable).parent / "check-jsonschema"
    return subprocess.run(
        [str(tool), "--builtin-schema", SCHEMA, str(path)],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
