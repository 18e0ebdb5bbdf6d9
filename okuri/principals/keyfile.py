"""The keys file on disk (OKURI_API_KEYS_FILE) and `okuri keys create`, which appends to it.

The file holds only hashes, so reading it needs no care; it is still written owner-only and
replaced atomically (write aside, rename), so a server reloading it on SIGHUP never reads half a
file and a crash mid-write leaves the old one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from okuri.clock import new_secret
from okuri.principals.keys import (
    KEY_PREFIX,
    KeysFileInvalid,
    StoredKey,
    check_namespace,
    check_role,
    hash_key,
    key_id_of,
    parse_keys_file,
    render_keys_file,
)
from okuri.principals.roles import ROLES


def load_keys_file(path: str) -> list[StoredKey]:
    """The keys in `path`; raises KeysFileInvalid naming the file and what is wrong."""
    try:
        with open(path, "rb") as f:
            text = f.read()
    except OSError as err:
        raise KeysFileInvalid(f"cannot read keys file {path}: {err.strerror}") from None
    try:
        return parse_keys_file(text)
    except KeysFileInvalid as err:
        raise KeysFileInvalid(f"keys file {path}: {err}") from None


def create_key(path: str, role: str, namespace: str) -> tuple[str, StoredKey]:
    """Append a new key to `path` (created if missing); the key itself, shown once, and its
    stored form."""
    stored_role, ns = check_role(role), check_namespace(namespace)
    keys = load_keys_file(path) if os.path.exists(path) else []
    key = KEY_PREFIX + new_secret()
    entry = StoredKey(hash_key(key), stored_role, ns)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".okuri-keys-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:  # mkstemp makes it owner-only
            f.write(render_keys_file([*keys, entry]))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return key, entry


def cli_main(argv: list[str]) -> int:
    """`okuri keys create --role R --namespace N --file F`: print the new key once."""
    parser = argparse.ArgumentParser(
        prog="okuri keys create",
        description="Create a bearer key for the native API, append its hash to the keys file "
        "and print the key (the only time it is shown). Send SIGHUP to running servers to load it.",
    )
    parser.add_argument("--role", required=True, choices=ROLES)
    parser.add_argument(
        "--namespace", default="", help="queue-name prefix the key is limited to (default: all)"
    )
    parser.add_argument("--file", required=True, help="the keys file (OKURI_API_KEYS_FILE)")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        key, entry = create_key(args.file, args.role, args.namespace)
    except KeysFileInvalid as err:
        print(f"okuri: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"okuri: error: cannot write {args.file}: {err.strerror}", file=sys.stderr)
        return 1
    print(key)
    print(
        f"created {key_id_of(entry.digest)} (role {entry.role}, namespace "
        f"{entry.namespace or '(all queues)'}) in {args.file}; the key is not shown again",
        file=sys.stderr,
    )
    return 0
