"""The journal store's own promises, beyond the contract every store passes (test_contract.py)
and the processes sharing it (test_local_multiprocess.py): records, torn tails, group commit,
compaction and what a compaction cut short leaves."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from okuri.errors import NotFound
from okuri.store import journal_records as records
from okuri.store.journal import JournalStore, holds_journal, journal_name
from okuri.store.memory import md5_etag


def test_parse_takes_whole_records_and_stops_at_a_torn_or_corrupt_one() -> None:
    one = records.encode(records.PUT, "q/a", b"hello")
    two = records.encode(records.DELETE, "q/b")
    found, used = records.parse(one + two + one[:-1], 100)
    assert [(r.kind, r.key) for r in found] == [(records.PUT, "q/a"), (records.DELETE, "q/b")]
    assert used == len(one) + len(two)
    assert found[0].data_at == 100 + records.HEADER.size + 3 and found[0].data_len == 5
    flipped = one[:-1] + bytes([one[-1] ^ 1])
    assert records.parse(flipped + two, 0) == ([], 0)
    assert records.parse(b"\0" * 64, 0) == ([], 0)  # what a crash may leave past the end
    with pytest.raises(ValueError):
        records.encode(records.PUT, "", b"x")
    with pytest.raises(ValueError):
        records.encode(records.PUT, "k" * 1025, b"x")


def _journals(root: Path) -> list[str]:
    return sorted(n for n in os.listdir(root) if n.startswith("journal-"))


async def test_a_torn_tail_is_invisible_and_the_next_writer_cuts_it_off(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = JournalStore(root)
    etag = await store.put_if_absent("q/m", b"v1")
    (name,) = _journals(root)
    whole = records.encode(records.PUT, "q/m", b"v2-never-synced")
    with open(root / name, "ab") as f:
        f.write(whole[:-3])  # a crash mid-append
    reader = JournalStore(root)
    assert (await reader.get("q/m")).data == b"v1"
    etag = await reader.put_if_match("q/m", b"v3", etag)
    assert (await store.get("q/m")) == (await reader.get("q/m"))
    assert (await store.get("q/m")).data == b"v3" and etag == md5_etag(b"v3")
    assert await store.list("") == ["q/m"]
    await store.close()
    await reader.close()


async def test_writes_that_arrive_together_share_one_append_and_one_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JournalStore(tmp_path / "store")
    await store.put_if_absent("q/first", b"x")
    syncs = 0
    real = os.fdatasync

    def counted(fd: int) -> None:
        nonlocal syncs
        syncs += 1
        real(fd)

    monkeypatch.setattr(os, "fdatasync", counted)
    etags = await asyncio.gather(*(store.put_if_absent(f"q/{i}", b"%d" % i) for i in range(50)))
    assert syncs == 1
    assert etags == [md5_etag(b"%d" % i) for i in range(50)]
    # Within one batch, a later write sees the earlier ones: one create wins, one CAS follows.
    results = await asyncio.gather(
        store.put_if_absent("q/race", b"a"),
        store.put_if_absent("q/race", b"b"),
        store.put_if_match("q/race", b"c", md5_etag(b"a")),
        return_exceptions=True,
    )
    assert results[0] == md5_etag(b"a") and type(results[1]).__name__ == "PreconditionFailed"
    assert results[2] == md5_etag(b"c") and (await store.get("q/race")).data == b"c"
    await store.close()


async def test_compaction_keeps_what_is_live_and_a_reader_follows_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    writer = JournalStore(root, compact_bytes_min=2048)
    reader = JournalStore(root)
    etags = {k: await writer.put_if_absent(f"q/{k}", b"0") for k in "abc"}
    assert (await reader.get("q/a")).data == b"0"  # the reader holds the first generation
    for n in range(1, 200):
        for k in "ab":
            etags[k] = await writer.put_if_match(f"q/{k}", b"%d" % n * 20, etags[k])
    await writer.delete("q/c")
    assert _journals(root) != [journal_name(1)]  # compacted, at least once
    assert len(_journals(root)) == 1
    assert os.path.getsize(root / _journals(root)[0]) < 2048 * 2
    for store in (writer, reader, JournalStore(root)):
        assert (await store.get("q/a")).data == b"199" * 20
        assert (await store.get("q/b")).etag == etags["b"]
        with pytest.raises(NotFound):
            await store.get("q/c")
        assert await store.list("q/") == ["q/a", "q/b"]
    await writer.close()
    await reader.close()


async def test_what_a_compaction_cut_short_leaves_is_never_read_and_is_cleared(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    store = JournalStore(root, compact_bytes_min=1024)
    etag = await store.put_if_absent("q/m", b"v")
    # Cut short before its MOVED record: a next generation nobody points at.
    (root / journal_name(2)).write_bytes(records.encode(records.PUT, "q/m", b"stale"))
    assert (await JournalStore(root).get("q/m")).data == b"v"
    for n in range(100):
        etag = await store.put_if_match("q/m", b"%d" % n * 40, etag)
    assert (await JournalStore(root).get("q/m")).data == b"99" * 40
    assert len(_journals(root)) == 1
    await store.close()


async def test_a_reader_skips_generations_compacted_away_and_a_writer_removes_the_old(
    tmp_path: Path,
) -> None:
    root = tmp_path / "store"
    root.mkdir()
    # Generation 1 moved to 2, which moved to 3 and was removed; 1 stayed (its compaction
    # stopped before removing it).
    (root / journal_name(1)).write_bytes(
        records.encode(records.PUT, "q/m", b"old") + records.encode(records.MOVED, "2")
    )
    (root / journal_name(3)).write_bytes(records.encode(records.PUT, "q/m", b"new"))
    assert holds_journal(str(root)) and not holds_journal(str(tmp_path / "none"))
    store = JournalStore(root)
    blob = await store.get("q/m")
    assert blob.data == b"new"
    await store.put_if_match("q/m", b"newer", blob.etag)
    assert _journals(root) == [journal_name(3)]
    await store.close()


async def test_a_failure_after_the_synced_append_leaves_the_writes_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JournalStore(tmp_path / "store", compact_bytes_min=64)
    etag = await store.put_if_absent("q/m", b"v1")

    def broken() -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(store, "_compact", broken)
    new = await store.put_if_match("q/m", b"v2" * 100, etag)  # due for compaction, which fails
    assert new == md5_etag(b"v2" * 100)
    monkeypatch.undo()
    assert (await store.get("q/m")).data == b"v2" * 100
    assert (await JournalStore(tmp_path / "store").get("q/m")).etag == new
    await store.close()
