"""What the consumer owes okuri for the messages it leased: the pure bookkeeping.

A leased message is *held* from its lease until kombu acks or rejects it. While held, its lease
is renewed (extend) once half of it has passed, so a message a Celery worker keeps for a long
eta, or runs for long with `acks_late`, is never handed to another consumer while this one
lives; when the process dies the renewals stop and the message returns one lease later.

An ack or reject turns a held message into a *finish* waiting to be sent: complete (ack), retry
now (reject with requeue) or dead (reject without: the queue's dead-letter queue). Finishes are
sent in batches of up to 100 handles per queue and kind, however many arrived meanwhile.

`LeaseBook` decides and remembers; it does no I/O and reads no clock (every time is an argument,
in the keeper's monotonic seconds). okuri_kombu/keeper.py sends what it decides.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Finish = Literal["complete", "retry", "dead"]
Kind = Literal["complete", "retry", "dead", "extend"]
FINISHES: tuple[Finish, ...] = ("complete", "retry", "dead")
BATCH_MAX = 100  # handles per native complete/retry/extend request (okuri's native_items_max)


@dataclass(frozen=True, slots=True)
class Batch:
    """One request to send: `kind` for `handles` (at most BATCH_MAX) of okuri queue `queue`."""

    kind: Kind
    queue: str
    handles: tuple[str, ...]


@dataclass(slots=True)
class Held:
    queue: str
    renew_at: float  # when half of the lease in force has passed


class LeaseBook:
    """The held messages and the finishes not sent yet, of one connection. `lease_s` is the
    lease every message is leased and renewed for."""

    def __init__(self, lease_s: int) -> None:
        self.lease_s = lease_s
        self._held: dict[str, Held] = {}
        self._pending: dict[Finish, dict[str, list[str]]] = {f: defaultdict(list) for f in FINISHES}

    # --- what happens to messages ------------------------------------------------------------

    def hold(self, queue: str, handle: str, leased_at: float) -> None:
        """A message of `queue` leased by a request sent at `leased_at`: its lease ends no
        earlier than `leased_at + lease_s`."""
        self._held[handle] = Held(queue, leased_at + self.lease_s / 2)

    def finish(self, handle: str, how: Finish) -> bool:
        """kombu acked or rejected held message `handle`: no more renewals, and `how` to send.
        False for a handle not held (finished already, or of another connection)."""
        held = self._held.pop(handle, None)
        if held is None:
            return False
        self._pending[how][held.queue].append(handle)
        return True

    def finish_unheld(self, queue: str, handle: str, how: Finish) -> None:
        """Send `how` for a message that was never held (a no-ack consumer's)."""
        self._pending[how][queue].append(handle)

    def forget(self, handles: Iterable[str]) -> None:
        """Stop renewing `handles`: okuri says their lease is not this consumer's any more."""
        for handle in handles:
            self._held.pop(handle, None)

    def clear(self) -> None:
        """Forget everything (in a forked child: the leases are the parent's)."""
        self._held.clear()
        for by_queue in self._pending.values():
            by_queue.clear()

    # --- what to send ------------------------------------------------------------------------

    def take_finishes(self) -> list[Batch]:
        """Every finish waiting, in batches: completes first; forgotten here once taken."""
        batches: list[Batch] = []
        for how in FINISHES:
            for queue, handles in self._pending[how].items():
                batches += _batches(how, queue, handles)
            self._pending[how].clear()
        return batches

    def due(self, now: float) -> list[Batch]:
        """The extends due at `now`: held messages half of whose lease has passed."""
        by_queue: dict[str, list[str]] = defaultdict(list)
        for handle, held in self._held.items():
            if held.renew_at <= now:
                by_queue[held.queue].append(handle)
        return [b for queue, hs in by_queue.items() for b in _batches("extend", queue, hs)]

    def extended(self, handles: Iterable[str], sent_at: float) -> None:
        """An extend sent at `sent_at` renewed `handles` (those still held)."""
        for handle in handles:
            held = self._held.get(handle)
            if held is not None:
                held.renew_at = sent_at + self.lease_s / 2

    def postpone(self, handles: Iterable[str], until: float) -> None:
        """An extend of `handles` failed: try again at `until` (before their leases end)."""
        for handle in handles:
            held = self._held.get(handle)
            if held is not None:
                held.renew_at = until

    def give_back(self, batches: Iterable[Batch]) -> None:
        """Finishes that could not be sent: keep them for the next round."""
        for batch in batches:
            if batch.kind != "extend":
                self._pending[batch.kind][batch.queue].extend(batch.handles)

    # --- what the keeper waits for -----------------------------------------------------------

    def has_finishes(self) -> bool:
        return any(any(by_queue.values()) for by_queue in self._pending.values())

    def next_renewal(self) -> float | None:
        """The earliest time an extend is due, None when nothing is held."""
        return min((held.renew_at for held in self._held.values()), default=None)

    def holds(self, handle: str) -> bool:
        return handle in self._held

    @property
    def held_count(self) -> int:
        return len(self._held)


def _batches(kind: Kind, queue: str, handles: list[str]) -> list[Batch]:
    return [
        Batch(kind, queue, tuple(handles[i : i + BATCH_MAX]))
        for i in range(0, len(handles), BATCH_MAX)
    ]
