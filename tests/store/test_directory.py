"""Which store a local directory gets (okuri/store/directory.py): a new one the journal, one
that holds objects its own layout, and never the other layout's empty view of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from okuri.store.directory import LayoutMismatch, layout_of, open_local
from okuri.store.journal import JournalStore
from okuri.store.local import LocalStore


async def test_a_new_directory_gets_the_journal_and_keeps_it(tmp_path: Path) -> None:
    root = str(tmp_path / "new")
    assert layout_of(root) is None
    store = open_local(root)
    assert isinstance(store, JournalStore)
    await store.put_if_absent("m/q", b"{}")
    await store.close()
    assert layout_of(root) == "journal"
    assert isinstance(open_local(root), JournalStore)
    assert isinstance(open_local(root, "journal"), JournalStore)
    with pytest.raises(LayoutMismatch, match="holds a journal store, not a file-per-object one"):
        open_local(root, "files")


async def test_a_directory_of_files_stays_files(tmp_path: Path) -> None:
    root = str(tmp_path / "files")
    assert isinstance(open_local(root, "files"), LocalStore)
    await LocalStore(root).put_if_absent("m/q", b"{}")
    assert layout_of(root) == "files"
    store = open_local(root)
    assert isinstance(store, LocalStore) and (await store.get("m/q")).data == b"{}"
    with pytest.raises(LayoutMismatch, match="its layout is files"):
        open_local(root, "journal")


def test_only_dot_entries_are_a_new_directory_and_unknown_layouts_are_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / ".locks").mkdir()  # what a file store's start-up probe leaves
    (tmp_path / ".tmpx").write_bytes(b"")
    assert layout_of(str(tmp_path)) is None
    with pytest.raises(ValueError, match="expected one of auto, journal, files"):
        open_local(str(tmp_path), "sideways")
