"""docs/native-api.md's examples run as a reader runs them: every block from the server's start
on (curl, the Python client over HTTP and gRPC, raw gRPC in Python, grpcurl), in the page's
order, in one shell, against ONE real `okuri serve` started with the page's admin key; only
the address is replaced. A block that only works on a fresh server (a queue an earlier block
made with other attributes) fails here as it fails for the reader. Then each block's output
is checked."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from okuri.native.openapi import DOCUMENT
from tests.readme import CLEAN_PATH, environment, run_shell
from tests.servers import start_server

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "native-api.md"
DOC_ADDRESS = "localhost:8080"
DOC_KEY = "change-me-to-a-long-random-key"
MARK = "=== "  # starts the line that names the block whose output follows
PY_END = "OKURI_DOC_PYTHON"  # ends a Python block's here-document

# Blocks a reader does not run against the server: why, by marker.
NOT_RUN = {
    "keys-file": "a keys file's contents, not a command",
    "native-serve": "the server itself: the test starts it, with this key",
    "native-bench": "a benchmark of minutes that starts servers of its own",
}


class Block(NamedTuple):
    marker: str  # the `<!-- name -->` right above it, "" for none
    lang: str
    text: str


def page_blocks() -> list[Block]:
    """Every fenced block of the page, in order."""
    found = re.finditer(
        r"^(?:<!-- ([\w-]+) -->\n)?```(\w*)\n(.*?)^```$", DOC.read_text(), re.S | re.M
    )
    return [Block(m.group(1) or "", m.group(2), m.group(3)) for m in found]


def reader_script(blocks: list[Block], address: str) -> str:
    """One shell session of `blocks`: shell blocks as typed, each Python block fed to python3
    (a reader saves and runs it), each block's output after a line naming it."""
    parts = []
    for b in blocks:
        parts.append(f"printf '\\n{MARK}%s\\n' {b.marker}")
        code = b.text.replace(DOC_ADDRESS, address)
        parts.append(code if b.lang == "bash" else f"python3 - <<'{PY_END}'\n{code}{PY_END}")
    return "\n".join(parts) + "\n"


def json_docs(text: str) -> list[Any]:
    """The JSON documents curl printed, back to back or a line each."""
    return [json.loads(line) for line in text.replace("}{", "}\n{").splitlines() if line.strip()]


def test_the_page_runs_top_to_bottom_on_one_server(tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)  # the dev tools put grpcurl beside python
    path = bin_dir + os.pathsep + CLEAN_PATH
    for tool in ("curl", "grpcurl"):
        if shutil.which(tool, path=path) is None:
            pytest.fail(f"{tool} is needed to run the documented examples (`make test` has it)")
    blocks = page_blocks()
    markers = [b.marker for b in blocks]
    serve = blocks[markers.index("native-serve")]
    assert f"OKURI_ADMIN_KEY={DOC_KEY} okuri serve" in serve.text
    ran = [b for b in blocks if b.lang in ("bash", "python") and b.marker not in NOT_RUN]
    assert all(b.marker for b in ran), "a runnable block without a marker is never checked"
    # Nothing a reader runs comes before the server it needs is started.
    assert markers.index(ran[0].marker) > markers.index("native-serve"), ran[0].marker
    assert [b.marker for b in ran] == [
        "native-env",
        "native-openapi",
        "native-produce",
        "native-lease",
        "native-redrive",
        "native-python",
        "native-python-async",
        "native-python-grpc",
        "native-grpc-python",
        "native-grpcurl",
    ]  # each checked below; a new block needs its checks
    for b in ran:
        if b.marker in ("native-env", "native-grpcurl") or b.lang == "python":
            assert DOC_ADDRESS in b.text and DOC_KEY in b.text, b.marker

    reader = tmp_path / "reader"
    reader.mkdir()
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_ADMIN_KEY": DOC_KEY}
    )
    try:
        env = {**environment(), "PATH": path, "PYTHONPATH": str(ROOT)}  # okuri as installed
        script = reader_script(ran, server.url.removeprefix("http://"))
        proc = run_shell(script, reader, timeout_s=120, env=env)
    finally:
        server.terminate()
    out: dict[str, str] = {}
    for part in proc.stdout.split("\n" + MARK)[1:]:
        marker, _, text = part.partition("\n")
        out[marker] = text
    assert proc.returncode == 0, f"{list(out)[-1:]} failed: " + proc.stderr + proc.stdout

    assert out["native-env"].strip() == "" and out["native-openapi"].strip() == ""
    assert json.loads((reader / "okuri-openapi.json").read_text()) == DOCUMENT

    created, produced = json_docs(out["native-produce"])
    assert created["attributes"]["dead_letter_queue"] == "emails-dlq"
    assert len(produced["ids"]) == 2
    completed, retried = json_docs(out["native-lease"])
    assert completed == {"results": ["completed"]}
    assert retried == {"results": ["dead"]}
    dlq, browsed, moved, emails = json_docs(out["native-redrive"])
    assert dlq["stats"]["visible"] == 1
    (dead,) = browsed["items"]
    assert (dead["body"], dead["dead_letter_source"], dead["state"]) == (
        "poison",
        "emails",
        "visible",
    )
    assert browsed["next"] is None
    assert moved == {"moved": 1}
    assert emails["stats"]["visible"] + emails["stats"]["leased"] == 1

    sync = out["native-python"].splitlines()
    assert sync[0] == "produced 3"
    assert sorted(sync[1:3]) == ["cat.jpg {'size': '128'} 1 ['completed']", "png ['retried']"]
    assert sync[3:] == ["delayed 1", "404 queue_not_found"]
    assert out["native-python-async"].splitlines() == [
        "broken.gif ['dead']",
        "redriven: 1",
        "['thumbnails', 'thumbnails-dlq']",
    ]
    *leased, refused = out["native-python-grpc"].splitlines()
    assert sorted(leased) == ["b'\\xff\\xd8' ['completed']", "b'a ' ['completed']"]
    assert refused == "413 too_large"

    raw_leased, raw_completed, raw_refused = out["native-grpc-python"].splitlines()
    assert raw_leased.startswith("b'\\x89PNG...' {'size': '128'} 1 ")
    assert raw_completed == "['completed']"
    assert raw_refused.startswith("StatusCode.NOT_FOUND ")
    assert raw_refused.endswith(" queue_not_found")

    services, rest = out["native-grpcurl"].split("{", 1)
    assert services.split() == [
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
        "okuri.api.v1.QueueService",
    ]
    health, queue, grpc_produced, grpc_leased = (
        json.loads(part) for part in ("{" + rest).replace("}\n{", "}\n\x00{").split("\x00")
    )
    assert health == {"status": "SERVING"}
    assert queue["name"] == "postcards"
    (item,) = grpc_leased["items"]
    assert item["id"] == grpc_produced["ids"][0]
    assert (item["payload"], item["headers"]) == ("aGVsbG8=", {"to": "ada"})
