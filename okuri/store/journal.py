"""Journal store: a local directory as one append-only file, synced once per group of writes.

Why: the file-per-object store (okuri/store/local.py) pays, for every write, a new file, an
fsync, a rename and an fsync of the directory, and the filesystem allocates and frees an inode
each time; a Celery task costs two or three such writes. Here every object lives in one journal
file (okuri/store/journal_records.py): a write appends a record, and the writes that arrive
while one is being synced share the next append and its one `fdatasync`, as Redis's AOF and
SQLite's WAL do.

The object-store contract holds, across every process that shares the directory:
- A writer holds `flock` on `.journal.lock` while it reads the journal's new records, checks each
  condition (create-only, compare-and-swap on the MD5 etag) against what is there, and appends;
  so conditions and appends are one atomic step for all processes.
- A write is answered once its append is synced. A crash leaves a record whole or torn; readers
  stop at a torn one and the next writer, holding the lock, cuts it off.
- Readers take no lock: each keeps an index (key -> where its data is) and before every request
  reads the records appended since it last looked (one `fstat`, usually nothing more).
- The journal is compacted when what it holds is more than `compact_ratio` times what is live
  (and at least `compact_bytes_min`): under the lock, the live objects go to the next generation
  `journal-<n+1>`, synced, and a MOVED record appended to the old one tells every reader to
  follow; then the old file is removed. Readers start from the lowest generation there is and
  follow MOVED records, so a compaction cut short leaves a next file nobody reads, removed by
  the next one.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import errno
import fcntl
import functools
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from okuri import limits
from okuri.clock import Clock, SystemClock
from okuri.errors import (
    Ambiguous,
    NotFound,
    PreconditionFailed,
    StoreError,
    Transient,
)
from okuri.store import journal_records as records
from okuri.store.local_io import RecentTime, translate
from okuri.store.local_io import fsync_dir as _fsync_dir
from okuri.store.memory import list_page, md5_etag
from okuri.store.port import Blob

T = TypeVar("T")
log = logging.getLogger("okuri.store.journal")

LOCK_FILE = ".journal.lock"
PREFIX = "journal-"
_ABSENT = object()


@dataclass(frozen=True, slots=True)
class _Entry:
    at: int  # where the data starts
    length: int
    etag: str
    size: int  # the whole record's bytes, for the live total


@dataclass(frozen=True, slots=True)
class _Write:
    key: str
    data: bytes | None  # None: delete
    expected: object  # _ABSENT (create-only), an etag (compare-and-swap) or None (no condition)


def journal_name(generation: int) -> str:
    return f"{PREFIX}{generation:010d}"


def generation_of(name: str) -> int | None:
    digits = name.removeprefix(PREFIX)
    return int(digits) if name.startswith(PREFIX) and digits.isdigit() else None


def holds_journal(root: str) -> bool:
    """Does `root` hold a journal store (rather than another layout, or nothing)?"""
    try:
        return any(generation_of(name) is not None for name in os.listdir(root))
    except FileNotFoundError:
        return False


def _translate(err: OSError, key: str) -> StoreError:
    return translate(err, key, "journal store")


class JournalStore:
    def __init__(
        self,
        root: str | os.PathLike[str],
        compact_bytes_min: int = limits.journal_compact_bytes_min,
        compact_ratio: float = limits.journal_compact_ratio,
        clock: Clock | None = None,
    ) -> None:
        self.root = os.path.abspath(os.fspath(root))
        self.compact_bytes_min = compact_bytes_min
        self.compact_ratio = compact_ratio
        self._clock = clock or SystemClock()  # read from worker threads: not a loop's clock
        self._mutex = threading.Lock()  # the fields below, between the loop and a batch's thread
        self._fd: int | None = None
        self._generation = 0
        self._tail = 0  # how far the journal has been read
        self._index: dict[str, _Entry] = {}
        self._keys: list[str] = []  # the index's keys, sorted, for list
        self._live = 0  # bytes of the records the index points at
        self._lock_fd: int | None = None
        self._pending: list[tuple[_Write, asyncio.Future[str | None]]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._recent = RecentTime(self._clock)  # how long batches took lately
        self._closed = False
        self._swept = False  # generations left before ours are removed (by the first batch)
        self.syncs = 0  # fsync and fdatasync calls: the durable write barriers paid (/metrics)

    # --- reading the journal (under _mutex) ---------------------------------------------------

    def _open_lowest(self, at_least: int = 0) -> bool:
        """Open the lowest generation there is (from `at_least`) and read it from the start;
        False if none."""
        for _ in range(limits.lock_attempts_max):
            try:
                names = os.listdir(self.root)
            except FileNotFoundError:
                return False
            gens = sorted(g for g in map(generation_of, names) if g is not None and g >= at_least)
            if not gens:
                return False
            try:
                self._switch(gens[0])
                return True
            except FileNotFoundError:  # compacted away since the listing: look again
                continue
        raise OSError(errno.EAGAIN, "journal generations kept vanishing")

    def _switch(self, generation: int) -> None:
        fd = os.open(
            os.path.join(self.root, journal_name(generation)),
            os.O_RDWR | os.O_APPEND | os.O_CLOEXEC,
        )
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._generation, self._tail = fd, generation, 0
        self._index, self._keys, self._live = {}, [], 0

    def _catch_up(self) -> None:
        """Read what was appended since we last looked, following MOVED records."""
        if self._fd is None and not self._open_lowest():
            return
        while True:
            assert self._fd is not None
            size = os.fstat(self._fd).st_size
            if size <= self._tail:
                return
            buf = os.pread(self._fd, size - self._tail, self._tail)
            found, used = records.parse(buf, self._tail)
            for r in found:
                if r.kind == records.MOVED:
                    # The next generation, or, if it has moved on and been removed since, the
                    # lowest one after it (generations only grow along the chain).
                    if not self._open_lowest(at_least=int(r.key)):
                        return
                    break
                data = buf[r.data_at - self._tail : r.end - self._tail]
                self._apply(r, md5_etag(data) if r.kind == records.PUT else "")
            else:
                self._tail += used
                return

    def _apply(self, r: records.Record, etag: str) -> None:
        """Record `r` into the index; `etag`, its data's (a PUT's)."""
        old = self._index.pop(r.key, None)
        if old is not None:
            self._live -= old.size
        if r.kind == records.PUT:
            size = r.end - r.start
            self._index[r.key] = _Entry(r.data_at, r.data_len, etag, size)
            self._live += size
            if old is None:
                bisect.insort(self._keys, r.key)
        elif old is not None:
            del self._keys[bisect.bisect_left(self._keys, r.key)]

    def _read(self, key: str) -> Blob:
        with self._mutex:
            self._catch_up()
            entry = self._index.get(key)
            if entry is None:
                raise NotFound(key)
            assert self._fd is not None
            data = os.pread(self._fd, entry.length, entry.at)
        if len(data) != entry.length:
            raise Transient(f"journal store read {len(data)} of {entry.length} bytes of {key!r}")
        return Blob(data, entry.etag)

    def _list(self, prefix: str, start_after: str, limit: int) -> list[str]:
        with self._mutex:
            self._catch_up()
            return list_page(self._keys, prefix, start_after, limit)

    # --- writing (a batch at a time, in one process) -----------------------------------------

    def _locked(self) -> int:
        if self._lock_fd is None:
            os.makedirs(self.root, exist_ok=True)
            self._lock_fd = os.open(
                os.path.join(self.root, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
            )
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        return self._lock_fd

    def _commit(self, batch: list[_Write]) -> list[str | Exception]:
        """Check and append `batch` under the lock, synced once: each write's etag or error."""
        lock = self._locked()
        try:
            with self._mutex:
                self._catch_up()
                if self._fd is None:
                    self._create_first()
                if not self._swept:
                    self._sweep()
                assert self._fd is not None
                fd, start = self._fd, self._tail
                if os.fstat(fd).st_size > start:  # a crash's torn record: nobody else appends
                    os.ftruncate(fd, start)
                out, appended, etags = self._decide(batch)
            if appended:
                self._append(fd, start, appended)
            self._after_append(fd, start, appended, etags)
            return out
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

    def _after_append(self, fd: int, start: int, appended: bytes, etags: list[str]) -> None:
        """Put our own records into the index from the bytes and etags at hand (unless a read
        on the loop has caught up with them already), and compact if due. The batch is durable
        by now, so a failure here is logged, never its writes' outcome: the next request reads
        the records again, and a compaction cut short is one nobody reads."""
        try:
            with self._mutex:
                if appended and self._fd == fd and self._tail == start:
                    found, used = records.parse(appended, start)
                    if used == len(appended) and len(found) == len(etags):
                        for r, etag in zip(found, etags, strict=True):
                            self._apply(r, etag)
                        self._tail = start + used
                self._catch_up()
                if self._tail > max(self.compact_bytes_min, self._live * self.compact_ratio):
                    self._compact()
        except OSError as err:
            log.warning("journal store: after a synced append: %s", err)

    def _decide(self, batch: list[_Write]) -> tuple[list[str | Exception], bytes, list[str]]:
        """Each write's outcome against the index and the batch's writes before it; the records
        to append, and each record's etag ("" for a delete)."""
        now: dict[str, str | None] = {}  # what the batch has done to a key so far
        out: list[str | Exception] = []
        chunks: list[bytes] = []
        etags: list[str] = []
        for w in batch:
            current = now[w.key] if w.key in now else _etag_in(self._index, w.key)
            if w.expected is _ABSENT and current is not None:
                out.append(PreconditionFailed(w.key))
                continue
            if isinstance(w.expected, str) and current is None:
                out.append(NotFound(w.key))
                continue
            if isinstance(w.expected, str) and current != w.expected:
                out.append(PreconditionFailed(w.key))
                continue
            if w.data is None:
                if current is not None:
                    chunks.append(records.encode(records.DELETE, w.key))
                    etags.append("")
                now[w.key] = None
                out.append("")
                continue
            etag = md5_etag(w.data)
            chunks.append(records.encode(records.PUT, w.key, w.data))
            etags.append(etag)
            now[w.key] = etag
            out.append(etag)
        return out, b"".join(chunks), etags

    def _append(self, fd: int, start: int, data: bytes) -> None:
        try:
            written = 0
            while written < len(data):
                written += os.write(fd, data[written:])
        except OSError:
            try:
                os.ftruncate(fd, start)  # nobody reads past a torn record, and now it is gone
            except OSError as err:
                raise Ambiguous(f"journal store: an append failed halfway: {err}") from err
            raise
        try:
            self.syncs += 1
            os.fdatasync(fd)
        except OSError as err:
            raise Ambiguous(f"journal store appended but could not sync: {err}") from err

    def _create_first(self) -> None:
        path = os.path.join(self.root, journal_name(1))
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        os.close(fd)
        self.syncs += 1
        _fsync_dir(self.root)
        self._switch(1)

    def _sweep(self) -> None:
        """Remove generations before ours: a compaction that stopped before removing its old
        file left it (every reader follows its MOVED record, so nobody needs it)."""
        for name in os.listdir(self.root):
            gen = generation_of(name)
            if gen is not None and gen < self._generation:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.root, name))
        self._swept = True

    def _compact(self) -> None:
        """Under the lock and _mutex: the live objects to the next generation, then MOVED."""
        assert self._fd is not None
        old_fd, old_gen = self._fd, self._generation
        new_gen = old_gen + 1
        path = os.path.join(self.root, journal_name(new_gen))
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a compaction cut short: nobody reads it
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            for key in self._keys:
                entry = self._index[key]
                data = os.pread(old_fd, entry.length, entry.at)
                os.write(fd, records.encode(records.PUT, key, data))
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_dir(self.root)
        self.syncs += 2
        self._append(old_fd, os.fstat(old_fd).st_size, records.encode(records.MOVED, str(new_gen)))
        self._catch_up()  # follows the MOVED record to the new generation
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.root, journal_name(old_gen)))
        self.syncs += 1
        _fsync_dir(self.root)

    # --- the port ----------------------------------------------------------------------------

    async def _submit(self, write: _Write) -> str | None:
        if self._closed:
            raise Transient("journal store closed")
        fut: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._pending.append((write, fut))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())
        return await fut

    async def _flush(self) -> None:
        """One batch at a time: what arrives while one is written rides the next."""
        while self._pending:
            taken, self._pending = self._pending, []
            batch = [w for w, _ in taken]
            try:
                results = await self._blocking("journal", functools.partial(self._commit, batch))
            except Exception as err:  # every write of the batch hears it
                error = _translate(err, batch[0].key) if isinstance(err, OSError) else err
                results = [error] * len(batch)
            for (_, fut), result in zip(taken, results, strict=True):
                if fut.done():
                    continue
                if isinstance(result, BaseException):
                    fut.set_exception(result)
                else:
                    fut.set_result(result)

    async def _blocking(self, key: str, fn: Callable[[], T]) -> T:
        """On the loop while such calls have lately been quick (the hop to a thread costs more
        than a sync on a fast disk), else in a worker thread so a slow disk never stalls it."""
        try:
            if self._recent.quick:
                return self._recent.timed(fn)
            return await asyncio.to_thread(self._recent.timed, fn)
        except OSError as err:
            raise _translate(err, key) from err

    async def get(self, key: str) -> Blob:
        return self.get_blocking(key)

    def get_blocking(self, key: str) -> Blob:
        """`get` for a tool outside an event loop (a read takes no lock, and never waits long)."""
        try:
            return self._read(key)
        except OSError as err:
            raise _translate(err, key) from err

    async def put_if_absent(self, key: str, data: bytes) -> str:
        etag = await self._submit(_Write(_checked(key), bytes(data), _ABSENT))
        assert etag is not None
        return etag

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        new = await self._submit(_Write(_checked(key), bytes(data), etag))
        assert new is not None
        return new

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        if limit <= 0:
            return []
        try:
            return self._list(prefix, start_after, limit)
        except OSError as err:
            raise _translate(err, prefix) from err

    async def delete(self, key: str) -> None:
        await self._submit(_Write(_checked(key), None, None))

    async def close(self) -> None:
        if self._flusher is not None:
            await asyncio.gather(self._flusher, return_exceptions=True)
        self._closed = True
        with self._mutex:
            for fd in (self._fd, self._lock_fd):
                if fd is not None:
                    os.close(fd)
            self._fd = self._lock_fd = None


def _etag_in(index: dict[str, _Entry], key: str) -> str | None:
    entry = index.get(key)
    return None if entry is None else entry.etag


def _checked(key: str) -> str:
    raw = key.encode("utf-8")
    if not raw or len(raw) > records.KEY_BYTES_MAX:
        raise ValueError(f"a key is 1 to {records.KEY_BYTES_MAX} bytes: {key[:80]!r}")
    return key
