"""The native API's closed-loop load for `python -m bench native`: produce 100, lease 100, complete.

Why apart: it is bench.load's closed loop (the same phases, backlog cap, window and
figures, so the native and SQS surfaces are measured alike in one run) with the native API's
request shape: P producers each POST /v1/queues/{q}/messages with 100 items and produce again
as soon as the answer arrives; C consumers each lease up to 100 (one engine receive, waiting up
to the workload's `wait_s` as `request_timeout_s`) and complete everything leased in one request.

Every produced id, leased item and completion goes into the ledger (bench.ledger), so a
run ends with a count of items acknowledged and never leased: 0 lost, or not.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from bench.load import ClosedLoop
from bench.measure import make_body
from bench.native_client import NativeClient

ITEMS_PER_REQUEST = 100  # the native API's bound on items per produce, lease and complete
COMPLETED = "completed"


class NativeDriver(ClosedLoop[NativeClient]):
    """Runs the native closed loop against one queue and keeps the counts."""

    batch = ITEMS_PER_REQUEST

    async def produce(self, producer: int) -> None:
        client = self._client(producer)
        seq = 0
        while self.producing:
            if not await self._room_to_send():
                continue
            bodies = [make_body(producer, seq + k) for k in range(self.batch)]
            seq += self.batch
            try:
                ids = await client.produce(self.queue, bodies)
            except Exception as err:  # any failure is counted and reported, never fatal
                await self._failed("produce", err)
                continue
            if self.ledger is not None:
                self.ledger.acknowledged(ids, time.monotonic())
            self._was_sent(len(ids))

    async def consume(self, consumer: int) -> None:
        client = self._client(consumer)
        while True:
            sent_s = time.monotonic()
            try:
                items = await client.lease(self.queue, self.batch, self.workload.wait_s)
            except Exception as err:
                await self._failed("lease", err)
                continue
            self._was_received([i.get("body", "") for i in items], time.monotonic_ns())
            if not items:
                continue
            if self.ledger is not None:
                self.ledger.delivered(_facts(items), sent_s, 0)
            try:
                results = await client.complete(self.queue, [i["handle"] for i in items])
            except Exception as err:
                await self._failed("complete", err)
                continue
            answered = zip(items, results, strict=True)
            done = [item for item, result in answered if result == COMPLETED]
            if len(done) < len(items):
                first = next(r for r in results if r != COMPLETED)
                self._error(f"complete: an item answered {first!r}")
            if self.ledger is not None:
                self.ledger.deleted(_facts(done), time.monotonic(), 0)
            self._was_deleted(len(done))


def _facts(items: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(id, id, handle) of leased items, as the ledger takes them: an item is known by its id."""
    return [(i["id"], i["id"], i["handle"]) for i in items]
