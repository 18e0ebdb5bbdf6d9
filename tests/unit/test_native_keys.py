"""Bearer keys, roles and namespaces (okuri/principals/): the whole matrix of
operation x role x in/out of namespace, key lookup, the keys file and `okuri keys create`."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from okuri.principals.keyfile import cli_main, create_key, load_keys_file
from okuri.principals.keys import KeysFileInvalid, KeyTable, hash_key, parse_keys_file
from okuri.principals.roles import OPERATIONS, ROLES, Operation, Role, decide, list_prefix
from okuri.server.settings import Settings, SettingsError

# The specification, written out independently of the implementation's table.
ALLOWED: dict[Role, set[str]] = {
    "admin": {
        "create_queue", "get_queue", "list_queues", "update_queue", "delete_queue",
        "purge_queue", "produce", "lease", "complete", "retry", "extend", "redrive", "browse",
        "create_exchange", "get_exchange", "list_exchanges", "delete_exchange", "bind",
        "unbind", "publish",
    },
    "producer": {"get_queue", "list_queues", "produce", "get_exchange", "list_exchanges",
                 "publish"},
    "consumer": {"get_queue", "list_queues", "lease", "complete", "retry", "extend", "browse",
                 "get_exchange", "list_exchanges", "bind", "unbind"},
    "readonly": {"get_queue", "list_queues", "get_exchange", "list_exchanges"},
}  # fmt: skip


def test_the_matrix_names_every_operation_and_role() -> None:
    assert set(OPERATIONS) == ALLOWED["admin"]
    assert set(ROLES) == set(ALLOWED)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("operation", OPERATIONS)
def test_every_operation_for_every_role_in_and_out_of_its_namespace(
    operation: Operation, role: Role
) -> None:
    permitted = operation in ALLOWED[role]
    inside = decide(operation, role, "team-a-", "team-a-jobs")
    outside = decide(operation, role, "team-a-", "team-b-jobs")
    assert inside == ("allow" if permitted else "wrong_role")
    assert outside == ("out_of_namespace" if permitted else "wrong_role")
    # A key with no namespace reaches every queue its role allows.
    assert decide(operation, role, "", "anything") == ("allow" if permitted else "wrong_role")


def test_a_namespace_is_a_prefix_not_a_substring() -> None:
    assert decide("produce", "producer", "team-a", "xteam-a") == "out_of_namespace"
    assert decide("produce", "producer", "team-a", "team-a") == "allow"


def test_listing_narrows_to_the_namespace_and_refuses_a_prefix_outside_it() -> None:
    assert decide("list_queues", "readonly", "team-a-", "") == "allow"
    assert list_prefix("team-a-", "") == "team-a-"
    assert list_prefix("team-a-", "team-a-jo") == "team-a-jo"
    assert decide("list_queues", "readonly", "team-a-", "team-b") == "out_of_namespace"


def test_keys_are_found_by_hash_and_the_admin_key_is_an_admin_of_everything() -> None:
    table = KeyTable(
        "admin-secret-0123456789",
        parse_keys_file(
            json.dumps(
                {"keys": [{"role": "consumer", "namespace": "a-", "sha256": hash_key("k1")}]}
            ).encode()
        ),
    )
    admin = table.principal("admin-secret-0123456789")
    assert admin is not None and (admin.role, admin.namespace) == ("admin", "")
    consumer = table.principal("k1")
    assert consumer is not None and (consumer.role, consumer.namespace) == ("consumer", "a-")
    assert table.principal("k2") is None
    assert table.principal("") is None
    assert KeyTable(None, []).empty and not table.empty


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"{", "not JSON"),
        (b"[]", "expected an object"),
        (b'{"keys": [{"role": "root", "sha256": "' + b"0" * 64 + b'"}]}', "role 'root'"),
        (b'{"keys": [{"role": "admin", "sha256": "abc"}]}', "sha256"),
        (b'{"keys": [{"role": "admin", "namespace": "a/b", "sha256": "' + b"0" * 64 + b'"}]}',
         "namespace"),
    ],
)  # fmt: skip
def test_a_bad_keys_file_is_refused_saying_why(text: bytes, why: str) -> None:
    with pytest.raises(KeysFileInvalid, match=why):
        parse_keys_file(text)


def test_create_key_appends_a_hashed_key_owner_only_and_the_key_works(tmp_path: Path) -> None:
    path = str(tmp_path / "keys.json")
    first, _ = create_key(path, "producer", "orders-")
    second, _ = create_key(path, "readonly", "")
    stored = load_keys_file(path)
    assert [(k.role, k.namespace) for k in stored] == [("producer", "orders-"), ("readonly", "")]
    text = Path(path).read_text()
    assert first not in text and second not in text  # only hashes are written
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    table = KeyTable(None, stored)
    found = table.principal(first)
    assert found is not None and found.role == "producer"


def test_the_keys_create_command_prints_the_key_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "keys.json")
    assert cli_main(["--role", "consumer", "--namespace", "jobs-", "--file", path]) == 0
    out, err = capsys.readouterr()
    key = out.strip()
    assert key.startswith("okuri_") and "\n" not in key
    assert "not shown again" in err and key not in err
    found = KeyTable(None, load_keys_file(path)).principal(key)
    assert found is not None and (found.role, found.namespace) == ("consumer", "jobs-")
    assert cli_main(["--role", "root", "--file", path]) == 2
    assert cli_main(["--role", "admin", "--namespace", "a b", "--file", path]) == 2


def test_the_admin_key_is_a_secret_setting(tmp_path: Path) -> None:
    settings = Settings.load(
        {"OKURI_ADMIN_KEY": "a-long-enough-admin-key", "OKURI_API_KEYS_FILE": "k.json"}
    )
    assert settings.admin_key == "a-long-enough-admin-key"
    assert settings.api_keys_file == "k.json"
    assert "a-long-enough-admin-key" not in repr(settings)
    with pytest.raises(SettingsError) as err:
        Settings.load({"OKURI_ADMIN_KEY": "short"})
    assert "short" not in str(err.value) and "OKURI_ADMIN_KEY" in str(err.value)


def test_okuri_keys_create_is_a_command_of_okuri(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    proc = subprocess.run(
        [sys.executable, "-m", "okuri.server.cli", "keys", "create", "--role", "admin",
         "--file", str(path)],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    found = KeyTable(None, load_keys_file(str(path))).principal(proc.stdout.strip())
    assert found is not None and (found.role, found.namespace) == ("admin", "")
