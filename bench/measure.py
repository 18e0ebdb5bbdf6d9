"""What the benchmarks measure with: latency histograms, CPU readings, timestamped bodies.

Why apart from the load and the servers: these are the units of every figure printed, shared by
`python -m bench sqs` (one node or several) and `python -m bench cluster`, and readable without
either.
Everything here is bounded: a histogram has a fixed bucket width, so its memory does not grow
with the messages a run moves, and an error kept for a report is one line of bounded length.
CPU readings come from Linux /proc and are None elsewhere ("unknown", never zero).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

BODY_BYTES = 100
STAMP_DIGITS = 20  # time.monotonic_ns() as zero-padded decimal at the start of every body

ERROR_CHARS_MAX = 300  # an error kept for the report, folded onto one line
HISTOGRAM_GROWTH = 1.01  # latency buckets 1% wide: under 2,500 buckets span 1 us to an hour
_LOG_GROWTH = math.log(HISTOGRAM_GROWTH)


class LatencyHistogram:
    """Latencies in log-spaced buckets: memory bounded however many messages a run moves."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self.samples = 0
        self.max_s = 0.0

    def add(self, seconds: float) -> None:
        micros = max(seconds * 1e6, 1.0)
        bucket = int(math.log(micros) / _LOG_GROWTH)
        self._counts[bucket] = self._counts.get(bucket, 0) + 1
        self.samples += 1
        self.max_s = max(self.max_s, seconds)

    def merge(self, other: LatencyHistogram) -> None:
        for bucket, n in other._counts.items():
            self._counts[bucket] = self._counts.get(bucket, 0) + n
        self.samples += other.samples
        self.max_s = max(self.max_s, other.max_s)

    def percentile_ms(self, q: float) -> float | None:
        """The q-quantile (0 < q <= 1), to within half a bucket (0.5%); None with no samples."""
        if not self.samples:
            return None
        rank = max(1, math.ceil(q * self.samples))
        seen = 0
        for bucket in sorted(self._counts):
            seen += self._counts[bucket]
            if seen >= rank:
                return float(HISTOGRAM_GROWTH ** (bucket + 0.5) / 1000)
        return self.max_s * 1000


@dataclass
class Window:
    """Counts of what completed inside the measured window."""

    send_requests: int = 0
    messages_sent: int = 0
    receive_requests: int = 0
    empty_receives: int = 0
    messages_received: int = 0
    delete_requests: int = 0
    messages_deleted: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)
    # Receives that got messages, and the seconds from each one's answer to its delete's
    # answer: how long a consumer holds what it got (on a FIFO queue, its message groups).
    holds: int = 0
    held_s: float = 0.0
    # Each call's round trip as its client saw it, by action and by the node it went to (a
    # receive only when it got messages: a long poll that waited out its time says nothing).
    calls: dict[str, dict[int, LatencyHistogram]] = field(default_factory=dict)

    def called(self, action: str, node: int, seconds: float) -> None:
        self.calls.setdefault(action, {}).setdefault(node, LatencyHistogram()).add(seconds)

    def call_p50_ms(self, action: str, node: int | None = None) -> float | None:
        """The median round trip of `action` on `node`, or over all nodes; None if not made."""
        by_node = self.calls.get(action) or {}
        if node is not None:
            hist = by_node.get(node)
            return None if hist is None else rounded(hist.percentile_ms(0.5), 2)
        merged = LatencyHistogram()
        for hist in by_node.values():
            merged.merge(hist)
        return rounded(merged.percentile_ms(0.5), 2)


def make_body(producer: int, seq: int) -> str:
    """BODY_BYTES of ASCII that begin with the send time, so latency is read off the body."""
    head = f"{time.monotonic_ns():0{STAMP_DIGITS}d} p{producer:03d} n{seq:010d} "
    return head + "x" * max(0, BODY_BYTES - len(head))


def sent_ns(body: str) -> int | None:
    try:
        return int(body[:STAMP_DIGITS])
    except ValueError:
        return None


def process_cpu_s(pid: int) -> float | None:
    """User plus system CPU seconds of a process and all its threads (Linux /proc; else None)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class MachineCpu:
    """CPU seconds this machine has spent since boot (Linux /proc/stat): `busy` on any process
    or the kernel, and `stolen`, the time its virtual CPUs wanted to run and the host ran
    something else (counted apart: not busy here, but not available either)."""

    busy_s: float
    stolen_s: float


def machine_cpu() -> MachineCpu | None:
    """This machine's CPU so far (Linux /proc; else None).

    The machine may be shared: busy time that is neither the server's nor the load generator's
    is someone else's, and time stolen by the host is a slower machine; both are printed so a
    slow run can be told from a slow server.
    """
    try:
        with open("/proc/stat", "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != b"cpu":
        return None
    ticks = [int(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    tick_s = os.sysconf("SC_CLK_TCK")
    stolen = ticks[7] if len(ticks) > 7 else 0
    busy = sum(ticks) - ticks[3] - ticks[4] - stolen
    return MachineCpu(busy / tick_s, stolen / tick_s)


def error_line(what: str) -> str:
    """An error as a report keeps it: white space folded, at most ERROR_CHARS_MAX characters."""
    return " ".join(what.split())[:ERROR_CHARS_MAX]


def rate(count: float, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def rounded(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def percent(part_s: float | None, whole_s: float) -> float | None:
    return None if part_s is None or whole_s <= 0 else round(100 * part_s / whole_s, 1)
