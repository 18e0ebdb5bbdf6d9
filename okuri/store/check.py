"""Start-up probe: refuse to run on a store that does not enforce conditional writes.

Every guarantee okuri gives rests on If-None-Match and If-Match being honoured. Some stores (and
older releases of others) accept the headers and then overwrite anyway, which would silently lose
messages. This probe finds out with real writes on a throwaway key, against any ObjectStore.
"""

from __future__ import annotations

from contextlib import suppress

from okuri.clock import SystemClock
from okuri.errors import Conflict, NotFound, PreconditionFailed, StoreError, StoreMisconfigured
from okuri.store.port import ObjectStore


def _refuse(what: str) -> StoreMisconfigured:
    return StoreMisconfigured(
        f"the object store {what}; okuri refuses to run on it, because without enforced "
        "conditional writes concurrent writers silently overwrite each other"
    )


async def verify_conditional_writes(
    store: ObjectStore, probe_prefix: str = "_okuri/probe/", probe_id: str | None = None
) -> str:
    """Check create-only and compare-and-swap; return how a CAS on a missing key is refused.

    The answer is '404' (NotFound, as AWS) or '412' (PreconditionFailed, as Ceph).
    Transient, Ambiguous and Conflict errors propagate: they say nothing about the store's
    semantics, and the caller may simply try again.
    """
    probe_id = probe_id or SystemClock().new_id()
    key = f"{probe_prefix}{probe_id}"
    missing = f"{probe_prefix}{probe_id}-missing"
    first, second = f"okuri probe 1 {probe_id}".encode(), f"okuri probe 2 {probe_id}".encode()
    etag1 = await store.put_if_absent(key, first)
    try:
        try:
            await store.put_if_absent(key, b"okuri probe: this create must be refused")
        except (PreconditionFailed, Conflict):
            pass
        else:
            raise _refuse("ignored If-None-Match: * (a create-only put overwrote an existing key)")
        if (await store.get(key)).data != first:
            raise _refuse("changed a key while refusing a create-only put on it")

        try:
            etag2 = await store.put_if_match(key, second, etag1)
        except PreconditionFailed:
            raise _refuse("refused If-Match with the key's current etag") from None
        if (await store.get(key)).data != second:
            raise _refuse("answered a compare-and-swap with success but did not store it")

        try:
            await store.put_if_match(key, b"okuri probe: this CAS must be refused", etag1)
        except PreconditionFailed:
            pass
        except NotFound:
            raise _refuse("answered 404 to If-Match with a stale etag on an existing key") from None
        else:
            raise _refuse("ignored If-Match (a compare-and-swap with a stale etag overwrote)")
        if (await store.get(key)).etag != etag2:
            raise _refuse("changed a key while refusing a stale compare-and-swap on it")

        try:
            await store.put_if_match(missing, b"okuri probe: this CAS must be refused", etag2)
        except NotFound:
            answer = "404"
        except PreconditionFailed:
            answer = "412"
        else:
            raise _refuse("accepted If-Match on a missing key (and created it)")
        try:
            await store.get(missing)
        except NotFound:
            pass
        else:
            raise _refuse("created a key while refusing If-Match on it")
        return answer
    finally:
        for k in (key, missing):
            with suppress(StoreError):  # a leftover probe key is harmless; the verdict matters
                await store.delete(k)
