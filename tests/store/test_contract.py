"""The one contract every ObjectStore adapter must pass, run against each of them.

Memory, the local directory (a file per object, and the journal), and S3 on a real moto server
(at the bucket root and under a prefix, with decoy keys outside the prefix that must never show
through).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from okuri.errors import Conflict, NotFound, PreconditionFailed, Transient
from okuri.store.check import verify_conditional_writes
from okuri.store.journal import JournalStore
from okuri.store.local import LocalStore
from okuri.store.memory import MemoryStore, md5_etag
from okuri.store.port import ObjectStore
from okuri.store.s3 import S3Store

ADAPTERS = ["memory", "local", "journal", "s3", "s3-prefixed"]
S3_PREFIX = "okuri/tenant-a"  # normalised to 'okuri/tenant-a/'
S3_DECOYS = ["okuri/tenant-b/q/a", "okuri/tenant-a-x/q/a", "q/a", "a"]


@pytest.fixture(params=ADAPTERS)
async def store(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[ObjectStore]:
    kind = request.param
    if kind == "memory":
        yield MemoryStore()
    elif kind == "local":
        yield LocalStore(tmp_path / "store")
    elif kind == "journal":
        journal = JournalStore(tmp_path / "store")
        yield journal
        await journal.close()
    else:
        args = request.getfixturevalue("s3_store_args")
        if kind == "s3-prefixed":
            client = request.getfixturevalue("moto_s3_client")
            for key in S3_DECOYS:
                client.put_object(Bucket=args["bucket"], Key=key, Body=b"decoy")
        async with S3Store(prefix=S3_PREFIX if kind == "s3-prefixed" else "", **args) as s3:
            yield s3


async def _put(store: ObjectStore, keys: list[str]) -> None:
    for key in keys:
        await store.put_if_absent(key, key.encode())


# --- get / create / compare-and-swap ---------------------------------------------------------


async def test_get_missing_is_not_found(store: ObjectStore) -> None:
    with pytest.raises(NotFound):
        await store.get("q/nothing-here")


async def test_put_if_absent_creates_with_md5_etag(store: ObjectStore) -> None:
    etag = await store.put_if_absent("q/manifest", b"v1")
    blob = await store.get("q/manifest")
    assert blob.data == b"v1"
    assert blob.etag == etag == md5_etag(b"v1")


async def test_put_if_absent_on_existing_key_is_refused(store: ObjectStore) -> None:
    etag = await store.put_if_absent("q/manifest", b"v1")
    with pytest.raises((PreconditionFailed, Conflict)):
        await store.put_if_absent("q/manifest", b"v2")
    blob = await store.get("q/manifest")
    assert (blob.data, blob.etag) == (b"v1", etag)


async def test_put_if_match_with_current_etag_replaces(store: ObjectStore) -> None:
    etag1 = await store.put_if_absent("q/manifest", b"v1")
    etag2 = await store.put_if_match("q/manifest", b"v2", etag1)
    assert etag2 != etag1
    blob = await store.get("q/manifest")
    assert (blob.data, blob.etag) == (b"v2", etag2)


async def test_put_if_match_with_stale_etag_is_refused(store: ObjectStore) -> None:
    etag1 = await store.put_if_absent("q/manifest", b"v1")
    etag2 = await store.put_if_match("q/manifest", b"v2", etag1)
    with pytest.raises(PreconditionFailed):
        await store.put_if_match("q/manifest", b"v3", etag1)
    assert (await store.get("q/manifest")).etag == etag2


async def test_put_if_match_on_missing_key_is_refused_and_creates_nothing(
    store: ObjectStore,
) -> None:
    etag = await store.put_if_absent("q/other", b"v1")
    with pytest.raises((NotFound, PreconditionFailed)):
        await store.put_if_match("q/manifest", b"v1", etag)
    with pytest.raises(NotFound):
        await store.get("q/manifest")
    assert await store.list("q/") == ["q/other"]


async def test_aba_same_bytes_give_the_same_etag(store: ObjectStore) -> None:
    """Etags are content hashes, so a CAS cannot tell 'unchanged' from 'changed and changed back'.

    A writer that read A, slept through A->B->A, then CASes with A's etag succeeds. This is why
    the engine puts a never-repeating version in every manifest and lease it writes: successive
    contents then always differ, and so do their etags.
    """
    etag_a = await store.put_if_absent("q/manifest", b"A")
    etag_b = await store.put_if_match("q/manifest", b"B", etag_a)
    etag_a_again = await store.put_if_match("q/manifest", b"A", etag_b)
    assert etag_a_again == etag_a
    # the slow writer holding the first etag wins, although the key changed twice meanwhile
    await store.put_if_match("q/manifest", b"slow writer", etag_a)
    assert (await store.get("q/manifest")).data == b"slow writer"


# --- list ------------------------------------------------------------------------------------

LIST_KEYS = ["q/a", "q/b", "q/b/1", "q/b/2", "q/b0", "q/c", "q-other", "r/x", "q.d/z"]


async def test_list_is_sorted_and_honours_prefix(store: ObjectStore) -> None:
    await _put(store, list(reversed(LIST_KEYS)))
    assert await store.list("") == sorted(LIST_KEYS)
    assert await store.list("q/") == ["q/a", "q/b", "q/b/1", "q/b/2", "q/b0", "q/c"]
    assert await store.list("q/b/") == ["q/b/1", "q/b/2"]
    assert await store.list("nothing/") == []


async def test_list_prefix_need_not_end_at_a_slash(store: ObjectStore) -> None:
    await _put(store, LIST_KEYS)
    assert await store.list("q/b") == ["q/b", "q/b/1", "q/b/2", "q/b0"]
    assert await store.list("q") == ["q-other", "q.d/z"] + await store.list("q/")
    assert await store.list("q/b/1") == ["q/b/1"]
    assert await store.list("r/") == ["r/x"]


async def test_list_start_after_and_limit(store: ObjectStore) -> None:
    await _put(store, LIST_KEYS)
    assert await store.list("q/", start_after="q/b") == ["q/b/1", "q/b/2", "q/b0", "q/c"]
    assert await store.list("q/", start_after="q/b/1", limit=2) == ["q/b/2", "q/b0"]
    assert await store.list("q/", start_after="q/b/9") == ["q/b0", "q/c"]
    assert await store.list("q/", start_after="a") == await store.list("q/")
    assert await store.list("q/", start_after="q/c") == []
    assert await store.list("", limit=3) == sorted(LIST_KEYS)[:3]


async def test_list_pages_through_everything(store: ObjectStore) -> None:
    keys = [f"q/seg/{i:03d}" for i in range(23)]
    await _put(store, keys)
    seen: list[str] = []
    for _ in range(len(keys)):  # bounded: at least one key per page
        page = await store.list("q/seg/", start_after=seen[-1] if seen else "", limit=5)
        if not page:
            break
        assert len(page) <= 5
        seen.extend(page)
    assert seen == keys


# --- delete ----------------------------------------------------------------------------------


async def test_delete_is_idempotent(store: ObjectStore) -> None:
    await store.delete("q/never-existed")
    await store.put_if_absent("q/seg/1", b"x")
    await store.put_if_absent("q/seg/2", b"y")
    await store.delete("q/seg/1")
    await store.delete("q/seg/1")
    with pytest.raises(NotFound):
        await store.get("q/seg/1")
    assert await store.list("q/") == ["q/seg/2"]
    with pytest.raises((NotFound, PreconditionFailed)):
        await store.put_if_match("q/seg/1", b"z", md5_etag(b"x"))
    await store.put_if_absent("q/seg/1", b"again")  # a deleted key can be created afresh
    assert (await store.get("q/seg/1")).data == b"again"


# --- bytes and keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"",
        bytes(range(256)) * 4,
        b"\x00\r\n\xff" * 10,
        random.Random(7).randbytes(1024 * 1024),
    ],
    ids=["empty", "all-bytes", "control", "1MiB"],
)
async def test_binary_data_round_trips(store: ObjectStore, data: bytes) -> None:
    etag = await store.put_if_absent("q/blob", data)
    blob = await store.get("q/blob")
    assert blob.data == data
    assert blob.etag == etag == md5_etag(data)
    etag2 = await store.put_if_match("q/blob", data[::-1] + b"!", etag)
    assert (await store.get("q/blob")).etag == etag2


ODD_KEYS = ["a/../b", "./x", ".hidden/k", "sp ace/ü%25/+#?", "%2E", "x/%", "q/.locks", "é/ü"]


async def test_odd_keys_round_trip_and_list_sorted(store: ObjectStore) -> None:
    for key in ODD_KEYS:
        await store.put_if_absent(key, key.encode())
    for key in ODD_KEYS:
        assert (await store.get(key)).data == key.encode()
    listed = await store.list("")
    assert listed == sorted(ODD_KEYS)


# --- concurrency -----------------------------------------------------------------------------

# S3 goes over HTTP to one moto process: fewer increments keep the suite fast on two cores.
CAS_LOAD = {
    "memory": (8, 25), "local": (8, 25), "journal": (8, 25), "s3": (4, 10), "s3-prefixed": (4, 10),
}  # fmt: skip
CAS_ATTEMPTS_MAX = 1_000


async def _increment(store: ObjectStore, key: str, times: int) -> int:
    """Add one to the counter `times` times; returns how many CASes lost a race."""
    lost = 0
    for _ in range(times):
        for _ in range(CAS_ATTEMPTS_MAX):
            try:
                blob = await store.get(key)
            except Transient:  # an S3 server may answer 500 under load; a client reads again
                continue
            await asyncio.sleep(0)  # let the others read the same version (memory never yields)
            try:
                await store.put_if_match(key, str(int(blob.data) + 1).encode(), blob.etag)
                break
            except (PreconditionFailed, Conflict):
                lost += 1
            except Transient:  # did not take effect (Ambiguous, which might have, is raised)
                continue
        else:
            raise AssertionError(f"no CAS won in {CAS_ATTEMPTS_MAX} attempts")
    return lost


async def test_concurrent_cas_increments_lose_no_update(
    store: ObjectStore, request: pytest.FixtureRequest
) -> None:
    tasks, times = CAS_LOAD[request.node.callspec.params["store"]]
    await store.put_if_absent("q/counter", b"0")
    lost = await asyncio.gather(*(_increment(store, "q/counter", times) for _ in range(tasks)))
    assert int((await store.get("q/counter")).data) == tasks * times
    assert sum(lost) > 0, "the tasks never raced, so this test proved nothing"


# --- start-up probe --------------------------------------------------------------------------


async def test_verify_conditional_writes_passes_and_cleans_up(store: ObjectStore) -> None:
    await store.put_if_absent("keep", b"unrelated")
    answer = await verify_conditional_writes(store)
    assert answer == "404"  # memory, local and moto all answer a CAS on a missing key with 404
    assert await store.list("_okuri/") == []
    assert await store.list("") == ["keep"]
