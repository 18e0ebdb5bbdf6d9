"""Which store a local directory gets: the journal (okuri/store/journal.py) or a file per object
(okuri/store/local.py).

Why a choice at all: a new directory gets the journal, which syncs once per group of writes; a
directory that already holds objects as files keeps them as files, since the two layouts never
see each other's objects. Every process sharing a directory must therefore use its layout, and
`open_local` refuses one that is asked for the other layout rather than start on an empty view.
"""

from __future__ import annotations

import os

from okuri.store.journal import JournalStore, generation_of
from okuri.store.local import LocalStore

LAYOUTS = ("auto", "journal", "files")


class LayoutMismatch(ValueError):
    """The directory holds the other layout than the one asked for."""


def layout_of(root: str) -> str | None:
    """ "journal" or "files" for a directory holding objects, None for a new or empty one."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return None
    if any(generation_of(n) is not None for n in names):
        return "journal"
    # A file-per-object directory's entries are escaped keys, which never start with '.'.
    if any(not n.startswith(".") for n in names):
        return "files"
    return None


def open_local(root: str, layout: str = "auto") -> JournalStore | LocalStore:
    """The store for `root`: `layout` "auto" keeps what is there, and gives a new directory the
    journal. Raises LayoutMismatch (one line) when `root` holds the other layout."""
    if layout not in LAYOUTS:
        raise ValueError(f"local store layout {layout!r}: expected one of {', '.join(LAYOUTS)}")
    found = layout_of(root)
    if layout != "auto" and found is not None and found != layout:
        raise LayoutMismatch(
            f"{root}: it holds a {_described(found)} store, not a {_described(layout)} one; "
            f"its layout is {found} (or auto)"
        )
    chosen = found or ("journal" if layout == "auto" else layout)
    return JournalStore(root) if chosen == "journal" else LocalStore(root)


def _described(layout: str) -> str:
    return "journal" if layout == "journal" else "file-per-object"
