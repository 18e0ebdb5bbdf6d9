"""ReceiveRequestAttemptId in the bucket: a retried FIFO receive gets the answer it missed, on
whichever node it lands.

SQS returns the same messages and receipt handles to a receive retried with the same attempt id
within five minutes, while they stay in flight; a client whose answer was lost (the usual cause
of a retry, and one that often sends the retry to another node behind a load balancer) thus
does not hold up a group with messages it never saw. The node that answers writes the answer's
receipts under the attempt id (one PUT, paid only by receives that carry an id); a retry reads
them back (one GET), re-checks each lease on a fresh manifest, delivers again those still in
flight under that receive and, as SQS does, starts their visibility timeout over. The hourly
sweep deletes records past their time.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

import orjson

from okuri import limits
from okuri.clock import Clock
from okuri.core import keys
from okuri.core.receipts import Receipt
from okuri.core.transitions import Grant
from okuri.core.views import current_lease
from okuri.engine.manifest import Manifest
from okuri.engine.retry import retrying
from okuri.engine.slot_log import SlotLog
from okuri.engine.types import Delivery
from okuri.errors import NotFound, OkuriError, PreconditionFailed, ReceiptHandleInvalid
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.engine")


def _key(queue: str, attempt: str) -> str:
    return keys.receive_attempt(queue, hashlib.sha256(attempt.encode()).hexdigest()[:32])


class ReceiveAttempts:
    def __init__(
        self, name: str, store: ObjectStore, clock: Clock, manifest: Manifest, slots: SlotLog
    ) -> None:
        self.name = name
        self.store = store
        self.clock = clock
        self.manifest = manifest
        self.slots = slots

    async def remember(self, attempt: str, deliveries: Sequence[Delivery], keep_s: int) -> None:
        """Record the receipts `deliveries` carry under `attempt`, for `keep_s` (at most the
        deduplication window). Best effort: a store that fails only costs the retry a fresh
        receive, as on a node that never heard of the attempt."""
        keep_s = min(keep_s, limits.dedup_window_s)
        if keep_s <= 0 or not deliveries:
            return
        data = orjson.dumps(
            {
                "until": self.clock.now_ms() + keep_s * 1000,
                "vis": keep_s,
                "receipts": [d.receipt_handle for d in deliveries],
            }
        )
        key = _key(self.name, attempt)
        try:
            try:
                await retrying(self.clock, lambda: self.store.put_if_absent(key, data))
            except PreconditionFailed:  # an attempt id used again after its record ran out
                old = await retrying(self.clock, lambda: self.store.get(key))
                await retrying(self.clock, lambda: self.store.put_if_match(key, data, old.etag))
        except OkuriError as err:
            log.warning("could not record receive attempt on %s: %s", self.name, err)

    async def recall(self, attempt: str) -> tuple[list[str], int] | None:
        """The receipts the receive first made with `attempt` answered, and its visibility
        timeout; None if there is no such receive on record (or its record ran out)."""
        key = _key(self.name, attempt)
        try:
            blob = await retrying(self.clock, lambda: self.store.get(key))
            record = orjson.loads(blob.data)
            until_ms, handles = int(record["until"]), [str(h) for h in record["receipts"]]
            vis_s = int(record["vis"])
        except NotFound:
            return None
        except (OkuriError, orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            log.warning("could not read receive attempt on %s: %s", self.name, err)
            return None
        if until_ms <= self.clock.now_ms():
            return None
        return handles, vis_s

    async def in_flight(self, handles: Sequence[str]) -> list[Delivery | None]:
        """Each of `handles` (this log's receipts) whose lease is still in force under it, as
        delivered again; None for the others."""
        st = await self.manifest.refresh()  # a lease judged on a stale copy could be another's
        now = self.clock.now_ms()
        out: list[Delivery | None] = []
        for handle in handles:
            try:
                r = Receipt.decode(handle)
            except ReceiptHandleInvalid:
                out.append(None)
                continue
            lease = current_lease(st, r.seq, r.idx) if r.incarnation == st.incarnation else None
            if r.queue != self.name or lease is None or lease[0] != r.epoch or lease[1] <= now:
                out.append(None)
                continue
            found = await self.slots.deliveries(st, [Grant(r.seq, r.idx, r.epoch, lease[2])])
            out.append(found[0] if found else None)
        return out

    async def sweep(self, everything: bool = False) -> int:
        """Delete records past their time (`everything`: all, the queue is gone); how many."""
        deleted = 0
        after = ""
        now = self.clock.now_ms()
        prefix = keys.receive_attempts_of_queue(self.name)
        for _ in range(1_000):
            page = await retrying(self.clock, lambda a=after: self.store.list(prefix, a, 1000))  # type: ignore[misc]
            for key in page:
                try:
                    blob = await retrying(self.clock, lambda k=key: self.store.get(k))  # type: ignore[misc]
                    until_ms = int(orjson.loads(blob.data)["until"])
                except NotFound:
                    continue
                except (OkuriError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                    until_ms = 0  # not a record okuri wrote: nothing to keep it for
                if everything or until_ms <= now:
                    await self.slots.delete_quietly(key)
                    deleted += 1
            if len(page) < 1000:
                break
            after = page[-1]
        return deleted
