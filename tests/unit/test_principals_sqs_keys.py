"""SQS access keys in the keys file (okuri/principals/): their format, the key table that finds
their secrets and principals beside the environment's admin pair, `okuri keys create --sqs`,
and the warning for a file of secrets that others may read."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from okuri.principals.keyfile import (
    cli_main,
    create_access_key,
    create_key,
    load_keys_file,
    loose_mode_warning,
)
from okuri.principals.keys import AccessKey, KeysFileInvalid, KeyTable, StoredKey, parse_keys_file
from tests.readme import block

NATIVE_API_DOC = Path(__file__).resolve().parents[2] / "docs" / "native-api.md"

SECRET = "s3cr3t-s3cr3t-s3cr3t-0123456789abcdef"
ENV_PAIR = ("AKIDOKURITEST", "okuri-test-secret")


def keys_file(*entries: dict[str, str]) -> bytes:
    return json.dumps({"keys": list(entries)}).encode()


def access(key_id: str = "OKAKAAAABBBBCCCCDDDD", **fields: str) -> dict[str, str]:
    return {
        "access_key_id": key_id,
        "secret_access_key": SECRET,
        "role": "consumer",
        "namespace": "orders-",
        **fields,
    }


def test_access_keys_and_bearer_keys_share_one_file_and_one_table() -> None:
    bearer = {"role": "producer", "namespace": "", "sha256": "0" * 64}
    entries = parse_keys_file(keys_file(bearer, access()))
    assert isinstance(entries[0], StoredKey) and isinstance(entries[1], AccessKey)
    table = KeyTable(None, entries, ENV_PAIR)
    assert table.secret("OKAKAAAABBBBCCCCDDDD") == SECRET
    found = table.access_principal("OKAKAAAABBBBCCCCDDDD")
    assert found is not None
    assert (found.key_id, found.role, found.namespace) == (
        "OKAKAAAABBBBCCCCDDDD",
        "consumer",
        "orders-",
    )
    # The environment's pair stays an admin of every queue.
    assert table.secret(ENV_PAIR[0]) == ENV_PAIR[1]
    env = table.access_principal(ENV_PAIR[0])
    assert env is not None and (env.role, env.namespace) == ("admin", "")
    assert table.secret("OKAKUNKNOWNUNKNOWN00") is None
    assert table.access_principal("OKAKUNKNOWNUNKNOWN00") is None
    # Access keys are not bearer keys, and do not open the native API.
    assert table.principal(SECRET) is None
    assert KeyTable(None, [entries[1]], ENV_PAIR).empty


def test_reloading_keeps_the_environment_pair() -> None:
    table = KeyTable("an-admin-bearer-key-0123", [], ENV_PAIR)
    reloaded = table.with_stored(parse_keys_file(keys_file(access())))
    assert reloaded.secret(ENV_PAIR[0]) == ENV_PAIR[1]
    assert reloaded.secret("OKAKAAAABBBBCCCCDDDD") == SECRET
    assert reloaded.principal("an-admin-bearer-key-0123") is not None


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        (access("short"), "access_key_id must be 16 to 128"),
        (access("OKAK AAAABBBBCCCCDDD"), "access_key_id must be 16 to 128"),
        (access(secret_access_key="tiny"), "secret_access_key must be 16 to 256"),
        (access(secret_access_key="has a space in it, 0123"), "secret_access_key must be"),
        (access(role="root"), "role 'root'"),
        (access(namespace="a/b"), "namespace"),
        ({**access(), "sha256": "0" * 64}, "not both"),
    ],
)
def test_a_bad_access_key_is_refused_saying_why_without_repeating_the_secret(
    entry: dict[str, str], why: str
) -> None:
    with pytest.raises(KeysFileInvalid, match=why) as err:
        parse_keys_file(keys_file(entry))
    assert entry["secret_access_key"] not in str(err.value)


def test_an_access_key_id_may_appear_once_and_not_be_the_environments() -> None:
    with pytest.raises(KeysFileInvalid, match="more than once"):
        parse_keys_file(keys_file(access(), access(role="admin")))
    with pytest.raises(KeysFileInvalid, match="also OKURI_ACCESS_KEY_ID"):
        entries = parse_keys_file(keys_file(access("AKIDOKURITEST123")))
        KeyTable(None, entries, ("AKIDOKURITEST123", "x" * 20))


def test_create_access_key_appends_an_aws_shaped_pair_owner_only(tmp_path: Path) -> None:
    path = str(tmp_path / "keys.json")
    bearer, _ = create_key(path, "readonly", "")
    made = create_access_key(path, "consumer", "orders-")
    assert re.fullmatch(r"OKAK[A-Z0-9]{16}", made.access_key_id)
    assert len(made.secret_access_key) == 40
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    entries = load_keys_file(path)
    assert [type(e) for e in entries] == [StoredKey, AccessKey]
    table = KeyTable(None, entries)
    assert table.secret(made.access_key_id) == made.secret_access_key
    assert table.principal(bearer) is not None  # the bearer key kept working
    assert made.secret_access_key not in repr(made)


def test_keys_create_sqs_prints_the_pair_once_as_aws_variables(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tmp_path / "keys.json")
    assert cli_main(["--sqs", "--role", "consumer", "--namespace", "orders-", "--file", path]) == 0
    out, err = capsys.readouterr()
    lines = dict(line.split("=", 1) for line in out.splitlines())
    assert set(lines) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
    table = KeyTable(None, load_keys_file(path))
    assert table.secret(lines["AWS_ACCESS_KEY_ID"]) == lines["AWS_SECRET_ACCESS_KEY"]
    found = table.access_principal(lines["AWS_ACCESS_KEY_ID"])
    assert found is not None and (found.role, found.namespace) == ("consumer", "orders-")
    assert lines["AWS_SECRET_ACCESS_KEY"] not in err and "0600" in err
    assert cli_main(["--sqs", "--role", "root", "--file", path]) == 2


def test_a_file_of_secrets_that_others_may_read_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    create_key(str(path), "admin", "")
    path.chmod(0o644)
    assert loose_mode_warning(str(path), load_keys_file(str(path))) is None  # hashes only
    create_access_key(str(path), "producer", "")
    assert loose_mode_warning(str(path), load_keys_file(str(path))) is None  # rewritten 0600
    path.chmod(0o640)
    warning = loose_mode_warning(str(path), load_keys_file(str(path)))
    assert warning is not None and "0640" in warning and "chmod 600" in warning


def test_the_documented_keys_file_loads_as_it_says() -> None:
    entries = parse_keys_file(block("keys-file", NATIVE_API_DOC).encode())
    table = KeyTable(None, entries)
    bearer = table.principal("okuri_example-only-never-use")
    assert bearer is not None and (bearer.role, bearer.namespace) == ("consumer", "orders-")
    sqs = table.access_principal("OKAKQ4J7ZK2M9T3XW5PB")
    assert sqs is not None and (sqs.role, sqs.namespace) == ("consumer", "orders-")
