"""This node's recent history of each queue, for the console's chart: depth, sends, deletes.

Kept in memory and bounded (okuri/limits.py): one sample per queue every `console_sample_s`,
the last `console_samples_max`, at most `console_queues_max` queues. Depths come from the
cached manifests /metrics reads (no store request); sends and deletes are what this node
counted since the previous sample, so a node shows its own traffic, not the cluster's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from okuri import limits
from okuri.clock import Clock
from okuri.engine import Counts


@dataclass(frozen=True, slots=True)
class Sample:
    at_ms: int
    depth: int  # visible + leased + delayed
    sends: int  # since the previous sample
    deletes: int

    def to_json(self) -> list[int]:
        return [self.at_ms, self.depth, self.sends, self.deletes]


@dataclass(frozen=True, slots=True)
class Reading:
    """What one sample reads: depths, and running totals of sends and deletes."""

    counts: Mapping[str, Counts]
    sent: Mapping[str, int]
    deleted: Mapping[str, int]


class History:
    def __init__(
        self,
        read: Callable[[], Reading],
        samples_max: int = limits.console_samples_max,
        queues_max: int = limits.console_queues_max,
        period_s: float = limits.console_sample_s,
    ) -> None:
        self._read = read
        self.period_s = period_s
        self._samples_max = samples_max
        self._queues_max = queues_max
        self._series: dict[str, deque[Sample]] = {}
        self._totals: dict[str, tuple[int, int]] = {}

    def sample(self, now_ms: int) -> None:
        """Add one sample per queue known; queues past the cap are left out until one goes."""
        r = self._read()
        for name in [n for n in self._series if n not in r.counts]:
            del self._series[name]
            self._totals.pop(name, None)
        for name in sorted(r.counts):
            series = self._series.get(name)
            if series is None:
                if len(self._series) >= self._queues_max:
                    continue
                series = self._series[name] = deque(maxlen=self._samples_max)
            series.append(self._measure(r, name, now_ms))
            self._totals[name] = (r.sent.get(name, 0), r.deleted.get(name, 0))

    def _measure(self, r: Reading, name: str, now_ms: int) -> Sample:
        c = r.counts.get(name, Counts())
        totals = (r.sent.get(name, 0), r.deleted.get(name, 0))
        before = self._totals.get(name, totals)
        return Sample(
            now_ms,
            c.visible + c.in_flight + c.delayed,
            max(totals[0] - before[0], 0),
            max(totals[1] - before[1], 0),
        )

    def series(self, name: str, now_ms: int) -> list[Sample]:
        """The samples kept of queue `name`, then one read now (not kept), so the chart ends
        at the present: its sends and deletes so far, scaled to a whole period so that a
        period just begun does not read as a drop. Nothing for a queue this node has not
        touched."""
        r = self._read()
        kept = list(self._series.get(name, ()))
        if name not in r.counts:
            return kept
        now = self._measure(r, name, now_ms)
        if kept:
            # At most tenfold: one send in the period's first moment is no burst.
            period_ms = self.period_s * 1000
            scale = period_ms / max(now_ms - kept[-1].at_ms, period_ms / 10)
            now = Sample(now_ms, now.depth, round(now.sends * scale), round(now.deletes * scale))
        return [*kept, now]

    async def run(self, clock: Clock) -> None:
        """Sample now and every period until cancelled."""
        while True:
            self.sample(clock.now_ms())
            await clock.sleep(self.period_s)


class Sampler:
    """The task that keeps a History sampling; `stop` cancels it."""

    def __init__(self, history: History, clock: Clock) -> None:
        self._task = asyncio.ensure_future(history.run(clock))

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
