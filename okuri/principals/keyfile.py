"""The keys file on disk (OKURI_API_KEYS_FILE) and `okuri keys create`, which appends to it.

Native bearer keys are kept as hashes, but SQS access keys are kept as their secrets, because
SigV4 cannot be checked without the secret (see `okuri.principals.keys`). So the file is always
written owner-only (mode 0600) and replaced atomically (write aside, rename), so a server
reloading it on SIGHUP never reads half a file and a crash mid-write leaves the old one; and
`loose_mode_warning` tells the server to warn when group or others may read a file that holds
secrets.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from collections.abc import Sequence

from okuri.clock import new_access_key_id, new_secret
from okuri.principals.keys import (
    ACCESS_KEY_PREFIX,
    KEY_PREFIX,
    AccessKey,
    KeyEntry,
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

access_key_id_chars = 16  # after the prefix: 20 in all, as AWS's access key ids
secret_access_key_bytes = 30  # 40 characters, as AWS's secret access keys


def load_keys_file(path: str) -> list[KeyEntry]:
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


def loose_mode_warning(path: str, entries: Sequence[KeyEntry]) -> str | None:
    """What to warn about when `path` holds SQS secrets and group or others may read it."""
    if not any(isinstance(e, AccessKey) for e in entries):
        return None
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None
    if not mode & (stat.S_IRGRP | stat.S_IROTH):
        return None
    return (
        f"keys file {path} holds SQS secret access keys and is readable by group or others "
        f"(mode {mode:04o}); make it owner-only: chmod 600 {path}"
    )


def _append(path: str, entry: KeyEntry) -> None:
    keys = load_keys_file(path) if os.path.exists(path) else []
    _write(path, [*keys, entry])


def _write(path: str, keys: Sequence[KeyEntry]) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".okuri-keys-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:  # mkstemp makes it owner-only
            f.write(render_keys_file(keys))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def create_key(path: str, role: str, namespace: str) -> tuple[str, StoredKey]:
    """Append a new native bearer key to `path` (created if missing); the key itself, shown
    once, and its stored form."""
    stored_role, ns = check_role(role), check_namespace(namespace)
    key = KEY_PREFIX + new_secret()
    entry = StoredKey(hash_key(key), stored_role, ns)
    _append(path, entry)
    return key, entry


def create_access_key(path: str, role: str, namespace: str) -> AccessKey:
    """Append a new SQS access key to `path` (created if missing) and return it."""
    stored_role, ns = check_role(role), check_namespace(namespace)
    entry = AccessKey(
        new_access_key_id(ACCESS_KEY_PREFIX, access_key_id_chars),
        new_secret(secret_access_key_bytes),
        stored_role,
        ns,
    )
    _append(path, entry)
    return entry


def entry_id(entry: KeyEntry) -> str:
    """The name a key goes by in listings and in `revoke` and `rotate`: a bearer key's
    `key-<hash prefix>`, an SQS key's access key id. Neither says anything secret."""
    return key_id_of(entry.digest) if isinstance(entry, StoredKey) else entry.access_key_id


def revoke_key(path: str, key_id: str) -> KeyEntry:
    """Remove the key named `key_id` from `path`; the entry removed. KeyError if none is."""
    keys = load_keys_file(path)
    gone = _find(keys, key_id)
    _write(path, [k for k in keys if k is not gone])
    return gone


def rotate_key(path: str, key_id: str) -> tuple[KeyEntry, str]:
    """Replace the key named `key_id` by a new one of the same kind, role and namespace, in
    its place; the new entry and its secret (the bearer key, or the SQS secret access key),
    shown once. KeyError if no key has that id."""
    keys = load_keys_file(path)
    old = _find(keys, key_id)
    new: KeyEntry
    if isinstance(old, StoredKey):
        secret = KEY_PREFIX + new_secret()
        new = StoredKey(hash_key(secret), old.role, old.namespace)
    else:
        access_key_id = new_access_key_id(ACCESS_KEY_PREFIX, access_key_id_chars)
        secret = new_secret(secret_access_key_bytes)
        new = AccessKey(access_key_id, secret, old.role, old.namespace)
    _write(path, [new if k is old else k for k in keys])
    return new, secret


def _find(keys: Sequence[KeyEntry], key_id: str) -> KeyEntry:
    for k in keys:
        if entry_id(k) == key_id:
            return k
    raise KeyError(key_id)


def cli_main(argv: list[str]) -> int:
    """`okuri keys create [--sqs] --role R --namespace N --file F`: print the new key once."""
    parser = argparse.ArgumentParser(
        prog="okuri keys create",
        description="Create a native API bearer key (its hash is appended to the keys file) or, "
        "with --sqs, an SQS access key (its secret is appended: SigV4 needs it), and print it. "
        "A bearer key is shown only now. Send SIGHUP to running servers to load it.",
    )
    parser.add_argument(
        "--sqs",
        action="store_true",
        help="an SQS access key pair (printed as AWS_ACCESS_KEY_ID=... and "
        "AWS_SECRET_ACCESS_KEY=... lines) instead of a native bearer key",
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
        if args.sqs:
            access = create_access_key(args.file, args.role, args.namespace)
            role, namespace = access.role, access.namespace
            name = f"SQS access key {access.access_key_id}"
            print(f"AWS_ACCESS_KEY_ID={access.access_key_id}")
            print(f"AWS_SECRET_ACCESS_KEY={access.secret_access_key}")
            kept = "its secret is kept in the file, which must stay owner-only (mode 0600)"
        else:
            key, entry = create_key(args.file, args.role, args.namespace)
            role, namespace = entry.role, entry.namespace
            name = key_id_of(entry.digest)
            print(key)
            kept = "the key is not shown again"
    except KeysFileInvalid as err:
        print(f"okuri: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"okuri: error: cannot write {args.file}: {err.strerror}", file=sys.stderr)
        return 1
    print(
        f"created {name} (role {role}, namespace {namespace or '(all queues)'}) in "
        f"{args.file}; {kept}",
        file=sys.stderr,
    )
    return 0
