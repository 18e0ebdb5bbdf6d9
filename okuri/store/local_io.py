"""What both local stores (a file per object, okuri/store/local.py; the journal,
okuri/store/journal.py) do with the disk alike: how an OSError reads as a store error, a
directory's fsync, and when a blocking call may run on the event loop.

Why shared: the two layouts differ in how they lay objects out, not in what a full disk or a
read-only directory means to the engine, nor in the rule that keeps a slow disk off the loop.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import TypeVar

from okuri import limits
from okuri.clock import Clock
from okuri.errors import StoreError, StoreMisconfigured, Transient

T = TypeVar("T")

NOT_ALLOWED = (errno.EACCES, errno.EPERM, errno.EROFS)
RECENT_WEIGHT = 0.2  # of the latest call in the moving average of call times


def translate(err: OSError, key: str, store: str) -> StoreError:
    """An OSError before a write took effect: retryable unless the directory refuses us."""
    if err.errno in NOT_ALLOWED:
        return StoreMisconfigured(f"{store} cannot write or read {key!r}: {err}")
    return Transient(f"{store} I/O error on {key!r}: {err}")


def fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class RecentTime:
    """How long blocking calls took lately (a moving average): while they are quick (under
    `limits.local_inline_s_max`) they may run on the event loop, since the hop to a thread costs
    more than a write to a fast disk; on a slow disk the average rises and they go to threads,
    so the loop is never held for long. Calls are timed wherever they run, so it recovers."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock  # read from worker threads: not a loop's clock
        self.s = 0.0

    @property
    def quick(self) -> bool:
        return self.s < limits.local_inline_s_max

    def timed(self, fn: Callable[[], T]) -> T:
        start = self.clock.monotonic_s()
        try:
            return fn()
        finally:
            took = self.clock.monotonic_s() - start
            # From several threads at once a step may be lost: an average, not a count.
            self.s += (took - self.s) * RECENT_WEIGHT
