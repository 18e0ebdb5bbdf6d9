"""`okuri keys list|revoke|rotate`: the keys file, edited where it lies, as `okuri keys create`
edits it (okuri/principals/keyfile.py), not through the API.

Keys live in a file each node reads at start and on SIGHUP, not in the bucket, so there is no
server-side store to change through the API; editing the file is the one change every node
agrees on once it reloads. So these commands need the file (`--file`, else
OKURI_API_KEYS_FILE) and, like `keys create`, say to send SIGHUP afterwards. A listing shows
ids, kinds, roles and namespaces, never a secret.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping

from okuri.admin import table
from okuri.principals.keyfile import entry_id, load_keys_file, revoke_key, rotate_key
from okuri.principals.keys import AccessKey, KeyEntry, KeysFileInvalid

FILE_ENV = "OKURI_API_KEYS_FILE"
RELOAD = "send SIGHUP to running servers to load the change"


def build_parser(command: str) -> argparse.ArgumentParser:
    helps = {
        "list": "List the keys of the keys file: id, kind, role, namespace (never a secret).",
        "revoke": "Remove key ID from the keys file.",
        "rotate": "Replace key ID by a new key of the same kind, role and namespace, and print "
        "it (shown only now); the old key stops working once servers reload the file.",
    }
    parser = argparse.ArgumentParser(prog=f"okuri keys {command}", description=helps[command])
    if command != "list":
        parser.add_argument("id", help="the key's id, as `okuri keys list` shows it")
    parser.add_argument("--file", help=f"the keys file (default ${FILE_ENV})")
    parser.add_argument("--json", action="store_true", help="print JSON, for scripts")
    return parser


def _kind(entry: KeyEntry) -> str:
    return "sqs" if isinstance(entry, AccessKey) else "bearer"


def _doc(entry: KeyEntry) -> dict[str, str]:
    return {
        "id": entry_id(entry),
        "kind": _kind(entry),
        "role": entry.role,
        "namespace": entry.namespace,
    }


def cli_main_for(command: str, argv: list[str], env: Mapping[str, str] = os.environ) -> int:
    parser = build_parser(command)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    path = args.file or env.get(FILE_ENV)
    if not path:
        print(f"okuri: error: no keys file: pass --file or set {FILE_ENV}", file=sys.stderr)
        return 2
    try:
        if command == "list":
            docs = [_doc(e) for e in load_keys_file(path)]
            if args.json:
                table.as_json(docs)
            else:
                rows = [(d["id"], d["kind"], d["role"], d["namespace"] or "(all)") for d in docs]
                table.table(["ID", "KIND", "ROLE", "NAMESPACE"], rows)
            return 0
        if command == "revoke":
            gone = revoke_key(path, args.id)
            _changed(args.json, {"revoked": _doc(gone)}, f"revoked {args.id} in {path}")
            return 0
        new, secret = rotate_key(path, args.id)
        doc = {"replaced": args.id, **_doc(new), "secret": secret}
        if isinstance(new, AccessKey):
            doc["secret_access_key"] = doc.pop("secret")
        if args.json:
            table.as_json(doc)
        elif isinstance(new, AccessKey):
            print(f"AWS_ACCESS_KEY_ID={new.access_key_id}")
            print(f"AWS_SECRET_ACCESS_KEY={secret}")
        else:
            print(secret)
        print(f"replaced {args.id} by {entry_id(new)} in {path}; {RELOAD}", file=sys.stderr)
        return 0
    except KeyError:
        print(f"okuri: error: no key {args.id!r} in {path}", file=sys.stderr)
        return 1
    except KeysFileInvalid as err:
        print(f"okuri: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"okuri: error: cannot write {path}: {err.strerror}", file=sys.stderr)
        return 1


def _changed(as_json: bool, doc: dict[str, object], line: str) -> None:
    if as_json:
        table.as_json(doc)
    else:
        print(line)
    print(f"okuri: {RELOAD}", file=sys.stderr)


def list_main(argv: list[str]) -> int:
    return cli_main_for("list", argv)


def revoke_main(argv: list[str]) -> int:
    return cli_main_for("revoke", argv)


def rotate_main(argv: list[str]) -> int:
    return cli_main_for("rotate", argv)
