"""How okuri installs: its distribution name, and extras that resolve at once without breaking
okuri's own S3 adapter.

The README's install lines rest on these: `pip install -e '.[clients]'` must never take a boto3
whose botocore aiobotocore refuses (pip then replaces okuri's botocore and prints a conflict), and
must not leave pip backtracking through boto3 releases.
"""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from okuri.server.cli import DISTRIBUTION, FOREIGN_DISTRIBUTION

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirement(name: str, lines: list[str]) -> Requirement:
    [found] = [r for r in map(Requirement, lines) if r.name == name]
    return found


def aiobotocore_botocore() -> SpecifierSet:
    """The botocore band the installed aiobotocore accepts."""
    lines = importlib.metadata.requires("aiobotocore") or []
    return requirement("botocore", [ln for ln in lines if "extra ==" not in ln]).specifier


def band(spec: SpecifierSet) -> list[Version]:
    """Every patch release a `>=a.b.c,<a.b.d` specifier admits (the shape of the boto3 bound)."""
    [low] = [Version(s.version) for s in spec if s.operator == ">="]
    [high] = [Version(s.version) for s in spec if s.operator == "<"]
    assert (low.major, low.minor) == (high.major, high.minor), spec
    return [Version(f"{low.major}.{low.minor}.{p}") for p in range(low.micro, high.micro)]


def test_the_distribution_name_is_not_the_one_pypi_gave_another_project() -> None:
    assert PROJECT["name"] == DISTRIBUTION != FOREIGN_DISTRIBUTION
    assert importlib.metadata.version(DISTRIBUTION) == PROJECT["version"]


def test_the_clients_extra_bounds_boto3_inside_what_aiobotocore_accepts() -> None:
    """boto3 a.b.c needs botocore a.b.c or newer within a.b: every boto3 the extra admits must
    be a botocore that the installed aiobotocore accepts, or pip replaces okuri's botocore."""
    boto3 = requirement("boto3", PROJECT["optional-dependencies"]["clients"]).specifier
    accepted = aiobotocore_botocore()
    admitted = band(boto3)
    assert admitted, boto3
    outside = [str(v) for v in admitted if v not in accepted]
    assert not outside, f"boto3 {boto3} admits {outside}, outside aiobotocore's botocore{accepted}"


def test_the_installed_clients_agree_with_okuri() -> None:
    """What this environment (installed through the extras) holds satisfies both sides."""
    botocore = Version(importlib.metadata.version("botocore"))
    assert botocore in aiobotocore_botocore()
    boto3 = requirement("boto3", PROJECT["optional-dependencies"]["clients"]).specifier
    assert Version(importlib.metadata.version("boto3")) in boto3


def test_the_dev_and_celery_extras_take_the_clients_bound() -> None:
    """boto3 comes into the other extras only through `clients`, so one bound holds for all."""
    extras = PROJECT["optional-dependencies"]
    for name in ("celery", "dev"):
        wanted = [Requirement(r) for r in extras[name]]
        assert any(r.name == DISTRIBUTION and "clients" in r.extras for r in wanted), name
        assert not any(r.name == "boto3" for r in wanted), name


def cli(args: list[str], extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if extra_path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), str(ROOT)])
    probe = "import sys; from okuri.server.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_okuri_warns_when_the_unrelated_okuri_distribution_is_installed_too(
    tmp_path: Path,
) -> None:
    """Both install the import package `okuri`: the command says so, and how to recover."""
    info = tmp_path / "okuri-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: okuri\nVersion: 0.0.0\n")
    warned = cli(["--version"], tmp_path)
    assert warned.returncode == 0, warned.stderr
    assert "the unrelated distribution `okuri` 0.0.0 is installed beside okuri-queue" in (
        warned.stderr
    )
    assert "pip uninstall okuri okuri-queue" in warned.stderr
    quiet = cli(["--version"])
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_only_okuri_ships_not_the_tools_beside_it() -> None:
    """bench/, compat/ and tests/ stay in the checkout: the wheel holds okuri's packages only."""
    setuptools = pytest.importorskip("setuptools")
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    found = setuptools.find_packages(str(ROOT), include=find["find"]["include"])
    assert "okuri" in found and "okuri.server" in found
    assert [p for p in found if p != "okuri" and not p.startswith("okuri.")] == []


def test_the_wheel_ships_every_file_of_the_console() -> None:
    """okuri/console/static/ is package data: each file there is matched by a pattern pyproject
    gives setuptools, so the wheel serves the same console as a checkout."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = data["package-data"]["okuri.console"]
    static = ROOT / "okuri" / "console"
    shipped = {p for pattern in patterns for p in static.glob(pattern)}
    assert set((static / "static").iterdir()) == shipped
    assert {p.name for p in shipped} == {"index.html", "console.js", "console.css"}
