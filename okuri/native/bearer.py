"""Who a native request acts as, from its `Authorization: Bearer <key>` (an HTTP header, or
the gRPC metadata of the same name): one reading of the key for both surfaces (and the
console), so they answer the same 401s with the same words. The published development key
(okuri.principals.local) is accepted only where the table accepts it, and only from a
request its surface found local."""

from __future__ import annotations

from collections.abc import Callable

from okuri.native.errors import NativeError
from okuri.principals.keys import DEV_PRINCIPAL, KeyTable
from okuri.principals.local import DEV_KEY_ELSEWHERE
from okuri.principals.roles import Principal

NO_KEYS = (
    "The native API has no keys configured, so it accepts none: set OKURI_ADMIN_KEY (one admin "
    "bearer key) or OKURI_API_KEYS_FILE (a file that `okuri keys create` writes). See "
    "docs/native-api.md."
)
# With OKURI_AUTH=off every request acts as an admin of every queue.
ANONYMOUS = Principal("anonymous", "admin", "")

Keys = Callable[[], KeyTable] | None
Local = Callable[[], bool]


def _elsewhere() -> bool:
    return False


def principal(keys: Keys, authorization: str | None, local: Local = _elsewhere) -> Principal:
    """The principal `authorization` (the header's value, None when absent) names; `keys`
    gives the current key table (it changes on SIGHUP), None when authentication is off.
    `local` says whether the request comes from this machine (okuri.principals.local), asked
    only of a request carrying the development key."""
    if keys is None:
        return ANONYMOUS
    table = keys()
    if table.empty and not table.accepts_dev_key:
        raise NativeError(401, "no_keys_configured", NO_KEYS)
    if not authorization:
        raise NativeError(401, "missing_key", "Send a bearer key: 'Authorization: Bearer <key>'.")
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise NativeError(401, "bad_key", "The Authorization header must be 'Bearer <key>'.")
    if table.is_dev_key(key.strip()):
        if not local():
            raise NativeError(401, "dev_key_not_local", DEV_KEY_ELSEWHERE)
        return DEV_PRINCIPAL
    found = table.principal(key.strip())
    if found is None:
        raise NativeError(401, "bad_key", "The bearer key is not valid.")
    return found
