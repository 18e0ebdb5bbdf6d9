"""The checker of `okuri bench cluster`: what was acknowledged, delivered and deleted, and when.

Why a module of its own: the verdict must not depend on how the load was produced, so the
load only reports facts here and this module alone judges them (TigerBeetle keeps its checkers
apart the same way). Every fact carries the time, on this process's monotonic clock, at which
it was certain from the client's side:

- a send is *acknowledged* when a SendMessageBatch answer lists its entry as Successful;
- a message is *delivered* by a ReceiveMessage whose request was about to be sent at time t
  (taken before sending, so the request certainly left after t);
- a message is *deleted* when a DeleteMessage(Batch) answer listing it as Successful was read
  at time d (taken after reading, so the answer certainly arrived before d).

Two checks: every acknowledged send is delivered at least once (0 lost), and no message is
delivered by a ReceiveMessage sent after a delete of it had answered Successful (t > d: 0
deliveries after delete). Redeliveries before a delete are allowed (at-least-once), and so are
duplicates of a send whose answer was lost and which was sent again: a send is known by the id
in its body, a message by its SQS MessageId, and a resent body may be a second message, which
its own receive may deliver after the first one's delete.

Thread-safe (one lock; the load calls in from many threads). Memory grows with the messages and
deliveries of a run, which the load bounds by count (`messages_max`) and time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from okuri.core.receipts import Receipt
from okuri.errors import ReceiptHandleInvalid

EXAMPLES_MAX = 5  # failing messages described in full in a verdict


def receipt_epoch(handle: str) -> int | None:
    """The lease epoch an okuri receipt handle carries, for diagnostics; None if unreadable."""
    try:
        return Receipt.decode(handle).epoch
    except ReceiptHandleInvalid:
        return None


@dataclass(frozen=True)
class Event:
    at_s: float
    node: int
    message_id: str  # the SQS MessageId: a send resent after a lost answer is another message
    receipt: str

    def describe(self, start_s: float) -> dict[str, Any]:
        return {
            "at_s": round(self.at_s - start_s, 3),
            "node": self.node,
            "message_id": self.message_id,
            "epoch": receipt_epoch(self.receipt),
        }


@dataclass
class Verdict:
    acknowledged: int
    delivered: int
    deliveries: int
    deleted: int
    lost: int
    after_delete: int
    delivered_unacknowledged: int
    lost_examples: list[str] = field(default_factory=list)
    after_delete_examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def redeliveries(self) -> int:
        return self.deliveries - self.delivered

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.after_delete == 0

    def figures(self) -> dict[str, Any]:
        return {
            "sends_acknowledged": self.acknowledged,
            "delivered": self.delivered,
            "deliveries": self.deliveries,
            "redeliveries": self.redeliveries,
            "deleted": self.deleted,
            "lost": self.lost,
            "deliveries_after_delete": self.after_delete,
            "delivered_unacknowledged": self.delivered_unacknowledged,
            "lost_examples": self.lost_examples,
            "after_delete_examples": self.after_delete_examples,
        }


class Ledger:
    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self._lock = threading.Lock()
        self._acked: dict[str, float] = {}
        self._undelivered: set[str] = set()  # acknowledged, not yet delivered
        self._deliveries: dict[str, list[Event]] = {}  # by body id
        # by SQS MessageId: the earliest Successful delete answer, and the body id it carries
        self._deleted: dict[str, tuple[str, Event]] = {}
        self._deleted_ids: set[str] = set()

    def acknowledged(self, ids: Iterable[str], at_s: float) -> None:
        with self._lock:
            for message_id in ids:
                if message_id in self._acked:
                    continue
                self._acked[message_id] = at_s
                if message_id not in self._deliveries:
                    self._undelivered.add(message_id)

    def delivered(
        self, messages: Iterable[tuple[str, str, str]], sent_s: float, node: int
    ) -> None:
        """`messages` are (body id, MessageId, receipt handle) from one ReceiveMessage sent at
        `sent_s`."""
        with self._lock:
            for body_id, sqs_id, receipt in messages:
                event = Event(sent_s, node, sqs_id, receipt)
                self._deliveries.setdefault(body_id, []).append(event)
                self._undelivered.discard(body_id)

    def deleted(
        self, messages: Iterable[tuple[str, str, str]], answered_s: float, node: int
    ) -> None:
        """`messages` are (body id, MessageId, receipt handle) a delete answer listed as
        Successful."""
        with self._lock:
            for body_id, sqs_id, receipt in messages:
                known = self._deleted.get(sqs_id)
                if known is None or answered_s < known[1].at_s:
                    self._deleted[sqs_id] = (body_id, Event(answered_s, node, sqs_id, receipt))
                self._deleted_ids.add(body_id)

    @property
    def outstanding(self) -> int:
        """Acknowledged sends not delivered yet."""
        with self._lock:
            return len(self._undelivered)

    @property
    def backlog(self) -> int:
        """Acknowledged sends not deleted yet (approximate while sends are in flight)."""
        with self._lock:
            return max(0, len(self._acked) - len(self._deleted_ids))

    @property
    def acknowledged_count(self) -> int:
        with self._lock:
            return len(self._acked)

    def verdict(self) -> Verdict:
        with self._lock:
            lost = sorted(self._undelivered)
            after: list[tuple[str, int]] = []
            for body_id, deliveries in self._deliveries.items():
                late = sum(1 for d in deliveries if self._after_delete(d))
                if late:
                    after.append((body_id, late))
            examples = [self._timeline(message_id) for message_id, _ in after[:EXAMPLES_MAX]]
            return Verdict(
                acknowledged=len(self._acked),
                delivered=len(self._deliveries),
                deliveries=sum(len(d) for d in self._deliveries.values()),
                deleted=len(self._deleted_ids),
                lost=len(lost),
                after_delete=sum(n for _, n in after),
                delivered_unacknowledged=sum(1 for m in self._deliveries if m not in self._acked),
                lost_examples=lost[:EXAMPLES_MAX],
                after_delete_examples=examples,
            )

    def _after_delete(self, d: Event) -> bool:
        """Was this delivery's ReceiveMessage sent after a delete of the same message answered?"""
        delete = self._deleted.get(d.message_id)
        return delete is not None and d.at_s > delete[1].at_s

    def _timeline(self, body_id: str) -> dict[str, Any]:
        acked = self._acked.get(body_id)
        deliveries = self._deliveries.get(body_id, [])
        deletes = [
            self._deleted[d.message_id][1] for d in deliveries if d.message_id in self._deleted
        ]
        return {
            "id": body_id,
            "acknowledged_at_s": None if acked is None else round(acked - self.start_s, 3),
            "deleted": min(deletes, key=lambda e: e.at_s).describe(self.start_s),
            "deliveries": [
                {**d.describe(self.start_s), "after_delete": self._after_delete(d)}
                for d in deliveries
            ],
        }
