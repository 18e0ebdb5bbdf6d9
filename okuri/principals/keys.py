"""The keys a node accepts, and the keys file's format: native bearer keys and SQS access keys.

A native bearer key is stored only as its SHA-256 (a key is 32 random bytes, so a salt or a
slow hash would add nothing); a presented key is hashed and looked up. An SQS access key is an
access key id and a secret access key, and it is stored as the secret itself: SigV4 proves
possession by an HMAC keyed with a key derived from the secret, so the server must hold the
secret to check a signature, as AWS does. A keys file holding access keys is as sensitive as
the secrets in it: keep it owner-only (mode 0600; `okuri keys create` writes it so, and the
server warns when group or others may read one holding secrets).

The file: `{"keys": [entry, ...]}`, each entry either a bearer key
`{"id"?, "role", "namespace", "sha256"}` or an access key
`{"access_key_id", "secret_access_key", "role", "namespace"}`. Both kinds share the roles and
namespaces of `okuri.principals.roles`.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from okuri.principals.local import DEV_ADMIN_KEY, DEV_KEY_ID
from okuri.principals.roles import NAMESPACE, ROLES, Principal, Role

KEY_PREFIX = "okuri_"  # a native bearer key
ACCESS_KEY_PREFIX = "OKAK"  # an SQS access key id `okuri keys create --sqs` makes
# IAM's bounds: an access key id is 16 to 128 word characters. A secret is printable ASCII
# without spaces (AWS's are 40 characters); at least 16, so none is guessable by hand.
ACCESS_KEY_ID = re.compile(r"[A-Za-z0-9_]{16,128}")
SECRET_ACCESS_KEY = re.compile(r"[\x21-\x7e]{16,256}")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_id_of(digest: str) -> str:
    """A bearer key's public name: a prefix of its hash, which says nothing about the key."""
    return "key-" + digest[:12]


@dataclass(frozen=True, slots=True)
class StoredKey:
    """A native bearer key, as its hash."""

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


@dataclass(frozen=True, slots=True)
class AccessKey:
    """An SQS access key: its id (public: it names the key, and signs into every request) and
    its secret (held in the clear: SigV4 needs it)."""

    access_key_id: str
    secret_access_key: str = field(repr=False)
    role: Role
    namespace: str

    def to_json(self) -> dict[str, str]:
        return {
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "role": self.role,
            "namespace": self.namespace,
        }


KeyEntry = StoredKey | AccessKey


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


def _entry(entry: dict[str, Any]) -> KeyEntry:
    role = check_role(entry.get("role"))
    namespace = check_namespace(entry.get("namespace", ""))
    if "access_key_id" in entry:
        if "sha256" in entry:
            raise KeysFileInvalid("an entry is a bearer key (sha256) or an access key, not both")
        key_id, secret = entry["access_key_id"], entry.get("secret_access_key")
        if not isinstance(key_id, str) or not ACCESS_KEY_ID.fullmatch(key_id):
            raise KeysFileInvalid("access_key_id must be 16 to 128 letters, digits or '_'")
        if not isinstance(secret, str) or not SECRET_ACCESS_KEY.fullmatch(secret):
            # Never repeat the value: it may be a real secret with a typo.
            raise KeysFileInvalid(
                "secret_access_key must be 16 to 256 printable ASCII characters, no spaces"
            )
        return AccessKey(key_id, secret, role, namespace)
    digest = entry.get("sha256")
    if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise KeysFileInvalid("sha256 must be 64 lowercase hex digits")
    return StoredKey(digest, role, namespace)


def parse_keys_file(text: bytes) -> list[KeyEntry]:
    """The keys of a keys file, in file order (see the module's docstring for the format)."""
    try:
        doc: Any = orjson.loads(text) if text.strip() else {"keys": []}
    except orjson.JSONDecodeError as err:
        raise KeysFileInvalid(f"not JSON: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise KeysFileInvalid('expected an object {"keys": [...]}')
    out: list[KeyEntry] = []
    seen: set[str] = set()
    for n, entry in enumerate(doc["keys"], 1):
        if not isinstance(entry, dict):
            raise KeysFileInvalid(f"key {n}: expected an object")
        try:
            parsed = _entry(entry)
        except KeysFileInvalid as err:
            raise KeysFileInvalid(f"key {n}: {err}") from None
        if isinstance(parsed, AccessKey):
            if parsed.access_key_id in seen:
                raise KeysFileInvalid(
                    f"key {n}: access key id {parsed.access_key_id} appears more than once"
                )
            seen.add(parsed.access_key_id)
        out.append(parsed)
    return out


def render_keys_file(keys: Iterable[KeyEntry]) -> bytes:
    return orjson.dumps({"keys": [k.to_json() for k in keys]}, option=orjson.OPT_INDENT_2) + b"\n"


class KeyTable:
    """The keys a node accepts: native bearer keys (the admin key from the environment and the
    keys file's, or else the published development key from loopback) and SQS access keys (the
    environment's pair, an admin of every queue, and the keys file's)."""

    def __init__(
        self,
        admin_key: str | None,
        stored: Iterable[KeyEntry],
        admin_access: tuple[str, str] | None = None,
        dev_key: bool = False,
    ) -> None:
        """`admin_access`: the environment's (access key id, secret), an admin of every queue.
        `dev_key`: the server was configured with no native key at all, so it accepts the
        published development key (okuri.principals.local) from loopback clients; never while
        the table holds a bearer key."""
        self._admin = hash_key(admin_key) if admin_key else None
        self._admin_access = admin_access
        self._dev_key = dev_key
        self._stored: dict[str, StoredKey] = {}
        self._access: dict[str, AccessKey] = {}
        for entry in stored:
            if isinstance(entry, StoredKey):
                self._stored[entry.digest] = entry
                continue
            if admin_access is not None and entry.access_key_id == admin_access[0]:
                raise KeysFileInvalid(
                    f"access key id {entry.access_key_id} is also OKURI_ACCESS_KEY_ID"
                )
            self._access[entry.access_key_id] = entry

    @property
    def empty(self) -> bool:
        """No native bearer key at all (SQS access keys do not open the native API)."""
        return self._admin is None and not self._stored

    @property
    def accepts_dev_key(self) -> bool:
        """Whether the published development key is in force (for loopback clients only)."""
        return self._dev_key and self.empty

    def is_dev_key(self, key: str) -> bool:
        """Whether `key` is the development key and this table accepts it (from loopback)."""
        return self.accepts_dev_key and hmac.compare_digest(hash_key(key), _DEV_DIGEST)

    @property
    def holds_access_keys(self) -> bool:
        """Whether the keys file gave SQS access keys (secrets)."""
        return bool(self._access)

    def with_stored(self, stored: Iterable[KeyEntry]) -> KeyTable:
        """This table's environment keys with another keys file's keys."""
        table = KeyTable(None, stored, self._admin_access, self._dev_key)
        table._admin = self._admin
        return table

    def listed(self) -> list[dict[str, str]]:
        """Every key's id, kind, role and namespace: never a secret, nor a key's hash."""
        rows = []
        if self._admin is not None:
            rows.append(_row("admin-key", "bearer (environment)", "admin", ""))
        if self.accepts_dev_key:
            rows.append(_row(DEV_KEY_ID, "bearer (development, loopback only)", "admin", ""))
        rows += [_row(key_id_of(d), "bearer", k.role, k.namespace) for d, k in self._stored.items()]
        if self._admin_access is not None:
            rows.append(_row(self._admin_access[0], "sqs access key (environment)", "admin", ""))
        rows += [_row(i, "sqs access key", k.role, k.namespace) for i, k in self._access.items()]
        return rows

    def principal(self, key: str) -> Principal | None:
        """Who the bearer `key` is, or None for a key not configured."""
        digest = hash_key(key)
        if self._admin is not None and hmac.compare_digest(digest, self._admin):
            return Principal("admin-key", "admin", "")
        found = self._stored.get(digest)
        if found is None:
            return None
        return Principal(key_id_of(digest), found.role, found.namespace)

    def secret(self, access_key_id: str) -> str | None:
        """The secret of an SQS access key, for SigV4; None for an id not configured."""
        if self._admin_access is not None and access_key_id == self._admin_access[0]:
            return self._admin_access[1]
        found = self._access.get(access_key_id)
        return None if found is None else found.secret_access_key

    def access_principal(self, access_key_id: str) -> Principal | None:
        """Who the SQS access key `access_key_id` is, or None for an id not configured."""
        if self._admin_access is not None and access_key_id == self._admin_access[0]:
            return Principal(access_key_id, "admin", "")
        found = self._access.get(access_key_id)
        if found is None:
            return None
        return Principal(access_key_id, found.role, found.namespace)


DEV_PRINCIPAL = Principal(DEV_KEY_ID, "admin", "")
_DEV_DIGEST = hash_key(DEV_ADMIN_KEY)


def _row(key_id: str, kind: str, role: str, namespace: str) -> dict[str, str]:
    return {"id": key_id, "kind": kind, "role": role, "namespace": namespace}
