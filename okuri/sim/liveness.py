"""The liveness oracle: under steady load, once the faults stop, the cluster must keep up.

The safety checkers (okuri/sim/checkers.py) pass a cluster that delivers late enough: nothing
is lost, it is merely not there yet. TigerBeetle's other half is a bound on progress, and this
module states two, for the steady workload shape (okuri/sim/steady.py: producers pinned to some
nodes, consumers to others, a fixed send rate `rate` that is half of what the consumers take on
a healthy engine). `heal` is when the fault phase ended and every node was up; from then on the
store has its latency and no faults.

A *commit window* is a linger plus two store round trips at the latency tail (a manifest read
and a CAS):

    window_s = linger_ms / 1000 + COMMIT_ROUND_TRIPS * LATENCY_TAIL_FACTOR * latency_ms / 1000

(a) **delivery_within_bound**: every acknowledged send is first delivered by

    deadline = max(sent_end, heal + backlog(heal) / rate) + delivery_s
    delivery_s = visibility_s + lease_hold_s + 2 * skew_s + poll_ms_max / 1000
                 + DELIVERY_WINDOWS * window_s

  `visibility_s + lease_hold_s` lets a lease taken before the heal (by a node that then
  crashed, or leased ahead and never handed out) run out; `2 * skew_s` lets the clock that wrote
  it and the one judging it disagree; `poll_ms_max` is how late a node may notice a slot written
  through another (design.md, "discovery"); the windows adopt, lease and deliver, with room for
  a CAS lost to another consumer node. The backlog left by the fault phase (`backlog(heal)`,
  acknowledged sends not yet deleted) is worked off at the send rate or faster: the consumers
  take at least twice the rate, so they gain on the backlog at least at the rate itself.

(b) **backlog_bounded**: the backlog, acknowledged sends minus acknowledged deletes, may not
  grow by more than

    backlog_growth_max = rate * (poll_ms_max / 1000 + BACKLOG_WINDOWS * window_s)

  above its lowest point, judged from `heal + settle_s` to the end of the load, where
  `settle_s = backoff_ms_max / 1000 + window_s` lets requests caught in a retry backoff at the
  heal finish. By Little's law a healthy backlog is the rate times a message's life (found
  within a poll, leased, deleted: a few windows), so this allows the whole of that again.

A node that finds slots written through other nodes more slowly than they are written, and
so cannot catch up, fails them. The engine as of commit 803a66b read such slots one GET at a
time, a couple per receive: when this was written it failed five of the first twenty steady
seeds (250, 2050, 2850, 3650 and 3850; `okuri dst 250`), each by delivering past bound (a);
the galloping parallel discovery that replaced it passed all twenty, using at most a third of
bound (a) and two thirds of bound (b). Both are judged from the client history only, like the
safety checkers.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from okuri import limits
from okuri.sim.checkers import ANSWERED_DELETES, Violation
from okuri.sim.history import History

COMMIT_ROUND_TRIPS = 2  # a manifest read and a CAS
LATENCY_TAIL_FACTOR = 3.0  # lognormal, sigma 0.5 (the memory store's): p99 is ~3.2x the median
DELIVERY_WINDOWS = 4  # adopt and lease, one CAS lost to another node, and a retry
BACKLOG_WINDOWS = 4  # a message's healthy life: lease, delete, each possibly retried once
# The engine's lease-ahead hold (design.md, "Leasing ahead"): unused leases taken ahead are
# released after at least this, or two lingers and a bit when the linger is long.
LEASE_HOLD_S_MIN = 0.5
LEASE_HOLD_LINGERS = 2
LEASE_HOLD_S_EXTRA = 0.2
EXAMPLES_MAX = 3


@dataclass(frozen=True, slots=True)
class LivenessBounds:
    rate_per_s: float  # the nominal send rate
    window_s: float
    delivery_s: float  # (a)
    settle_s: float  # (b) starts this long after the heal
    backlog_growth_max: float  # (b), messages

    @staticmethod
    def for_run(
        linger_ms: int,
        latency_ms: float,
        visibility_s: float,
        skew_ms_max: int,
        send_rate_per_s: float,
    ) -> LivenessBounds:
        linger_s = linger_ms / 1000
        poll_s = limits.poll_ms_max / 1000
        window_s = linger_s + COMMIT_ROUND_TRIPS * LATENCY_TAIL_FACTOR * latency_ms / 1000
        hold_s = max(LEASE_HOLD_S_MIN, LEASE_HOLD_LINGERS * linger_s + LEASE_HOLD_S_EXTRA)
        delivery_s = (
            visibility_s + hold_s + 2 * skew_ms_max / 1000 + poll_s + DELIVERY_WINDOWS * window_s
        )
        return LivenessBounds(
            rate_per_s=send_rate_per_s,
            window_s=window_s,
            delivery_s=delivery_s,
            settle_s=limits.backoff_ms_max / 1000 + window_s,
            backlog_growth_max=send_rate_per_s * (poll_s + BACKLOG_WINDOWS * window_s),
        )


def backlog_steps(h: History, queue: str) -> list[tuple[float, int]]:
    """(time, +1 or -1): an acknowledged send, then the first acknowledged delete of it."""
    steps = [(s.end, 1) for s in h.sent if s.queue == queue]
    sent = {s.message_id for s in h.sent if s.queue == queue}
    deleted: dict[str, float] = {}
    for a in h.acked:
        if a.queue == queue and a.result in ANSWERED_DELETES and a.message_id in sent:
            deleted[a.message_id] = min(deleted.get(a.message_id, a.end), a.end)
    steps += [(t, -1) for t in deleted.values()]
    steps.sort()
    return steps


def backlog_at(steps: list[tuple[float, int]], t: float) -> int:
    """The backlog just after time `t`."""
    return sum(d for _, d in steps[: bisect.bisect_right(steps, (t, 1))])


def check_liveness(
    h: History, queue: str, bounds: LivenessBounds, heal_s: float, load_end_s: float
) -> list[Violation]:
    out: list[Violation] = []
    out += delivery_within_bound(h, queue, bounds, heal_s)
    out += backlog_bounded(h, queue, bounds, heal_s, load_end_s)
    return out


def delivery_within_bound(
    h: History, queue: str, bounds: LivenessBounds, heal_s: float
) -> list[Violation]:
    steps = backlog_steps(h, queue)
    backlog_heal = max(0, backlog_at(steps, heal_s))
    catch_up_s = heal_s + backlog_heal / bounds.rate_per_s if bounds.rate_per_s > 0 else heal_s
    first: dict[str, float] = {}
    for d in h.delivered:
        if d.queue == queue:
            first[d.message_id] = min(first.get(d.message_id, d.end), d.end)
    late: list[tuple[float, str, float, float, float | None]] = []
    for s in h.sent:
        if s.queue != queue:
            continue
        deadline = max(s.end, catch_up_s) + bounds.delivery_s
        got = first.get(s.message_id)
        if got is None or got > deadline:
            lateness = (got if got is not None else float("inf")) - deadline
            late.append((lateness, s.message_id, s.end, deadline, got))
    if not late:
        return []
    late.sort(key=lambda x: (-x[0], x[1]))
    examples = "; ".join(
        f"{mid} sent {sent:.3f}s, due {due:.3f}s, "
        + (
            f"first delivered {got:.3f}s ({lateness:.3f}s late)"
            if got is not None
            else "never delivered"
        )
        for lateness, mid, sent, due, got in late[:EXAMPLES_MAX]
    )
    return [
        Violation(
            "delivery_within_bound",
            f"{len(late)} of {sum(1 for s in h.sent if s.queue == queue)} messages delivered "
            f"late; each is due by max(sent, heal {heal_s:.3f}s + backlog {backlog_heal} / "
            f"{bounds.rate_per_s:.1f}/s = {catch_up_s:.3f}s) + {bounds.delivery_s:.3f}s; "
            f"worst: {examples}",
        )
    ]


def backlog_bounded(
    h: History, queue: str, bounds: LivenessBounds, heal_s: float, load_end_s: float
) -> list[Violation]:
    steps = backlog_steps(h, queue)
    start_s = heal_s + bounds.settle_s
    if start_s >= load_end_s:
        return []
    level = backlog_at(steps, start_s)
    low, low_s = level, start_s
    worst = (0, start_s, low, low_s)  # growth, when, from what low, low when
    for t, delta in steps[bisect.bisect_right(steps, (start_s, 1)) :]:
        if t > load_end_s:
            break
        level += delta
        if level < low:
            low, low_s = level, t
        if level - low > worst[0]:
            worst = (level - low, t, low, low_s)
    growth, when, low, low_s = worst
    if growth <= bounds.backlog_growth_max:
        return []
    return [
        Violation(
            "backlog_bounded",
            f"backlog grew from {low} at {low_s:.3f}s to {low + growth} at {when:.3f}s "
            f"(+{growth}, bound +{bounds.backlog_growth_max:.1f} = {bounds.rate_per_s:.1f}/s x "
            f"({limits.poll_ms_max / 1000:.1f}s + {BACKLOG_WINDOWS} x {bounds.window_s:.3f}s)); "
            f"{backlog_at(steps, load_end_s)} at the end of the load ({load_end_s:.3f}s)",
        )
    ]
