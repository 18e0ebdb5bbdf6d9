"""Sending on one node: checks, deduplication, and the hand-off of each message to the slot
log's producer batcher.

A standard queue's deduplication is a best-effort window on this node. A FIFO send answers as
soon as its segment is durable when this node can tell that adoption will find no earlier
message with its deduplication id (`FifoSlots.surely_original`, fifo_slots.py), and adopts the
slot in the background. Otherwise (a retry, or slots it has not read) it waits until its slot
is adopted, whoever adopts it, and answers from the verdict the manifest recorded
(okuri/engine/dedup.py): its own message, or the original a duplicate stands for."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from okuri import limits
from okuri.clock import Clock
from okuri.core.message import Message, sequence_number
from okuri.core.schedule import beyond_delay, retention_too_short
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import Reach
from okuri.engine.manifest import Manifest
from okuri.engine.slot_log import SlotLog
from okuri.engine.tasks import Tasks
from okuri.engine.types import SendRequest, SendResult
from okuri.errors import InvalidArgument, MessageTooLong, QueueDoesNotExist, Unavailable

ScheduleFn = Callable[[QueueState, Sequence[Message]], Awaitable[None]]

log = logging.getLogger(__name__)


class Sender:
    def __init__(
        self, clock: Clock, manifest: Manifest, slots: SlotLog, schedule: ScheduleFn, tasks: Tasks
    ) -> None:
        self.clock = clock
        self.manifest = manifest
        self.slots = slots
        self._schedule = schedule
        self._tasks = tasks
        # FIFO: the last slot answered before its adoption, and of which incarnation
        self._unadopted: tuple[str, int] = ("", -1)
        self._adopting: asyncio.Task[None] | None = None
        # dedup id -> (the first send's result, when the window for it closes)
        self._dedup: dict[str, tuple[asyncio.Future[SendResult], int]] = {}

    async def send(self, requests: Sequence[SendRequest]) -> list[SendResult | Exception]:
        st = await self.manifest.current()
        now = self.clock.now_ms()
        if st.attrs.fifo:
            return await self._send_fifo(st.attrs, requests, now)
        self._expire_dedup(now)
        pending: list[asyncio.Future[SendResult] | Exception] = []
        later: list[tuple[Message, asyncio.Future[SendResult]]] = []
        for req in requests:
            try:
                pending.append(self._enqueue(st.attrs, req, now, later))
            except InvalidArgument as err:
                pending.append(err)
        if later:
            await self._schedule_later(st, later)
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

    def _enqueue(
        self,
        attrs: QueueAttrs,
        req: SendRequest,
        now: int,
        later: list[tuple[Message, asyncio.Future[SendResult]]],
    ) -> asyncio.Future[SendResult]:
        """Hand one message to the slot log, or to `later` when it is scheduled beyond the
        longest delay; a duplicate within the window answers the first send's result."""
        if len(req.body) > attrs.max_message_bytes:
            raise MessageTooLong(
                f"message of {len(req.body)} bytes exceeds the limit of {attrs.max_message_bytes}",
                "MessageBody",
            )
        visible_at = self._visible_at(attrs, req, now)
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
            visible_at_ms=visible_at,
            attributes=req.attributes,
            system_attributes=req.system_attributes,
            group_id=req.group_id,
        )
        if beyond_delay(visible_at, now):
            fut: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()
            later.append((message, fut))
        else:
            fut = self.submit(message)
        if req.dedup_id is not None:
            if len(self._dedup) >= limits.dedup_entries_max:
                self._dedup.pop(next(iter(self._dedup)))
            self._dedup[req.dedup_id] = (fut, now + limits.dedup_window_s * 1000)
        return fut

    @staticmethod
    def _visible_at(attrs: QueueAttrs, req: SendRequest, now: int) -> int:
        if req.enqueue_at_ms is not None:
            if req.delay_s is not None:
                raise InvalidArgument("a delay and an enqueue time exclude each other", "EnqueueAt")
            if req.enqueue_at_ms - now > limits.schedule_s_max * 1000:
                raise InvalidArgument(
                    f"an enqueue time is at most {limits.schedule_s_max} s ahead", "EnqueueAt"
                )
            if beyond_delay(req.enqueue_at_ms, now) and retention_too_short(attrs.retention_s):
                raise InvalidArgument(
                    f"an enqueue time more than {limits.delay_s_max} s ahead needs a queue that "
                    f"keeps items at least {2 * limits.delay_s_max} s (this one keeps them "
                    f"{attrs.retention_s} s): scheduled items join the queue up to "
                    f"{limits.delay_s_max} s before they are due",
                    "EnqueueAt",
                )
            return max(now, req.enqueue_at_ms)
        delay_s = attrs.delay_s if req.delay_s is None else req.delay_s
        if not 0 <= delay_s <= limits.delay_s_max:
            raise InvalidArgument(f"DelaySeconds must be 0 to {limits.delay_s_max}", "DelaySeconds")
        return now + delay_s * 1000

    async def _schedule_later(
        self, st: QueueState, later: list[tuple[Message, asyncio.Future[SendResult]]]
    ) -> None:
        try:
            await self._schedule(st, [m for m, _ in later])
        except (QueueDoesNotExist, Unavailable) as err:
            for _, fut in later:
                fut.set_exception(err)
            return
        for m, fut in later:
            fut.set_result(SendResult(m.id, m.sent_ms))

    # --- FIFO ----------------------------------------------------------------------------------

    async def _send_fifo(
        self, attrs: QueueAttrs, requests: Sequence[SendRequest], now: int
    ) -> list[SendResult | Exception]:
        out: list[SendResult | Exception] = [Unavailable("send not attempted")] * len(requests)
        built: list[tuple[int, Message]] = []
        for i, req in enumerate(requests):
            try:
                built.append((i, self._fifo_message(attrs, req, now)))
            except InvalidArgument as err:
                out[i] = err
        if built:
            messages = [m for _, m in built]
            # A partition's lane is written by its leader (okuri/engine/partitions.py).
            results = await self.manifest.forward_send(messages)
            if results is None:
                results = await self.land_fifo(messages)
            for (i, _), r in zip(built, results, strict=True):
                out[i] = r
        return out

    async def land_fifo(self, messages: Sequence[Message]) -> list[SendResult | Exception]:
        """Write FIFO messages built and checked (here, or by a node that forwarded them) into
        this node's next segment; each one's answer once it is durable and judged."""
        out: list[SendResult | Exception] = [Unavailable("send not attempted")] * len(messages)
        placed = [(i, m, self.slots.append(m)) for i, m in enumerate(messages)]
        landed: list[tuple[int, Message, int, int]] = []
        for i, message, fut in placed:
            try:
                seq, idx = await asyncio.shield(fut)
            except (QueueDoesNotExist, Unavailable) as err:
                out[i] = err
                continue
            landed.append((i, message, seq, idx))
        if not landed:
            return out
        st = await self.manifest.current()
        await self.slots.fifo.catch_up(st)
        if self.slots.fifo.surely_original(st, [(seq, idx) for _, _, seq, idx in landed]):
            for i, message, seq, idx in landed:
                out[i] = SendResult(message.id, message.sent_ms, False, self._number(seq, idx))
            self._adopt_soon(st.incarnation, max(seq for _, _, seq, _ in landed))
            return out
        try:
            st = await self._adopted(max(seq for _, _, seq, _ in landed))
        except (QueueDoesNotExist, Unavailable) as err:
            for i, *_ in landed:
                out[i] = err
        else:
            for i, message, seq, idx in landed:
                out[i] = self._fifo_result(st, message, seq, idx)
        return out

    def _fifo_message(self, attrs: QueueAttrs, req: SendRequest, now: int) -> Message:
        if len(req.body) > attrs.max_message_bytes:
            raise MessageTooLong(
                f"message of {len(req.body)} bytes exceeds the limit of {attrs.max_message_bytes}",
                "MessageBody",
            )
        if not req.group_id:
            raise InvalidArgument("a FIFO queue needs a message group id", "MessageGroupId")
        if not req.dedup_id:
            raise InvalidArgument(
                "a FIFO queue needs a deduplication id", "MessageDeduplicationId"
            )
        if req.delay_s is not None or req.enqueue_at_ms is not None:
            raise InvalidArgument("a FIFO queue takes no per-message delay", "DelaySeconds")
        return Message(
            id=self.clock.new_id(),
            body=req.body,
            sent_ms=now,
            visible_at_ms=now + attrs.delay_s * 1000,
            attributes=req.attributes,
            system_attributes=req.system_attributes,
            group_id=req.group_id,
            dedup_key=req.dedup_id,
        )

    def _adopt_soon(self, incarnation: str, seq: int) -> None:
        """Adopt up to slot `seq` in the background, as a send waiting for it would have: its
        messages are counted, and other nodes' receives find them, without reading the log."""
        if self._unadopted[0] != incarnation or seq > self._unadopted[1]:
            self._unadopted = (incarnation, seq)
        if self._adopting is None or self._adopting.done():
            self._adopting = self._tasks.spawn(self._adopt_quietly())

    async def _adopt_quietly(self) -> None:
        try:
            while True:
                st = await self.manifest.current()
                incarnation, seq = self._unadopted
                if incarnation != st.incarnation or seq < st.next_seq:
                    return
                await self._adopted(seq)
        except (QueueDoesNotExist, Unavailable) as err:
            log.debug("adopting the slots of %s failed: %s", self.manifest.name, err)

    async def _adopted(self, seq: int) -> QueueState:
        """The manifest once slot `seq` is adopted (by this node's commit, or another's)."""
        for _ in range(limits.fifo_send_commits_max):
            st = await self.manifest.current()
            await self.slots.fifo.catch_up(st)  # judging, and answering, need the window's ids
            if seq < st.next_seq:
                return st
            await self.slots.reach(seq)
            await self.manifest.commit([Reach(seq)])
        raise Unavailable(f"slot {seq} of {self.manifest.name!r} was not adopted in time")

    def _fifo_result(self, st: QueueState, message: Message, seq: int, idx: int) -> SendResult:
        assert message.dedup_key is not None
        first = self.slots.fifo.dedup.original(message.dedup_key)
        if not st.dups.get(seq, 0) >> idx & 1:
            # No verdict says duplicate. A slot a purge stepped over was never judged, though:
            # the window's fold judged it as adoption would have, and an earlier original it
            # found is what SQS would have answered (the purge took this copy either way).
            earlier = first is not None and (first.seq, first.idx) < (seq, idx)
            if not earlier or first is None or first.message_id == message.id:
                return SendResult(message.id, message.sent_ms, False, self._number(seq, idx))
            return SendResult(
                first.message_id, message.sent_ms, True, self._number(first.seq, first.idx)
            )
        if first is None:  # the original left the window meanwhile: it was sent 5 minutes ago
            return SendResult(message.id, message.sent_ms, True, self._number(seq, idx))
        # The original may be this very message, written by a partition's leader whose answer
        # never came (okuri/engine/peer_sends.py): then it was sent, not duplicated.
        again = first.message_id == message.id
        return SendResult(
            first.message_id, message.sent_ms, not again, self._number(first.seq, first.idx)
        )

    def _number(self, seq: int, idx: int) -> str:
        return sequence_number(seq, idx, self.slots.partition)

    # --- the slot log ------------------------------------------------------------------------

    def submit(self, message: Message) -> asyncio.Future[SendResult]:
        result: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()

        def done(f: asyncio.Future[tuple[int, int]]) -> None:
            if result.done():
                return
            if f.cancelled():
                result.cancel()
            elif (err := f.exception()) is not None:
                result.set_exception(err)
            else:
                result.set_result(SendResult(message.id, message.sent_ms))

        self.slots.append(message).add_done_callback(done)
        return result

    async def send_raw(self, messages: Sequence[Message]) -> None:
        """Append already-built messages (dead-letter moves, redrive): ids and times are kept."""
        await self.manifest.current()
        await asyncio.gather(*(self.submit(m) for m in messages))

    def _expire_dedup(self, now: int) -> None:
        while self._dedup:
            key, (_, expires) = next(iter(self._dedup.items()))
            if expires > now:
                break
            del self._dedup[key]


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
