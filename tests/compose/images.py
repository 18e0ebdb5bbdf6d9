"""The container engine and the images of `make compose-test`, built only when their inputs change.

Two engines: a running Docker engine with `docker compose`, else rootful podman with
podman-compose (what Debian packages; `make compose-test` installs it). With podman no registry
is assumed: the Python base that okuri's Dockerfile takes as OKURI_BASE_IMAGE is debootstrapped
from the mirror the machine's own apt sources name (read here, at run time) and imported, once
per Debian release; everything above it is an ordinary build whose layers the engine caches, so a
warm run rebuilds nothing and a change to okuri rebuilds only its last layers. An image a rebuild
replaces under one of our tags is removed; nothing else is.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PREFIX = "localhost/okuri-compose-test"  # every image this module builds is tagged under it
CONTAINERS_CONF = HERE / "containers.conf"
DEBIAN_PACKAGES = ("python3", "python3-venv", "passwd", "ca-certificates")
APT_SOURCES = Path("/etc/apt")
OS_RELEASE = Path("/etc/os-release")
CA_VARIABLES = ("PIP_CERT", "SSL_CERT_FILE")  # the CA bundle pip must trust, when one is named
PROBE_S = 30.0
BUILD_S = 900.0
DEBOOTSTRAP_S = 900.0


STEP_LINE = re.compile(r"^(\[[^]]+\] )?STEP \d+/\d+: ")  # podman's and buildah's step headers


def say(text: str) -> None:
    """Progress for the person waiting (a first build takes minutes, and a silent one looks
    hung): to stderr, which the compose fixture leaves uncaptured while images build."""
    sys.stderr.write(f"compose-test: {text}\n")
    sys.stderr.flush()


def run_logged(command: list[str], log: Path, timeout_s: float, label: str) -> int:
    """Run `command` with its output appended to `log`, echoing the build's step lines."""
    started = time.monotonic()
    with open(log, "ab") as out:
        out.write(f"\n$ {' '.join(command)}\n".encode())
        out.flush()
        proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                out.write(raw)
                line = raw.decode(errors="replace").rstrip()
                if STEP_LINE.match(line):
                    say(f"  {label}: {line[:110]}")
            code = proc.wait()
        finally:
            timer.cancel()
    say(
        f"{label}: {'done' if code == 0 else f'failed (exit {code})'} in "
        f"{time.monotonic() - started:.0f} s"
    )
    return code


class ContainersUnavailable(Exception):
    """Containers cannot be built or run here; the message says why and what would fix it."""


@dataclass(frozen=True)
class Engine:
    name: str  # "docker" or "podman": the command that builds, inspects and removes
    compose: str  # the compose command line, for pytest-docker's docker_compose_command

    def run(self, *args: str, timeout_s: float = PROBE_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.name, *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            check=False,
        )

    def image_id(self, tag: str) -> str | None:
        done = self.run("image", "inspect", "--format", "{{.Id}}", tag)
        return (done.stdout.strip() or None) if done.returncode == 0 else None


@dataclass(frozen=True)
class Images:
    base: str | None  # OKURI_BASE_IMAGE; None leaves the Dockerfile's default
    okuri: str
    celery: str
    s3: str


def _answers(*command: str) -> bool:
    try:
        done = subprocess.run(command, capture_output=True, timeout=PROBE_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def detect_engine(env: Mapping[str, str] = os.environ) -> Engine:
    """Docker when its engine answers, else podman; OKURI_COMPOSE_ENGINE=docker|podman chooses."""
    wanted = env.get("OKURI_COMPOSE_ENGINE", "")
    if wanted not in ("", "docker", "podman"):
        raise ContainersUnavailable(f"OKURI_COMPOSE_ENGINE={wanted!r}: say docker or podman")
    if wanted != "podman" and shutil.which("docker"):
        if _answers("docker", "info") and _answers("docker", "compose", "version"):
            return Engine("docker", "docker compose")
        if wanted == "docker":
            raise ContainersUnavailable("`docker info` or `docker compose version` fails")
    missing = [tool for tool in ("podman", "podman-compose") if not shutil.which(tool)]
    if missing:
        raise ContainersUnavailable(
            f"no Docker engine answers and {' and '.join(missing)} is not installed; "
            "`make compose-test` installs podman with apt-get (as root or with sudo)"
        )
    if os.geteuid() != 0:
        raise ContainersUnavailable(
            "the compose tests run rootful podman (its base image is debootstrapped and "
            "imported as root): run them as root, for example `sudo make compose-test`"
        )
    return Engine("podman", "podman-compose")


# --- the Debian base, from the machine's own apt sources --------------------------------------


def os_codename(os_release: str) -> str:
    found = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?$", os_release, re.MULTILINE)
    if not found:
        raise ContainersUnavailable("/etc/os-release names no VERSION_CODENAME: not Debian?")
    return found.group(1)


def _one_line_sources(text: str) -> list[tuple[str, str]]:
    out = []
    for raw in text.splitlines():
        words = raw.split("#", 1)[0].split()
        if len(words) >= 3 and words[0] == "deb":
            words = words[1:]
            if words[0].startswith("["):  # options: [arch=amd64 signed-by=...]
                while words and not words[0].endswith("]"):
                    words = words[1:]
                words = words[1:]
            if len(words) >= 2:
                out.append((words[0], words[1]))
    return out


def _deb822_sources(text: str) -> list[tuple[str, str]]:
    out = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        key = ""
        for raw in stanza.splitlines():
            if raw.startswith("#"):
                continue
            if raw[:1].isspace() and key:
                fields[key] += " " + raw.strip()
            elif ":" in raw:
                key, _, value = raw.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        uris, suites = fields.get("uris", "").split(), fields.get("suites", "").split()
        out += [(uri, suite) for uri in uris for suite in suites]
    return out


def debian_mirror(sources: Mapping[str, str], codename: str) -> str:
    """The first archive that the apt sources (file name -> text) name for `codename` itself.

    Security and -updates suites live elsewhere or hold only updates; debootstrap wants the
    release's own archive."""
    for name, text in sources.items():  # in apt's order: sources.list, then sources.list.d
        entries = _deb822_sources(text) if name.endswith(".sources") else _one_line_sources(text)
        for uri, suite in entries:
            if suite == codename:
                return uri.rstrip("/")
    raise ContainersUnavailable(
        f"no apt source names the {codename} archive to debootstrap the base image from"
    )


def read_apt_sources(root: Path = APT_SOURCES) -> dict[str, str]:
    files = [root / "sources.list", *sorted((root / "sources.list.d").glob("*"))]
    return {
        path.name: path.read_text(errors="replace")
        for path in files
        if path.is_file() and path.suffix in (".list", ".sources")
    }


def _check(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        output = (done.stdout + done.stderr).strip()[-3000:]
        raise ContainersUnavailable(f"{what} failed (exit {done.returncode}):\n{output}")


def ensure_debian(engine: Engine, log: Path) -> str:
    """localhost/.../debian:<codename>, debootstrapped (minbase plus DEBIAN_PACKAGES) if missing."""
    codename = os_codename(OS_RELEASE.read_text())
    tag = f"{PREFIX}/debian:{codename}"
    if engine.image_id(tag):
        return tag
    if not shutil.which("debootstrap"):
        raise ContainersUnavailable("debootstrap is not installed (apt-get install debootstrap)")
    mirror = debian_mirror(read_apt_sources(), codename)
    with tempfile.TemporaryDirectory(prefix="okuri-debootstrap-") as tmp:
        root = Path(tmp) / "root"
        command = [
            "debootstrap", "--variant=minbase", f"--include={','.join(DEBIAN_PACKAGES)}",
            codename, str(root), mirror,
        ]  # fmt: skip
        say(
            f"making the Debian {codename} base image with debootstrap (first run only; "
            f"several minutes; log: {log})"
        )
        code = run_logged(command, log, DEBOOTSTRAP_S, f"debootstrap {codename}")
        if code != 0:
            raise ContainersUnavailable(
                f"debootstrap {codename} from {mirror} failed (exit {code}); "
                f"see {log}:\n{log.read_text(errors='replace')[-3000:]}"
            )
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for item in (root / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        tar = subprocess.run(["tar", "-C", str(root), "-c", "."], capture_output=True, check=True)
        imported = subprocess.run(
            [engine.name, "import", "-", tag],
            input=tar.stdout,
            capture_output=True,
            timeout=BUILD_S,
            check=False,
        )
        if imported.returncode != 0:
            raise ContainersUnavailable(f"{engine.name} import failed: {imported.stderr!r}")
    return tag


def ca_bundle(env: Mapping[str, str] = os.environ) -> bytes:
    """The CA bundle pip inside a build must trust: the file PIP_CERT or SSL_CERT_FILE names."""
    for name in CA_VARIABLES:
        path = env.get(name)
        if path and Path(path).is_file():
            return Path(path).read_bytes()
    return b""


# --- builds -----------------------------------------------------------------------------------


def build(
    engine: Engine,
    tag: str,
    containerfile: Path,
    context: Path,
    log: Path,
    target: str | None = None,
    args: Mapping[str, str] | None = None,
) -> str:
    """Build `tag` with the engine's layer cache; remove the image it replaces, if any."""
    before = engine.image_id(tag)
    command = [engine.name, "build", "-t", tag, "-f", str(containerfile)]
    if target:
        command += ["--target", target]
    for key, value in (args or {}).items():
        command += ["--build-arg", f"{key}={value}"]
    say(
        f"building {tag} ({'cached layers are reused' if before else 'first build: minutes'}; "
        f"log: {log})"
    )
    if run_logged([*command, str(context)], log, BUILD_S, tag) != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise ContainersUnavailable(f"building {tag} failed; see {log}:\n{tail}")
    after = engine.image_id(tag)
    if before and after != before:
        engine.run("rmi", before)  # refused, harmlessly, while anything still uses it
    return tag


def python_base(engine: Engine, work: Path, log: Path) -> str:
    debian = ensure_debian(engine, log)
    context = work / "python-base"
    context.mkdir(parents=True, exist_ok=True)
    shutil.copy(HERE / "python-base.Containerfile", context / "Containerfile")
    (context / "build-ca.crt").write_bytes(ca_bundle())
    tag = f"{PREFIX}/python:{debian.rsplit(':', 1)[1]}"
    containerfile = context / "Containerfile"
    return build(engine, tag, containerfile, context, log, args={"DEBIAN_IMAGE": debian})


def base_image(engine: Engine, work: Path, log: Path) -> str | None:
    """The Python image every build starts from: with podman, one built here (no registry is
    assumed); with Docker, None, which leaves each Dockerfile's own (official) image."""
    return python_base(engine, work, log) if engine.name == "podman" else None


def build_images(engine: Engine, base: str | None, work: Path, log: Path) -> Images:
    """Every image the test stack runs, on `base` (base_image)."""
    args = {"OKURI_BASE_IMAGE": base} if base else {}
    dockerfile = ROOT / "Dockerfile"
    s3_context = work / "s3"
    s3_context.mkdir(parents=True, exist_ok=True)
    return Images(
        base=base,
        okuri=build(engine, f"{PREFIX}/okuri", dockerfile, ROOT, log, "okuri", args),
        celery=build(engine, f"{PREFIX}/celery", dockerfile, ROOT, log, "celery-smoke", args),
        s3=build(engine, f"{PREFIX}/s3", HERE / "s3.Containerfile", s3_context, log, None, args),
    )


def check_runs(engine: Engine, image: str) -> None:
    """Fail, saying why, when the engine cannot start a container at all."""
    done = engine.run("run", "--rm", "--network", "none", image, "true", timeout_s=120)
    _check(done, f"`{engine.name} run {image} true` (can containers run here?)")


def use_project_containers_conf(env: MutableMapping[str, str]) -> None:
    """Point podman at tests/compose/containers.conf unless the caller already names one."""
    env.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
