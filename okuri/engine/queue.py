"""One queue as seen from one node: the slot log it writes, the manifest it commits, its waiters.

Sends never touch the manifest: a linger window's messages become one immutable segment, written
create-only into the next free slot of the queue's slot log. Consumers find new slots by probing
the slot after the last one they know, then adopt them into the manifest in the same CAS that
leases and acks messages. So producers never contend with consumers, and a busy queue costs one
segment PUT per producer window plus one CAS per consumer window.

A slot below the manifest's cursor may have been freed and could be refilled by a producer whose
idea of the head is stale; the producer therefore re-reads the manifest after each write and
writes again if its slot was never read (`_verify_slot`).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from okuri import limits
from okuri.core import keys
from okuri.core.invariants import check_state, check_step
from okuri.core.message import Message, Segment, SegmentCorrupt, decode_segment, encode_segment
from okuri.core.receipts import Receipt
from okuri.core.state import ManifestCorrupt, QueueState, decode_state, encode_state
from okuri.core.transitions import (
    Ack,
    AckResult,
    Adopt,
    ChangeVisibility,
    Counts,
    Grant,
    Lease,
    LeaseResult,
    MarkDead,
    Op,
    Outcome,
    Purge,
    Release,
    Result,
    SetAttributes,
    VisibilityResult,
    apply,
    counts,
    next_expiry_ms,
)
from okuri.engine.batching import Batcher
from okuri.engine.move_records import dead_letter_target
from okuri.engine.retry import backoff, retrying
from okuri.engine.types import Delivery, SendRequest, SendResult
from okuri.errors import (
    Ambiguous,
    Conflict,
    InvalidArgument,
    MessageTooLong,
    NotFound,
    PreconditionFailed,
    QueueDoesNotExist,
    ReceiptHandleInvalid,
    Transient,
    Unavailable,
)
from okuri.store.port import Blob

if TYPE_CHECKING:
    from okuri.core.state import QueueAttrs
    from okuri.engine.engine import Engine

log = logging.getLogger("okuri.engine")
T = TypeVar("T")

# Leases taken ahead for this node's next receives wait at most this long unused (or two commit
# windows, if longer) before they are released.
LEASE_AHEAD_HOLD_MS = 500
LEASE_AHEAD_MESSAGES_MAX = 100


@dataclass(slots=True)
class _Buffered:
    grant: Grant
    visibility_ms: int
    leased_s: float


class QueueRuntime:
    def __init__(self, engine: Engine, name: str) -> None:
        self.engine = engine
        self.name = name
        self.clock = engine.clock
        self.store = engine.store
        self.state: QueueState | None = None
        self.etag = ""
        self.discovered: dict[int, Segment] = {}
        self.head_hint = 0
        self._incarnation: str | None = None
        self.buffer: list[_Buffered] = []
        self.waiters = 0
        self._signal = asyncio.Event()
        self._last_probe_s = -1e18
        self._last_refresh_s = -1e18
        self._installed_s = -1e18
        self._last_sweep_s = self.clock.monotonic_s()
        self._commit_counter = 0
        self._discovery: asyncio.Task[None] | None = None
        self._tasks: dict[asyncio.Task[Any], None] = {}  # ordered: replays must match
        self._dedup: dict[str, tuple[asyncio.Future[SendResult], int]] = {}
        self._receive_calls: deque[float] = deque(maxlen=64)
        linger = engine.linger_ms
        self.hold_s = max(LEASE_AHEAD_HOLD_MS, 2 * linger + 200) / 1000
        self.committer: Batcher[list[Op], list[Result]] = Batcher(
            self.clock, linger, self._flush_commit, max_items=limits.commit_ops_max
        )
        self.producer: Batcher[Message, int] = Batcher(
            self.clock,
            linger,
            self._flush_send,
            max_items=limits.segment_messages_max,
            size=lambda m: len(m.body) + 512,
            max_size=limits.segment_bytes_max,
        )

    # --- plumbing ----------------------------------------------------------------------------

    @property
    def manifest_key(self) -> str:
        return keys.manifest(self.name)

    def notify(self) -> None:
        """Wake every long-poller of this queue on this node."""
        self._signal.set()
        self._signal = asyncio.Event()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(coro)
        self._tasks[task] = None
        task.add_done_callback(lambda t: self._tasks.pop(t, None))

    async def _backoff(self, attempt: int) -> None:
        await backoff(self.clock, attempt)

    async def _retry(self, fn: Callable[[], Coroutine[Any, Any, T]]) -> T:
        return await retrying(self.clock, fn)

    async def _get(self, key: str) -> Blob:
        return await self._retry(lambda: self.store.get(key))

    # --- the manifest ------------------------------------------------------------------------

    async def current(self) -> QueueState:
        if self.state is None:
            await self.refresh()
        assert self.state is not None
        return self.state

    async def refresh(self) -> QueueState:
        try:
            blob = await self._get(self.manifest_key)
        except NotFound:
            self._forget()
            raise QueueDoesNotExist(f"queue {self.name!r} does not exist") from None
        if self.state is not None and blob.etag == self.etag:
            # Same etag, same bytes (the version makes every write unique): nothing to decode.
            self._installed_s = self._last_refresh_s = self.clock.monotonic_s()
            return self.state
        try:
            st = decode_state(blob.data)
        except ManifestCorrupt as err:
            raise Unavailable(f"manifest of {self.name!r} is unreadable: {err}") from err
        check_state(st)
        self._install(st, blob.etag)
        self._last_refresh_s = self.clock.monotonic_s()
        return st

    def _forget(self) -> None:
        self.state = None
        self.discovered.clear()
        self.buffer.clear()

    def _install(self, st: QueueState, etag: str) -> None:
        old = self.state
        if self._incarnation != st.incarnation:
            # A queue deleted and created again: nothing known about the old one applies.
            self._forget()
            self.head_hint = 0
            self._incarnation = st.incarnation
            old = None
        if old is not None and st.version < old.version:
            return  # a read that raced with our own newer write
        self.state, self.etag = st, etag
        self._installed_s = self.clock.monotonic_s()
        self.head_hint = max(self.head_hint, st.next_seq)
        for seq in [s for s in self.discovered if s < st.next_seq]:
            del self.discovered[seq]
        if old is None or old.version != st.version:
            self.notify()

    def _next_token(self) -> str:
        self._commit_counter += 1
        return f"{self.engine.node_id}.{self._commit_counter}"

    def _adopt_ops(self, st: QueueState) -> list[Op]:
        ops: list[Op] = []
        seq = st.next_seq
        while seq in self.discovered and len(ops) < limits.probe_segments_max:
            seg = self.discovered[seq]
            ops.append(Adopt(seq, seg.sid, len(seg.messages), seg.sent_ms, seg.delays()))
            seq += 1
        return ops

    async def _flush_commit(self, batches: list[list[Op]]) -> list[list[Result]]:
        flat = [op for batch in batches for op in batch]
        only_leases = all(isinstance(op, Lease) for op in flat)
        for attempt in range(limits.commit_attempts_max):
            before = self._installed_s
            st = await self.current()
            fresh = self._installed_s != before
            adopts = self._adopt_ops(st)
            token = self._next_token()
            out = apply(st, self.clock.now_ms(), [*adopts, *flat], token)
            results = out.results[len(adopts) :]
            if not out.changed:
                # Nothing to write, so no CAS will tell us if the cache was stale: trust a
                # "nothing happened" only from a fresh manifest (leases: one at most a poll old).
                age_s = self.clock.monotonic_s() - self._installed_s
                if fresh or (only_leases and age_s <= limits.poll_ms_max / 1000):
                    return _split(results, batches)
                self.state = None
                continue
            check_step(st, out.state, releases=sum(isinstance(op, Release) for op in flat))
            try:
                etag = await self.store.put_if_match(
                    self.manifest_key, encode_state(out.state), self.etag
                )
            except (PreconditionFailed, NotFound):
                self.state = None
                if attempt:
                    await self._backoff(attempt)
                continue
            except (Conflict, Transient):
                self.state = None
                await self._backoff(attempt)
                continue
            except Ambiguous:
                if not await self._landed(token):
                    continue
            else:
                self._install(out.state, etag)
            self._after_commit(out)
            self.engine.stats["manifest_commits"] += 1
            self.engine.stats["manifest_commit_ops"] += len(flat)
            return _split(results, batches)
        raise Unavailable(f"could not commit to {self.name!r}: too much contention")

    async def _landed(self, token: str) -> bool:
        """After an ambiguous CAS: re-read and look for our commit token."""
        self.state = None
        st = await self.refresh()
        return token in st.commits

    def _after_commit(self, out: Outcome) -> None:
        st = out.state
        for seq in out.freed:
            key = keys.segment(self.name, st.incarnation, seq)
            self.engine.cache.drop((self.name, st.incarnation, seq))
            self.spawn(self._delete_quietly(key))
        self.notify()

    async def _delete_quietly(self, key: str) -> None:
        try:
            await self._retry(lambda: self.store.delete(key))
        except Unavailable:
            log.warning("could not delete %s; the sweeper will", key)

    async def commit(self, ops: Sequence[Op]) -> list[Result]:
        return await self.committer.submit(list(ops))

    # --- sending -----------------------------------------------------------------------------

    async def send(self, requests: Sequence[SendRequest]) -> list[SendResult | Exception]:
        st = await self.current()
        now = self.clock.now_ms()
        self._expire_dedup(now)
        pending: list[asyncio.Future[SendResult] | Exception] = []
        for req in requests:
            try:
                pending.append(self._enqueue(st.attrs, req, now))
            except InvalidArgument as err:
                pending.append(err)
        out: list[SendResult | Exception] = []
        for item in pending:
            if isinstance(item, Exception):
                out.append(item)
                continue
            try:
                out.append(await asyncio.shield(item))
            except (QueueDoesNotExist, Unavailable) as err:
                out.append(err)
        return out

    def _enqueue(self, attrs: QueueAttrs, req: SendRequest, now: int) -> asyncio.Future[SendResult]:
        if len(req.body) > attrs.max_message_bytes:
            raise MessageTooLong(
                f"message of {len(req.body)} bytes exceeds the limit of {attrs.max_message_bytes}",
                "MessageBody",
            )
        delay_s = attrs.delay_s if req.delay_s is None else req.delay_s
        if not 0 <= delay_s <= limits.delay_s_max:
            raise InvalidArgument(f"DelaySeconds must be 0 to {limits.delay_s_max}", "DelaySeconds")
        if req.dedup_id is not None:
            seen = self._dedup.get(req.dedup_id)
            failed = (
                seen is not None
                and seen[0].done()
                and (seen[0].cancelled() or seen[0].exception() is not None)
            )
            if seen is not None and not failed:
                first = seen[0]
                dup = asyncio.get_running_loop().create_future()
                first.add_done_callback(lambda f: _copy_duplicate(f, dup))
                return dup
        message = Message(
            id=self.clock.new_id(),
            body=req.body,
            sent_ms=now,
            visible_at_ms=now + delay_s * 1000,
            attributes=req.attributes,
            system_attributes=req.system_attributes,
            group_id=req.group_id,
        )
        fut = self._submit_message(message)
        if req.dedup_id is not None:
            if len(self._dedup) >= limits.dedup_entries_max:
                self._dedup.pop(next(iter(self._dedup)))
            self._dedup[req.dedup_id] = (fut, now + limits.dedup_window_s * 1000)
        return fut

    def _submit_message(self, message: Message) -> asyncio.Future[SendResult]:
        result: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()
        slot = self.producer.submit(message)

        def done(f: asyncio.Future[int]) -> None:
            if result.done():
                return
            if f.cancelled():
                result.cancel()
            elif (err := f.exception()) is not None:
                result.set_exception(err)
            else:
                result.set_result(SendResult(message.id, message.sent_ms))

        slot.add_done_callback(done)
        return result

    async def send_raw(self, messages: Sequence[Message]) -> None:
        """Append already-built messages (dead-letter moves, redrive): ids and times are kept."""
        await self.current()
        await asyncio.gather(*(self._submit_message(m) for m in messages))

    def _expire_dedup(self, now: int) -> None:
        while self._dedup:
            key, (_, expires) = next(iter(self._dedup.items()))
            if expires > now:
                break
            del self._dedup[key]

    async def _flush_send(self, messages: list[Message]) -> list[int]:
        segment = Segment(self.clock.new_id(), tuple(messages))
        slot = await self._write_segment(segment, encode_segment(segment))
        self.engine.stats["segments_written"] += 1
        self.engine.stats["segment_messages"] += len(messages)
        return [slot] * len(messages)

    async def _write_segment(self, segment: Segment, data: bytes) -> int:
        st = await self.current()
        slot = max(self.head_hint, st.next_seq)
        for attempt in range(limits.put_attempts_max):
            inc = st.incarnation
            key = keys.segment(self.name, inc, slot)
            try:
                await self.store.put_if_absent(key, data)
            except PreconditionFailed:
                slot = await self._find_head(inc, slot + 1)
                continue
            except Transient:
                await self._backoff(attempt)
                continue
            except (Ambiguous, Conflict):
                # A lost reply, or a racing create (409): the slot may hold ours, another's, or
                # nothing. Skipping an empty slot would leave a gap that hides every later one.
                mine = await self._slot_holds(inc, slot, segment.sid)
                if mine is None:
                    await self._backoff(attempt)
                    continue
                if not mine:
                    slot = await self._find_head(inc, slot + 1)
                    continue
            verdict = await self._verify_slot(slot, segment.sid)
            st = await self.current()
            if verdict is True and st.incarnation == inc:
                self.head_hint = max(self.head_hint, slot + 1)
                self.engine.cache.put((self.name, inc, slot), segment)
                if slot >= st.next_seq:
                    self.discovered[slot] = segment
                self.notify()
                return slot
            slot = max(st.next_seq, self.head_hint)
        raise Unavailable(f"could not append to {self.name!r}: too much contention")

    async def _slot_holds(self, inc: str, slot: int, sid: str) -> bool | None:
        """Whose segment is in a slot after an ambiguous write: ours, another's, or none."""
        seg = await self._read_slot(inc, slot)
        return None if seg is None else seg.sid == sid

    async def _verify_slot(self, slot: int, sid: str) -> bool:
        """Was our freshly written slot (or will it be) read? False: it was a stale, freed slot."""
        st = await self.refresh()  # always a fresh read; never judged from the cache
        if slot >= st.next_seq:
            return True
        return st.recent_sid(slot) == sid

    async def _find_head(self, inc: str, start: int) -> int:
        """The first empty slot at or after `start`, by galloping then bisecting over GETs."""
        lo, step = start, 1
        while await self._slot_exists(inc, lo + step - 1):
            lo, step = lo + step, min(step * 2, 1 << 20)
        hi = lo + step - 1  # empty
        while lo < hi:
            mid = (lo + hi) // 2
            if await self._slot_exists(inc, mid):
                lo = mid + 1
            else:
                hi = mid
        return lo

    async def _slot_exists(self, inc: str, seq: int) -> bool:
        return await self._read_slot(inc, seq) is not None

    # --- discovery ---------------------------------------------------------------------------

    async def probe(self, want_messages: int) -> int:
        """Read new slots past the known head, up to roughly `want_messages` messages."""
        st = await self.current()
        self._last_probe_s = self.clock.monotonic_s()
        head = st.next_seq
        while head in self.discovered:  # slots read (or written here) but not yet adopted
            head += 1
        found = 0
        have = sum(len(s.messages) for s in self.discovered.values())
        while found < limits.probe_segments_max and have < max(want_messages, 1):
            seg = await self._read_slot(st.incarnation, head)
            if seg is None:
                break
            self.discovered[head] = seg
            have += len(seg.messages)
            head += 1
            found += 1
        if found:
            self.notify()
        return found

    async def _read_slot(self, inc: str, seq: int) -> Segment | None:
        cache_key = (self.name, inc, seq)
        seg = self.engine.cache.get(cache_key)
        if seg is not None:
            return seg
        try:
            blob = await self._get(keys.segment(self.name, inc, seq))
        except NotFound:
            return None
        try:
            seg = decode_segment(blob.data)
        except SegmentCorrupt:
            # Not written by okuri: adopt it as an empty slot so the log moves on past it.
            log.error("slot %d of %s holds a foreign object; stepping over it", seq, self.name)
            seg = Segment(f"foreign:{blob.etag}", ())
        self.engine.cache.put(cache_key, seg)
        return seg

    def _ensure_discovery(self) -> None:
        if self._discovery is None or self._discovery.done():
            self._discovery = asyncio.create_task(self._discover())

    async def _discover(self) -> None:
        """While someone long-polls here, look for slots written through other nodes."""
        delay_ms = limits.poll_ms_min
        while self.waiters > 0:
            try:
                found = await self.probe(want_messages=limits.receive_messages_max * 4)
                now = self.clock.monotonic_s()
                if now - self._last_refresh_s >= limits.manifest_refresh_ms / 1000:
                    await self.refresh()
            except (QueueDoesNotExist, Unavailable):
                self.notify()
                return
            delay_ms = limits.poll_ms_min if found else min(delay_ms * 2, limits.poll_ms_max)
            await self.clock.sleep(delay_ms / 1000)

    # --- receiving ---------------------------------------------------------------------------

    async def receive(
        self,
        max_messages: int,
        visibility_s: int | None,
        wait_s: int | None,
        lease_ahead: bool = True,
    ) -> list[Delivery]:
        """Lease up to `max_messages`; `lease_ahead` off for a caller that is no consumer
        loop (a move task), whose extra leases would only hide messages from others."""
        st = await self.current()
        vis_ms = (st.attrs.visibility_timeout_s if visibility_s is None else visibility_s) * 1000
        wait = st.attrs.receive_wait_s if wait_s is None else wait_s
        deadline = self.clock.monotonic_s() + wait
        while True:
            signal = self._signal
            deliveries = await self._try_receive(max_messages, vis_ms, lease_ahead)
            if deliveries:
                return deliveries
            remaining = deadline - self.clock.monotonic_s()
            if remaining <= 0:
                return []
            st = await self.current()
            soonest = next_expiry_ms(st, self.clock.now_ms())
            if soonest is not None:
                remaining = min(remaining, max(0.0, (soonest - self.clock.now_ms()) / 1000) + 0.001)
            self.waiters += 1
            self._ensure_discovery()
            try:
                await asyncio.wait_for(signal.wait(), remaining)
            except TimeoutError:
                pass
            finally:
                self.waiters -= 1

    async def _try_receive(
        self, max_messages: int, vis_ms: int, lease_ahead: bool = True
    ) -> list[Delivery]:
        self._receive_calls.append(self.clock.monotonic_s())
        self._release_stale()
        if self.clock.monotonic_s() - self._last_sweep_s >= limits.sweep_interval_s:
            self.spawn(self._sweep_quietly())
        grants = self._take_buffered(max_messages, vis_ms)
        if grants:
            grants = await self._still_ours(grants)
        if not grants:
            if self.clock.monotonic_s() - self._last_probe_s >= limits.poll_ms_min / 1000:
                await self.probe(want_messages=max_messages * 2)
            ops: list[Op] = [Lease(max_messages, vis_ms)]
            extra = self._lease_ahead_target(max_messages) - len(self.buffer)
            if extra > 0 and vis_ms > 0 and lease_ahead:
                ops.append(Lease(extra, vis_ms + int(self.hold_s * 1000)))
            results = await self.commit(ops)
            first = results[0]
            assert isinstance(first, LeaseResult)
            grants = list(first.granted)
            dead = list(first.dead)
            if len(results) > 1:
                ahead = results[1]
                assert isinstance(ahead, LeaseResult)
                now_s = self.clock.monotonic_s()
                self.buffer.extend(_Buffered(g, vis_ms, now_s) for g in ahead.granted)
                if ahead.granted:
                    self.spawn(self._release_later())
                dead.extend(ahead.dead)
            if dead:
                self.spawn(self._dead_letter(dead))
        return await self._materialize(grants)

    def _lease_ahead_target(self, max_messages: int) -> int:
        """Enough for every receive this node served within about one commit window.

        Each consumer then finds its next batch waiting after its delete commits, so one CAS
        carries every consumer's acks instead of alternating between them.
        """
        now = self.clock.monotonic_s()
        window = self.engine.linger_ms / 1000 + 0.1
        recent = sum(1 for t in self._receive_calls if now - t <= window)
        return min(LEASE_AHEAD_MESSAGES_MAX, max_messages * max(1, recent))

    def _take_buffered(self, max_messages: int, vis_ms: int) -> list[Grant]:
        taken: list[Grant] = []
        keep: list[_Buffered] = []
        for item in self.buffer:
            if len(taken) < max_messages and item.visibility_ms == vis_ms:
                taken.append(item.grant)
            else:
                keep.append(item)
        self.buffer = keep
        return taken

    async def _still_ours(self, grants: list[Grant]) -> list[Grant]:
        """Re-check leases taken ahead against the bucket before handing them out.

        A node with a fast clock may have judged one expired, re-leased and even acked the
        message since; handing out our older lease now would deliver it after its ack.
        """
        st = await self.refresh()
        kept = []
        for g in grants:
            seg = st.segments.get(g.seq)
            lease = seg.leases.get(g.idx) if seg is not None and not seg.is_done(g.idx) else None
            if lease is not None and lease[0] == g.epoch:
                kept.append(g)
        return kept

    async def _release_later(self) -> None:
        """Hand unused leases back soon, so other nodes are not kept from those messages."""
        await self.clock.sleep(self.hold_s + 0.001)
        self._release_stale()

    def _release_stale(self) -> None:
        if not self.buffer:
            return
        cutoff = self.clock.monotonic_s() - self.hold_s
        stale = [b for b in self.buffer if b.leased_s <= cutoff]
        if not stale:
            return
        self.buffer = [b for b in self.buffer if b.leased_s > cutoff]
        ops: list[Op] = [
            Release(b.grant.seq, b.grant.idx, b.grant.epoch, self._incarnation or "") for b in stale
        ]
        self.spawn(self._commit_quietly(ops))

    async def _commit_quietly(self, ops: list[Op]) -> None:
        try:
            await self.commit(ops)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning("background commit to %s failed: %s", self.name, err)

    async def _materialize(self, grants: Sequence[Grant]) -> list[Delivery]:
        if not grants:
            return []
        st = await self.current()
        out: list[Delivery] = []
        for g in grants:
            seg = await self._segment_for(st, g.seq)
            if seg is None or g.idx >= len(seg.messages):
                continue  # purged or freed since it was leased
            receipt = Receipt(self.name, st.incarnation, g.seq, g.idx, g.epoch)
            out.append(Delivery(seg.messages[g.idx], receipt.encode(), g.epoch, g.first_receive_ms))
        return out

    async def _segment_for(self, st: QueueState, seq: int) -> Segment | None:
        meta = st.segments.get(seq)
        if meta is None:
            return None  # purged or finished since the lease was granted
        seg = await self._read_slot(st.incarnation, seq)
        if seg is not None and seg.sid != meta.sid:
            self.engine.cache.drop((self.name, st.incarnation, seq))
            seg = await self._read_slot(st.incarnation, seq)
            if seg is None or seg.sid != meta.sid:
                return None
        return seg

    # --- finishing ---------------------------------------------------------------------------

    def _receipts(
        self, handles: Sequence[str], incarnation: str
    ) -> list[Receipt | ReceiptHandleInvalid]:
        out: list[Receipt | ReceiptHandleInvalid] = []
        for handle in handles:
            try:
                r = Receipt.decode(handle)
            except ReceiptHandleInvalid as err:
                out.append(err)
                continue
            if r.queue != self.name:
                out.append(ReceiptHandleInvalid("The receipt handle belongs to another queue."))
            elif r.incarnation != incarnation:
                out.append(ReceiptHandleInvalid("The receipt handle is from a deleted queue."))
            else:
                out.append(r)
        return out

    async def ack(self, handles: Sequence[str]) -> list[AckResult | ReceiptHandleInvalid]:
        st = await self.current()
        parsed = self._receipts(handles, st.incarnation)
        ops = {i: Ack(r.seq, r.idx, r.epoch, r.incarnation) for i, r in _valid(parsed)}
        return await self._commit_per_receipt(parsed, ops)  # type: ignore[return-value]

    async def change_visibility(
        self, entries: Sequence[tuple[str, int]]
    ) -> list[VisibilityResult | ReceiptHandleInvalid]:
        st = await self.current()
        parsed = self._receipts([h for h, _ in entries], st.incarnation)
        ops = {
            i: ChangeVisibility(r.seq, r.idx, r.epoch, entries[i][1] * 1000, r.incarnation)
            for i, r in _valid(parsed)
        }
        return await self._commit_per_receipt(parsed, ops)  # type: ignore[return-value]

    async def _commit_per_receipt(
        self, parsed: Sequence[Receipt | ReceiptHandleInvalid], ops: Mapping[int, Op]
    ) -> list[Result | Receipt | ReceiptHandleInvalid]:
        """Commit one op per valid receipt; answer each entry in order, invalid ones as errors."""
        done = await self.commit(list(ops.values())) if ops else []
        results: dict[int, Result | Receipt | ReceiptHandleInvalid] = dict(
            zip(ops, done, strict=True)
        )
        return [results.get(i, r) for i, r in enumerate(parsed)]

    async def _dead_letter(self, grants: Sequence[Grant]) -> None:
        """Copy messages past maxReceiveCount to the dead-letter queue, then finish them here."""
        try:
            st = await self.current()
            target = dead_letter_target(self.name, st.attrs) or f"{self.name}-dlq"
            deliveries = await self._materialize(grants)
            dlq = await self.engine.ensure_queue(target)
            await dlq.send_raw(
                [
                    Message(
                        id=d.message.id,
                        body=d.message.body,
                        sent_ms=d.message.sent_ms,
                        visible_at_ms=d.message.sent_ms,
                        attributes=d.message.attributes,
                        system_attributes=d.message.system_attributes,
                        group_id=d.message.group_id,
                        dead_letter_source=self.name,
                    )
                    for d in deliveries
                ]
            )
            await self.commit([MarkDead(g.seq, g.idx, g.epoch, st.incarnation) for g in grants])
            self.engine.stats["dead_lettered"] += len(grants)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning(
                "dead-letter move from %s failed (will retry on expiry): %s", self.name, err
            )

    async def purge(self) -> None:
        st = await self.refresh()
        head = await self._find_head(st.incarnation, st.next_seq)
        await self.commit([Purge(head)])
        self.discovered.clear()
        self.buffer.clear()
        self.spawn(self._sweep_quietly())  # the slots the purge skipped

    async def _sweep_quietly(self) -> None:
        self._last_sweep_s = self.clock.monotonic_s()
        try:
            await self.sweep()
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning("sweep of %s failed: %s", self.name, err)

    async def _fresh(self) -> tuple[QueueState, str]:
        """The manifest read now, with the etag to replace it by (a consistent pair: a read
        older than this node's own last write leaves the newer copy installed)."""
        await self.refresh()
        assert self.state is not None
        return self.state, self.etag

    async def set_attributes(self, attrs: QueueAttrs) -> None:
        await self.commit([SetAttributes(attrs)])

    async def update_attrs(
        self, change: Callable[[QueueAttrs], QueueAttrs], touch: bool
    ) -> QueueState:
        """Read the attributes, `change` them and write them back in one compare-and-swap.

        Unlike `set_attributes`, whose value was computed from a read the commit may outlive,
        `change` is applied to the manifest the CAS replaces, so concurrent read-modify-writes
        (tags, move-task records, SetQueueAttributes) never undo each other. `change` may raise
        to refuse; it may be called more than once. `touch` moves LastModifiedTimestamp; with it
        off, an unchanged result writes nothing.
        """
        st, etag = await self._fresh()  # `change` judges from a fresh read, never the cache
        for attempt in range(limits.commit_attempts_max):
            attrs = change(st.attrs)
            if attrs == st.attrs and not touch:
                return st
            token = self._next_token()
            out = apply(st, self.clock.now_ms(), [SetAttributes(attrs)], token)
            if not touch:
                out.state.modified_ms = st.modified_ms
            check_step(st, out.state)
            try:
                new_etag = await self.store.put_if_match(
                    self.manifest_key, encode_state(out.state), etag
                )
            except (PreconditionFailed, Conflict, Transient) as err:
                if attempt or not isinstance(err, PreconditionFailed):
                    await self._backoff(attempt)
                st, etag = await self._fresh()
                continue
            except NotFound:
                self._forget()
                raise QueueDoesNotExist(f"queue {self.name!r} does not exist") from None
            except Ambiguous:
                if not await self._landed(token):
                    assert self.state is not None  # `_landed` has just read it afresh
                    st, etag = self.state, self.etag
                    continue
                self._after_commit(out)
                return await self.current()
            self._install(out.state, new_etag)
            self._after_commit(out)
            return out.state
        raise Unavailable(f"could not update the attributes of {self.name!r}: too much contention")

    async def counts(self) -> Counts:
        st = await self.refresh()
        now = self.clock.now_ms()
        total = counts(st, now)
        cutoff = now - st.attrs.retention_s * 1000
        seq = st.next_seq
        visible = delayed = 0
        while seq < st.next_seq + limits.count_probe_segments_max:
            seg = self.discovered.get(seq) or await self._read_slot(st.incarnation, seq)
            if seg is None:
                break
            self.discovered[seq] = seg
            for m in seg.messages:
                if m.sent_ms <= cutoff:
                    continue
                if m.visible_at_ms > now:
                    delayed += 1
                else:
                    visible += 1
            seq += 1
        return total + Counts(visible, 0, delayed)

    async def sweep(self) -> int:
        """Delete segment objects nothing references any more; returns how many.

        Each page is judged against a manifest read *after* listing it, so a queue recreated
        meanwhile can only have written keys this page never saw.
        """
        prefix = keys.segments_of_queue(self.name)
        deleted = 0
        after = ""
        for _ in range(10_000):
            page = await self._retry(lambda a=after: self.store.list(prefix, a, 1000))  # type: ignore[misc]
            if not page:
                break
            try:
                st: QueueState | None = await self.refresh()
            except QueueDoesNotExist:
                st = None
            for key in page:
                parsed = keys.parse_segment(key)
                if parsed is None:
                    continue
                _, inc, seq = parsed
                live = (
                    st is not None
                    and inc == st.incarnation
                    and (seq >= st.next_seq or seq in st.segments)
                )
                if not live:
                    await self._delete_quietly(key)
                    deleted += 1
            after = page[-1]
            if len(page) < 1000:
                break
        return deleted

    # --- lifecycle ---------------------------------------------------------------------------

    async def close(self) -> None:
        await self.producer.drain()
        if self.buffer:
            ops: list[Op] = [
                Release(b.grant.seq, b.grant.idx, b.grant.epoch, self._incarnation or "")
                for b in self.buffer
            ]
            self.buffer.clear()
            await self._commit_quietly(ops)
        await self.committer.drain()
        if self._discovery is not None:
            self._discovery.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def crash(self) -> None:
        self.producer.cancel()
        self.committer.cancel()
        if self._discovery is not None:
            self._discovery.cancel()
        for task in list(self._tasks):
            task.cancel()


def _valid(parsed: list[Receipt | ReceiptHandleInvalid]) -> list[tuple[int, Receipt]]:
    return [(i, r) for i, r in enumerate(parsed) if isinstance(r, Receipt)]


def _split(results: list[Result], batches: list[list[Op]]) -> list[list[Result]]:
    out: list[list[Result]] = []
    i = 0
    for batch in batches:
        out.append(results[i : i + len(batch)])
        i += len(batch)
    return out


def _copy_duplicate(first: asyncio.Future[SendResult], dup: asyncio.Future[SendResult]) -> None:
    if dup.done():
        return
    if first.cancelled():
        dup.cancel()
    elif (err := first.exception()) is not None:
        dup.set_exception(err)
    else:
        res = first.result()
        dup.set_result(SendResult(res.message_id, res.sent_ms, duplicate=True))
