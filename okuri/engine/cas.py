"""A compare-and-swap object over one store key: the one way the engine rewrites a manifest
(a queue's commits, and the tombstone that deletes an expired queue alike).

It knows nothing of queues (SlateDB's pattern): read and cache the object, apply a pure change,
check the named invariants, put it back conditionally; on 412 re-read and apply the same change
to the new state, so a result always describes what was actually written; resolve an ambiguous
reply (a write that may or may not have landed) by looking for the change's commit token.

What the cache is known to show: a state is current at some moment between the sending of the
request that returned it (a read, or the write that made it) and its reply, and may have been
replaced any time after. So the cache remembers when that request was *sent* (`Sent`), never
when its reply came, and a change that writes nothing (a delete that finds its receipt stale)
is trusted only on a state whose request was sent after the change was asked for. Judged on a
reply's arrival instead, a node whose own write had been replaced while its reply travelled
answered a delete "stale" (success, on SQS) against a lease another node had just handed out,
and that message came back after its delete was answered (simulator, issue 28).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from okuri import limits
from okuri.clock import Clock
from okuri.engine.retry import Backoff, backoff, retrying
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    Transient,
    Unavailable,
)
from okuri.store.port import ObjectStore

S = TypeVar("S")
R = TypeVar("R")


class Codec(Protocol[S]):
    """How a CasObject turns its state into bytes and back, and the rules every write keeps."""

    def decode(self, data: bytes) -> S:
        """Raises Unavailable for bytes that do not decode (never a silent default)."""

    def encode(self, state: S) -> bytes: ...

    def check(self, state: S) -> None:
        """Invariants of one state, after every read."""

    def check_step(self, old: S, new: S) -> None:
        """Invariants relating a state to the one it replaces, before every write."""

    def version(self, state: S) -> int:
        """Grows on every write, so that no two successive contents are byte-equal (ABA)."""

    def lineage(self, state: S) -> str:
        """Names one life of the object (deleted and created again: a new lineage)."""

    def has_token(self, state: S, token: str) -> bool:
        """Did the write marked `token` land in `state`?"""

    def gone(self, state: S) -> bool:
        """Is `state` a tombstone: an object being deleted, read as missing?"""


@dataclass(frozen=True, slots=True, order=True)
class Sent:
    """When a request about the object was sent: its place among this object's requests (an
    order that also holds within one instant of a simulated clock) and the time."""

    ticket: int
    at_s: float


NEVER = Sent(-1, -1e18)


@dataclass(frozen=True, slots=True)
class Change(Generic[S, R]):
    """What a pure change made of a state: the state to write (None: nothing to write)."""

    state: S | None
    result: R


class CasObject(Generic[S]):
    """One key's latest known state and etag, and conditional updates of it.

    `missing` is raised (with `missing_message`) when the key does not exist; `installed` hears
    of every state that replaces the cached one (the old state of the same lineage, or None).
    """

    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        key: str,
        codec: Codec[S],
        missing: type[Exception],
        missing_message: str,
        installed: Callable[[S | None, S], None],
        stats: Counter[str],
        stats_prefix: str,
    ) -> None:
        self.store = store
        self.clock = clock
        self.key = key
        self.codec = codec
        self._missing = missing
        self._missing_message = missing_message
        self._installed = installed
        self._stats = stats
        self._prefix = stats_prefix
        self.state: S | None = None
        self.etag = ""
        self.data = b""  # the cached state's bytes as stored (handed to nodes we commit for)
        self._stale = False  # the cached state must be confirmed by a read before use
        self._tickets = 0
        # The request that last showed the cached state current was sent then (`Sent`).
        self.confirmed = NEVER
        # Requests sent before this were answered about an object since deleted through this
        # node (`forget`): what they saw is never cached.
        self._forgotten = NEVER

    async def cached(self) -> S:
        """The state as last seen (read only if never seen, or invalidated): every write is a
        CAS anyway."""
        if self.state is None or self._stale:
            return await self.read()
        return self.state

    def sending(self) -> Sent:
        """Mark a request about to be sent (a read, a write, or a peer's commit whose answer
        carries the state): what `install` and `confirmed` compare."""
        self._tickets += 1
        return Sent(self._tickets, self.clock.monotonic_s())

    def age_s(self) -> float:
        """How long since the request that last showed the cached state current was sent."""
        return self.clock.monotonic_s() - self.confirmed.at_s

    def judged_current(self, began: Sent, trust_cached_s: float) -> bool:
        """May a change asked for at `began` that writes nothing rest on the cached state? Only
        if a request sent after `began` showed it current, or (`trust_cached_s`) one sent at
        most that long before."""
        if self.confirmed > began:
            return True
        return trust_cached_s > 0 and began.at_s - self.confirmed.at_s <= trust_cached_s

    async def read(self) -> S:
        """The state read now; an unchanged etag skips decoding (the version makes it unique)."""
        sent = self.sending()
        try:
            blob = await retrying(self.clock, lambda: self.store.get(self.key))
        except NotFound:
            self.state = None
            raise self._missing(self._missing_message) from None
        self._stale = False
        if self.state is not None and blob.etag == self.etag:
            self.confirmed = max(self.confirmed, sent)
            return self.state
        if sent < self._forgotten:  # deleted through this node while the read travelled
            raise self._missing(self._missing_message)
        state = self.codec.decode(blob.data)
        self.codec.check(state)
        if self.codec.gone(state):
            self.forget()
            raise self._missing(self._missing_message)
        self.install(state, blob.etag, blob.data, sent)
        assert self.state is not None
        return self.state

    def install(self, state: S, etag: str, data: bytes, sent: Sent) -> None:
        """Adopt `state` (stored as `data` under `etag`), shown current by a request sent at
        `sent`, unless it is older than ours (a read that raced a write) or the request was
        sent before the object was deleted through this node."""
        if sent < self._forgotten:
            return
        old = self.state
        same_life = old is not None and self.codec.lineage(old) == self.codec.lineage(state)
        if same_life and old is not None and self.codec.version(state) < self.codec.version(old):
            return
        if same_life and old is not None and self.codec.version(state) == self.codec.version(old):
            sent = max(self.confirmed, sent)  # the same state, shown current again
        self.state, self.etag, self.data = state, etag, data
        self.confirmed = sent
        self._installed(old if same_life else None, state)

    def forget(self) -> None:
        """Drop the cached state altogether (the object was deleted through this node), and
        whatever requests already on their way would bring back."""
        self.state, self.etag, self.data, self._stale = None, "", b"", False
        self.confirmed = NEVER
        self._forgotten = self.sending()

    def invalidate(self) -> None:
        """Doubt the cached state: the next access reads the store (keeping the decoded copy,
        so that an unchanged etag costs no decoding)."""
        self._stale = True

    async def create(self, state: S) -> S:
        """Write `state` if the key is absent; else return what is there (however it differs)."""
        data = self.codec.encode(state)
        failing = Backoff(self.clock)
        for attempt in range(limits.put_attempts_max):
            sent = self.sending()
            try:
                etag = await self.store.put_if_absent(self.key, data)
            except (PreconditionFailed, Conflict, Ambiguous):
                try:
                    return await self.read()
                except self._missing:
                    # Deleted meanwhile, our ambiguous write did not land, or a tombstone
                    # waits for its deletion: give the deleting node a moment.
                    if attempt:
                        await backoff(self.clock, attempt - 1)
                    continue
            except Transient:
                await failing.failed()
                continue
            self.install(state, etag, data, sent)
            return state
        raise Unavailable("object store unavailable")

    async def update(
        self,
        change: Callable[[S], Change[S, R]],
        token: str,
        read_first: bool = False,
        trust_cached_s: float = 0.0,
        attempts_max: int = limits.commit_attempts_max,
    ) -> R:
        """Apply `change` to the current state and write it by compare-and-swap.

        `change` is pure and may run more than once. A change that writes nothing is trusted
        only if judged on a state whose request (read or write) was sent after this call began,
        or, with `trust_cached_s`, at most that long before it, since no CAS will catch a stale
        cache then. `read_first` judges even the first attempt on a fresh read (for a change
        that may refuse, which no CAS would catch either). `attempts_max` bounds the turns (a
        read, the change, and a write unless it writes nothing) before Unavailable.
        """
        if read_first:
            self.invalidate()
        began = self.sending()
        failing = Backoff(self.clock)
        for attempt in range(attempts_max):
            state = await self.cached()
            made = change(state)
            if made.state is None:
                if self.judged_current(began, trust_cached_s):
                    return made.result
                self.invalidate()
                continue
            self.codec.check_step(state, made.state)
            self._stats[f"{self._prefix}_cas_attempts"] += 1
            data = self.codec.encode(made.state)
            sent = self.sending()
            try:
                etag = await self.store.put_if_match(self.key, data, self.etag)
            except PreconditionFailed:
                # Another writer won: re-read at once, then back off a little more each time
                # it happens again, so that N writers take turns instead of colliding.
                self._stats[f"{self._prefix}_conflicts"] += 1
                self.invalidate()
                if attempt:
                    await backoff(self.clock, attempt - 1, limits.conflict_backoff_ms_max)
                continue
            except NotFound:
                self.invalidate()
                continue  # the next read says whether the key is really gone
            except (Conflict, Transient):
                self.invalidate()
                await failing.failed()
                continue
            except Ambiguous:
                self.invalidate()
                if not self.codec.has_token(await self.read(), token):
                    continue
            else:
                self.install(made.state, etag, data, sent)
            self._stats[f"{self._prefix}_commits"] += 1
            return made.result
        raise Unavailable(f"could not update {self.key!r}: too much contention")
