"""Admission: what one node holds in flight, and the refusal that sheds load past a bound.

Three bounds, every surface together: requests being handled, the bytes of their bodies (as
each declares in Content-Length; the largest body allowed when it declares none), and long
polls (receives that may wait for a message). A surface asks before it takes a request on and
again before a request starts to wait; past a bound the answer is a `Refused` carrying a
retry-after, which each surface answers in its own words (SQS's throttling error, the native
API's 429, gRPC's RESOURCE_EXHAUSTED). A refusal costs nothing and comes at once, before the
request has any effect, so a node at its bounds sheds the excess instead of slowing every
caller down, and a client may always retry it.

Bytes are held twice over, by who holds them. A request's body is read before its request is
authenticated where the signature covers the body (SigV4); until then its bytes are charged as
they arrive to its sender, bounded per sender and in all (`Holding`, okuri.engine.intake), so
no one without a key can hold what authenticated requests need. An authenticated request then
takes a `Ticket` like any other: the request bound, and the bytes bound for its body.

A long poll is a request too: it holds its request slot while it waits, so the long-poll bound
must stay below the request bound (`Bounds` insists), which leaves room for sends and deletes
however many consumers wait. A body counts at most the largest size a request may have, so a
request too large to read is answered "too large" by its surface, never "retry later".

Why here and not in the server: surfaces may import the engine's public face and nothing above
it, and each surface (SQS, native HTTP, gRPC) gates its own requests. It is plain bookkeeping on
one event loop, with no awaits, locks or clock, so unit tests drive it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Literal

from okuri import limits
from okuri.errors import Overloaded

Kind = Literal["request", "long_poll"]
Bound = Literal["requests", "bytes", "long_polls", "unverified_bytes", "sender_bytes"]
BOUNDS: tuple[Bound, ...] = ("requests", "bytes", "long_polls", "unverified_bytes", "sender_bytes")
_WORDS: dict[Bound, str] = {
    "requests": "requests in flight",
    "bytes": "request bytes in flight",
    "long_polls": "long polls",
    "unverified_bytes": "bytes of requests not yet authenticated",
    "sender_bytes": "bytes of unauthenticated requests from one address",
}


@dataclass(frozen=True, slots=True)
class Bounds:
    """The most one node holds at once; raises ValueError for bounds that cannot work."""

    requests_max: int = limits.inflight_requests_max_default
    bytes_max: int = limits.inflight_bytes_max_default
    long_polls_max: int = limits.long_polls_max_default
    body_bytes_max: int = limits.request_bytes_max  # the most one request's body counts
    # Bodies being read before their request is authenticated (okuri.engine.intake): all of
    # them, and those from one sender.
    unverified_bytes_max: int = limits.unverified_bytes_max_default
    sender_bytes_max: int = limits.sender_bytes_max_default

    def __post_init__(self) -> None:
        if self.requests_max < 2:
            raise ValueError("at least 2 requests in flight: one long poll and one other")
        if not 1 <= self.long_polls_max < self.requests_max:
            raise ValueError(
                f"long polls must be from 1 to {self.requests_max - 1}, below the request "
                "bound, so waiting consumers cannot take every request slot"
            )
        if self.bytes_max < self.body_bytes_max:
            raise ValueError(f"bytes in flight must be at least one body, {self.body_bytes_max}")
        if not self.body_bytes_max <= self.sender_bytes_max <= self.unverified_bytes_max:
            raise ValueError(
                f"unauthenticated bytes must be at least one body ({self.body_bytes_max}) from "
                "one sender, and no more from one sender than from all"
            )


@dataclass(frozen=True, slots=True)
class Refused:
    """A request not taken on: `bound` was full; it may succeed after `retry_after_s`."""

    surface: str
    kind: Kind
    bound: Bound
    retry_after_s: int

    def error(self) -> Overloaded:
        return Overloaded(
            f"This server is at its bound of {_WORDS[self.bound]}; retry after "
            f"{self.retry_after_s} s.",
            self.bound,
            self.retry_after_s,
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What is held now, the bounds, and refusals since start by (surface, bound)."""

    in_flight: dict[Bound, int]
    bounds: dict[Bound, int]
    shed: dict[tuple[str, Bound], int]


class Ticket:
    """What one admitted request (or long poll) holds until it is released; releasing twice
    gives back once. Use it as a context manager, or call `release` in a `finally`."""

    __slots__ = ("_admission", "_held", "_kind", "_nbytes")

    def __init__(self, admission: Admission, kind: Kind, nbytes: int) -> None:
        self._admission = admission
        self._kind = kind
        self._nbytes = nbytes
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._admission._give_back(self._kind, self._nbytes)

    def __enter__(self) -> Ticket:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


class Holding:
    """The bytes one unverified request's body holds so far, charged to its sender as they
    arrive (okuri.engine.intake); `release` gives them all back, once."""

    __slots__ = ("_admission", "_held", "_nbytes", "_sender", "_surface")

    def __init__(self, admission: Admission, surface: str, sender: str) -> None:
        self._admission = admission
        self._surface = surface
        self._sender = sender
        self._nbytes = 0
        self._held = True

    def charge(self, nbytes: int) -> None:
        """Hold `nbytes` more; raises Overloaded (nothing more held) past either bound."""
        if not self._held:
            return
        full = self._admission._charge(self._sender, nbytes)
        if full is not None:
            raise self._admission._refuse(self._surface, "request", full).error()
        self._nbytes += nbytes

    def release(self) -> None:
        if self._held:
            self._held = False
            self._admission._uncharge(self._sender, self._nbytes)


class Gate:
    """One surface's way in; what it sheds is counted under its name."""

    def __init__(self, admission: Admission, surface: str) -> None:
        self._admission = admission
        self.surface = surface

    def try_enter(self, kind: Kind, nbytes: int | None = 0) -> Ticket | Refused:
        """Take on a request (`nbytes`: its declared body size, None when it declares none)
        or a long poll (no bytes: its request holds them), or say why not."""
        return self._admission._try_enter(self.surface, kind, nbytes)

    def hold_unverified(self, sender: str) -> Holding:
        """What a request from `sender` (okuri.engine.intake.sender_of) holds while its body is
        read and before it is authenticated: nothing yet."""
        return Holding(self._admission, self.surface, sender)

    def enter(self, kind: Kind, nbytes: int | None = 0) -> Ticket:
        """`try_enter`, raising Overloaded when refused."""
        got = self.try_enter(kind, nbytes)
        if isinstance(got, Refused):
            raise got.error()
        return got


class Admission:
    """The node's in-flight counts against its bounds; one per process, shared by surfaces."""

    def __init__(
        self, bounds: Bounds | None = None, retry_after_s: int = limits.overload_retry_after_s
    ) -> None:
        self.bounds = bounds or Bounds()
        self.retry_after_s = retry_after_s
        self._held: dict[Bound, int] = dict.fromkeys(BOUNDS, 0)
        self._shed: dict[tuple[str, Bound], int] = {}
        self._senders: dict[str, int] = {}  # unverified bytes by sender, only those holding any

    def gate(self, surface: str) -> Gate:
        for bound in BOUNDS:  # a surface's counters read 0 before its first refusal
            self._shed.setdefault((surface, bound), 0)
        return Gate(self, surface)

    def snapshot(self) -> Snapshot:
        b = self.bounds
        held: dict[Bound, int] = {b: n for b, n in self._held.items() if b != "sender_bytes"}
        held["sender_bytes"] = max(self._senders.values(), default=0)  # the largest share
        return Snapshot(
            held,
            {
                "requests": b.requests_max,
                "bytes": b.bytes_max,
                "long_polls": b.long_polls_max,
                "unverified_bytes": b.unverified_bytes_max,
                "sender_bytes": b.sender_bytes_max,
            },
            dict(self._shed),
        )

    def _full(self, kind: Kind, nbytes: int) -> Bound | None:
        b, held = self.bounds, self._held
        if kind == "long_poll":
            return "long_polls" if held["long_polls"] >= b.long_polls_max else None
        if held["requests"] >= b.requests_max:
            return "requests"
        if held["bytes"] + nbytes > b.bytes_max:
            return "bytes"
        return None

    def _try_enter(self, surface: str, kind: Kind, nbytes: int | None) -> Ticket | Refused:
        if kind == "long_poll":
            counted = 0
        else:
            counted = self.bounds.body_bytes_max if nbytes is None else nbytes
            counted = max(0, min(counted, self.bounds.body_bytes_max))
        full = self._full(kind, counted)
        if full is not None:
            return self._refuse(surface, kind, full)
        if kind == "long_poll":
            self._held["long_polls"] += 1
        else:
            self._held["requests"] += 1
            self._held["bytes"] += counted
        return Ticket(self, kind, counted)

    def _refuse(self, surface: str, kind: Kind, full: Bound) -> Refused:
        key = (surface, full)
        self._shed[key] = self._shed.get(key, 0) + 1
        return Refused(surface, kind, full, self.retry_after_s)

    def _charge(self, sender: str, nbytes: int) -> Bound | None:
        b, held = self.bounds, self._senders.get(sender, 0)
        if held + nbytes > b.sender_bytes_max:
            return "sender_bytes"
        if self._held["unverified_bytes"] + nbytes > b.unverified_bytes_max:
            return "unverified_bytes"
        self._senders[sender] = held + nbytes
        self._held["unverified_bytes"] += nbytes
        return None

    def _uncharge(self, sender: str, nbytes: int) -> None:
        if not nbytes:
            return
        left = self._senders.pop(sender, 0) - nbytes
        if left > 0:
            self._senders[sender] = left
        self._held["unverified_bytes"] -= nbytes

    def _give_back(self, kind: Kind, nbytes: int) -> None:
        if kind == "long_poll":
            self._held["long_polls"] -= 1
        else:
            self._held["requests"] -= 1
            self._held["bytes"] -= nbytes
