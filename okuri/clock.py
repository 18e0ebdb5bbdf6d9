"""The only place time, sleeps, randomness and ids come from.

Everything that would make a run irreproducible goes through a `Clock`, so the simulator can hand
each node a skewed, virtual one and replay a failure from its seed.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import string
import threading
import time
import uuid
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from typing import Protocol, TypeVar

T = TypeVar("T")


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch, as this node believes it (may be skewed)."""

    def monotonic_s(self) -> float:
        """Seconds on the event loop's clock, for deadlines within this process."""

    async def sleep(self, seconds: float) -> None: ...

    async def wait_for(self, aw: Awaitable[T], timeout_s: float) -> T:
        """`aw`'s result, or TimeoutError (`aw` cancelled) once `timeout_s` of this clock's
        seconds have passed. Every timeout goes through here or `timeout`, as every sleep
        through `sleep`, so a simulated clock owns all of the engine's time."""

    def timeout(self, delay_s: float) -> AbstractAsyncContextManager[object]:
        """A block cancelled, raising TimeoutError, once `delay_s` of this clock's seconds have
        passed. It runs in the calling task, where `wait_for` runs `aw` in a task of its own
        (Python 3.11): for a call that may turn its cancellation into an error of its own."""

    def random(self) -> random.Random: ...

    def new_id(self) -> str:
        """A fresh unique id in UUID form."""


_ENTROPY_BYTES = 4096
# RFC 9562 version 4: version nibble 0100, variant bits 10.
_UUID4_CLEAR = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)
_UUID4_SET = (0x4 << 76) | (0x2 << 62)


class _Entropy:
    """OS randomness bought in bulk; a forked child drops what its parent had drawn."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self._buf, self._at = b"", 0

    def take16(self) -> bytes:
        with self._lock:
            if self._at + 16 > len(self._buf):
                self._buf, self._at = os.urandom(_ENTROPY_BYTES), 0
            at = self._at
            self._at = at + 16
            return self._buf[at : at + 16]


_entropy = _Entropy()


class _LoopTimers:
    """Sleeps and timeouts on the running event loop's own time: real time on a real loop,
    virtual time on the simulator's, where they end when virtual time reaches them."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def wait_for(self, aw: Awaitable[T], timeout_s: float) -> T:
        return await asyncio.wait_for(aw, timeout_s)

    def timeout(self, delay_s: float) -> AbstractAsyncContextManager[object]:
        return asyncio.timeout(delay_s)


class SystemClock(_LoopTimers):
    """Real time, real randomness."""

    def __init__(self) -> None:
        self._rng = random.Random()

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    def monotonic_s(self) -> float:
        return time.monotonic()

    def random(self) -> random.Random:
        return self._rng

    def new_id(self) -> str:
        """A random (version 4) UUID; entropy is drawn from the OS 4 KiB at a time, since one
        getrandom call per id cost more than the rest of making it."""
        value = int.from_bytes(_entropy.take16()) & _UUID4_CLEAR | _UUID4_SET
        h = f"{value:032x}"
        return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class LoopClock(_LoopTimers):
    """Time read from the running event loop, offset to an epoch and skewed; ids from a seeded rng.

    On a virtual-time loop (the simulator) this is fully deterministic.
    """

    def __init__(self, epoch_ms: int, rng: random.Random, skew_ms: int = 0) -> None:
        self._epoch_ms = epoch_ms
        self._rng = rng
        self.skew_ms = skew_ms

    def now_ms(self) -> int:
        return self._epoch_ms + int(asyncio.get_running_loop().time() * 1000) + self.skew_ms

    def monotonic_s(self) -> float:
        return asyncio.get_running_loop().time()

    def random(self) -> random.Random:
        return self._rng

    def new_id(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))


def new_secret(nbytes: int = 32) -> str:
    """A secret for a credential (a bearer key): OS randomness, never a seeded generator,
    whichever clock is in use, so a simulated run cannot mint a guessable key."""
    return secrets.token_urlsafe(nbytes)


def new_access_key_id(prefix: str, chars: int) -> str:
    """An access key id: `prefix` and `chars` random capital letters and digits, as AWS's look.
    Public, not secret, but from OS randomness like `new_secret`, so ids never repeat across
    simulated runs either."""
    alphabet = string.ascii_uppercase + string.digits
    return prefix + "".join(secrets.choice(alphabet) for _ in range(chars))
