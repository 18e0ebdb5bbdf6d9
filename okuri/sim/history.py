"""What clients saw, stamped with true (virtual) time: the only input the checkers get.

Checkers never look inside nodes; like a real client they know what they asked, what they were
told, and when. That keeps them honest about what okuri promises.

FIFO runs fill in more of what a client sees (group, deduplication id, sequence numbers, which
receive call a delivery came from and the visibility it asked for) and keep the deletes and
visibility changes whose answer never came back, since those may have taken effect. Native
runs add enqueue times, every visibility change (retry at a time, extend) and dead-lettering.

A message is known by its id and the slot it was delivered from: an item scheduled beyond the
longest delay that a dying node had moved in is moved again by another (same id, another
slot), and each such copy is a message of its own to the checkers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Sent:
    queue: str
    message_id: str  # a duplicate's answer names the first message
    body: bytes
    start: float
    end: float
    # FIFO queues
    group_id: str | None = None
    dedup_id: str | None = None
    duplicate: bool = False
    sequence_number: str | None = None
    at_s: float | None = None  # native: the enqueue time asked for, run seconds


@dataclass(frozen=True, slots=True)
class Delivered:
    queue: str
    message_id: str
    body: bytes
    epoch: int
    start: float
    end: float
    dead_letter_source: str | None
    # FIFO queues: what the message and the receive call said
    group_id: str | None = None
    sequence_number: str | None = None
    dedup_id: str | None = None
    sent_s: float = 0.0  # the message's send time by the sending node's clock, run seconds
    receive_id: int = 0  # which receive call delivered it: one call may deliver several of a group
    visibility_s: float = 0.0  # the lease the receive asked for (or the queue's default)
    slot: str = ""  # the lane and slot the delivered copy is in (its receipt's)


UNANSWERED = "unanswered"  # a delete or visibility change whose node crashed before answering


@dataclass(frozen=True, slots=True)
class Acked:
    queue: str
    message_id: str
    epoch: int
    result: str  # an AckResult, or UNANSWERED (FIFO runs record those: they may have landed)
    start: float
    end: float
    slot: str = ""  # the lane and slot of the delivered copy (Delivered.slot)


@dataclass(frozen=True, slots=True)
class Changed:
    """A ChangeMessageVisibility of one delivered message (FIFO runs)."""

    queue: str
    message_id: str
    epoch: int
    visibility_s: int
    result: str  # a VisibilityResult, or UNANSWERED
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class DeadLettered:
    """A consumer's dead-lettering of one delivered message (native seeds)."""

    queue: str
    message_id: str
    slot: str
    result: str  # a DeadLetterResult, or UNANSWERED
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Purged:
    queue: str
    start: float
    end: float
    confirmed: bool


@dataclass
class History:
    attempted_bodies: set[bytes] = field(default_factory=set)
    sent: list[Sent] = field(default_factory=list)
    delivered: list[Delivered] = field(default_factory=list)
    acked: list[Acked] = field(default_factory=list)
    changed: list[Changed] = field(default_factory=list)
    purged: list[Purged] = field(default_factory=list)
    dead: list[DeadLettered] = field(default_factory=list)
    # FIFO: when the first attempt with each deduplication id began (a send answered as a
    # duplicate stands for a message sent by that attempt, or one after it)
    first_attempt: dict[str, float] = field(default_factory=dict)
    crashes: int = 0
    events: list[str] = field(default_factory=list)

    def note(self, now: float, what: str) -> None:
        self.events.append(f"{now:.6f} {what}")

    def digest(self) -> str:
        """A fingerprint of the whole run, for the determinism check."""
        h = hashlib.sha256()
        for line in self.events:
            h.update(line.encode())
            h.update(b"\n")
        return h.hexdigest()
