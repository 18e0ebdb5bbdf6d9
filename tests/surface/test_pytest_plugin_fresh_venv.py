"""okuri's pytest plugin in a user's own environment: a new virtualenv, okuri installed from
this checkout as a package (not editable) with its `clients` extra, pytest and pytest-xdist,
and a user's test file run unchanged from a directory of its own, with nothing of the
repository on sys.path. Installing okuri must be all it takes for the fixtures to exist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readme import environment

ROOT = Path(__file__).resolve().parents[2]
INSTALL_S = 600.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_S + 300)]

USERS_TESTS = '''
import sys

import boto3
import okuri


def test_okuri_is_the_installed_package_not_a_checkout():
    assert okuri.__file__.startswith(sys.prefix), okuri.__file__


def test_a_message_round_trips_over_sqs(okuri_sqs):
    url = okuri_sqs.create_queue(QueueName="orders")["QueueUrl"]
    okuri_sqs.send_message(QueueUrl=url, MessageBody="order 7")
    [message] = okuri_sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert message["Body"] == "order 7"


def test_the_application_builds_its_own_client(okuri_env, okuri_client):
    boto3.client("sqs").create_queue(QueueName="made-by-the-app")
    assert okuri_client.list_queues().queues == ("made-by-the-app",)


def test_each_test_starts_empty(okuri_sqs):
    assert okuri_sqs.list_queues().get("QueueUrls", []) == []


def test_pytest_leaves_the_asserts_of_okuri_itself_alone(okuri_server):
    import okuri.server.app  # a plugin's distribution is rewritten unless the plugin says no

    assert not hasattr(okuri.server.app, "@py_builtins")
'''


def run(args: list[str], cwd: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        env=environment(),  # no PYTHONPATH, no AWS_* or OKURI_* of this process
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )


def test_a_users_suite_runs_with_only_okuri_installed(tmp_path: Path) -> None:
    source = tmp_path / "okuri-source"  # a copy: building a package writes into its source
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "okuri", source / "okuri", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], tmp_path, 120)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    installed = run([*pip, f"{source}[clients]", "pytest", "pytest-xdist"], tmp_path, INSTALL_S)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-4000:]
    project = tmp_path / "users-project"
    project.mkdir()
    (project / "test_app.py").write_text(USERS_TESTS)
    for extra in ([], ["-n", "2"]):
        done = run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], project, 300)
        assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
        assert "5 passed" in done.stdout, done.stdout
