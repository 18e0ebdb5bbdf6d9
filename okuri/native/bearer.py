"""Who a native request acts as, from its `Authorization: Bearer <key>` (an HTTP header, or
the gRPC metadata of the same name): one reading of the key for both surfaces, so they
answer the same 401s with the same words."""

from __future__ import annotations

from collections.abc import Callable

from okuri.native.errors import NativeError
from okuri.principals.keys import KeyTable
from okuri.principals.roles import Principal

NO_KEYS = (
    "The native API has no keys configured, so it accepts none: set OKURI_ADMIN_KEY (one admin "
    "bearer key) or OKURI_API_KEYS_FILE (a file that `okuri keys create` writes). See "
    "docs/native-api.md."
)
# With OKURI_AUTH=off every request acts as an admin of every queue.
ANONYMOUS = Principal("anonymous", "admin", "")

Keys = Callable[[], KeyTable] | None


def principal(keys: Keys, authorization: str | None) -> Principal:
    """The principal `authorization` (the header's value, None when absent) names; `keys`
    gives the current key table (it changes on SIGHUP), None when authentication is off."""
    if keys is None:
        return ANONYMOUS
    table = keys()
    if table.empty:
        raise NativeError(401, "no_keys_configured", NO_KEYS)
    if not authorization:
        raise NativeError(401, "missing_key", "Send a bearer key: 'Authorization: Bearer <key>'.")
    scheme, _, key = authorization.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise NativeError(401, "bad_key", "The Authorization header must be 'Bearer <key>'.")
    found = table.principal(key.strip())
    if found is None:
        raise NativeError(401, "bad_key", "The bearer key is not valid.")
    return found
