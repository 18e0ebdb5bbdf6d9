"""Ack logs: a follower answers a delete once it is durable in a log object of its own.

Why: with several nodes, one commits a queue's manifest for the others (peering.py), so a
delete sent to any other node waited for a hop to the leader and the leader's commit: about
twice a delete on one node. A follower that writes the delete to an object of its own answers
after one write, and the Ack travels to the leader in the background.

What keeps it safe (nothing delivered after its delete was answered):
- A follower that forwards a lease names a fresh log in it; the manifest records which messages
  it granted under the log (`QueueState.logs`), and no lease takes them while the log is open.
  Beside the forward, the follower creates the log's object (`{"acks": []}`).
- A delete of a receipt the follower handed out under an open log is appended to the object
  with If-Match on the etag of the follower's own last write (one write carries every delete
  that arrived meanwhile), then answered.
- A committer that finds a log due (a message under it whose lease ran out, by its clock)
  closes it before its own work: it reads the object and writes it back marked closed
  (If-Match; created closed when missing), then commits the acks it held together with
  `CloseLog`, atomically. A follower's append after that fails its If-Match, and the follower
  forwards those deletes as before. Fenced by the object, not by clocks.
- A log whose messages are all finished leaves the manifest by itself; its object is then
  garbage, deleted by its follower or the queue's sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import orjson

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.ack_log_rules import due_logs
from okuri.core.receipts import Receipt
from okuri.core.state import QueueState
from okuri.core.transitions import Ack, CloseLog, Grant, Op, Result
from okuri.engine.batching import Batcher
from okuri.engine.retry import retrying
from okuri.engine.tasks import Tasks
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    OkuriError,
    PreconditionFailed,
    Transient,
)
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

Place = tuple[int, int, int]  # (slot, index, epoch) of a receipt
CommitFn = Callable[[Sequence[Op]], Awaitable[list[Result]]]


class AckLogCorrupt(ValueError):
    pass


def encode_log(acks: Sequence[Place], closed: bool) -> bytes:
    return orjson.dumps({"acks": [list(a) for a in acks], "closed": closed})


def decode_log(data: bytes) -> tuple[list[Place], bool]:
    try:
        d = orjson.loads(data)
        acks = [(int(s), int(i), int(e)) for s, i, e in d["acks"]]
        return acks, bool(d["closed"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise AckLogCorrupt(f"ack log unreadable: {err}") from err


@dataclass
class _Log:
    etag: str | None = None  # of this node's last write; None until created
    acks: list[Place] = field(default_factory=list)
    closed: bool = False  # known closed (or unusable): deletes under it forward
    leased: bool = False  # the lease naming it has committed: the manifest lists it, or did


class AckLogs:
    """One node's ack logs for one queue: which receipts it handed out under which log, the
    logs' objects, and the background commit of what they hold."""

    def __init__(
        self,
        name: str,
        store: ObjectStore,
        clock: Clock,
        node_id: str,
        stats: Counter[str],
        tasks: Tasks,
        commit: CommitFn,
        enabled: bool,
    ) -> None:
        self.name = name
        self.store = store
        self.clock = clock
        self.enabled = enabled
        self._node_id = node_id
        self._stats = stats
        self._tasks = tasks  # deleting done logs
        self._folds = Tasks()  # committing logged deletes: waited for before the committer closes
        self._commit = commit
        self._counter = 0
        self._logs: dict[str, _Log] = {}
        self._handed: dict[Place, str] = {}  # receipt -> the log it was handed out under
        self._writer: Batcher[tuple[str, str, list[Place]], bool] = Batcher(
            clock, 0, self._flush, max_items=limits.commit_ops_max
        )

    # --- leasing under a log -----------------------------------------------------------------

    def new_log(self) -> str:
        self._counter += 1
        return f"{self._node_id}-{self._counter}-{self.clock.new_id()[:8]}"

    async def open(self, incarnation: str, log_id: str) -> None:
        """Create the log's object; a log that could not be created stays closed."""
        entry = self._logs[log_id] = _Log(closed=True)
        try:
            etag = await self.store.put_if_absent(
                keys.ack_log(self.name, incarnation, log_id), encode_log([], closed=False)
            )
        except OkuriError as err:  # exists (closed by a committer already), or unknown
            log.debug("ack log %s of %s not opened: %s", log_id, self.name, err)
            return
        entry.etag, entry.closed = etag, False

    def granted(self, log_id: str, grants: Sequence[Grant]) -> None:
        """The lease naming the log committed: receipts of `grants` may be deleted through
        it (while it is open)."""
        entry = self._logs.get(log_id)
        if entry is None:
            return
        entry.leased = True
        if entry.closed:
            return
        for g in grants:
            if len(self._handed) < limits.ack_log_acks_max * 4:
                self._handed[(g.seq, g.idx, g.epoch)] = log_id

    def released(self, grants: Sequence[Grant]) -> None:
        """Leases handed back unused: their epoch will be given again, maybe under another log."""
        for g in grants:
            self._handed.pop((g.seq, g.idx, g.epoch), None)

    # --- deletes -----------------------------------------------------------------------------

    async def record(self, incarnation: str, receipts: Sequence[Receipt]) -> list[bool]:
        """For each receipt, True once its delete is durable in an open log (answer it);
        False: commit it as usual."""
        out = [False] * len(receipts)
        if not self.enabled:
            return out
        by_log: dict[str, list[tuple[int, Place]]] = {}
        for i, r in enumerate(receipts):
            place = (r.seq, r.idx, r.epoch)
            log_id = self._handed.get(place)
            entry = self._logs.get(log_id) if log_id is not None else None
            if log_id is not None and entry is not None and not entry.closed:
                by_log.setdefault(log_id, []).append((i, place))
        if not by_log:
            return out
        futures = [
            (items, self._writer.submit((incarnation, log_id, [p for _, p in items])))
            for log_id, items in by_log.items()
        ]
        logged: list[Place] = []
        for items, fut in futures:
            if await fut:
                for i, place in items:
                    out[i] = True
                    logged.append(place)
                    self._handed.pop(place, None)
        if logged:
            self._stats["ack_log_acks"] += len(logged)
            self._folds.spawn(self._fold(incarnation, logged))
        return out

    async def _flush(self, items: list[tuple[str, str, list[Place]]]) -> list[bool]:
        by_log: dict[tuple[str, str], list[Place]] = {}
        for inc, log_id, places in items:
            by_log.setdefault((inc, log_id), []).extend(places)
        done = dict(
            zip(
                by_log,
                await asyncio.gather(*(self._append(i, l_, p) for (i, l_), p in by_log.items())),
                strict=True,
            )
        )
        return [done[(inc, log_id)] for inc, log_id, _ in items]

    async def _append(self, incarnation: str, log_id: str, places: list[Place]) -> bool:
        entry = self._logs.get(log_id)
        if entry is None or entry.closed or entry.etag is None:
            return False
        if len(entry.acks) + len(places) > limits.ack_log_acks_max:
            return False
        acks = [*entry.acks, *places]
        key = keys.ack_log(self.name, incarnation, log_id)
        try:
            etag = await self.store.put_if_match(key, encode_log(acks, closed=False), entry.etag)
        except (PreconditionFailed, NotFound, Conflict, Ambiguous):
            # Closed by a committer (or deleted, or an answer lost): never write to it again.
            entry.closed = True
            self._forget_handed(log_id)
            return False
        except Transient:
            return False
        entry.etag, entry.acks = etag, acks
        self._stats["ack_log_writes"] += 1
        return True

    async def _fold(self, incarnation: str, places: list[Place]) -> None:
        """Commit logged deletes through the usual path (to the leader), so the manifest
        finishes them before anyone need close the log."""
        try:
            await self._commit([Ack(s, i, e, incarnation) for s, i, e in places])
        except (OkuriError, RuntimeError) as err:  # RuntimeError: the node is shutting down
            log.info("committing logged deletes of %s: %s (the log keeps them)", self.name, err)

    def _forget_handed(self, log_id: str) -> None:
        for place in [p for p, l_ in self._handed.items() if l_ == log_id]:
            del self._handed[place]

    # --- logs the manifest no longer holds ----------------------------------------------------

    async def close(self) -> None:
        """Let logged deletes reach the manifest (graceful shutdown; the log keeps them if not)."""
        await self._writer.drain()
        await self._folds.wait()

    def crash(self) -> None:
        self._writer.cancel()
        self._folds.cancel()

    def reset(self) -> None:
        """The queue was deleted and created again: nothing handed out before counts."""
        self._logs.clear()
        self._handed.clear()

    def installed(self, st: QueueState) -> None:
        """Logs of this node the manifest no longer lists are done with: forget them and
        delete their objects (a closed one's acks are in the manifest; one whose messages all
        finished needs none)."""
        done = [
            log_id
            for log_id, entry in self._logs.items()
            if entry.leased and log_id not in st.logs
        ]
        for log_id in done:
            del self._logs[log_id]
            self._forget_handed(log_id)
            self._tasks.spawn(self._delete(keys.ack_log(self.name, st.incarnation, log_id)))

    async def _delete(self, key: str) -> None:
        try:
            await self.store.delete(key)
        except OkuriError as err:
            log.debug("deleting ack log %s: %s (the sweep will)", key, err)


async def close_due_logs(
    store: ObjectStore, name: str, st: QueueState, now_ms: int, stats: Counter[str]
) -> list[Op]:
    """Close the ack logs `st` shows due (at most a few per commit): the acks they hold, then
    `CloseLog` for each, to apply before anything else in the commit."""
    ops: list[Op] = []
    for log_id in due_logs(st, now_ms)[: limits.ack_logs_closed_per_commit_max]:
        acks = await _close(store, keys.ack_log(name, st.incarnation, log_id))
        if acks is None:
            continue  # unreachable now: its messages wait for the next commit
        ops.extend(Ack(s, i, e, st.incarnation) for s, i, e in acks)
        ops.append(CloseLog(log_id))
        stats["ack_logs_closed"] += 1
    return ops


async def _close(store: ObjectStore, key: str) -> list[Place] | None:
    """Mark the log at `key` closed; the acks it holds (None: the store failed us)."""
    for _ in range(limits.put_attempts_max):
        try:
            try:
                blob = await store.get(key)
            except NotFound:
                try:
                    await store.put_if_absent(key, encode_log([], closed=True))
                    return []
                except (PreconditionFailed, Conflict, Ambiguous):
                    continue  # created meanwhile, or maybe by us: read it
            try:
                acks, closed = decode_log(blob.data)
            except AckLogCorrupt as err:
                log.error("%s: %s; its messages stay leased until fixed", key, err)
                return None
            if closed:
                return acks
            try:
                await store.put_if_match(key, encode_log(acks, closed=True), blob.etag)
                return acks
            except (PreconditionFailed, NotFound, Conflict, Ambiguous):
                continue  # the follower appended meanwhile, or our write's fate is unknown
        except Transient:
            return None
    return None


async def sweep_ack_logs(
    store: ObjectStore,
    clock: Clock,
    name: str,
    manifest: Callable[[], Awaitable[QueueState | None]],
) -> int:
    """Delete ack log objects of queue `name` that no manifest lists; how many.

    Each page is judged against a manifest read after listing it. An unlisted log is closed
    first (were its lease still to commit, no delete could be logged under it from then on),
    and deleted only if a manifest read after that still does not list it: a log is dropped
    from the manifest only by the commit that applies its acks, or once all its messages are
    finished, so whatever it held is in the manifest or moot.
    """
    prefix = keys.ack_logs_of_queue(name)
    deleted = 0
    after = ""
    for _ in range(limits.ack_log_sweep_pages_max):
        page = await retrying(clock, lambda a=after: store.list(prefix, a, 1000))  # type: ignore[misc]
        if not page:
            break
        unlisted = _unlisted(page, await manifest())
        closed = [key for key in unlisted if await _close(store, key) is not None]
        for key in _unlisted(closed, await manifest()):
            try:
                await store.delete(key)
                deleted += 1
            except OkuriError as err:
                log.info("sweeping ack log %s: %s", key, err)
        if len(page) < 1000:
            break
        after = page[-1]
    return deleted


def _unlisted(page: Sequence[str], st: QueueState | None) -> list[str]:
    """The ack log keys of `page` that `st` does not list as open."""
    out: list[str] = []
    for key in page:
        parsed = keys.parse_ack_log(key)
        if parsed is None:
            continue
        _, inc, log_id = parsed
        if st is None or inc != st.incarnation or log_id not in st.logs:
            out.append(key)
    return out
