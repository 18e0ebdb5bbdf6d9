"""Sending on one node: checks, the best-effort deduplication window, and the hand-off of each
message to the slot log's producer batcher."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from okuri import limits
from okuri.clock import Clock
from okuri.core.message import Message
from okuri.core.state import QueueAttrs
from okuri.engine.manifest import Manifest
from okuri.engine.slot_log import SlotLog
from okuri.engine.types import SendRequest, SendResult
from okuri.errors import InvalidArgument, MessageTooLong, QueueDoesNotExist, Unavailable


class Sender:
    def __init__(self, clock: Clock, manifest: Manifest, slots: SlotLog) -> None:
        self.clock = clock
        self.manifest = manifest
        self.slots = slots
        # dedup id -> (the first send's result, when the window for it closes)
        self._dedup: dict[str, tuple[asyncio.Future[SendResult], int]] = {}

    async def send(self, requests: Sequence[SendRequest]) -> list[SendResult | Exception]:
        st = await self.manifest.current()
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
        fut = self.submit(message)
        if req.dedup_id is not None:
            if len(self._dedup) >= limits.dedup_entries_max:
                self._dedup.pop(next(iter(self._dedup)))
            self._dedup[req.dedup_id] = (fut, now + limits.dedup_window_s * 1000)
        return fut

    def submit(self, message: Message) -> asyncio.Future[SendResult]:
        result: asyncio.Future[SendResult] = asyncio.get_running_loop().create_future()

        def done(f: asyncio.Future[int]) -> None:
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
