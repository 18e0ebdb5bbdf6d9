"""A queue's manifest on one node: the cached copy, and group commit of every change to it.

Clients' operations (leases, acks, visibility changes, ...) are collected for one linger window
and applied together by `okuri.core.transitions.apply` in one compare-and-swap (the generic
`CasObject`), with the adoption of newly discovered slots riding along. A node therefore writes
a queue's manifest at most once per window however many clients it serves: that is the cost cap.

With several nodes on one queue, the window's operations go to the node that leads the queue
(okuri/core/leadership.py, okuri/engine/peering.py), whose commit carries everyone's: one
writer instead of many racing compare-and-swaps. When it cannot be reached, a node commits by
itself as before.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, TypeVar

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.expiry import is_expired
from okuri.core.leadership import leader, take_lead
from okuri.core.message import Message
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import (
    Adopt,
    Lease,
    Op,
    Outcome,
    Release,
    Result,
    SetAttributes,
    apply,
)
from okuri.engine.batching import Batcher
from okuri.engine.cas import CasObject, Change
from okuri.engine.expiry import Expiry
from okuri.engine.manifest_codec import ManifestCodec
from okuri.engine.peer_sends import decode_send_reply, encode_send
from okuri.engine.peering import (
    CommitRequest,
    Peering,
    PeerUnreachable,
    decode_reply,
    encode_request,
    forwardable,
)
from okuri.engine.types import SendResult
from okuri.errors import QueueDoesNotExist, Unavailable
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")

R = TypeVar("R")

# Given the manifest a commit is about to change and the operations it carries: the Adopt
# operations to put first.
AdoptFn = Callable[[QueueState, Sequence[Op]], list[Op]]
# The slots this node knows past the cursor of a manifest, for the leader to adopt.
HintsFn = Callable[[QueueState], list[Adopt]]
# Given the manifest a commit starts from: operations to apply before the commit's own (the
# acks of ack logs found due, closed first; okuri/engine/ack_logs.py).
CloseLogsFn = Callable[[QueueState], Awaitable[list[Op]]]
# Given the operations a commit of this node's own carries: leases for this node's next
# receives to take in the same compare-and-swap (none: []).
RideFn = Callable[[Sequence[Op]], list[Op]]
# Hears the results of what `RideFn` added, once that commit has landed.
RodeFn = Callable[[list[Result]], None]
# Operations of one client call, and whether a peer forwarded them (never forwarded again).
_Batch = tuple[list[Op], bool]


class _Expired(Exception):
    """A change found the queue past its expiry (judged again on a fresh read before deleting)."""


class Manifest:
    """Owns the cached manifest and the committer; hears nothing back from its queue except
    through the callables it was given (`adopt`, `installed`, `committed`, `expired`).

    Whatever reads or commits the manifest judges its expiry (okuri/core/expiry.py): a queue
    found expired is judged again on a fresh read and deleted (`Expiry`), `expired` is told,
    and the caller gets QueueDoesNotExist."""

    def __init__(
        self,
        name: str,
        store: ObjectStore,
        clock: Clock,
        linger_ms: int,
        node_id: str,
        stats: Counter[str],
        peering: Peering,
        adopt: AdoptFn,
        hints: HintsFn,
        installed: Callable[[QueueState | None, QueueState], None],
        committed: Callable[[Outcome], None],
        expiry: Expiry,
        expired: Callable[[], None],
        close_logs: CloseLogsFn | None = None,
    ) -> None:
        self.name = name
        self._close_logs = close_logs
        self.clock = clock
        self._node_id = node_id
        self._stats = stats
        self._peering = peering
        self._adopt = adopt
        self._hints = hints
        self._committed = committed
        self._expiry = expiry
        self._expired = expired
        self._codec = ManifestCodec(name)
        self.cell: CasObject[QueueState] = CasObject(
            store,
            clock,
            keys.manifest(name),
            self._codec,
            QueueDoesNotExist,
            f"queue {name!r} does not exist",
            installed,
            stats,
            "manifest",
        )
        self._forwarding = False  # this node's own forward is out
        self._led_s = -1e18  # when a peer last forwarded a commit here
        self._counter = 0
        self._shared = False  # other nodes write this manifest too (see `_note_sharing`)
        # This node takes the lead at its commits whoever holds it, and never forwards: the
        # node producing into a lane (okuri/engine/lanes.py).
        self.claims = False
        # FIFO sends go to the leader (a partition's lane, okuri/engine/partitions.py).
        self.forwards_sends = False
        # The segments a leader sent with a forwarded lease's answer (okuri/engine/peering.py).
        self.on_leader_segments: Callable[[QueueState, list[tuple[int, bytes]]], None] = (
            lambda _st, _segments: None
        )
        self._ride: RideFn = lambda _: []
        self._rode: RodeFn = lambda _: None
        self.committer: Batcher[_Batch, list[Result]] = Batcher(
            clock,
            linger_ms,
            self._flush,
            max_items=limits.commit_ops_max,
            # Operations, not callers, bound a commit (and a forward, which a leader refuses
            # past `commit_ops_max`): a release hands back a whole buffer at once.
            size=lambda batch: len(batch[0]),
            max_size=limits.commit_ops_max,
            gather_ms=limits.flush_gather_ms,
        )

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def state(self) -> QueueState | None:
        return self.cell.state

    @property
    def forwarding(self) -> bool:
        """This node's own forward is out: its next commit waits for the leader's answer."""
        return self._forwarding

    async def current(self) -> QueueState:
        return await self._unless_expired(await self.cell.cached())

    async def refresh(self) -> QueueState:
        return await self._unless_expired(await self.cell.read())

    async def _unless_expired(self, st: QueueState) -> QueueState:
        if is_expired(st, self.clock.now_ms()):
            return await self._expire()
        return st

    async def _expire(self) -> QueueState:
        """Judge the queue's expiry on a fresh read: the manifest if it lives (used since
        through another node), else delete it and raise QueueDoesNotExist."""
        sent = self.cell.sending()  # the verdict rests on a read made after this
        verdict = await self._expiry.expire_if_due(self.name)
        if verdict.state is not None:
            self.cell.install(verdict.state, verdict.etag, verdict.data, sent)
            if self.cell.state is None:  # deleted through this node meanwhile
                raise QueueDoesNotExist(f"queue {self.name!r} does not exist")
            return self.cell.state
        self.cell.forget()
        self._expired()
        raise QueueDoesNotExist(f"queue {self.name!r} does not exist")

    def forget(self) -> None:
        self.cell.forget()

    def age_s(self) -> float:
        """How long since the cached manifest was last confirmed current."""
        return self.cell.age_s()

    async def create(self, attrs: QueueAttrs) -> QueueState:
        """Create the queue, or return the manifest already there (compare its incarnation)."""
        now = self.clock.now_ms()
        fresh = QueueState(self.name, self.clock.new_id(), now, attrs, modified_ms=now)
        st = await self.cell.create(fresh)
        if st is not fresh and is_expired(st, self.clock.now_ms()):
            try:
                return await self._expire()  # used meanwhile through another node
            except QueueDoesNotExist:
                return await self.cell.create(fresh)  # the expired one is gone: ours now
        return st

    async def create_lane(self, incarnation: str, attrs: QueueAttrs) -> QueueState:
        """Create this lane's manifest (okuri/engine/lanes.py) for the queue's `incarnation`,
        or return the one already there."""
        now = self.clock.now_ms()
        fresh = QueueState(self.name, incarnation, now, attrs, modified_ms=now)
        return await self.cell.create(fresh)

    def ride_along(self, ride: RideFn, rode: RodeFn) -> None:
        """Let `ride` add operations to each commit this node makes itself (the receiver's
        leases taken ahead, riding a delete's commit), and `rode` hear their results."""
        self._ride, self._rode = ride, rode

    def _token(self) -> str:
        self._counter += 1
        return f"{self._node_id}.{self._counter}"

    async def commit(self, ops: Sequence[Op]) -> list[Result]:
        """Apply `ops` in this node's next group commit (or its leader's); their results,
        in order."""
        if self.committer.closed:
            raise Unavailable(f"this node is stopping: it commits nothing more to {self.name!r}")
        return await self.committer.submit((list(ops), False))

    async def commit_for_peer(self, ops: Sequence[Op]) -> tuple[list[Result], str, bytes]:
        """Apply `ops` a peer forwarded in this node's next commit, never forwarding them on;
        their results, and the manifest as stored after it (etag, bytes).

        Two nodes can each take the other for the leader for a moment (caches apart): were
        each to queue the other's forward behind its own, both would wait until a timeout. So
        while this node's own forward is out, a peer's operations commit at once, apart.
        """
        if self.committer.closed:
            raise Unavailable(f"this node is stopping: it commits nothing more to {self.name!r}")
        self._led_s = self.clock.monotonic_s()
        self._stats["peer_commit_ops"] += len(ops)
        if self._forwarding:
            results = await self._commit_here(list(ops))
        else:
            results = await self.committer.submit((list(ops), True))
        return results, self.cell.etag, self.cell.data

    async def _flush(self, batches: list[_Batch]) -> list[list[Result]]:
        flat = [op for ops, _ in batches for op in ops]
        if not any(from_peer for _, from_peer in batches):
            self._forwarding = True
            try:
                forwarded = await self._forward(flat)
            finally:
                self._forwarding = False
            # The window caps what a node writes; a forward writes nothing, and the leader's own
            # window (and gathering) caps its commits: the next forward need not wait here.
            self.committer.paced = not isinstance(forwarded, list)
            if isinstance(forwarded, list):
                return _split(forwarded, batches)
            if forwarded == "maybe":
                return _split(await self._commit_again(flat), batches)
        return _split(await self._commit_here(flat), batches)

    async def _commit_again(self, flat: list[Op]) -> list[Result]:
        """Commit here what a leader may or may not have committed (its answer never came).

        Every operation but a release is safe to apply twice (peering.PeerUnreachable). A
        release is not: it steps the receive count back, so a second one could undo the lease
        of a receive made since with the same epoch. A release that may not have landed is
        dropped; its lease runs out instead.
        """
        keep = [i for i, op in enumerate(flat) if not isinstance(op, Release)]
        done = await self._commit_here([flat[i] for i in keep]) if keep else []
        results: list[Result] = [False] * len(flat)
        for i, result in zip(keep, done, strict=True):
            results[i] = result
        return results

    async def _commit_here(self, asked: list[Op]) -> list[Result]:
        """Apply `asked` in one compare-and-swap of this node's own; their results.

        Ack logs found due are closed first and their acks applied ahead of `asked`, in the
        same commit as their closing (okuri/engine/ack_logs.py)."""
        passed_over = self._peering.passed_over(self.clock.monotonic_s())
        cached = self.cell.state
        before: list[Op] = []
        if self._close_logs is not None and cached is not None and cached.logs:
            before = await self._close_logs(cached)
        riding = self._ride(asked)
        flat = [*before, *asked, *riding]

        def change(st: QueueState) -> Change[QueueState, Outcome]:
            now = self.clock.now_ms()
            if is_expired(st, now):
                raise _Expired
            adopts = self._adopt(st, flat)
            out = apply(st, now, [*adopts, *flat], token)
            out.results = out.results[len(adopts) + len(before) :]
            if out.changed and self._peering.enabled:
                take_lead(
                    out.state, self._node_id, self._peering.url, now, passed_over, self.claims
                )
            return Change(out.state if out.changed else None, out)

        token = self._token()
        # A lease that found nothing may be judged on a manifest at most one poll old; anything
        # else that changes nothing is judged on a fresh read.
        only_leases = all(isinstance(op, Lease) for op in flat)
        trust_s = limits.poll_ms_max / 1000 if only_leases else 0.0
        # Shared with other nodes, the cached manifest is almost always stale by now: read it
        # first (a GET) rather than lose a compare-and-swap on it (a PUT-class request).
        try:
            out = await self._update_unless_expired(
                lambda: self.cell.update(
                    change, token, read_first=self._shared, trust_cached_s=trust_s
                )
            )
        finally:
            self._note_sharing(self.cell.state)
        if out.changed:
            self._committed(out)
            self._stats["manifest_commit_ops"] += len(asked)
        if riding:
            self._rode(out.results[len(asked) :])
        return out.results[: len(asked)]

    async def _update_unless_expired(self, update: Callable[[], Awaitable[R]]) -> R:
        """Run `update` (a compare-and-swap whose change raises _Expired on an expired queue);
        a queue found expired is deleted (QueueDoesNotExist), or, if a fresh read shows it used
        since, updated again."""
        for _ in range(limits.put_attempts_max):
            try:
                return await update()
            except _Expired:
                await self._expire()
        raise Unavailable(f"queue {self.name!r} keeps expiring and being used at once")

    async def _forward(self, ops: list[Op]) -> list[Result] | Literal["here", "maybe"]:
        """Have the queue's leader commit `ops`: their results; "here" to commit them here;
        "maybe" when the leader was asked and did not answer (it may have committed them)."""
        st = self.cell.state
        peering = self._peering
        lead = self._lead_elsewhere()
        if st is None or lead is None or not forwardable(ops):
            return "here"
        assert peering.client is not None
        leases = any(isinstance(op, Lease) for op in ops)
        hints = self._hints(st) if leases and not st.attrs.fifo else []
        body = encode_request(CommitRequest(self.name, st.incarnation, ops, hints, leases))
        sent = self.cell.sending()  # the leader writes what it answers after this
        try:
            async with self.clock.timeout(limits.peer_timeout_s):
                reply = await peering.client.commit(lead[1], peering.scope, body)
            answer = decode_reply(reply)
            if len(answer.results) != len(ops):
                raise PeerUnreachable("forwarded commit answered the wrong number of results")
            state = self._codec.decode(answer.manifest)
            self._codec.check(state)
        except (PeerUnreachable, Unavailable, TimeoutError) as err:
            self._stats["manifest_forward_failures"] += 1
            peering.pass_over(lead[0], self.clock.monotonic_s())
            log.info("leader of %s at %s: %s; committing here", self.name, lead[1], err)
            return "maybe"
        if state.incarnation != st.incarnation:
            return "maybe"  # deleted and created again meanwhile: judged here, on a fresh read
        self.cell.install(state, answer.etag, answer.manifest, sent)
        if answer.segments:
            self.on_leader_segments(state, answer.segments)
        self._stats["manifest_forwards"] += 1
        self._stats["manifest_forwarded_ops"] += len(ops)
        return answer.results

    def _lead_elsewhere(self) -> tuple[str, str] | None:
        """The leader to forward to: another node's lead in force, reachable of late, unless
        this node claims the manifest (its next commit takes the lead) or is forwarded to."""
        st = self.cell.state
        peering = self._peering
        if st is None or not peering.enabled or self.claims:
            return None
        lead = leader(st, self.clock.now_ms())
        now_s = self.clock.monotonic_s()
        if lead is None or lead[0] in (self._node_id, peering.passed_over(now_s)):
            return None
        if now_s - self._led_s < limits.commit_lead_ms / 1000:
            return None  # others forward here: commit (and take the lead) rather than bounce
        return lead

    async def forward_send(
        self, messages: Sequence[Message]
    ) -> list[SendResult | Exception] | None:
        """Have the leader write a partition's FIFO messages (okuri/engine/peer_sends.py): its
        answers, or None to write them here (no lead elsewhere, or no complete answer)."""
        st = self.cell.state
        lead = self._lead_elsewhere() if self.forwards_sends else None
        if st is None or lead is None:
            return None
        client = self._peering.client
        assert client is not None
        body = encode_send(self.name, st.incarnation, messages)
        try:
            async with self.clock.timeout(limits.peer_timeout_s):
                reply = await client.commit(lead[1], self._peering.scope, body)
            results = decode_send_reply(reply, len(messages))
        except (PeerUnreachable, Unavailable, TimeoutError) as err:
            self._stats["send_forward_failures"] += 1
            self._peering.pass_over(lead[0], self.clock.monotonic_s())
            log.info("leader of %s at %s: %s; writing here", self.name, lead[1], err)
            return None  # a copy the leader wrote too is judged a duplicate of this one
        self._stats["sends_forwarded"] += len(messages)
        return results

    def _note_sharing(self, st: QueueState | None) -> None:
        """Do other nodes write this manifest too? Their commit tokens among its latest say so."""
        mine = self._node_id + "."
        recent = st.commits[-limits.shared_commit_tokens :] if st is not None else []
        self._shared = any(not token.startswith(mine) for token in recent)

    async def update_attrs(
        self, change: Callable[[QueueAttrs], QueueAttrs], touch: bool
    ) -> QueueState:
        """Read the attributes, `change` them and write them back in one compare-and-swap.

        `change` is applied to the manifest the CAS replaces, judged on a fresh read, so
        concurrent read-modify-writes (tags, move-task records, SetQueueAttributes) never undo
        each other. It may raise to refuse, and may run more than once. `touch` moves
        LastModifiedTimestamp; with it off, an unchanged result writes nothing.
        """

        def apply_change(st: QueueState) -> Change[QueueState, Outcome | QueueState]:
            if is_expired(st, self.clock.now_ms()):
                raise _Expired
            attrs = change(st.attrs)
            if attrs == st.attrs and not touch:
                return Change(None, st)
            out = apply(st, self.clock.now_ms(), [SetAttributes(attrs)], token)
            if not touch:
                out.state.modified_ms = st.modified_ms
            return Change(out.state, out)

        token = self._token()
        made = await self._update_unless_expired(
            lambda: self.cell.update(apply_change, token, read_first=True)
        )
        if isinstance(made, QueueState):
            return made
        self._committed(made)
        return await self.current()

    async def close(self) -> None:
        await self.committer.drain()

    def crash(self) -> None:
        self.committer.cancel()


def _split(results: list[Result], batches: list[_Batch]) -> list[list[Result]]:
    out: list[list[Result]] = []
    i = 0
    for ops, _ in batches:
        out.append(results[i : i + len(ops)])
        i += len(ops)
    return out
