"""What the native API promises beyond what every run checks (okuri/sim/checkers.py), judged
from the history of a native seed:

- not_before_enqueue_at: a message sent with an enqueue time is never delivered before it (a
  receive that answered earlier than the time, less the clocks' skew);
- lease_kept: after a visibility change answered "ok" (a retry at a time, an extended lease),
  the message is not delivered again before the new lease runs out, unless a later change of
  it (whose answer may not have come back) could have shortened it;
- dead_is_final: once dead-lettering a message answered "dead", its source queue never
  delivers it again, and its dead-letter queue does deliver it.

Times are true run seconds; `skew_s` bounds how far two nodes' clocks may disagree.
"""

from __future__ import annotations

from collections import defaultdict

from okuri.sim.checkers import Violation
from okuri.sim.history import Changed, History

LIMIT = 5  # violations reported per check


def check_native(h: History, queue: str, dlq: str, skew_s: float) -> list[Violation]:
    return (
        not_before_enqueue_at(h, queue, skew_s)
        + lease_kept(h, queue, skew_s)
        + dead_is_final(h, queue, dlq)
    )


def not_before_enqueue_at(h: History, queue: str, skew_s: float) -> list[Violation]:
    due = {s.message_id: s.at_s for s in h.sent if s.queue == queue and s.at_s is not None}
    out = []
    for d in h.delivered:
        at_s = due.get(d.message_id)
        if d.queue == queue and at_s is not None and d.end < at_s - skew_s:
            out.append(
                Violation(
                    "not_before_enqueue_at",
                    f"{queue}/{d.message_id} due at {at_s:.3f}s, delivered by a receive that "
                    f"answered at {d.end:.3f}s",
                )
            )
    return out[:LIMIT]


def lease_kept(h: History, queue: str, skew_s: float) -> list[Violation]:
    changes: dict[str, list[Changed]] = defaultdict(list)
    for c in h.changed:
        if c.queue == queue:
            changes[c.message_id].append(c)
    out = []
    for d in h.delivered:
        if d.queue != queue:
            continue
        mine = changes.get(d.message_id, [])
        for c in mine:
            if c.result != "ok" or c.end >= d.start or d.end >= c.start + c.visibility_s - skew_s:
                continue
            if any(o is not c and c.start < o.start < d.end for o in mine):
                continue  # a later change may have shortened the lease
            out.append(
                Violation(
                    "lease_kept",
                    f"{queue}/{d.message_id} hidden for {c.visibility_s}s by a change at "
                    f"{c.start:.3f}-{c.end:.3f}s, delivered again by a receive at "
                    f"{d.start:.3f}-{d.end:.3f}s (epoch {d.epoch})",
                )
            )
    return out[:LIMIT]


def dead_is_final(h: History, queue: str, dlq: str) -> list[Violation]:
    dead_at: dict[tuple[str, str], float] = {}
    for x in h.dead:
        if x.queue == queue and x.result == "dead":
            key = (x.message_id, x.slot)
            dead_at[key] = min(dead_at.get(key, x.end), x.end)
    in_dlq = {d.message_id for d in h.delivered if d.queue == dlq}
    out = []
    for d in h.delivered:
        t = dead_at.get((d.message_id, d.slot))
        if d.queue == queue and t is not None and d.start > t:
            out.append(
                Violation(
                    "dead_is_final",
                    f"{queue}/{d.message_id} dead-lettered at {t:.3f}s, delivered again by a "
                    f"receive started at {d.start:.3f}s",
                )
            )
    out += [
        Violation("dead_is_final", f"{queue}/{mid} answered dead, never delivered from {dlq}")
        for mid, _ in sorted(dead_at)
        if mid not in in_dlq
    ]
    return out[:LIMIT]
