"""The compose file `make compose-test` boots, derived from compose.yaml, and its health.

One complete file, not an override: podman-compose 1.0.3 merges a second `-f` file wrongly (the
first file's `command` wins). It is compose.yaml's own okuri and celery-worker services (their
environment, healthchecks and Dockerfile targets), built from the images of images.py, with
these differences:
- MinIO, which no reachable registry serves, gives way to moto's S3 server (`s3`, which enforces
  conditional writes) and a one-shot `s3-init` that creates the bucket;
- every port is a free one on 127.0.0.1, and the S3 service's is published too, so the test
  process reads Celery's results from the bucket as the worker writes them;
- the worker writes its execution records (smoke_app.Execution) to a host directory;
- okuri restarts on failure, since podman-compose does not wait on `depends_on` conditions and
  okuri exits if the bucket is not there yet (docker compose waits, so it never restarts there);
- container names are fixed, `{project}-{service}`, so that teardown can name what it removes;
- a healthcheck given as `["CMD", argv...]` is given as the same argv in `CMD-SHELL` form,
  quoted by shlex: podman-compose 1.0.3 quotes the list form wrongly and the check never passes.
"""

from __future__ import annotations

import copy
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.compose.images import Engine, Images

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
LOOPBACK = "127.0.0.1"
S3_PORT = 9000
S3_URL = f"http://s3:{S3_PORT}"
S3_KEY_ID, S3_SECRET = "testing", "testing"  # moto accepts any pair
RECORD_DIR = "/records"  # SMOKE_RECORD_DIR inside the worker container
SERVICES = ("s3", "s3-init", "okuri", "celery-worker")
# compose.yaml's MinIO settings, and what stands for each on the test stack.
S3_ENVIRONMENT = {
    "OKURI_S3_ENDPOINT": S3_URL,
    "OKURI_S3_ACCESS_KEY_ID": S3_KEY_ID,
    "OKURI_S3_SECRET_ACCESS_KEY": S3_SECRET,
    "SMOKE_S3_ENDPOINT": S3_URL,
    "SMOKE_S3_KEY_ID": S3_KEY_ID,
    "SMOKE_S3_SECRET": S3_SECRET,
}
HEALTH_PROBE = "import urllib.request; urllib.request.urlopen('{url}', timeout=2)"
CREATE_BUCKET = """\
import sys, time, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1",
                  aws_access_key_id="{key}", aws_secret_access_key="{secret}")
for attempt in range(120):
    try:
        s3.create_bucket(Bucket=sys.argv[2])
        break
    except Exception as err:
        print("waiting for S3:", err, flush=True)
        time.sleep(0.5)
else:
    sys.exit("S3 never answered")
print("created bucket", sys.argv[2])
"""


@dataclass(frozen=True)
class Ports:
    sqs: int
    health: int
    s3: int


@dataclass(frozen=True)
class Stack:
    """What the tests need to reach the stack from the host."""

    project: str
    file: Path
    ports: Ports
    record_dir: Path
    document: dict[str, Any]

    @property
    def okuri(self) -> dict[str, Any]:
        service: dict[str, Any] = self.document["services"]["okuri"]
        return service

    @property
    def sqs_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.sqs}"

    @property
    def health_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.health}"

    @property
    def s3_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ports.s3}"

    def container(self, service: str) -> str:
        name: str = self.document["services"][service]["container_name"]
        return name

    def environment(self, service: str) -> dict[str, str]:
        env: dict[str, str] = self.document["services"][service]["environment"]
        return env


def user_compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def _environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def _on_test_s3(service: dict[str, Any], name: str) -> dict[str, str]:
    env = _environment(service)
    env.update({k: v for k, v in S3_ENVIRONMENT.items() if k in env})
    stale = {k: v for k, v in env.items() if "minio" in v.lower()}
    if stale:  # compose.yaml grew a MinIO setting this module does not know how to replace
        raise ValueError(f"{name}: MinIO settings left on the test stack: {stale}")
    return env


def shell_form(healthcheck: dict[str, Any]) -> dict[str, Any]:
    test = healthcheck["test"]
    if isinstance(test, list) and test[:1] == ["CMD"]:
        return {**healthcheck, "test": ["CMD-SHELL", shlex.join(test[1:])]}
    return healthcheck


def _healthcheck(url: str) -> dict[str, Any]:
    return {
        "test": ["CMD", "python", "-c", HEALTH_PROBE.format(url=url)],
        "interval": "2s",
        "timeout": "5s",
        "retries": 30,
        "start_period": "2s",
    }


def stack_document(
    user: dict[str, Any], project: str, images: Images, ports: Ports, record_dir: Path
) -> dict[str, Any]:
    """The compose document of the test stack (see the module docstring)."""
    services = user["services"]
    okuri = copy.deepcopy(services["okuri"])
    okuri_env = _on_test_s3(okuri, "okuri")
    bucket = okuri_env["OKURI_S3_BUCKET"]
    sqs_port = int(okuri_env["OKURI_LISTEN"].rsplit(":", 1)[1])
    health_port = int(okuri_env["OKURI_HEALTH_LISTEN"].rsplit(":", 1)[1])
    okuri.pop("build", None)
    okuri.update(
        image=images.okuri,
        container_name=f"{project}-okuri",
        environment=okuri_env,
        depends_on={"s3-init": {"condition": "service_completed_successfully"}},
        ports=[f"{LOOPBACK}:{ports.sqs}:{sqs_port}", f"{LOOPBACK}:{ports.health}:{health_port}"],
        restart="on-failure",
    )

    worker = copy.deepcopy(services["celery-worker"])
    worker_env = _on_test_s3(worker, "celery-worker")
    if worker_env["SMOKE_S3_BUCKET"] != bucket:
        raise ValueError("the worker keeps its results in another bucket than okuri's queues")
    worker_env["SMOKE_RECORD_DIR"] = RECORD_DIR
    for key in ("build", "profiles"):
        worker.pop(key, None)
    worker.update(
        image=images.celery,
        container_name=f"{project}-celery-worker",
        environment=worker_env,
        volumes=[f"{record_dir}:{RECORD_DIR}"],
    )

    s3 = {
        "image": images.s3,
        "container_name": f"{project}-s3",
        "ports": [f"{LOOPBACK}:{ports.s3}:{S3_PORT}"],
        "healthcheck": _healthcheck(f"http://127.0.0.1:{S3_PORT}/moto-api/"),
    }
    create_bucket = CREATE_BUCKET.format(key=S3_KEY_ID, secret=S3_SECRET)
    s3_init = {
        "image": images.s3,
        "container_name": f"{project}-s3-init",
        "depends_on": {"s3": {"condition": "service_healthy"}},
        "command": ["python", "-c", create_bucket, S3_URL, bucket],
        "restart": "no",
    }
    out = {"s3": s3, "s3-init": s3_init, "okuri": okuri, "celery-worker": worker}
    for service in out.values():
        if "healthcheck" in service:
            service["healthcheck"] = shell_form(service["healthcheck"])
    return {"name": project, "services": out}


def write_stack(path: Path, project: str, images: Images, ports: Ports, record_dir: Path) -> Stack:
    document = stack_document(user_compose(), project, images, ports, record_dir)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return Stack(project, path, ports, record_dir, document)


# --- health, as the engine sees it ------------------------------------------------------------


def state(engine: Engine, container: str) -> tuple[str, int]:
    """(status, exit code) of a container: ("running", 0), ("exited", 1), or ("missing", -1)."""
    done = engine.run("inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", container)
    if done.returncode != 0:
        return "missing", -1
    status, code = done.stdout.split()
    return status, int(code)


def healthy(engine: Engine, container: str) -> bool:
    """Whether the container's healthcheck passes. Podman runs its checks from systemd timers,
    absent on many hosts, so it is asked to run the check now; Docker's daemon runs them."""
    if engine.name == "podman":
        return engine.run("healthcheck", "run", container).returncode == 0
    done = engine.run("inspect", "--format", "{{.State.Health.Status}}", container)
    return done.stdout.strip() == "healthy"


def pending(engine: Engine, stack: Stack) -> dict[str, str]:
    """Each service not yet where the tests need it, with what it is doing instead. A one-shot
    service must have exited 0; a service with a healthcheck must pass it; others must run."""
    out = {}
    for name, service in stack.document["services"].items():
        container = stack.container(name)
        status, code = state(engine, container)
        if service.get("restart") == "no":
            if (status, code) != ("exited", 0):
                out[name] = f"{status} (exit {code})"
        elif status != "running":
            out[name] = f"{status} (exit {code})"
        elif "healthcheck" in service and not healthy(engine, container):
            out[name] = "running, not healthy yet"
    return out


def failed(engine: Engine, stack: Stack) -> dict[str, str]:
    """Services that waiting cannot bring up: a container `up` did not create (podman-compose
    exits 0 all the same), or a one-shot service that exited with an error."""
    out = {}
    for name, service in stack.document["services"].items():
        status, code = state(engine, stack.container(name))
        if status == "missing":
            out[name] = "no container: `up` could not create it"
        elif service.get("restart") == "no" and status == "exited" and code != 0:
            out[name] = f"exited {code}"
    return out


def logs(engine: Engine, stack: Stack, lines: int = 40) -> str:
    parts = []
    for name in stack.document["services"]:
        done = engine.run("logs", "--tail", str(lines), stack.container(name))
        parts.append(f"--- {name} ---\n{(done.stdout + done.stderr).strip()}")
    return "\n".join(parts)


def remove_project(
    engine: Engine, project: str, services: Iterable[str], volumes: Iterable[str] = ()
) -> str:
    """Remove what a compose project left, each by its own name: its containers
    (`{project}-{service}`), named volumes (`{project}_{volume}`) and default network. Returns
    what still exists, or "" when nothing does; nothing of any other project is touched."""
    for service in services:
        engine.run("rm", "-f", f"{project}-{service}")
    left_volumes = []
    for volume in volumes:
        name = f"{project}_{volume}"
        engine.run("volume", "rm", "-f", name)
        if engine.run("volume", "inspect", name).returncode == 0:
            left_volumes.append(name)
    engine.run("network", "rm", f"{project}_default")
    left = engine.run("ps", "-a", "--filter", f"name=^{project}-", "--format", "{{.Names}}")
    if left.returncode != 0 or left.stdout.strip() or left_volumes:
        return f"{left.stdout}{left.stderr}{' '.join(left_volumes)}".strip() or "unknown"
    return ""
