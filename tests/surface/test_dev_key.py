"""A server started as `make serve` starts it, with no native key configured, is ready for the
admin commands, the console and the native API on this machine: the published development key
works from loopback (127.0.0.1 and the rest of 127.0.0.0/8), over HTTP, gRPC (through the
main listener's splice) and the console, and the README's admin lines run as written. Once a
key is configured it is never accepted. (Refusals from other hosts are unit tests,
tests/unit/test_dev_key_peers.py: these servers take loopback traffic only.)"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from bench.launch import ROOT, clean_environ
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.principals.local import DEV_ADMIN_KEY
from tests.readme import block, environment, run_shell
from tests.servers import SQS_SECRET, ServerProcess, keyed_server, role_keys, start_server

CONFIGURED_ADMIN = "dev-key-test-configured-admin-0123"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """No OKURI_ADMIN_KEY, no OKURI_API_KEYS_FILE: the development key is in force."""
    tmp = tmp_path_factory.mktemp("dev-key")
    server = start_server(tmp, {"OKURI_DATA_DIR": str(tmp / "data")})
    yield server
    server.terminate()


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("configured")
    server = keyed_server(tmp, CONFIGURED_ADMIN, role_keys(tmp, roles=["readonly"]).file)
    yield server
    server.terminate()


def get(
    server: ServerProcess,
    path: str,
    key: str | None = DEV_ADMIN_KEY,
    source: str = "127.0.0.1",
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """GET `path` from the loopback address `source`; the status and the JSON answer."""
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5, source_address=(source, 0))
    auth = {} if key is None else {"Authorization": f"Bearer {key}"}
    try:
        conn.request("GET", path, headers={**auth, **(headers or {})})
        answer = conn.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        conn.close()


def code(answer: tuple[int, Any]) -> tuple[int, str]:
    return answer[0], answer[1]["error"]["code"]


def grpc_list(server: ServerProcess, *metadata: tuple[str, str]) -> Any:
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        return stub.ListQueues(pb.ListQueuesRequest(), metadata=metadata, timeout=10)


def grpc_refusal(server: ServerProcess, *metadata: tuple[str, str]) -> tuple[Any, str]:
    with pytest.raises(grpc.RpcError) as caught:
        grpc_list(server, *metadata)
    err: Any = caught.value
    return err.code(), dict(err.trailing_metadata() or ())["okuri-error-code"]


def okuri_cli(server: ServerProcess, *words: str) -> subprocess.CompletedProcess[str]:
    """`okuri WORDS...` from a shell that names the server and no key (this checkout's code)."""
    env = {**clean_environ(), "OKURI_URL": server.url}
    done = subprocess.run(
        [sys.executable, "-m", "okuri.server.cli", *words],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


# --- a server on development defaults ---------------------------------------------------------


def test_the_start_up_log_prints_the_published_key_and_no_secret(dev: ServerProcess) -> None:
    log = dev.log
    assert DEV_ADMIN_KEY in log and "It is no secret" in log and "from this machine only" in log
    assert SQS_SECRET not in log  # the SQS pair this server was given is a real secret
    assert "refuses every request" not in log


@pytest.mark.parametrize("source", ["127.0.0.1", "127.0.0.2", "127.45.6.7"])
def test_the_dev_key_opens_the_native_api_from_any_loopback_address(
    dev: ServerProcess, source: str
) -> None:
    status, doc = get(dev, "/v1/queues", source=source)
    assert status == 200 and "queues" in doc, doc


def test_without_a_key_or_with_another_the_answer_says_so(dev: ServerProcess) -> None:
    assert code(get(dev, "/v1/queues", key=None)) == (401, "missing_key")
    assert code(get(dev, "/v1/queues", key="not-the-dev-key-0123456789")) == (401, "bad_key")


def test_the_dev_key_through_a_proxy_is_refused_saying_how_to_configure_a_key(
    dev: ServerProcess,
) -> None:
    status, doc = get(dev, "/v1/queues", headers={"X-Forwarded-For": "192.0.2.7"})
    assert (status, doc["error"]["code"]) == (401, "dev_key_not_local")
    assert "OKURI_ADMIN_KEY" in doc["error"]["message"]


def test_the_dev_key_opens_grpc_through_the_splice_from_loopback(dev: ServerProcess) -> None:
    assert grpc_list(dev, ("authorization", f"Bearer {DEV_ADMIN_KEY}")) is not None
    refused = grpc_refusal(
        dev, ("authorization", f"Bearer {DEV_ADMIN_KEY}"), ("x-forwarded-for", "192.0.2.7")
    )
    assert refused == (grpc.StatusCode.UNAUTHENTICATED, "dev_key_not_local")


def test_the_console_is_served_and_logs_in_with_the_dev_key(dev: ServerProcess) -> None:
    page = dev.request("GET", "/console")
    assert page.status == 200 and b"Bearer key" in page.body
    status, doc = get(dev, "/console/api/keys", source="127.0.0.3")
    assert status == 200, doc
    assert {"id": "dev-key", "kind": "bearer (development, loopback only)", "role": "admin",
            "namespace": ""} in doc["keys"]  # fmt: skip


def test_the_admin_commands_need_no_key_on_this_machine(dev: ServerProcess) -> None:
    made = okuri_cli(dev, "queues", "create", "made-by-the-cli")
    assert made.returncode == 0, made.stderr
    listed = okuri_cli(dev, "queues", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {"name": "made-by-the-cli", "fifo": False} in json.loads(listed.stdout)


def test_the_readme_admin_lines_run_as_written(dev: ServerProcess, tmp_path: Path) -> None:
    """From a checkout whose `.venv` is this test's environment, with this checkout's code;
    only the address changes, by OKURI_URL (the README's server is on 127.0.0.1:8080)."""
    (tmp_path / ".venv").symlink_to(sys.prefix)
    env = {**environment(), "OKURI_URL": dev.url, "PYTHONPATH": str(ROOT)}
    done = run_shell(block("quickstart-admin"), tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    listed = [line.split() for line in done.stdout.splitlines()]
    assert ["readme-demo", "standard"] in listed and ["name", "readme-demo"] in listed, done.stdout


def test_the_admin_help_says_when_no_key_is_needed(dev: ServerProcess) -> None:
    helped = okuri_cli(dev, "queues", "--help")
    assert "development key" in " ".join(helped.stdout.split())


# --- a configured server never takes it --------------------------------------------------------


def test_a_configured_server_refuses_the_dev_key_everywhere(configured: ServerProcess) -> None:
    assert code(get(configured, "/v1/queues")) == (401, "bad_key")
    assert code(get(configured, "/console/api/keys")) == (401, "bad_key")
    refused = grpc_refusal(configured, ("authorization", f"Bearer {DEV_ADMIN_KEY}"))
    assert refused == (grpc.StatusCode.UNAUTHENTICATED, "bad_key")
    status, doc = get(configured, "/console/api/keys", key=CONFIGURED_ADMIN)
    assert status == 200 and all(k["id"] != "dev-key" for k in doc["keys"]), doc
    assert DEV_ADMIN_KEY not in configured.log and CONFIGURED_ADMIN not in configured.log


def test_the_admin_commands_say_the_dev_key_was_refused(configured: ServerProcess) -> None:
    refused = okuri_cli(configured, "queues", "list")
    assert refused.returncode == 1
    assert "refused the development key, sent because no key was given" in refused.stderr
    assert "pass --key or set OKURI_KEY" in refused.stderr


def test_with_auth_off_nothing_is_said_of_the_dev_key(tmp_path: Path) -> None:
    opened = start_server(tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_AUTH": "off"})
    try:
        assert get(opened, "/v1/queues", key=None)[0] == 200
        assert DEV_ADMIN_KEY not in opened.log
        assert opened.request("GET", "/console").status == 404  # no key to enter with
    finally:
        opened.terminate()
