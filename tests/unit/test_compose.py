"""compose.yaml and the Dockerfile, checked without Docker (CI has no engine).

- compose.yaml validates against the Compose Specification's JSON schema, as vendored by the
  `check-jsonschema` package (a dev dependency; its `vendor.compose-spec` builtin schema). No
  schema is kept in this repository, and a schema that cannot be loaded fails the test.
- Every OKURI_* variable compose.yaml or the Dockerfile sets is one okuri reads: the names come
  from okuri.server.settings.OPTIONS, the table the server itself is configured from, and the
  okuri service's whole environment must load through `Settings.load`.
- okuri publishes 8080 and 9090 on the host's loopback only, its healthcheck probes /readyz on
  the health listener with python (the slim image has no curl), MinIO has a healthcheck, and the
  one-shot bucket init is adopted by okuri so that `docker compose up -d --wait` succeeds.
- The image compose builds for okuri runs `okuri serve` as a non-root user.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from jsonschema.validators import validator_for

from okuri.server.settings import OPTIONS, Settings, parse_address

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "compose.yaml"
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
SCHEMA_PACKAGE = "check_jsonschema.builtin_schemas.vendor"
SCHEMA_FILE = "compose-spec.json"
OKURI_VARIABLES = frozenset(option.env for option in OPTIONS)
LOOPBACK = "127.0.0.1"
PROFILES = ("celery", "laravel")


def compose_schema() -> dict[str, Any]:
    try:
        text = resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_FILE).read_text()
    except (ModuleNotFoundError, FileNotFoundError) as err:
        pytest.fail(
            f"the Compose Specification schema ({SCHEMA_PACKAGE}/{SCHEMA_FILE}) cannot be "
            f"loaded: {err!r}; install the dev dependencies (make install)",
            pytrace=False,
        )
    schema: dict[str, Any] = json.loads(text)
    assert schema.get("title") == "Compose Specification", schema.get("title")
    return schema


def schema_errors(document: Any) -> list[str]:
    schema = compose_schema()
    validator_class = validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    return [
        f"{'/'.join(str(p) for p in error.absolute_path) or '(top)'}: {error.message}"
        for error in validator.iter_errors(document)
    ]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return document


def environment(service: dict[str, Any]) -> dict[str, str]:
    """A service's environment as a dict, from either the mapping or the list form."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def published_ports(service: dict[str, Any]) -> list[tuple[str | None, int, int]]:
    """(host ip or None for every interface, host port, container port) for each published port."""
    out = []
    for port in service.get("ports", []):
        if isinstance(port, dict):
            host_ip = port.get("host_ip")
            out.append((host_ip, int(port["published"]), int(port["target"])))
            continue
        spec = str(port).split("/")[0]
        parts = spec.rsplit(":", 2)
        assert len(parts) == 3, f"port {port!r} does not name its host address"
        out.append((parts[0] or None, int(parts[1]), int(parts[2])))
    return out


# --- the Dockerfile --------------------------------------------------------------------------


@dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)


def dockerfile_stages(text: str) -> list[Stage]:
    """The stages of a Dockerfile, each with its (INSTRUCTION, arguments), continuations joined."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        lines.append(pending + line)
        pending = ""
    stages: list[Stage] = []
    for line in lines:
        instruction, _, args = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            words = args.split()
            name = words[2] if len(words) == 3 and words[1].lower() == "as" else str(len(stages))
            stages.append(Stage(name, words[0]))
        else:
            assert stages, f"{instruction} before the first FROM"
            stages[-1].instructions.append((instruction, args.strip()))
    return stages


def effective(stages: list[Stage], name: str) -> list[tuple[str, str]]:
    """A stage's instructions with those of the stages it is built FROM, in order."""
    by_name = {s.name: s for s in stages}
    stage = by_name[name]
    inherited = effective(stages, stage.base) if stage.base in by_name else []
    return inherited + stage.instructions


def root_image(stages: list[Stage], name: str) -> str:
    """The image a stage is ultimately built on, following FROM through earlier stages."""
    by_name = {s.name: s for s in stages}
    base = by_name[name].base
    return root_image(stages, base) if base in by_name else base


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def last(instructions: list[tuple[str, str]], name: str) -> str | None:
    found = [args for instruction, args in instructions if instruction == name]
    return found[-1] if found else None


def dockerfile_env(instructions: list[tuple[str, str]]) -> dict[str, str]:
    env = {}
    for instruction, args in instructions:
        if instruction == "ENV":
            for word in shlex.split(args):
                key, _, value = word.partition("=")
                env[key] = value
    return env


# --- tests -----------------------------------------------------------------------------------


def test_compose_file_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    errors = schema_errors(compose)
    assert not errors, "compose.yaml breaks the Compose Specification:\n" + "\n".join(errors)


def test_compose_schema_rejects_a_misspelt_healthcheck(compose: dict[str, Any]) -> None:
    broken = copy.deepcopy(compose)
    broken["services"]["okuri"]["healthcheck"]["intervall"] = "2s"
    assert any("intervall" in e for e in schema_errors(broken))


def test_every_okuri_variable_compose_sets_is_one_okuri_reads(compose: dict[str, Any]) -> None:
    unknown = {
        f"{name}: {key}"
        for name, service in compose["services"].items()
        for key in environment(service)
        if key.startswith("OKURI_") and key not in OKURI_VARIABLES
    }
    assert not unknown, f"okuri reads no such variables (settings.OPTIONS): {sorted(unknown)}"


def test_the_okuri_service_environment_loads_as_okuri_settings(compose: dict[str, Any]) -> None:
    env = environment(compose["services"]["okuri"])
    settings = Settings.load(env)
    assert settings.uses_s3
    endpoint = urlsplit(settings.s3_endpoint or "")
    assert endpoint.hostname == "minio" and "minio" in compose["services"]
    init = compose["services"]["minio-init"]
    assert init["command"][-1].endswith("/" + (settings.s3_bucket or "")), init["command"]
    assert settings.listen.host is None or settings.listen.host == "0.0.0.0"
    assert settings.health_listen.host is None or settings.health_listen.host == "0.0.0.0"


def test_okuri_publishes_sqs_and_health_on_host_loopback_only(compose: dict[str, Any]) -> None:
    okuri = compose["services"]["okuri"]
    env = environment(okuri)
    listen = parse_address(env["OKURI_LISTEN"])
    health = parse_address(env["OKURI_HEALTH_LISTEN"])
    assert sorted(published_ports(okuri)) == sorted(
        [(LOOPBACK, 8080, listen.port), (LOOPBACK, 9090, health.port)]
    )
    for name, service in compose["services"].items():
        for host_ip, published, _ in published_ports(service):
            assert host_ip == LOOPBACK, f"{name} publishes {published} beyond the loopback"


def test_okuri_healthcheck_probes_readyz_with_python(compose: dict[str, Any]) -> None:
    okuri = compose["services"]["okuri"]
    health = parse_address(environment(okuri)["OKURI_HEALTH_LISTEN"])
    test = okuri["healthcheck"]["test"]
    assert test[0] == "CMD" and test[1] == "python", test
    probe = " ".join(test[2:])
    assert re.search(rf"http://127\.0\.0\.1:{health.port}/readyz\b", probe), probe
    assert "curl" not in probe and "wget" not in probe


def test_up_wait_has_something_to_wait_for_on_every_default_service(
    compose: dict[str, Any],
) -> None:
    """`up -d --wait` waits for healthchecks, and counts a one-shot service's exit as success
    only when a long-running service depends on it completing."""
    default = {n: s for n, s in compose["services"].items() if not s.get("profiles")}
    completed = {
        dep
        for s in default.values()
        for dep, how in (s.get("depends_on") or {}).items()
        if isinstance(how, dict) and how.get("condition") == "service_completed_successfully"
    }
    assert set(default) == {"okuri", "minio", "minio-init"}
    for name, service in default.items():
        if name in completed:
            assert "healthcheck" not in service, f"{name} is one-shot yet has a healthcheck"
        else:
            assert service["healthcheck"]["test"], f"{name} has no healthcheck"
    assert compose["services"]["minio"]["healthcheck"]["test"][:2] == ["CMD", "mc"]


def test_profiles_run_the_celery_and_laravel_smoke_tests(compose: dict[str, Any]) -> None:
    profiled = {
        profile: sorted(
            n for n, s in compose["services"].items() if profile in s.get("profiles", [])
        )
        for profile in PROFILES
    }
    assert profiled == {
        "celery": ["celery-smoke", "celery-worker"],
        "laravel": ["laravel-smoke"],
    }
    stages = {s.name for s in dockerfile_stages(DOCKERFILE.read_text())}
    for name in profiled["celery"]:
        assert compose["services"][name]["build"]["target"] in stages
    laravel = ROOT / compose["services"]["laravel-smoke"]["build"]["context"]
    assert (laravel / "Dockerfile").is_file() and (laravel / "artisan").is_file()
    for name in (*profiled["celery"], *profiled["laravel"]):
        depends = compose["services"][name]["depends_on"]
        okuri_dependency = depends.get("okuri") or depends.get("celery-worker")
        assert okuri_dependency, f"{name} does not wait for okuri"


def test_the_okuri_image_runs_okuri_serve_as_a_non_root_user(compose: dict[str, Any]) -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    target = compose["services"]["okuri"]["build"].get("target", stages[-1].name)
    assert target == stages[-1].name, "okuri must be the default (last) stage"
    instructions = effective(stages, target)
    entrypoint = last(instructions, "ENTRYPOINT")
    cmd = last(instructions, "CMD")
    command = (exec_form(entrypoint) if entrypoint else []) + (exec_form(cmd) if cmd else [])
    assert command == ["okuri", "serve"]
    user = last(instructions, "USER")
    assert user is not None, "the image runs as root: no USER"
    uid = user.split(":")[0]
    assert uid not in ("root", "0"), f"USER {user} is root"
    assert re.fullmatch(r"python:[0-9.]+-slim", root_image(stages, target)), "not a slim Python"


def test_dockerfile_sets_only_okuri_variables_okuri_reads() -> None:
    stages = dockerfile_stages(DOCKERFILE.read_text())
    for stage in stages:
        for key in dockerfile_env(stage.instructions):
            assert not key.startswith("OKURI_") or key in OKURI_VARIABLES, key


def test_dockerignore_lets_in_everything_the_dockerfile_copies() -> None:
    allowed = [
        line[1:]
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.startswith("!") and line[1:].strip()
    ]
    for stage in dockerfile_stages(DOCKERFILE.read_text()):
        for instruction, args in stage.instructions:
            if instruction != "COPY" or "--from=" in args:
                continue
            *sources, _ = [w for w in args.split() if not w.startswith("--")]
            for source in sources:
                assert (ROOT / source).exists(), source
                assert any(
                    source == a or source.startswith(a.rstrip("/") + "/") for a in allowed
                ), f"{source} is copied but .dockerignore keeps it out of the context"


def test_compose_warns_that_its_credentials_are_for_development_only() -> None:
    header = COMPOSE.read_text().split("\nservices:", 1)[0]
    assert "DEVELOPMENT CREDENTIALS" in header and "Never reuse them" in header
