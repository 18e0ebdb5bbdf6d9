"""docs/native-api.md's curl, Python client (over HTTP and over gRPC) and Python gRPC examples,
run verbatim in order against a real `okuri serve` started with the document's admin key; only
the address is replaced."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients import over
from tests.readme import block, environment, run_shell
from tests.servers import start_server

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "native-api.md"
DOC_URL = "http://localhost:8080"
DOC_GRPC_URL = "grpc://localhost:8080"
DOC_KEY = "change-me-to-a-long-random-key"


def test_the_curl_examples_run_as_written(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.fail("curl is needed to run the documented examples")
    assert f"OKURI_ADMIN_KEY={DOC_KEY} okuri serve" in DOC.read_text()
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": DOC_KEY}
    )
    try:
        env = block("native-env", DOC)
        assert DOC_URL in env and DOC_KEY in env
        outputs = {}
        script = env.replace(DOC_URL, server.url)
        for marker in ("native-produce", "native-lease", "native-redrive"):
            script += f"\necho '--- {marker}'\n" + block(marker, DOC)
        proc = run_shell(script, tmp_path, timeout_s=60, env=dict(os.environ))
        assert proc.returncode == 0, proc.stderr + proc.stdout
        for part in proc.stdout.split("--- ")[1:]:
            marker, _, text = part.partition("\n")
            outputs[marker] = [
                json.loads(line) for line in text.replace("}{", "}\n{").splitlines() if line.strip()
            ]
    finally:
        server.terminate()
    created, produced = outputs["native-produce"]
    assert created["attributes"]["dead_letter_queue"] == "emails-dlq"
    assert len(produced["ids"]) == 2
    completed, retried = outputs["native-lease"]
    assert completed == {"results": ["completed"]}
    assert retried == {"results": ["dead"]}
    dlq, moved, emails = outputs["native-redrive"]
    assert dlq["stats"]["visible"] == 1
    assert moved == {"moved": 1}
    assert emails["stats"]["visible"] + emails["stats"]["leased"] == 1


def test_the_python_client_examples_run_as_written(tmp_path: Path) -> None:
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": DOC_KEY}
    )
    printed: dict[str, list[str]] = {}
    try:
        for marker, url in (
            ("native-python", DOC_URL),
            ("native-python-async", DOC_URL),
            ("native-python-grpc", DOC_GRPC_URL),
        ):
            script = block(marker, DOC)
            assert url in script and DOC_KEY in script
            served = server.url if url == DOC_URL else over("grpc", server.url)
            done = subprocess.run(
                [sys.executable, "-c", script.replace(url, served)],
                cwd=tmp_path,
                env={**environment(), "PYTHONPATH": str(ROOT)},
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
            assert done.returncode == 0, done.stderr + done.stdout
            printed[marker] = done.stdout.splitlines()
    finally:
        server.terminate()
    sync = printed["native-python"]
    assert sync[0] == "produced 3"
    assert sorted(sync[1:3]) == ["cat.jpg {'size': '128'} 1 ['completed']", "png ['retried']"]
    assert sync[3:] == ["delayed 1", "404 queue_not_found"]
    assert printed["native-python-async"] == [
        "broken.gif ['dead']",
        "redriven: 1",
        "['thumbnails', 'thumbnails-dlq']",
    ]
    *leased, refused = printed["native-python-grpc"]
    assert sorted(leased) == ["b'\\xff\\xd8' ['completed']", "b'a ' ['completed']"]
    assert refused == "413 too_large"


def test_the_python_grpc_example_runs_as_written(tmp_path: Path) -> None:
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": DOC_KEY}
    )
    try:
        code = block("native-grpc-python", DOC)
        assert DOC_KEY in code and '"localhost:8080"' in code
        code = code.replace("localhost:8080", server.url.removeprefix("http://"))
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,  # where `okuri` imports from, as for an installed okuri
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    finally:
        server.terminate()
    assert proc.returncode == 0, proc.stderr + proc.stdout
    leased, completed, refused = proc.stdout.splitlines()
    assert leased.startswith("b'\\x89PNG...' {'size': '128'} 1 ")
    assert completed == "['completed']"
    assert refused.startswith("StatusCode.NOT_FOUND ") and refused.endswith(" queue_not_found")


def test_the_grpcurl_lines_run_as_written(tmp_path: Path) -> None:
    """With the real grpcurl (the dev tools install it beside the interpreter), which knows
    the service only by reflection."""
    bin_dir = str(Path(sys.executable).parent)
    if shutil.which("grpcurl", path=bin_dir + os.pathsep + os.environ.get("PATH", "")) is None:
        pytest.fail("grpcurl is needed: `make test` installs it with the dev tools")
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": DOC_KEY}
    )
    try:
        script = block("native-grpcurl", DOC)
        assert "localhost:8080" in script and DOC_KEY in script
        script = script.replace("localhost:8080", server.url.removeprefix("http://"))
        env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
        proc = run_shell(script, tmp_path, timeout_s=60, env=env)
    finally:
        server.terminate()
    assert proc.returncode == 0, proc.stderr + proc.stdout
    services, rest = proc.stdout.split("{", 1)
    assert services.split() == [
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "okuri.api.v1.QueueService",
    ]
    health, queue, produced, leased = (
        json.loads(part) for part in ("{" + rest).replace("}\n{", "}\n\x00{").split("\x00")
    )
    assert health == {"status": "SERVING"}
    assert queue["name"] == "postcards"
    (item,) = leased["items"]
    assert item["id"] == produced["ids"][0]
    assert (item["payload"], item["headers"]) == ("aGVsbG8=", {"to": "ada"})
