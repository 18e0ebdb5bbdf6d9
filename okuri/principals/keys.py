"""The keys a node accepts and the keys file's format: native bearer keys.

A key is stored only as its SHA-256 (a key is 32 random bytes, so a salt or a slow hash would
add nothing); a presented key is hashed and looked up. Roles and namespaces are
`okuri.principals.roles`'.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from okuri.principals.roles import NAMESPACE, ROLES, Principal, Role

KEY_PREFIX = "okuri_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_id_of(digest: str) -> str:
    """A key's public name: a prefix of its hash, which says nothing about the key itself."""
    return "key-" + digest[:12]


@dataclass(frozen=True, slots=True)
class StoredKey:
    digest: str  # SHA-256 of the key, hex
    role: Role
    namespace: str

    def to_json(self) -> dict[str, str]:
        return {
            "id": key_id_of(self.digest),
            "role": self.role,
            "namespace": self.namespace,
            "sha256": self.digest,
        }


class KeysFileInvalid(ValueError):
    """A keys file that cannot be used; the message says where and why."""


def check_role(role: object) -> Role:
    for r in ROLES:
        if role == r:
            return r
    raise KeysFileInvalid(f"role {role!r} is not one of {', '.join(ROLES)}")


def check_namespace(namespace: object) -> str:
    if not isinstance(namespace, str) or not NAMESPACE.fullmatch(namespace):
        raise KeysFileInvalid(
            f"namespace {namespace!r} is not a queue-name prefix (letters, digits, '-', '_')"
        )
    return namespace


def parse_keys_file(text: bytes) -> list[StoredKey]:
    """The keys of a keys file: `{"keys": [{"role", "namespace", "sha256", "id"?}, ...]}`."""
    try:
        doc: Any = orjson.loads(text) if text.strip() else {"keys": []}
    except orjson.JSONDecodeError as err:
        raise KeysFileInvalid(f"not JSON: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeysFileInvalid('expected an object {"keys": [...]}')
    out: list[StoredKey] = []
    for n, entry in enumerate(doc["keys"], 1):
        if not isinstance(entry, dict):
            raise KeysFileInvalid(f"key {n}: expected an object")
        digest = entry.get("sha256")
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise KeysFileInvalid(f"key {n}: sha256 must be 64 lowercase hex digits")
        try:
            out.append(
                StoredKey(
                    digest,
                    check_role(entry.get("role")),
                    check_namespace(entry.get("namespace", "")),
                )
            )
        except KeysFileInvalid as err:
            raise KeysFileInvalid(f"key {n}: {err}") from None
    return out


def render_keys_file(keys: Iterable[StoredKey]) -> bytes:
    return orjson.dumps({"keys": [k.to_json() for k in keys]}, option=orjson.OPT_INDENT_2) + b"\n"


class KeyTable:
    """The keys a node accepts: the admin key from the environment and a keys file's keys."""

    def __init__(self, admin_key: str | None, stored: Iterable[StoredKey]) -> None:
        self._admin = hash_key(admin_key) if admin_key else None
        self._stored = {k.digest: k for k in stored}

    @property
    def empty(self) -> bool:
        return self._admin is None and not self._stored

    def with_stored(self, stored: Iterable[StoredKey]) -> KeyTable:
        table = KeyTable(None, stored)
        table._admin = self._admin
        return table

    def principal(self, key: str) -> Principal | None:
        """Who `key` is, or None for a key not configured."""
        digest = hash_key(key)
        if self._admin is not None and hmac.compare_digest(digest, self._admin):
            return Principal("admin-key", "admin", "")
        found = self._stored.get(digest)
        if found is None:
            return None
        return Principal(key_id_of(digest), found.role, found.namespace)
