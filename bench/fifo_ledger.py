"""The FIFO checker of `python -m bench cluster --fifo-groups N`: group order and deduplication.

Why beside bench.ledger and not in it: the ledger's two checks hold for every queue and
stay as they are; these two hold only for FIFO queues, and are judged from facts of their own
(sequence numbers, groups, deduplication ids, and when each receive answered). Like the ledger,
this module judges only what is certain from the client's side, on this process's monotonic
clock:

- a send *attempt* of a deduplication id began at time a (taken before sending);
- a send *answer* listed a deduplication id as Successful with a MessageId and SequenceNumber;
- a *delivery* came from a ReceiveMessage sent after time t (taken before sending) whose answer
  had arrived by time r (taken after reading), with the message's MessageGroupId and
  SequenceNumber as the receive returned them. The body starts with the deduplication id.

Two checks:

- deduplication: every Successful answer for one deduplication id, and every delivery of it,
  names one MessageId: a send sent again after a lost answer (or again on purpose) never becomes
  a second message. Judged only for ids whose attempts all began within the deduplication
  window of the first one (the original was accepted after its first attempt began, so every
  attempt surely fell inside its window); others are counted as not judged.
- group order: within a group, first deliveries follow SequenceNumber order. A message's first
  delivery spans from the earliest send of a receive that delivered it to the earliest answer
  of one; a later-sequenced message whose first delivery had *answered* before the earlier
  message's first delivery was even *sent* was surely delivered first: a violation. Why the
  answer and not the send of the later one: a long-polling receive sent first may answer last
  (it waits while another receive takes the earlier message and a delete finishes it), so two
  send times alone prove no order. One receive delivering both, or two receives that overlap,
  is no violation.

Thread-safe (one lock). Memory grows with the messages of a run, which the load bounds.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from okuri import limits

EXAMPLES_MAX = 5
DEDUP_WINDOW_S = float(limits.dedup_window_s)


@dataclass(frozen=True)
class Answered:
    """A send answer's entry listed as Successful."""

    dedup_id: str
    message_id: str
    sequence_number: str


@dataclass(frozen=True)
class Received:
    """A message as one ReceiveMessage returned it."""

    dedup_id: str  # the id its body starts with
    message_id: str
    group_id: str
    sequence_number: str


@dataclass
class _First:
    """A message's first delivery, as certain as the client can know it."""

    group_id: str
    sequence: int
    dedup_id: str
    sent_s: float  # the earliest send of a receive that delivered it
    answered_s: float  # the earliest answer of a receive that delivered it


@dataclass
class FifoVerdict:
    groups: int  # message groups seen delivered
    messages: int  # distinct MessageIds delivered with a group and sequence number
    dedup_ids: int  # deduplication ids sent
    duplicate_answers: int  # Successful answers beyond the first for one deduplication id
    dedup_unjudged: int  # ids attempted over more than a window
    order_violations: int
    dedup_violations: int
    unsequenced: int  # deliveries without MessageGroupId or a numeric SequenceNumber
    order_examples: list[dict[str, Any]] = field(default_factory=list)
    dedup_examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.order_violations == 0 and self.dedup_violations == 0 and not self.unsequenced

    def figures(self) -> dict[str, Any]:
        return {
            "groups_delivered": self.groups,
            "messages_sequenced": self.messages,
            "dedup_ids": self.dedup_ids,
            "duplicate_answers": self.duplicate_answers,
            "dedup_unjudged": self.dedup_unjudged,
            "order_violations": self.order_violations,
            "dedup_violations": self.dedup_violations,
            "deliveries_unsequenced": self.unsequenced,
            "order_examples": self.order_examples,
            "dedup_examples": self.dedup_examples,
        }


class FifoLedger:
    def __init__(self, start_s: float) -> None:
        self.start_s = start_s
        self._lock = threading.Lock()
        self._attempts: dict[str, tuple[float, float]] = {}  # dedup id -> (first, last) begun
        self._answers: dict[str, list[tuple[str, float]]] = defaultdict(list)  # -> (MessageId, at)
        self._sequences: dict[str, str] = {}  # MessageId -> SequenceNumber, from send answers
        self._firsts: dict[str, _First] = {}  # by MessageId
        self._delivered: dict[str, set[str]] = defaultdict(set)  # dedup id -> MessageIds
        self._unsequenced = 0

    def attempted(self, dedup_ids: Iterable[str], at_s: float) -> None:
        with self._lock:
            for d in dedup_ids:
                first, _ = self._attempts.get(d, (at_s, at_s))
                self._attempts[d] = (first, at_s)

    def answered(self, entries: Iterable[Answered], at_s: float) -> None:
        with self._lock:
            for e in entries:
                self._answers[e.dedup_id].append((e.message_id, at_s))
                self._sequences.setdefault(e.message_id, e.sequence_number)

    def delivered(self, messages: Iterable[Received], sent_s: float, answered_s: float) -> None:
        with self._lock:
            for m in messages:
                self._delivered[m.dedup_id].add(m.message_id)
                if not m.group_id or not m.sequence_number.isdigit():
                    self._unsequenced += 1
                    continue
                first = self._firsts.get(m.message_id)
                if first is None:
                    self._firsts[m.message_id] = _First(
                        m.group_id, int(m.sequence_number), m.dedup_id, sent_s, answered_s
                    )
                else:
                    first.sent_s = min(first.sent_s, sent_s)
                    first.answered_s = min(first.answered_s, answered_s)

    def verdict(self) -> FifoVerdict:
        with self._lock:
            order = self._order_violations()
            dedup, unjudged = self._dedup_violations()
            return FifoVerdict(
                groups=len({f.group_id for f in self._firsts.values()}),
                messages=len(self._firsts),
                dedup_ids=len(self._attempts),
                duplicate_answers=sum(max(0, len(a) - 1) for a in self._answers.values()),
                dedup_unjudged=unjudged,
                order_violations=len(order),
                dedup_violations=len(dedup),
                unsequenced=self._unsequenced,
                order_examples=order[:EXAMPLES_MAX],
                dedup_examples=dedup[:EXAMPLES_MAX],
            )

    def _order_violations(self) -> list[dict[str, Any]]:
        groups: dict[str, list[tuple[str, _First]]] = defaultdict(list)
        for message_id, first in self._firsts.items():
            groups[first.group_id].append((message_id, first))
        out = []
        for group_id in sorted(groups):
            # of the messages before this one in sequence order, the one first sent for latest
            latest: tuple[str, _First] | None = None
            for message_id, first in sorted(groups[group_id], key=lambda kv: kv[1].sequence):
                if latest is not None and first.answered_s < latest[1].sent_s:
                    out.append(
                        {
                            "group": group_id,
                            "earlier": self._describe(*latest),
                            "delivered_before_it": self._describe(message_id, first),
                        }
                    )
                if latest is None or first.sent_s > latest[1].sent_s:
                    latest = (message_id, first)
        return out

    def _describe(self, message_id: str, first: _First) -> dict[str, Any]:
        return {
            "message_id": message_id,
            "dedup_id": first.dedup_id,
            "sequence_number": str(first.sequence),
            "first_receive_sent_s": round(first.sent_s - self.start_s, 3),
            "first_receive_answered_s": round(first.answered_s - self.start_s, 3),
        }

    def _dedup_violations(self) -> tuple[list[dict[str, Any]], int]:
        out = []
        unjudged = 0
        for dedup_id in sorted(self._answers.keys() | self._delivered.keys()):
            answered = {m for m, _ in self._answers.get(dedup_id, ())}
            delivered = self._delivered.get(dedup_id, set())
            if len(answered | delivered) <= 1:
                continue
            first, last = self._attempts.get(dedup_id, (0.0, 0.0))
            if last - first >= DEDUP_WINDOW_S:
                unjudged += 1
                continue
            out.append(
                {
                    "dedup_id": dedup_id,
                    "answers": [
                        {"message_id": m, "at_s": round(at - self.start_s, 3),
                         "sequence_number": self._sequences.get(m)}
                        for m, at in self._answers.get(dedup_id, ())
                    ],
                    "delivered_message_ids": sorted(delivered),
                    "attempts_s": [round(first - self.start_s, 3), round(last - self.start_s, 3)],
                }
            )  # fmt: skip
        return out, unjudged
