"""The checker of `python -m bench cluster`: what was acknowledged, delivered and deleted, and when.

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

A delivery after delete is described in full for whoever fixes the engine (`_timeline`): the
delete (the node that answered it, when it was sent and answered, its receipt handle, the
receive that handed that receipt out, attempts that got no answer first, how many messages the
same delete call carried) and every delivery of the message (the node, when the receive was
sent and answered relative to the delete's answer, its receipt handle, ApproximateReceiveCount).
Receipt handles are opaque here, as they are to any SQS client: the ledger only compares them.
What an okuri handle names inside (slot, index, epoch) is read by bench/cluster_watch.py, the
one white-box tool, when it tells a late message's story.
Each call the load reports is numbered, so messages that came back together can be told apart
from messages that came back alone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

EXAMPLES_MAX = 5  # failing messages described in full in a verdict


def late_kind(
    delivered: str,
    deleted: str,
    delivered_count: int | None = None,
    deleted_count: int | None = None,
) -> str:
    """What a delivery after a delete looks like from the client's side, next to the delivery
    that handed out the deleted receipt: the very same receipt handed out again, or another one
    with the ApproximateReceiveCount gone up (leased again) or not (another copy, or a lease
    that forgot the earlier receives); counts unknown when the receives did not ask for them."""
    if delivered == deleted:
        return "same receipt"
    if delivered_count is None or deleted_count is None:
        return "another receipt, receive count unknown"
    if delivered_count > deleted_count:
        return "another receipt, receive count went up"
    return "another receipt, receive count did not go up"


# An attempt of a call that got no answer: (node, monotonic s it was sent, what happened).
Unanswered = tuple[int, float, str]


@dataclass(frozen=True)
class Event:
    """A delivery (at_s: its receive was about to be sent) or a delete (at_s: its answer was
    read) of one message, by the call numbered `call`."""

    at_s: float
    node: int
    message_id: str  # the SQS MessageId: a send resent after a lost answer is another message
    receipt: str
    call: int = 0
    other_s: float | None = None  # a delivery: its answer was read; a delete: it was sent
    receive_count: int | None = None  # a delivery's ApproximateReceiveCount, if asked for
    tries: tuple[Unanswered, ...] = ()  # attempts of the call that got no answer, before

    def describe(self, start_s: float) -> dict[str, Any]:
        return {
            "at_s": round(self.at_s - start_s, 3),
            "node": self.node,
            "message_id": self.message_id,
            "receipt": self.receipt,
        }

    def tried(self, start_s: float) -> list[dict[str, Any]]:
        return [
            {"node": node, "sent_at_s": round(sent_s - start_s, 3), "what": what}
            for node, sent_s, what in self.tries
        ]


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
    # per delete call whose messages came back: how many it carried, how many came back
    after_delete_calls: list[dict[str, Any]] = field(default_factory=list)
    # deliveries after delete by what their receipt names next to the delete's (`late_kind`)
    after_delete_kinds: dict[str, int] = field(default_factory=dict)
    # not a violation: deliveries of a body under another MessageId (a send made again after
    # its answer was lost) sent after a delete of the body's first message answered; a check
    # that knows messages by body alone would count them as deliveries after delete
    other_message_after_delete: int = 0
    other_message_examples: list[dict[str, Any]] = field(default_factory=list)

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
            "after_delete_calls": self.after_delete_calls,
            "after_delete_kinds": self.after_delete_kinds,
            "other_message_after_delete": self.other_message_after_delete,
            "other_message_examples": self.other_message_examples,
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
        self._calls = 0  # calls reported so far: each delivery or delete names its own
        self._sends: dict[str, tuple[int, tuple[Unanswered, ...]]] = {}  # node, tries, by body
        self._call_sizes: dict[int, int] = {}  # delete call -> messages it listed Successful

    def acknowledged(
        self,
        ids: Iterable[str],
        at_s: float,
        node: int | None = None,
        tries: Iterable[Unanswered] = (),
    ) -> None:
        """`ids` were acknowledged by an answer read at `at_s` from `node`, after `tries` got no
        answer (each may have written its messages all the same: a second copy, under other
        MessageIds)."""
        tried = tuple(tries)
        with self._lock:
            for message_id in ids:
                if message_id in self._acked:
                    continue
                self._acked[message_id] = at_s
                if node is not None:
                    self._sends[message_id] = (node, tried)
                if message_id not in self._deliveries:
                    self._undelivered.add(message_id)

    def delivered(
        self,
        messages: Iterable[tuple[str, str, str]],
        sent_s: float,
        node: int,
        answered_s: float | None = None,
        receive_counts: Iterable[int | None] | None = None,
        tries: Iterable[Unanswered] = (),
    ) -> int:
        """`messages` are (body id, MessageId, receipt handle) from one ReceiveMessage sent at
        `sent_s` (and answered at `answered_s`), with their ApproximateReceiveCount when asked
        for; `tries` its attempts that got no answer. The call's number."""
        messages = list(messages)
        counts = list(receive_counts) if receive_counts is not None else [None] * len(messages)
        with self._lock:
            self._calls += 1
            for (body_id, sqs_id, receipt), count in zip(messages, counts, strict=True):
                event = Event(
                    sent_s, node, sqs_id, receipt, self._calls, answered_s, count, tuple(tries)
                )
                self._deliveries.setdefault(body_id, []).append(event)
                self._undelivered.discard(body_id)
            return self._calls

    def deleted(
        self,
        messages: Iterable[tuple[str, str, str]],
        answered_s: float,
        node: int,
        sent_s: float | None = None,
        tries: Iterable[Unanswered] = (),
    ) -> int:
        """`messages` are (body id, MessageId, receipt handle) a delete answer listed as
        Successful; it was sent at `sent_s` (its last attempt), after `tries` got no answer.
        The call's number."""
        messages = list(messages)
        with self._lock:
            self._calls += 1
            self._call_sizes[self._calls] = len(messages)
            for body_id, sqs_id, receipt in messages:
                known = self._deleted.get(sqs_id)
                if known is None or answered_s < known[1].at_s:
                    event = Event(
                        answered_s, node, sqs_id, receipt, self._calls, sent_s, None, tuple(tries)
                    )
                    self._deleted[sqs_id] = (body_id, event)
                self._deleted_ids.add(body_id)
            return self._calls

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
            kinds: dict[str, int] = {}
            for deliveries in self._deliveries.values():
                for d in deliveries:
                    if self._after_delete(d):
                        kind = self._late_kind(d, deliveries)
                        kinds[kind] = kinds.get(kind, 0) + 1
            others = self._other_messages_after_delete()
            return Verdict(
                after_delete_calls=self._late_calls()[:EXAMPLES_MAX],
                after_delete_kinds=kinds,
                other_message_after_delete=len(others),
                other_message_examples=[self._timeline(b) for b in others[:EXAMPLES_MAX]],
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

    def _late_kind(self, d: Event, deliveries: list[Event]) -> str:
        """`late_kind` of late delivery `d`, among its body's `deliveries`."""
        delete = self._deleted[d.message_id][1]
        source = next((x for x in deliveries if x.receipt == delete.receipt), None)
        count = None if source is None else source.receive_count
        return late_kind(d.receipt, delete.receipt, d.receive_count, count)

    def after_delete_timelines(self) -> list[dict[str, Any]]:
        """Every message delivered after its delete, described as in the verdict's examples."""
        with self._lock:
            return [
                self._timeline(body_id)
                for body_id, deliveries in self._deliveries.items()
                if any(self._after_delete(d) for d in deliveries)
            ]

    def _other_messages_after_delete(self) -> list[str]:
        """Bodies delivered, under another MessageId than one deleted, by a receive sent after
        that delete answered: one entry per such delivery."""
        first_delete: dict[str, float] = {}
        for body_id, event in self._deleted.values():
            known = first_delete.get(body_id)
            if known is None or event.at_s < known:
                first_delete[body_id] = event.at_s
        out: list[str] = []
        for body_id, deliveries in self._deliveries.items():
            deleted_at = first_delete.get(body_id)
            if deleted_at is None:
                continue
            for d in deliveries:
                if d.at_s > deleted_at and not self._after_delete(d):
                    out.append(body_id)
        return out

    def _late_calls(self) -> list[dict[str, Any]]:
        """Delete calls some of whose messages came back after them: how many they carried and
        how many came back (a whole batch, or one message of it?), most first."""
        came_back: dict[int, set[str]] = {}
        for deliveries in self._deliveries.values():
            for d in deliveries:
                if self._after_delete(d):
                    delete = self._deleted[d.message_id][1]
                    came_back.setdefault(delete.call, set()).add(d.message_id)
        by_call = {e.call: e for _, e in self._deleted.values() if e.call in came_back}
        out = [
            {
                "delete_call": call,
                "node": by_call[call].node,
                "answered_at_s": round(by_call[call].at_s - self.start_s, 3),
                "messages": self._call_sizes.get(call, 0),
                "came_back": len(ids),
            }
            for call, ids in came_back.items()
        ]
        return sorted(out, key=lambda c: (-c["came_back"], c["answered_at_s"]))

    def _timeline(self, body_id: str) -> dict[str, Any]:
        acked = self._acked.get(body_id)
        deliveries = self._deliveries.get(body_id, [])
        deletes = [
            self._deleted[d.message_id][1] for d in deliveries if d.message_id in self._deleted
        ]
        delete = min(deletes, key=lambda e: e.at_s)
        source = next((d for d in deliveries if d.receipt == delete.receipt), None)
        send = self._sends.get(body_id)
        return {
            "id": body_id,
            "acknowledged_at_s": None if acked is None else round(acked - self.start_s, 3),
            **(
                {}
                if send is None
                else {
                    "send": {
                        "node": send[0],
                        "unanswered_first": [
                            {"node": n, "sent_at_s": round(t - self.start_s, 3), "what": w}
                            for n, t, w in send[1]
                        ],
                    }
                }
            ),
            "deleted": {
                **delete.describe(self.start_s),
                "sent_at_s": _rel(delete.other_s, self.start_s),
                "call": delete.call,
                "call_messages": self._call_sizes.get(delete.call, 0),
                "receipt_from": None
                if source is None
                else {"node": source.node, "call": source.call},
                "unanswered_first": delete.tried(self.start_s),
            },
            "deliveries": [
                {
                    **d.describe(self.start_s),
                    "answered_at_s": _rel(d.other_s, self.start_s),
                    "sent_after_delete_s": round(d.at_s - delete.at_s, 3),
                    "answered_after_delete_s": _rel(d.other_s, delete.at_s),
                    "receive_count": d.receive_count,
                    "call": d.call,
                    "after_delete": self._after_delete(d),
                    **({"unanswered_first": d.tried(self.start_s)} if d.tries else {}),
                }
                for d in deliveries
            ],
        }


def _rel(at_s: float | None, origin_s: float) -> float | None:
    return None if at_s is None else round(at_s - origin_s, 3)
