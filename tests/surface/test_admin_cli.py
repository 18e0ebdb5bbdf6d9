"""The admin commands as an operator runs them: the installed `okuri` command, in a process of
its own, against a real `okuri serve` (`okuri queues ...`, through the native API) or on a keys
file (`okuri keys list|revoke|rotate`). Tables for people, `--json` for scripts, and one clear
line with a non-zero exit for a wrong key, a missing queue or a server that is not there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from bench.launch import free_port
from okuri.client import Client
from okuri.principals.keyfile import create_key
from tests.servers import ServerProcess, keyed_server

ADMIN = "admin-cli-test-admin-key-0123456789"
OKURI = str(Path(sys.executable).parent / "okuri")


class Keys(NamedTuple):
    file: Path
    producer: str


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    return Keys(path, create_key(str(path), "producer", "")[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, keys: Keys) -> Iterator[ServerProcess]:
    proc = keyed_server(tmp_path_factory.mktemp("admin-cli"), ADMIN, keys.file)
    yield proc
    proc.terminate()


class Run(NamedTuple):
    code: int
    out: str
    err: str

    def json(self) -> Any:
        assert self.code == 0, self.err
        return json.loads(self.out)


def okuri(*words: str, url: str | None = None, key: str | None = ADMIN, **env: str) -> Run:
    """`okuri WORDS...` as typed in a shell whose environment names the server and the key."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OKURI_")}
    if url is not None:
        environ["OKURI_URL"] = url
    if key is not None:
        environ["OKURI_ADMIN_KEY"] = key
    done = subprocess.run(
        [OKURI, *words], capture_output=True, text=True, timeout=60, env={**environ, **env}
    )
    assert "Traceback" not in done.stderr, done.stderr
    return Run(done.returncode, done.stdout, done.stderr)


def fresh() -> str:
    return f"cli-{uuid.uuid4().hex[:8]}"


def rows(table: str) -> list[list[str]]:
    """A table's lines split into cells (cells hold no double space)."""
    return [line.split() for line in table.splitlines()]


def with_dead_letters(server: ServerProcess) -> tuple[str, str]:
    """A queue made with the CLI, three items produced, two of them dead-lettered."""
    name, dlq = fresh(), fresh()
    assert okuri("queues", "create", dlq, url=server.url).code == 0
    made = okuri(
        "queues",
        "create",
        name,
        "--attr",
        "max_attempts=3",
        "--attr",
        f"dead_letter_queue={dlq}",
        "--json",
        url=server.url,
    ).json()
    assert made["attributes"]["max_attempts"] == 3
    with Client(server.url, ADMIN) as client:
        client.produce(name, ["fine", "poison", "broken"])
        for item in client.lease(name, max_items=3, lease_s=300):
            if item.text != "fine":
                assert client.retry(name, item, dead=True) == ["dead"]
    return name, dlq


def test_create_list_show_in_tables_and_json(server: ServerProcess) -> None:
    name = fresh()
    shown = okuri("queues", "create", name, "--attr", "lease_timeout_s=45", url=server.url)
    assert shown.code == 0, shown.err
    assert ["lease_timeout_s", "45"] in rows(shown.out)

    listed = okuri("queues", "list", "--prefix", name, url=server.url)
    assert rows(listed.out) == [["NAME", "TYPE"], [name, "standard"]]
    stats = okuri("queues", "list", "--prefix", name, "--stats", url=server.url)
    assert rows(stats.out) == [
        ["NAME", "TYPE", "VISIBLE", "LEASED", "DELAYED", "DEAD-LETTERED"],
        [name, "standard", "0", "0", "0", "0"],
    ]
    (doc,) = okuri("queues", "list", "--prefix", name, "--stats", "--json", url=server.url).json()
    assert doc["name"] == name and doc["stats"]["visible"] == 0
    got = okuri("queues", "--json", "show", name, url=server.url).json()
    assert got["attributes"]["lease_timeout_s"] == 45
    assert got["created_at"].endswith("Z")

    fifo = okuri("queues", "create", f"{name}.fifo", "--fifo", "--json", url=server.url).json()
    assert fifo["fifo"] is True
    refused = okuri("queues", "create", name + "-x", "--fifo", url=server.url)
    assert refused.code == 1 and ".fifo" in refused.err
    bad = okuri("queues", "create", name, "--attr", "colour=red", url=server.url)
    assert bad.code == 2 and "colour=red" in bad.err


def test_peek_and_redrive_a_queue_with_dead_letters(server: ServerProcess) -> None:
    name, dlq = with_dead_letters(server)

    table = rows(okuri("queues", "peek", dlq, url=server.url).out)
    assert table[0] == ["ID", "STATE", "UNTIL", "ATTEMPTS", "ENQUEUED", "FROM", "BODY"]
    assert sorted((r[1], r[2], r[3], r[5], r[6]) for r in table[1:]) == [
        ("visible", "-", "1", name, "broken"),
        ("visible", "-", "1", name, "poison"),
    ]
    peeked = okuri("queues", "peek", dlq, "--json", url=server.url).json()
    assert peeked["next"] is None
    assert {(i["body"], i["dead_letter_source"]) for i in peeked["items"]} == {
        ("poison", name),
        ("broken", name),
    }
    (held,) = okuri("queues", "peek", name, "--json", url=server.url).json()["items"]
    assert (held["body"], held["state"], held["attempts"]) == ("fine", "leased", 1)
    # Peeking moved nothing: the same again.
    assert okuri("queues", "peek", dlq, "--json", url=server.url).json() == peeked

    one = okuri("queues", "peek", dlq, "--limit", "1", url=server.url)
    assert len(rows(one.out)) == 3 and f"okuri queues peek {dlq} --after " in one.out

    moved = okuri("queues", "redrive", dlq, url=server.url)
    assert moved.out.strip() == f"moved 2 from {dlq} to the queues they came from"
    assert okuri("queues", "peek", dlq, "--json", url=server.url).json()["items"] == []
    back = okuri("queues", "peek", name, "--json", url=server.url).json()["items"]
    assert sorted((i["body"], i["state"]) for i in back) == [
        ("broken", "visible"),
        ("fine", "leased"),
        ("poison", "visible"),
    ]
    assert okuri("queues", "redrive", dlq, "--to", name, "--json", url=server.url).json() == {
        "queue": dlq,
        "moved": 0,
    }


def test_purge_and_delete(server: ServerProcess) -> None:
    name, _ = with_dead_letters(server)
    assert okuri("queues", "purge", name, url=server.url).out.strip() == f"purged {name}"
    assert okuri("queues", "peek", name, "--json", url=server.url).json()["items"] == []
    gone = okuri("queues", "delete", name, "--json", url=server.url).json()
    assert gone == {"queue": name, "deleted": True}
    missing = okuri("queues", "show", name, url=server.url)
    assert missing.code == 1
    assert missing.err.strip() == (
        f"okuri: error: queue {name!r} does not exist (404 queue_not_found)"
    )
    assert okuri("queues", "peek", name, url=server.url).code == 1


def test_a_wrong_key_a_forbidden_one_and_none_are_one_line_each(
    server: ServerProcess, keys: Keys
) -> None:
    wrong = okuri("queues", "list", url=server.url, key="not-a-key-of-this-server-0000")
    assert wrong.code == 1 and wrong.out == ""
    assert wrong.err.startswith(f"okuri: error: the server at {server.url} refused the key (401")
    assert len(wrong.err.splitlines()) == 1
    name = fresh()
    okuri("queues", "create", name, url=server.url)
    denied = okuri("queues", "peek", name, "--key", keys.producer, url=server.url)
    assert denied.code == 1 and "(403 forbidden" in denied.err
    assert len(denied.err.splitlines()) == 1
    none = okuri("queues", "list", url=server.url, key=None)  # the development key is sent
    assert none.code == 1 and "refused the development key" in none.err
    assert len(none.err.splitlines()) == 1
    elsewhere = okuri("queues", "list", url="http://192.0.2.1:8080", key=None)  # never sent
    assert elsewhere.code == 2 and "no key" in elsewhere.err


def test_a_server_that_is_not_there(server: ServerProcess) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    down = okuri("queues", "list", url=url)
    assert down.code == 1
    assert down.err.startswith(f"okuri: error: cannot reach okuri at {url}: ")
    assert "refused" in down.err.lower() and len(down.err.splitlines()) == 1
    grpc_down = okuri("queues", "show", "q", "--url", "grpc" + url.removeprefix("http"))
    assert grpc_down.code == 1 and "cannot reach okuri at grpc://" in grpc_down.err


def test_keys_list_rotate_revoke_on_the_keys_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    bearer, entry = create_key(str(path), "consumer", "orders-")
    assert okuri("keys", "create", "--sqs", "--role", "producer", "--file", str(path)).code == 0
    listed = okuri("keys", "list", "--file", str(path))
    table = rows(listed.out)
    assert table[0] == ["ID", "KIND", "ROLE", "NAMESPACE"]
    assert table[1] == ["key-" + entry.digest[:12], "bearer", "consumer", "orders-"]
    assert table[2][1:] == ["sqs", "producer", "(all)"]
    assert bearer not in listed.out and "secret" not in listed.out
    sqs_id = table[2][0]

    rotated = okuri("keys", "rotate", table[1][0], "--json", OKURI_API_KEYS_FILE=str(path)).json()
    assert rotated["replaced"] == table[1][0] and rotated["secret"].startswith("okuri_")
    after = okuri("keys", "list", "--json", "--file", str(path)).json()
    assert [(k["id"], k["role"], k["namespace"]) for k in after] == [
        (rotated["id"], "consumer", "orders-"),
        (sqs_id, "producer", ""),
    ]
    revoked = okuri("keys", "revoke", sqs_id, "--file", str(path))
    assert revoked.code == 0 and "SIGHUP" in revoked.err
    assert [k["id"] for k in okuri("keys", "list", "--json", "--file", str(path)).json()] == [
        rotated["id"]
    ]
    again = okuri("keys", "revoke", sqs_id, "--file", str(path))
    assert again.code == 1 and again.err.strip() == f"okuri: error: no key {sqs_id!r} in {path}"
    assert okuri("keys", "list").code == 2
