"""docs/ci/'s recipes (docs/testing.md, "CI recipes"), checked without running them.

- Each GitHub Actions workflow passes check-jsonschema with its vendored GitHub workflow schema
  (as `check-jsonschema --builtin-schema vendor.github-workflows FILE` does in a user's CI), and
  a misspelt key fails it, so the check is not vacuous.
- Every OKURI_* variable a recipe sets is one `okuri serve` reads (okuri.server.settings.OPTIONS),
  and what okuri's container gets, on top of the image's own ENV, loads as okuri's Settings.
- The workflow runs the image it built, publishes the Dockerfile's two listeners on the runner's
  loopback, waits for /readyz on the health one, and the app side signs with okuri's key pair.
- The Celery compose file follows the Compose Specification, its broker URL names the okuri
  service, its SQS port and key pair, and the worker and the tests wait for okuri's healthcheck.

The smoke tests run the same workflows' steps against a real `okuri serve`
(tests/smoke/laravel/test_laravel_phpunit.py).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from okuri.server.settings import OPTIONS, Settings, parse_address
from okuri.testing import serving
from tests import ci_recipes
from tests.ci_recipes import (
    COMPOSE_CELERY,
    HEALTH_PORT,
    LARAVEL_WORKFLOW,
    PYTEST_WORKFLOW,
    READY_STEP,
    RUNNER_HOST,
    SQS_PORT,
    START_STEP,
    WORKFLOWS,
    check_jsonschema,
    docker_run,
    env_blocks,
    load,
    okuri_environment,
    only_job,
    step,
)
from tests.unit.test_compose import (
    DOCKERFILE,
    dockerfile_env,
    dockerfile_stages,
    effective,
    environment,
    schema_errors,
)

OKURI_VARIABLES = frozenset(option.env for option in OPTIONS)


def image_env() -> dict[str, str]:
    """The OKURI_* settings okuri's image sets itself (the Dockerfile's last stage)."""
    stages = dockerfile_stages(DOCKERFILE.read_text())
    env = dockerfile_env(effective(stages, stages[-1].name))
    return {k: v for k, v in env.items() if k.startswith("OKURI_")}


def image_ports() -> tuple[int, int]:
    env = image_env()
    return parse_address(env["OKURI_LISTEN"]).port, parse_address(env["OKURI_HEALTH_LISTEN"]).port


# --- GitHub Actions ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_workflow_follows_githubs_workflow_schema(path: Path) -> None:
    done = check_jsonschema(path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_workflow_schema_refuses_a_misspelt_key(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(LARAVEL_WORKFLOW.read_text().replace("runs-on:", "run-on:"))
    done = check_jsonschema(broken)
    assert done.returncode == 1 and "run-on" in done.stdout + done.stderr, done.stdout


def plugin_variables() -> dict[str, str]:
    """The variables okuri's pytest plugin reads to use an okuri elsewhere, by what they hold."""
    return {
        "url": serving.URL_ENV,
        "access_key_id": serving.ACCESS_KEY_ID_ENV,
        "secret_access_key": serving.SECRET_ACCESS_KEY_ENV,
        "admin_key": serving.ADMIN_KEY_ENV,
        "region": serving.REGION_ENV,
    }


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_okuri_variable_the_workflow_sets_is_one_okuri_or_its_plugin_reads(
    path: Path,
) -> None:
    """okuri's container gets only what `okuri serve` reads; the tests' steps only what the
    pytest plugin reads; no other block sets an OKURI_* variable."""
    workflow = load(path)
    start = step(only_job(workflow), START_STEP)
    served = set(okuri_environment(start))
    assert served <= OKURI_VARIABLES, f"okuri reads no such variables: {served - OKURI_VARIABLES}"
    plugin = set(plugin_variables().values())
    elsewhere = {
        key for block in env_blocks(workflow) if block != start.get("env") for key in block
        if key.startswith("OKURI_")
    }  # fmt: skip
    assert elsewhere <= plugin, f"okuri's pytest plugin reads no such variables: {elsewhere}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_the_workflow_runs_the_image_it_built_on_the_runners_loopback(path: Path) -> None:
    job = only_job(load(path))
    build = step(job, "Build okuri's image")["run"].split()
    assert build[:3] == ["docker", "build", "--tag"], build
    [source] = [s["with"]["path"] for s in job["steps"] if s.get("with", {}).get("repository")]
    assert build[4] == source, "the build does not use the okuri checkout"
    start = step(job, START_STEP)
    run = docker_run(start["run"])
    assert run.image == build[3] and run.name == "okuri"
    sqs, health = image_ports()
    expected = [(RUNNER_HOST, SQS_PORT, sqs), (RUNNER_HOST, HEALTH_PORT, health)]
    assert sorted(run.published) == expected
    assert all(value is None for value in run.env.values()), "pass values in the step's env"
    assert set(run.env) == set(start["env"]), "a variable of the step's env is not passed on"
    settings = Settings.load({**image_env(), **okuri_environment(start)})
    assert not settings.uses_dev_credentials and not settings.uses_s3
    ready = step(job, READY_STEP)["run"]
    assert f"http://{RUNNER_HOST}:{HEALTH_PORT}/readyz" in ready
    failure = [s for s in job["steps"] if s.get("if") == "failure()"]
    assert [s["run"] for s in failure] == ["docker logs okuri"]


def test_pytest_uses_okuri_through_the_plugin_with_okuris_keys_at_its_published_address() -> None:
    job = only_job(load(PYTEST_WORKFLOW))
    okuri = okuri_environment(step(job, START_STEP))
    tests = step(job, "pytest against okuri")
    assert tests["run"] == f"pytest --okuri-url http://{RUNNER_HOST}:{SQS_PORT}"
    names = plugin_variables()
    assert tests["env"][names["access_key_id"]] == okuri["OKURI_ACCESS_KEY_ID"]
    assert tests["env"][names["secret_access_key"]] == okuri["OKURI_SECRET_ACCESS_KEY"]
    assert tests["env"][names["admin_key"]] == okuri["OKURI_ADMIN_KEY"]
    assert tests["env"]["AWS_ENDPOINT_URL"] == f"http://{RUNNER_HOST}:{SQS_PORT}"
    assert tests["env"]["AWS_ACCESS_KEY_ID"] == okuri["OKURI_ACCESS_KEY_ID"]
    assert tests["env"]["AWS_SECRET_ACCESS_KEY"] == okuri["OKURI_SECRET_ACCESS_KEY"]
    install = step(job, "Install the app's requirements and okuri's pytest plugin")["run"]
    source = step(job, "Check out okuri, for its Dockerfile and pytest plugin")["with"]["path"]
    # okuri_sqs needs boto3: the `clients` extra
    assert shlex.split(install)[-1] == f"./{source}[clients]", "not the image's okuri"


def test_phpunit_signs_with_okuris_key_pair_at_okuris_published_address() -> None:
    job = only_job(load(LARAVEL_WORKFLOW))
    okuri = okuri_environment(step(job, START_STEP))
    tests = step(job, "PHPUnit against okuri")
    assert tests["run"] == "vendor/bin/phpunit"
    assert tests["env"]["AWS_ENDPOINT_URL"] == f"http://{RUNNER_HOST}:{SQS_PORT}"
    assert tests["env"]["AWS_ACCESS_KEY_ID"] == okuri["OKURI_ACCESS_KEY_ID"]
    assert tests["env"]["AWS_SECRET_ACCESS_KEY"] == okuri["OKURI_SECRET_ACCESS_KEY"]
    assert tests["env"]["QUEUE_CONNECTION"] == "sqs"


# --- Compose for a Celery app -----------------------------------------------------------------


@pytest.fixture(scope="module")
def celery_stack() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE_CELERY.read_text())
    return document


def test_the_celery_stack_follows_the_compose_specification(celery_stack: dict[str, Any]) -> None:
    errors = schema_errors(celery_stack)
    why = "the Celery compose file breaks the Compose Specification:\n"
    assert not errors, why + "\n".join(errors)
    assert set(celery_stack["services"]) == {"okuri", "worker", "tests"}


def test_every_okuri_variable_the_celery_stack_sets_is_one_okuri_reads(
    celery_stack: dict[str, Any],
) -> None:
    unknown = {
        f"{name}: {key}"
        for name, service in celery_stack["services"].items()
        for key in environment(service)
        if key.startswith("OKURI_") and key not in OKURI_VARIABLES
    }
    assert not unknown, f"okuri reads no such variables (settings.OPTIONS): {sorted(unknown)}"
    settings = Settings.load({**image_env(), **environment(celery_stack["services"]["okuri"])})
    assert not settings.uses_dev_credentials


def test_the_celery_broker_is_okuris_sqs_listener_with_okuris_key_pair(
    celery_stack: dict[str, Any],
) -> None:
    services = celery_stack["services"]
    okuri = environment(services["okuri"])
    sqs, health = image_ports()
    for name in ("worker", "tests"):
        env = environment(services[name])
        broker = urlsplit(env["CELERY_BROKER_URL"])
        assert (broker.scheme, broker.hostname, broker.port) == ("sqs", "okuri", sqs)
        assert broker.username == okuri["OKURI_ACCESS_KEY_ID"]
        assert broker.password == okuri["OKURI_SECRET_ACCESS_KEY"]
        results = urlsplit(env["CELERY_RESULT_BACKEND"])
        assert results.scheme == "file"
        assert f"results:{results.path}" in services[name]["volumes"]
        assert services[name]["depends_on"]["okuri"] == {"condition": "service_healthy"}
    probe = " ".join(services["okuri"]["healthcheck"]["test"])
    assert re.search(rf"http://127\.0\.0\.1:{health}/readyz\b", probe), probe
    assert all("ports" not in service for service in services.values()), "publishes a port"
    assert "DEVELOPMENT CREDENTIALS" in COMPOSE_CELERY.read_text().split("\nname:", 1)[0]


def test_the_recipes_module_reads_a_docker_run_line() -> None:
    run = ci_recipes.docker_run(
        "docker run --detach --name q -p 127.0.0.1:1:2 --env A --env B=c img:1"
    )
    assert (run.name, run.image, run.published) == ("q", "img:1", [("127.0.0.1", 1, 2)])
    assert run.env == {"A": None, "B": "c"}
