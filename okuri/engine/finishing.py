"""Finishing messages on one node: deletes, visibility changes, and moves to dead-letter queues.

Each is one operation in the manifest's next group commit, fenced by the receipt's epoch: a
delete accepts a receipt from any receive of the message so far, a visibility change or a
dead-letter finish only the newest (`okuri.core.transitions`).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace

from okuri.core.message import Message
from okuri.core.move_records import dead_letter_target
from okuri.core.receipts import Receipt
from okuri.core.transitions import (
    Ack,
    AckResult,
    ChangeVisibility,
    Grant,
    MarkDead,
    Op,
    Result,
    VisibilityResult,
)
from okuri.engine.manifest import Manifest
from okuri.engine.slot_log import SlotLog
from okuri.errors import QueueDoesNotExist, ReceiptHandleInvalid, Unavailable

log = logging.getLogger("okuri.engine")

# Appends messages to the named queue (created if missing), durably.
SendToFn = Callable[[str, Sequence[Message]], Awaitable[None]]


class Finisher:
    def __init__(
        self, manifest: Manifest, slots: SlotLog, send_to: SendToFn, stats: Counter[str]
    ) -> None:
        self.manifest = manifest
        self.name = manifest.name
        self.slots = slots
        self._send_to = send_to
        self._stats = stats

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
        st = await self.manifest.current()
        parsed = self._receipts(handles, st.incarnation)
        ops = {i: Ack(r.seq, r.idx, r.epoch, r.incarnation) for i, r in _valid(parsed)}
        return await self._commit_per_receipt(parsed, ops)  # type: ignore[return-value]

    async def change_visibility(
        self, entries: Sequence[tuple[str, int]]
    ) -> list[VisibilityResult | ReceiptHandleInvalid]:
        st = await self.manifest.current()
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
        done = await self.manifest.commit(list(ops.values())) if ops else []
        results: dict[int, Result | Receipt | ReceiptHandleInvalid] = dict(
            zip(ops, done, strict=True)
        )
        return [results.get(i, r) for i, r in enumerate(parsed)]

    async def dead_letter(self, grants: list[Grant]) -> None:
        """Copy messages past maxReceiveCount to the dead-letter queue, then finish them here."""
        try:
            st = await self.manifest.current()
            target = dead_letter_target(self.name, st.attrs) or f"{self.name}-dlq"
            deliveries = await self.slots.deliveries(st, grants)
            await self._send_to(
                target,
                [
                    replace(
                        d.message,
                        visible_at_ms=d.message.sent_ms,
                        dead_letter_source=self.name,
                        # The receive that moved it delivered nothing: it does not count.
                        receives_before=d.receive_count - 1,
                        dedup_key=_dead_letter_key(d.message),
                    )
                    for d in deliveries
                ],
            )
            await self.manifest.commit(
                [MarkDead(g.seq, g.idx, g.epoch, st.incarnation) for g in grants]
            )
            self._stats["dead_lettered"] += len(grants)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning(
                "dead-letter move from %s failed (will retry on expiry): %s", self.name, err
            )


def _dead_letter_key(message: Message) -> str | None:
    """A FIFO dead letter's deduplication key in its dead-letter queue: a copy made again after
    a crash is the same move and is dropped there; the same message dead-lettered again after a
    redrive (which sends it anew, so with a new send time) is a new one and is kept."""
    if message.dedup_key is None:
        return None
    return f"{message.dedup_key}\n{message.sent_ms}"


def _valid(parsed: list[Receipt | ReceiptHandleInvalid]) -> list[tuple[int, Receipt]]:
    return [(i, r) for i, r in enumerate(parsed) if isinstance(r, Receipt)]
