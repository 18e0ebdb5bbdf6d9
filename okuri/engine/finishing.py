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

from okuri.core import keys
from okuri.core.message import Message
from okuri.core.move_records import dead_letter_target
from okuri.core.receipts import Receipt
from okuri.core.transitions import (
    Ack,
    AckResult,
    ChangeVisibility,
    DeadLetterResult,
    Grant,
    MarkDead,
    Op,
    Result,
    VisibilityResult,
)
from okuri.core.views import current_lease
from okuri.engine.ack_logs import AckLogs
from okuri.engine.manifest import Manifest
from okuri.engine.slot_log import SlotLog
from okuri.errors import QueueDoesNotExist, ReceiptHandleInvalid, Unavailable

log = logging.getLogger("okuri.engine")

# Appends messages to the named queue (created if missing), durably.
SendToFn = Callable[[str, Sequence[Message]], Awaitable[None]]


class Finisher:
    def __init__(
        self,
        manifest: Manifest,
        slots: SlotLog,
        send_to: SendToFn,
        stats: Counter[str],
        ack_logs: AckLogs,
    ) -> None:
        self.manifest = manifest
        self.ack_logs = ack_logs
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
        """Deletes: those of receipts this node handed out under an open ack log are answered
        once the log holds them (okuri/engine/ack_logs.py); the rest commit as usual."""
        st = await self.manifest.current()
        parsed = self._receipts(handles, st.incarnation)
        valid = _valid(parsed)
        logged = await self.ack_logs.record(st.incarnation, [r for _, r in valid])
        ops = {
            i: Ack(r.seq, r.idx, r.epoch, r.incarnation)
            for (i, r), done in zip(valid, logged, strict=True)
            if not done
        }
        results = await self._commit_per_receipt(parsed, ops)
        return [
            "logged" if isinstance(result, Receipt) else result  # type: ignore[misc]
            for result in results  # a Receipt left in place: logged
        ]

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
            await self._move_dead(grants, delivered=False)
        except (QueueDoesNotExist, Unavailable) as err:
            log.warning(
                "dead-letter move from %s failed (will retry on expiry): %s", self.name, err
            )

    async def dead_letter_now(
        self, handles: Sequence[str], now_ms: int
    ) -> list[DeadLetterResult | ReceiptHandleInvalid]:
        """Move leased messages to the dead-letter queue on their consumer's word (the native
        API's `dead: true`), by the same copy-then-finish path as `dead_letter`.

        Only the newest receipt of a message whose lease is still running may do it: a lease
        that ran out may be re-leased by another consumer at any moment, and a copy made for a
        stale receipt would then sit in the dead-letter queue beside a live message.
        Errors reaching the dead-letter queue are raised, not logged: the caller asked.
        """
        st = await self.manifest.current()
        parsed = self._receipts(handles, st.incarnation)
        out: list[DeadLetterResult | ReceiptHandleInvalid] = []
        grants: dict[int, Grant] = {}
        for i, r in enumerate(parsed):
            if isinstance(r, ReceiptHandleInvalid):
                out.append(r)
                continue
            lease = current_lease(st, r.seq, r.idx)
            if lease is None:
                out.append("gone" if r.seq < st.loaded_upto() else "stale")
            elif lease[0] != r.epoch or lease[1] <= now_ms:
                out.append("stale")
            else:
                grants[i] = Grant(r.seq, r.idx, r.epoch, lease[2])
                out.append("dead")
        if grants:
            done = await self._move_dead(list(grants.values()), delivered=True)
            for i, moved in zip(grants, done, strict=True):
                out[i] = "dead" if moved else "stale"
        return out

    async def _move_dead(self, grants: list[Grant], *, delivered: bool) -> list[bool]:
        """Copy the messages `grants` lease to the dead-letter queue, then mark them dead here
        (each True when its lease was still the newest). `delivered`: the receive that leased
        them handed them to a consumer, so it counts among their receives."""
        st = await self.manifest.current()
        queue = keys.root_of(self.name)  # a lane's messages are its queue's
        # The queue past maxReceiveCount; a queue with no limit may still name one for `dead`.
        target = (
            dead_letter_target(queue, st.attrs) or st.attrs.dead_letter_queue or f"{queue}-dlq"
        )
        deliveries = await self.slots.deliveries(st, grants)
        uncounted = 0 if delivered else 1
        await self._send_to(
            target,
            [
                replace(
                    d.message,
                    visible_at_ms=d.message.sent_ms,
                    dead_letter_source=queue,
                    # A receive that moved it without delivering it does not count.
                    receives_before=d.receive_count - uncounted,
                    dedup_key=_dead_letter_key(d.message),
                )
                for d in deliveries
            ],
        )
        done = await self.manifest.commit(
            [MarkDead(g.seq, g.idx, g.epoch, st.incarnation) for g in grants]
        )
        self._stats["dead_lettered"] += sum(1 for ok in done if ok is True)
        return [ok is True for ok in done]


def _dead_letter_key(message: Message) -> str | None:
    """A FIFO dead letter's deduplication key in its dead-letter queue: a copy made again after
    a crash is the same move and is dropped there; the same message dead-lettered again after a
    redrive (which sends it anew, so with a new send time) is a new one and is kept."""
    if message.dedup_key is None:
        return None
    return f"{message.dedup_key}\n{message.sent_ms}"


def _valid(parsed: list[Receipt | ReceiptHandleInvalid]) -> list[tuple[int, Receipt]]:
    return [(i, r) for i, r in enumerate(parsed) if isinstance(r, Receipt)]
