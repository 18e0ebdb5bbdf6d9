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
- The image compose builds for okuri runs `okuri serve` as a non-root user, on the base image
  the build argument OKURI_BASE_IMAGE names (slim Python unless a build says otherwise).
- The compose file `make compose-test` boots (tests/compose/stack.py) is compose.yaml's okuri and
  Celery worker on moto instead of MinIO, valid, on loopback ports only; the Debian mirror its
  base image comes from is read from the machine's apt sources (tests/compose/images.py).
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
from tests.compose import images as compose_images
from tests.compose import stack as compose_stack

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
        elif instruction == "ARG" and not stages:
            continue  # a global build argument, for FROM lines: global_args()
        else:
            assert stages, f"{instruction} before the first FROM"
            stages[-1].instructions.append((instruction, args.strip()))
    return stages


def global_args(text: str) -> dict[str, str | None]:
    """The build arguments declared before the first FROM, with their defaults."""
    out: dict[str, str | None] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if line.upper().startswith("FROM "):
            break
        if line.upper().startswith("ARG "):
            name, eq, default = line[4:].strip().partition("=")
            out[name] = default if eq else None
    return out


def resolve(image: str, args: dict[str, str | None]) -> str:
    """A FROM image with `${NAME}` and `$NAME` replaced by the global arguments' defaults."""

    def default(match: re.Match[str]) -> str:
        value = args.get(match.group(1) or match.group(2))
        assert value is not None, f"{match.group(0)} has no default"
        return value

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", default, image)


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
    assert compose["services"]["celery-smoke"]["depends_on"]["celery-worker"] == {
        "condition": "service_healthy"
    }


def test_the_celery_worker_is_healthy_once_smoke_app_says_it_consumes(
    compose: dict[str, Any],
) -> None:
    """smoke_app touches SMOKE_READY_FILE on Celery's worker_ready; the healthcheck reads it."""
    worker = compose["services"]["celery-worker"]
    ready_file = environment(worker)["SMOKE_READY_FILE"]
    test = worker["healthcheck"]["test"]
    assert test[:2] == ["CMD", "python"] and repr(ready_file) in test[-1], test
    smoke_app = (ROOT / "tests" / "smoke" / "celery" / "smoke_app.py").read_text()
    assert "@worker_ready.connect" in smoke_app
    assert 'os.environ.get("SMOKE_READY_FILE")' in smoke_app


def test_the_base_image_is_a_build_argument_defaulting_to_slim_python() -> None:
    text = DOCKERFILE.read_text()
    stages = dockerfile_stages(text)
    assert global_args(text) == {"OKURI_BASE_IMAGE": "python:3.12-slim"}
    roots = {root_image(stages, stage.name) for stage in stages}
    assert roots == {"${OKURI_BASE_IMAGE}"}, roots


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
    image = resolve(root_image(stages, target), global_args(DOCKERFILE.read_text()))
    assert re.fullmatch(r"python:[0-9.]+-slim", image), f"not a slim Python: {image}"


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


# --- the compose file of `make compose-test` (tests/compose) ----------------------------------

IMAGES = compose_images.Images(
    base="localhost/test/python", okuri="localhost/test/okuri", celery="localhost/test/celery",
    s3="localhost/test/s3",
)  # fmt: skip
PORTS = compose_stack.Ports(sqs=18080, health=19090, s3=19000)


@pytest.fixture
def stack_file(compose: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    return compose_stack.stack_document(
        copy.deepcopy(compose), "okuri-unit", IMAGES, PORTS, tmp_path / "records"
    )


def test_the_test_stack_follows_the_compose_specification(stack_file: dict[str, Any]) -> None:
    errors = schema_errors(stack_file)
    assert not errors, "the test stack breaks the Compose Specification:\n" + "\n".join(errors)
    assert set(stack_file["services"]) == set(compose_stack.SERVICES)


def test_the_test_stack_runs_compose_yaml_okuri_and_worker_on_moto_instead_of_minio(
    compose: dict[str, Any], stack_file: dict[str, Any], tmp_path: Path
) -> None:
    services = stack_file["services"]
    assert "minio" not in yaml.safe_dump(stack_file).lower()
    for name, changed in (("okuri", set()), ("celery-worker", {"SMOKE_RECORD_DIR"})):
        theirs, ours = environment(compose["services"][name]), environment(services[name])
        assert set(ours) == set(theirs), name
        differ = {key for key in ours if ours[key] != theirs[key]}
        assert differ <= set(compose_stack.S3_ENVIRONMENT) | changed, (name, differ)
        assert {k: v for k, v in ours.items() if k in compose_stack.S3_ENVIRONMENT} == {
            k: v for k, v in compose_stack.S3_ENVIRONMENT.items() if k in ours
        }
    assert services["okuri"]["image"] == IMAGES.okuri
    assert services["celery-worker"]["image"] == IMAGES.celery
    assert services["s3"]["image"] == services["s3-init"]["image"] == IMAGES.s3
    bucket = environment(services["okuri"])["OKURI_S3_BUCKET"]
    assert services["s3-init"]["command"][-2:] == [compose_stack.S3_URL, bucket]
    assert environment(services["celery-worker"])["SMOKE_S3_BUCKET"] == bucket
    assert services["celery-worker"]["volumes"] == [
        f"{tmp_path / 'records'}:{compose_stack.RECORD_DIR}"
    ]
    names = {service["container_name"] for service in services.values()}
    assert names == {f"okuri-unit-{name}" for name in compose_stack.SERVICES}


def test_the_test_stack_publishes_its_free_ports_on_loopback_only(
    compose: dict[str, Any], stack_file: dict[str, Any]
) -> None:
    published = {
        name: sorted(published_ports(service)) for name, service in stack_file["services"].items()
    }
    okuri_targets = sorted(target for _, _, target in published_ports(compose["services"]["okuri"]))
    assert published["okuri"] == sorted(
        [(LOOPBACK, PORTS.sqs, okuri_targets[0]), (LOOPBACK, PORTS.health, okuri_targets[1])]
    )
    assert published["s3"] == [(LOOPBACK, PORTS.s3, compose_stack.S3_PORT)]
    assert published["s3-init"] == published["celery-worker"] == []


def test_the_test_stack_healthchecks_are_compose_yaml_checks_in_shell_form(
    compose: dict[str, Any], stack_file: dict[str, Any]
) -> None:
    """podman-compose 1.0.3 misquotes list-form checks; the shell form runs the same argv."""
    for name in ("okuri", "celery-worker"):
        theirs = compose["services"][name]["healthcheck"]
        ours = stack_file["services"][name]["healthcheck"]
        assert ours["test"][0] == "CMD-SHELL" and len(ours["test"]) == 2
        assert shlex.split(ours["test"][1]) == theirs["test"][1:]
        assert {k: v for k, v in ours.items() if k != "test"} == {
            k: v for k, v in theirs.items() if k != "test"
        }
    assert stack_file["services"]["s3"]["healthcheck"]["test"][0] == "CMD-SHELL"
    assert "healthcheck" not in stack_file["services"]["s3-init"]


def test_a_minio_setting_the_test_stack_cannot_replace_fails_its_generation(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    grown = copy.deepcopy(compose)
    grown["services"]["celery-worker"]["environment"]["SMOKE_MIRROR"] = "http://minio:9000"
    with pytest.raises(ValueError, match="SMOKE_MIRROR"):
        compose_stack.stack_document(grown, "okuri-unit", IMAGES, PORTS, tmp_path)


ONE_LINE_SOURCES = """\
# deb http://commented.example/debian trixie main
deb http://security.example/debian-security trixie-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://one.example/debian/ trixie main
"""
DEB822_SOURCES = """\
Types: deb
# http://snapshot.example/archive/debian/20250520T000000Z
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
Enabled: no

Types: deb-src deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def test_the_base_image_mirror_is_the_one_the_apt_sources_name_for_the_release() -> None:
    sources = {"debian.sources": DEB822_SOURCES, "sources.list": ONE_LINE_SOURCES}
    assert compose_images.debian_mirror(sources, "bookworm") == "http://mirror.example/debian"
    assert compose_images.debian_mirror(sources, "trixie") == "http://one.example/debian"
    with pytest.raises(compose_images.ContainersUnavailable, match="sid"):
        compose_images.debian_mirror(sources, "sid")


def test_the_release_is_read_from_os_release() -> None:
    text = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n'
    assert compose_images.os_codename(text) == "bookworm"
    with pytest.raises(compose_images.ContainersUnavailable, match="VERSION_CODENAME"):
        compose_images.os_codename("ID=alpine\n")


def test_builds_trust_the_ca_bundle_the_environment_names(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.pem"
    bundle.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    assert compose_images.ca_bundle({"SSL_CERT_FILE": str(bundle)}) == bundle.read_bytes()
    assert compose_images.ca_bundle({"PIP_CERT": str(bundle), "SSL_CERT_FILE": "/nonexistent"}) == (
        bundle.read_bytes()
    )
    assert compose_images.ca_bundle({"SSL_CERT_FILE": str(tmp_path / "missing")}) == b""
    assert compose_images.ca_bundle({}) == b""


def test_an_unknown_engine_choice_is_refused_saying_what_to_choose() -> None:
    with pytest.raises(compose_images.ContainersUnavailable, match="docker or podman"):
        compose_images.detect_engine({"OKURI_COMPOSE_ENGINE": "lxc"})


def test_an_image_build_shows_its_progress_and_keeps_its_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first `make compose-test` builds images for minutes: each build's steps reach the
    terminal past pytest's capture, and all of its output reaches the log."""
    shown: list[str] = []
    monkeypatch.setattr(compose_images, "say", shown.append)
    engine = compose_images.Engine("podman", "podman-compose")
    monkeypatch.setattr(compose_images.Engine, "image_id", lambda self, tag: None)
    fake = tmp_path / "podman"
    fake.write_text(
        "#!/bin/sh\necho 'STEP 1/2: FROM base'\necho 'noise'\necho '[okuri] STEP 2/2: RUN x'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    log = tmp_path / "build.log"
    compose_images.build(engine, "localhost/x", tmp_path / "Containerfile", tmp_path, log)
    assert shown[0].startswith("building localhost/x (first build: minutes; log: ")
    assert shown[1:3] == [
        "  localhost/x: STEP 1/2: FROM base",
        "  localhost/x: [okuri] STEP 2/2: RUN x",
    ]
    assert re.fullmatch(r"localhost/x: done in \d+ s", shown[3]), shown
    assert "noise" in log.read_text()
