"""Queue expiry in the bucket: deleting an expired queue safely, and finding abandoned ones.

The rules (when a use is recorded, when a queue has expired) are pure, in okuri/core/expiry.py.
This module owns the two store-facing parts:

- **Deleting an expired queue** (`Expiry.expire_if_due`), by any node that finds one: read the
  manifest fresh, and if it is still expired, write a *tombstone* over it by compare-and-swap
  on the etag just read (a `CasObject`, as every manifest rewrite), then DELETE it. A use
  recorded by another node after our read changed the etag, so the tombstone fails and the
  queue lives; a use after the tombstone reads "no such queue". A use is therefore never lost
  silently: it lands before (and keeps the queue) or fails. A node that dies between tombstone
  and DELETE leaves a tombstone that every node reads as missing and any sweeper deletes once
  it is `expiry_tombstone_grace_s` old.
- **Finding abandoned queues** (`ExpirySweeper`): a queue nobody reads again would never be
  judged, so every queue with `expires_s` has an empty marker `e/{queue}`; each node LISTs the
  markers every `expiry_sweep_s` (jittered) and GETs a marked queue's manifest only when what
  it last read of it says it may have expired by now (or an hour passed). A queue is thus
  deleted within `expires_s` plus one sweep period (plus jitter) of its last recorded use.

Markers are written after the manifest (create, or an update that sets expires_s) and deleted
after it. Removing a marker re-reads the manifest and puts the marker back when a queue with
expiry is there again: a creator's marker can only have been removed if its manifest existed
before that re-read, so no expiring queue is left without a marker by a race.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.expiry import expires_at_ms, is_expired, tombstone
from okuri.core.invariants import InvariantViolation
from okuri.core.state import ManifestCorrupt, QueueState, decode_state
from okuri.engine.cas import CasObject, Change
from okuri.engine.manifest_codec import ManifestCodec
from okuri.engine.retry import backoff, retrying
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    OkuriError,
    PreconditionFailed,
    QueueDoesNotExist,
    Transient,
    Unavailable,
)
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

Fate = Literal["alive", "expired", "missing", "dying"]
# What `expire_if_due` judged on the manifest it read: delete it (our tombstone, or one left
# behind), leave it to the node deleting it, or let it live.
_Judged = Literal["delete", "dying", "alive"]


class _TombstoneCodec(ManifestCodec):
    """Manifests with their tombstones readable: expiry judges a tombstone itself (whose it
    is, how old), where every other reader takes one for a missing queue."""

    def gone(self, state: QueueState) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Verdict:
    """What `expire_if_due` found: `alive` (with the manifest read, its etag and bytes),
    `expired` (deleted by this call), `missing` (no manifest), or `dying` (a tombstone another
    node is deleting)."""

    fate: Fate
    state: QueueState | None = None
    etag: str = ""
    data: bytes = b""


class Expiry:
    """Deletes expired queues and keeps their markers; shared by every queue of one node."""

    def __init__(self, store: ObjectStore, clock: Clock, stats: Counter[str], node_id: str) -> None:
        self.store = store
        self.clock = clock
        self.stats = stats
        self._node_id = node_id
        self._counter = 0

    async def expire_if_due(self, name: str) -> Verdict:
        """Judge queue `name` on a manifest read now; delete it if it has expired.

        The tombstone is written through a `CasObject` of its own, like every manifest
        rewrite: a 412 or 404 re-reads and judges again, an ambiguous write is resolved by
        looking for its token, store errors back off; `put_attempts_max` turns at most."""
        cell: CasObject[QueueState] = CasObject(
            self.store,
            self.clock,
            keys.manifest(name),
            _TombstoneCodec(name),
            QueueDoesNotExist,
            f"queue {name!r} does not exist",
            lambda old, new: None,
            Counter(),  # not this node's metrics: `queues_expired` counts what expiry did
            "expiry",
        )
        token = self._token()
        mine = (0, "")  # (version, incarnation) of a tombstone this call may have written

        def judge(st: QueueState) -> Change[QueueState, _Judged]:
            nonlocal mine
            now = self.clock.now_ms()
            if st.gone_ms:
                ours = (st.version, st.incarnation) == mine
                orphan = now - st.gone_ms >= limits.expiry_tombstone_grace_s * 1000
                return Change(None, "delete" if ours or orphan else "dying")
            if not is_expired(st, now):
                return Change(None, "alive")
            gone = tombstone(st, now)
            gone.commits = [*gone.commits[1:], token]
            mine = (gone.version, gone.incarnation)
            return Change(gone, "delete")

        try:
            judged = await cell.update(judge, token, attempts_max=limits.put_attempts_max)
        except QueueDoesNotExist:
            return Verdict("missing")
        if judged == "alive":
            return Verdict("alive", cell.state, cell.etag, cell.data)
        if judged == "dying":
            return Verdict("dying")
        await self._delete(name)
        return Verdict("expired")

    def _token(self) -> str:
        self._counter += 1
        return f"{self._node_id}.x{self._counter}"

    async def _delete(self, name: str) -> None:
        await retrying(self.clock, lambda: self.store.delete(keys.manifest(name)))
        self.stats["queues_expired"] += 1
        log.info("queue %s expired: deleted", name)
        await self.drop_marker(name)

    async def ensure_marker(self, name: str) -> None:
        """Make sure queue `name` has its expiry marker (idempotent; one PUT)."""
        key = keys.expiry_marker(name)
        for attempt in range(limits.put_attempts_max):
            try:
                await self.store.put_if_absent(key, b"")
                return
            except (PreconditionFailed, Conflict):
                return  # there already (or being written by a racing call)
            except (Transient, Ambiguous):
                await backoff(self.clock, attempt)  # an ambiguous one that landed answers 412
        raise Unavailable("object store unavailable")

    async def drop_marker(self, name: str) -> None:
        """Remove queue `name`'s marker, unless a queue with expiry is there (again)."""
        await retrying(self.clock, lambda: self.store.delete(keys.expiry_marker(name)))
        try:
            blob = await retrying(self.clock, lambda: self.store.get(keys.manifest(name)))
        except NotFound:
            return
        try:
            st = decode_state(blob.data)
        except ManifestCorrupt:
            return
        if not st.gone_ms and st.attrs.expires_s is not None:
            await self.ensure_marker(name)


class ExpirySweeper:
    """Every node's periodic look at the queues that may expire (see the module docstring).

    `next_check_ms` remembers, per marked queue, the earliest moment it can have expired given
    the manifest this node last read of it: a use recorded since only moves that later, so a
    queue is never read before it could be due. `expired` hears of each queue it deleted.
    """

    def __init__(self, expiry: Expiry, expired: Callable[[str], None]) -> None:
        self.expiry = expiry
        self.clock = expiry.clock
        self.store = expiry.store
        self._expired = expired
        self.next_check_ms: dict[str, int] = {}

    async def sweep(self) -> int:
        """One pass over every marker; how many queues it deleted."""
        deleted = 0
        seen: set[str] = set()
        after = ""
        for _ in range(10_000):
            page = await retrying(
                self.clock,
                lambda a=after: self.store.list(keys.EXPIRING, a, 1000),  # type: ignore[misc]
            )
            for key in page:
                name = keys.queue_of_expiry_marker(key)
                if name is None:
                    continue
                seen.add(name)
                try:
                    if await self._check(name):
                        deleted += 1
                except InvariantViolation as err:
                    # A manifest some other writer broke: reported and left alone, and the
                    # sweep goes on to the other queues (one bad manifest must not stop them
                    # expiring); looked at again after the usual recheck period.
                    log.error("expiry: queue %r left alone, its manifest is broken: %s", name, err)
                    recheck_ms = limits.expiry_recheck_s_max * 1000
                    self.next_check_ms[name] = self.clock.now_ms() + recheck_ms
            if len(page) < 1000:
                break
            after = page[-1]
        for name in [n for n in self.next_check_ms if n not in seen]:
            del self.next_check_ms[name]
        return deleted

    async def _check(self, name: str) -> bool:
        now = self.clock.now_ms()
        if now < self.next_check_ms.get(name, now):
            return False
        verdict = await self.expiry.expire_if_due(name)
        if verdict.fate == "alive":
            assert verdict.state is not None
            recheck = now + limits.expiry_recheck_s_max * 1000
            at = expires_at_ms(verdict.state)
            self.next_check_ms[name] = recheck if at is None else min(at, recheck)
            return False
        self.next_check_ms.pop(name, None)
        if verdict.fate == "missing":
            await self.expiry.drop_marker(name)  # its queue was deleted; a leftover marker
        if verdict.fate == "expired":
            self._expired(name)
            return True
        return False

    async def run(self, period_s: float) -> None:
        """Sweep every `period_s` (+-25 % jitter, so nodes started together spread out)."""
        rng = self.clock.random()
        while True:
            await self.clock.sleep(period_s * rng.uniform(0.75, 1.25))
            try:
                await self.sweep()
            except OkuriError as err:
                log.warning("expiry sweep failed: %s", err)
