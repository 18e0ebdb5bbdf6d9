"""LocalStore specifics the contract cannot see: key mapping, housekeeping, and OSError kinds."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
import time
from pathlib import Path

import pytest

from okuri.errors import Ambiguous, NotFound, StoreMisconfigured, Transient
from okuri.store import local
from okuri.store.local import LocalStore, decode_segment, encode_segment


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("segment", ["a", ".", "..", ".x", "%", "%2E", "..%25", "é", "a.b."])
def test_segment_encoding_round_trips_and_never_starts_with_a_dot(segment: str) -> None:
    name = encode_segment(segment)
    assert decode_segment(name) == segment
    assert not name.startswith(".")
    assert not name.endswith("%")  # so a directory's trailing '%' cannot collide with a file


@pytest.mark.parametrize("key", ["", "/abs", "trailing/", "a//b", "nul\0byte", "x" * 1025])
async def test_keys_without_a_file_name_are_refused(tmp_path: Path, key: str) -> None:
    store = LocalStore(tmp_path)
    with pytest.raises(ValueError):
        await store.put_if_absent(key, b"x")
    with pytest.raises(ValueError):
        await store.get(key)
    assert list(tmp_path.iterdir()) == []


async def test_dot_dot_segments_stay_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = LocalStore(root)
    await store.put_if_absent("../../escape", b"x")
    await store.put_if_absent("q/../../escape", b"y")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    assert await store.list("") == ["../../escape", "q/../../escape"]


async def test_a_key_and_keys_below_it_coexist(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    await store.put_if_absent("q/b/1", b"below")
    await store.put_if_absent("q/b", b"the key itself")
    assert (await store.get("q/b")).data == b"the key itself"
    assert (await store.get("q/b/1")).data == b"below"
    assert _files(tmp_path / "q%") == ["b", "b%/1"]


async def test_delete_removes_lock_files_and_empty_directories(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, prune_after_s=0)
    await store.put_if_absent("q/seg/1", b"x")
    await store.put_if_absent("q/keep", b"x")
    await store.delete("q/seg/1")
    assert not (tmp_path / "q%" / "seg%").exists()
    assert (tmp_path / "q%" / "keep").exists()
    await store.delete("q/keep")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".locks"]
    assert list((tmp_path / ".locks").iterdir()) == []
    await store.put_if_absent("q/seg/1", b"again")  # pruned directories come back on demand
    assert (await store.get("q/seg/1")).data == b"again"


async def test_an_emptied_directory_stays_while_deletes_keep_touching_it(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, prune_after_s=0.2)
    for n in range(3):  # a queue that empties and fills again keeps its directory
        await store.put_if_absent(f"q/seg/{n}", b"x")
        await store.delete(f"q/seg/{n}")
        assert (tmp_path / "q%" / "seg%").is_dir()
    assert await store.list("q/") == []  # an empty directory is never a key
    await asyncio.sleep(0.25)
    await store.put_if_absent("o/1", b"x")
    await store.delete("o/1")  # a later delete prunes what waited long enough...
    assert not (tmp_path / "q%").exists()
    assert (tmp_path / "o%").is_dir()  # ...but not what it just emptied
    await store.close()  # and closing prunes the rest
    assert sorted(p.name for p in tmp_path.iterdir()) == [".locks"]


async def test_a_missing_root_reads_as_empty(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "not" / "yet")
    assert await store.list("") == []
    with pytest.raises(NotFound):
        await store.get("q/a")
    await store.delete("q/a")
    await store.put_if_absent("q/a", b"x")  # and is made on the first write
    assert await store.list("") == ["q/a"]


async def test_failure_before_the_rename_is_transient_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    etag = await store.put_if_absent("q/a", b"old")

    def full_disk(src: str, dst: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(Transient) as caught:
        await store.put_if_match("q/a", b"new", etag)
    assert isinstance(caught.value.__cause__, OSError)
    monkeypatch.undo()
    assert (await store.get("q/a")).data == b"old"
    assert _files(tmp_path / "q%") == ["a"]  # the temp file was removed


async def test_failure_after_the_rename_is_ambiguous(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)
    etag = await store.put_if_absent("q/a", b"old")

    def failing_fsync(path: str) -> None:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(local, "_fsync_dir", failing_fsync)
    with pytest.raises(Ambiguous):
        await store.put_if_match("q/a", b"new", etag)
    monkeypatch.undo()
    assert (await store.get("q/a")).data == b"new"  # it had landed: re-reading tells


async def test_a_read_only_store_is_misconfigured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path)

    def read_only(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(StoreMisconfigured):
        await store.put_if_absent("q/a", b"x")
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


async def test_overlong_segments_and_impossible_prefixes(tmp_path: Path) -> None:
    store = LocalStore(tmp_path)
    with pytest.raises(ValueError):
        await store.put_if_absent("q/" + "x" * 241, b"x")
    await store.put_if_absent("q/a", b"x")
    assert await store.list("q//") == []
    assert await store.list("/q") == []
    assert await store.list("q/", limit=0) == []


def test_a_waiter_on_a_deleted_lock_file_locks_again(tmp_path: Path) -> None:
    """`delete` unlinks the key's lock file while holding it. A process already waiting on that
    file must not take it as the lock: a newcomer may hold the new file by then."""
    store = LocalStore(tmp_path)
    entered: list[str] = []

    def waiter() -> None:
        with store._locked("k"):
            entered.append("waiter")

    thread = threading.Thread(target=waiter)
    with store._locked("k") as lock_path:
        thread.start()
        time.sleep(0.1)  # the waiter is now blocked in flock on the old file
        os.unlink(lock_path)
        newcomer = store._locked("k")
        newcomer.__enter__()  # a fresh lock file, held
    time.sleep(0.1)  # the waiter woke on the old file; it must now wait for the newcomer
    assert entered == []
    newcomer.__exit__(None, None, None)
    thread.join(timeout=5)
    assert entered == ["waiter"]


async def test_a_write_alone_in_flight_runs_on_the_loop_unless_writes_have_been_slow(
    tmp_path: Path,
) -> None:
    store = LocalStore(tmp_path)
    loop_thread = threading.get_ident()
    assert await store._run("k", threading.get_ident) == loop_thread  # alone and quick
    # A walk of a directory never runs on the loop.
    assert await store._run("k", threading.get_ident, inline=False) != loop_thread
    # While a call is in flight, the next goes to a thread rather than wait behind it.
    release = threading.Event()
    first = asyncio.ensure_future(store._run("a", lambda: release.wait(5), inline=False))
    await asyncio.sleep(0.01)
    assert await store._run("k", threading.get_ident) != loop_thread
    release.set()
    await first
    # A slow walk (never on the loop) does not count; writes that have lately been slow (a
    # slow disk) keep the loop free until they are quick again.
    await store._run("k", lambda: time.sleep(0.05), inline=False)
    assert await store._run("k", threading.get_ident) == loop_thread
    await store._run("k", lambda: time.sleep(0.05))
    assert await store._run("k", threading.get_ident) != loop_thread
    for _ in range(30):
        await store._run("k", lambda: None)
    assert await store._run("k", threading.get_ident) == loop_thread
    # And the port's writes go through it: what they do is unchanged.
    await store.put_if_absent("q/1", b"x")
    assert (await store.get("q/1")).data == b"x"
