"""The compose stack, booted once per session through pytest-docker, and clients of it.

pytest-docker runs `up -d` and, at the end, `down -v`. This file picks its compose command
(`docker_compose_command`: `docker compose`, or `podman-compose` where no Docker engine runs),
builds the images (images.py), writes the compose file (stack.py) and waits until every service
is healthy. A failure anywhere still takes the stack down: the project-name fixture is set up
before pytest-docker's and torn down after it, and removes whatever containers and network of
this project are left, by their names, then fails if any remains.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from pytest_docker.plugin import Services

ROOT = Path(__file__).resolve().parents[2]
for path in (ROOT / "tests" / "smoke" / "celery", ROOT / "integrations" / "celery"):
    if str(path) not in sys.path:  # smoke_app, celery_smoke, scenarios and okuri_celery
        sys.path.insert(0, str(path))

import smoke_app  # noqa: E402
from celery import Celery  # noqa: E402
from celery_smoke import Records  # noqa: E402

from bench.launch import free_ports  # noqa: E402
from tests.compose import images, stack  # noqa: E402
from tests.compose.images import ContainersUnavailable, Engine, Images  # noqa: E402
from tests.compose.stack import Ports, Stack  # noqa: E402

STACK_UP_S = 180.0  # cold interpreters on a busy 2-core machine, okuri retrying until the bucket
POLL_S = 1.0


@pytest.fixture(scope="session")
def compose_engine() -> Engine:
    try:
        engine = images.detect_engine()
    except ContainersUnavailable as err:
        pytest.fail(f"containers cannot run here: {err}", pytrace=False)
    if engine.name == "podman":
        images.use_project_containers_conf(os.environ)
    return engine


@pytest.fixture(scope="session")
def docker_compose_command(compose_engine: Engine) -> str:
    return compose_engine.compose


@pytest.fixture(scope="session")
def compose_base(
    compose_engine: Engine, tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> str | None:
    """The Python base of every image (images.base_image): okuri's stack and the CI recipe."""
    work = tmp_path_factory.mktemp("base")
    # Builds take minutes the first time: their progress (images.say) reaches the terminal.
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            return images.base_image(compose_engine, work, work / "build.log")
    except ContainersUnavailable as err:
        pytest.fail(f"containers cannot run here: {err}", pytrace=False)


@pytest.fixture(scope="session")
def compose_images(
    compose_engine: Engine,
    compose_base: str | None,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Images:
    work = tmp_path_factory.mktemp("images")
    capture = pytestconfig.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            built = images.build_images(compose_engine, compose_base, work, work / "build.log")
        images.check_runs(compose_engine, built.s3)
    except ContainersUnavailable as err:
        pytest.fail(f"containers cannot run here: {err}", pytrace=False)
    return built


@pytest.fixture(scope="session")
def docker_compose_project_name(compose_engine: Engine) -> Iterator[str]:
    project = f"okuri-compose-{os.getpid()}"
    yield project
    left = stack.remove_project(compose_engine, project, stack.SERVICES)
    if left:
        pytest.fail(f"containers of {project} outlived the run: {left}")


@pytest.fixture(scope="session")
def compose_stack_file(
    docker_compose_project_name: str,
    compose_images: Images,
    tmp_path_factory: pytest.TempPathFactory,
) -> Stack:
    work = tmp_path_factory.mktemp("compose")
    record_dir = work / "records"
    record_dir.mkdir()
    record_dir.chmod(0o777)  # the worker runs as the image's non-root user
    sqs, health, s3 = free_ports(3)
    ports = Ports(sqs=sqs, health=health, s3=s3)
    return stack.write_stack(
        work / "compose.test.yaml", docker_compose_project_name, compose_images, ports, record_dir
    )


@pytest.fixture(scope="session")
def docker_compose_file(compose_stack_file: Stack) -> str:
    return str(compose_stack_file.file)


@pytest.fixture(scope="session")
def docker_setup() -> list[str]:
    # Not `up --wait` (podman-compose lacks it) nor `--abort-on-container-exit` (it hangs there).
    return ["up -d"]


@pytest.fixture(scope="session")
def docker_cleanup() -> list[str]:
    return ["down -v"]


@pytest.fixture(scope="session")
def compose_stack(
    docker_services: Services, compose_engine: Engine, compose_stack_file: Stack
) -> Stack:
    """The stack once every one-shot service has exited 0 and every healthcheck passes."""
    booted = compose_stack_file

    def ready() -> bool:
        broken = stack.failed(compose_engine, booted)
        if broken:
            pytest.fail(f"{broken}:\n{stack.logs(compose_engine, booted)}", pytrace=False)
        return not stack.pending(compose_engine, booted)

    try:
        docker_services.wait_until_responsive(check=ready, timeout=STACK_UP_S, pause=POLL_S)
    except Exception:  # pytest-docker's timeout; pytest.fail above is no Exception
        waiting = stack.pending(compose_engine, booted)
        logs = stack.logs(compose_engine, booted)
        pytest.fail(f"not up within {STACK_UP_S} s: {waiting}\n{logs}", pytrace=False)
    return booted


@pytest.fixture(scope="session")
def queue(compose_stack: Stack) -> str:
    """The queue the worker container consumes (compose.yaml's SMOKE_QUEUE)."""
    return compose_stack.environment("celery-worker")["SMOKE_QUEUE"]


@pytest.fixture(scope="session")
def s3_client(compose_stack: Stack) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=compose_stack.s3_url,
        region_name="us-east-1",
        aws_access_key_id=stack.S3_KEY_ID,
        aws_secret_access_key=stack.S3_SECRET,
    )


@pytest.fixture(scope="session")
def sqs_client(compose_stack: Stack) -> Any:
    """boto3 on okuri's published SQS port, with the key pair compose.yaml gives okuri."""
    env = compose_stack.environment("okuri")
    return boto3.client(
        "sqs",
        endpoint_url=compose_stack.sqs_url,
        region_name=env["OKURI_REGION"],
        aws_access_key_id=env["OKURI_ACCESS_KEY_ID"],
        aws_secret_access_key=env["OKURI_SECRET_ACCESS_KEY"],
    )


@pytest.fixture
def records(compose_stack: Stack) -> Records:
    """What the worker container recorded, emptied first: a scenario counts every record."""
    for item in compose_stack.record_dir.iterdir():
        item.unlink()
    return Records(compose_stack.record_dir)


@pytest.fixture
def producer(compose_stack: Stack, queue: str) -> Iterator[Celery]:
    """The sending side on the host, configured as the worker container is (smoke_app)."""
    okuri = compose_stack.environment("okuri")
    worker = compose_stack.environment("celery-worker")
    key, secret = okuri["OKURI_ACCESS_KEY_ID"], okuri["OKURI_SECRET_ACCESS_KEY"]
    app = Celery("compose-producer", set_as_current=False)
    app.conf.update(
        smoke_app.celery_config(
            f"sqs://{key}:{secret}@{compose_stack.sqs_url.removeprefix('http://')}",
            s3_endpoint=compose_stack.s3_url,
            s3_bucket=worker["SMOKE_S3_BUCKET"],
            s3_key_id=worker["SMOKE_S3_KEY_ID"],
            s3_secret=worker["SMOKE_S3_SECRET"],
            queue=queue,
        )
    )
    yield app
    app.close()
