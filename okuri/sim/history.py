"""What clients saw, stamped with true (virtual) time: the only input the checkers get.

Checkers never look inside nodes; like a real client they know what they asked, what they were
told, and when. That keeps them honest about what okuri promises.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Sent:
    queue: str
    message_id: str
    body: bytes
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Delivered:
    queue: str
    message_id: str
    body: bytes
    epoch: int
    start: float
    end: float
    dead_letter_source: str | None


@dataclass(frozen=True, slots=True)
class Acked:
    queue: str
    message_id: str
    epoch: int
    result: str
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
    purged: list[Purged] = field(default_factory=list)
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
