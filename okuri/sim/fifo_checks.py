"""The FIFO oracle: what a FIFO queue promises on top of what every queue does (checkers.py),
judged, like every check, only from what clients saw (okuri/sim/history.py).

- sequence_follows_sends: of two sends that were not duplicates, the one acknowledged before
  the other began has the smaller sequence number; and a message has one sequence number,
  in every answer that names it (a duplicate's names the first message's) and every delivery
  of it from its queue;
- group_order: the messages of a group are first delivered in sequence-number order;
- group_waits_for_earlier: a message is delivered only once every earlier message of its group
  is finished, or in the same receive call: an earlier one still unfinished is either visible
  (so it comes first) or hidden (so the group waits). It counts as possibly finished once a
  delete of it was tried (answered or not), or if it was dead-lettered, purged or expired. An
  earlier message is known from its send's answer or from any delivery of it;
- group_one_in_flight: no message is delivered while an earlier message of its group,
  delivered by a different receive call, is surely still in flight: no delete of it tried, the
  queue not purged, and its lease (judged from the start of its receive, less twice the clock
  skew, and moved by the visibility changes that surely landed while it was held) not run out
  on any node's clock. An earlier message made visible again may go out while later ones are
  held, as on SQS (recorded): the group offers its visible messages up to its first hidden one;
- dedup_one_message: every acknowledged send of one deduplication id within the window answers
  the same message, one that carries that id; and two messages with one deduplication id are
  never both delivered unless they were sent a whole window apart; a purge between them clears
  the window, as on SQS;
- duplicate_never_delivered: the message a send answered as a duplicate carried (told apart
  by its body: every attempt's body is its own) is never delivered.

Why these and not "delivered in sequence order": a message whose lease runs out comes back
before later ones, and one receive may return several messages of a group, so the order of all
deliveries is no promise; the order of first deliveries and "no message while an earlier one
of its group is held by another receive call" are. Each check reports at most five violations.
"""

from __future__ import annotations

import itertools
from collections import defaultdict

from okuri import limits
from okuri.sim.checkers import Violation
from okuri.sim.history import UNANSWERED, Acked, Changed, Delivered, History, Sent

WINDOW_S = float(limits.dedup_window_s)
# Sequence numbers and send times in the history are exact, but `sent_s` is a float derived
# from milliseconds; a hair of slack keeps a rounding error from reading as a violation.
EPSILON_S = 0.001


def check_fifo(
    h: History, queue: str, retention_s: float, skew_ms_max: int, partitioned: bool = False
) -> list[Violation]:
    """Every FIFO invariant over the run of FIFO `queue` (and its FIFO dead-letter queue), whose
    nodes' clocks are off by at most `skew_ms_max` either way. `partitioned`: a high-throughput
    queue, whose sequence numbers grow within each group (SQS's promise) rather than across it."""
    # A lease taken at true time t with visibility v ends, on the leasing node's clock, at its
    # t + v; a node whose clock runs up to twice the skew ahead sees it end that much sooner.
    # (Clocks read whole milliseconds: a hair more.) Retention is judged with the coarser
    # margin the common checkers use.
    lease_skew_s = 2 * skew_ms_max / 1000 + EPSILON_S
    skew_s = 2 * skew_ms_max / 1000 + 1
    out: list[Violation] = []
    out += sequence_follows_sends(h, queue, partitioned)
    out += group_order(h)
    out += group_waits_for_earlier(h, queue, retention_s, skew_s)
    out += group_one_in_flight(h, queue, retention_s, skew_s, lease_skew_s)
    out += dedup_one_message(h, skew_s)
    out += duplicate_never_delivered(h)
    return out


def _fifo_deliveries(h: History) -> list[Delivered]:
    return [d for d in h.delivered if d.group_id is not None and d.sequence_number is not None]


def _began(h: History, s: Sent) -> float:
    """When the message a send stands for was sent at the earliest: a duplicate's original
    was sent by the first attempt with its deduplication id, or by one after it."""
    if s.dedup_id is None:
        return s.start
    return min(s.start, h.first_attempt.get(s.dedup_id, s.start))


def sequence_follows_sends(h: History, queue: str, per_group: bool = False) -> list[Violation]:
    out = []
    sent = [s for s in h.sent if s.queue == queue and not s.duplicate and s.sequence_number]
    if per_group:
        groups = sorted({s.group_id or "" for s in sent})
        for g in groups:
            out += _numbers_follow_sends([s for s in sent if (s.group_id or "") == g], queue)
    else:
        out += _numbers_follow_sends(sent, queue)
    numbers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for s in h.sent:
        if s.sequence_number is not None:
            numbers[(s.queue, s.message_id)].add(s.sequence_number)
    for d in _fifo_deliveries(h):
        if (d.queue, d.message_id) in numbers:
            numbers[(d.queue, d.message_id)].add(d.sequence_number or "")
    out += [
        Violation("sequence_follows_sends", f"{q}/{mid} answered with numbers {sorted(ns)}")
        for (q, mid), ns in numbers.items()
        if len(ns) > 1
    ]
    owners: dict[tuple[str, str], set[str]] = defaultdict(set)  # one number, one message
    for s in sent:
        owners[(s.queue, s.sequence_number or "")].add(s.message_id)
    out += [
        Violation("sequence_follows_sends", f"{q} number {n} answered for {sorted(mids)}")
        for (q, n), mids in owners.items()
        if len(mids) > 1
    ]
    return out[:5]


def _numbers_follow_sends(sent: list[Sent], queue: str) -> list[Violation]:
    """A send that began after others were acknowledged got a higher number than theirs."""
    out = []
    originals = sorted(sent, key=lambda s: s.end)
    done = 0
    highest: Sent | None = None  # the highest-numbered send acknowledged so far
    for s in sorted(originals, key=lambda s: s.start):
        while done < len(originals) and originals[done].end < s.start:
            o = originals[done]
            if highest is None or int(o.sequence_number or 0) > int(highest.sequence_number or 0):
                highest = o
            done += 1
        if highest is not None and int(highest.sequence_number or 0) >= int(s.sequence_number or 0):
            out.append(
                Violation(
                    "sequence_follows_sends",
                    f"{queue}/{s.message_id} sent {s.start:.3f}-{s.end:.3f}s has sequence number "
                    f"{s.sequence_number}, not above {highest.message_id}'s "
                    f"{highest.sequence_number} (acknowledged at {highest.end:.3f}s)",
                )
            )
    return out


def group_order(h: History) -> list[Violation]:
    out = []
    # (queue, group) -> message id -> (sequence number, earliest start, earliest end)
    firsts: dict[tuple[str, str], dict[str, tuple[int, float, float]]] = defaultdict(dict)
    for d in _fifo_deliveries(h):
        group = firsts[(d.queue, d.group_id or "")]
        seq, start, end = group.get(d.message_id, (int(d.sequence_number or 0), d.start, d.end))
        group[d.message_id] = (seq, min(start, d.start), min(end, d.end))
    for (queue, group_id), group in firsts.items():
        latest: tuple[str, float] | None = None  # the earlier message first delivered latest
        for mid, (seq, start, end) in sorted(group.items(), key=lambda kv: kv[1][0]):
            if latest is not None and end < latest[1]:
                out.append(
                    Violation(
                        "group_order",
                        f"{queue} group {group_id}: {mid} (sequence {seq}) was delivered by "
                        f"{end:.3f}s, before the earlier {latest[0]} was first delivered "
                        f"(from {latest[1]:.3f}s)",
                    )
                )
            if latest is None or start > latest[1]:
                latest = (mid, start)
    return out[:5]


def group_waits_for_earlier(
    h: History, queue: str, retention_s: float, skew_s: float
) -> list[Violation]:
    out = []
    # Every message known in each FIFO queue, from its send's answer or its deliveries: group,
    # sequence number, and since when it may have been sent.
    known: dict[tuple[str, str], tuple[str, int, float]] = {}
    for d in _fifo_deliveries(h):
        key = (d.queue, d.message_id)
        if key not in known:
            known[key] = (d.group_id or "", int(d.sequence_number or 0), d.sent_s - skew_s)
    for s in h.sent:
        if s.group_id is not None and s.sequence_number is not None:
            prior = known.get((s.queue, s.message_id))
            began = min(_began(h, s), prior[2]) if prior else _began(h, s)
            known[(s.queue, s.message_id)] = (s.group_id, int(s.sequence_number), began)
    by_group: dict[tuple[str, str], list[tuple[int, str, float]]] = defaultdict(list)
    for (q, mid), (group, seq, began) in known.items():
        by_group[(q, group)].append((seq, mid, began))
    # What may have finished a message: a delete tried (answered or not), a dead-letter move.
    finishing: dict[tuple[str, str], float] = {}
    for a in h.acked:
        key = (a.queue, a.message_id)
        finishing[key] = min(finishing.get(key, a.start), a.start)
    calls: dict[int, set[str]] = defaultdict(set)
    for d in h.delivered:
        calls[d.receive_id].add(d.message_id)
        if d.dead_letter_source is not None:
            finishing[(d.dead_letter_source, d.message_id)] = float("-inf")
    purges = [p for p in h.purged if p.queue == queue]
    for d in _fifo_deliveries(h):
        seq = int(d.sequence_number or 0)
        for earlier_seq, mid, began in by_group.get((d.queue, d.group_id or ""), []):
            if earlier_seq >= seq or mid in calls[d.receive_id]:
                continue
            if finishing.get((d.queue, mid), float("inf")) <= d.end:
                continue  # it may have been deleted or dead-lettered by then
            if d.queue == queue:
                if any(p.end > began and p.start < d.end for p in purges):
                    continue  # a purge may have taken it
                if began + retention_s - skew_s <= d.end:
                    continue  # some node's clock may have expired it
            out.append(
                Violation(
                    "group_waits_for_earlier",
                    f"{d.queue} group {d.group_id}: {d.message_id} (sequence {seq}) delivered "
                    f"{d.start:.3f}-{d.end:.3f}s while the earlier {mid} (sequence "
                    f"{earlier_seq}) was unfinished and not delivered with it",
                )
            )
            break
    return out[:5]


def group_one_in_flight(
    h: History, queue: str, retention_s: float, skew_s: float, lease_skew_s: float
) -> list[Violation]:
    out = []
    deletes: dict[tuple[str, str], list[Acked]] = defaultdict(list)
    for a in h.acked:
        deletes[(a.queue, a.message_id)].append(a)
    changes: dict[tuple[str, str], list[Changed]] = defaultdict(list)
    for c in sorted(h.changed, key=lambda c: c.start):
        changes[(c.queue, c.message_id)].append(c)
    purges = [p for p in h.purged if p.queue == queue]
    by_group: dict[tuple[str, str], list[Delivered]] = defaultdict(list)
    for d in _fifo_deliveries(h):
        by_group[(d.queue, d.group_id or "")].append(d)
    for (q, group_id), ds in by_group.items():
        ds.sort(key=lambda d: d.start)
        for first in ds:
            key = (q, first.message_id)
            until = _surely_hidden_until(first, changes[key], deletes[key], lease_skew_s)
            if q == queue:
                until = min(until, first.sent_s + retention_s - skew_s)
                until = min([until, *(p.start for p in purges if p.end >= first.start)])
            for d in ds:
                if d.start <= first.end or d.end >= until:
                    continue  # (at one instant, virtual time may run them in either order)
                if d.message_id == first.message_id or d.receive_id == first.receive_id:
                    continue
                if int(d.sequence_number or 0) < int(first.sequence_number or 0):
                    continue  # a head given back may go out while later messages are held
                out.append(
                    Violation(
                        "group_one_in_flight",
                        f"{q} group {group_id}: {d.message_id} delivered {d.start:.3f}-"
                        f"{d.end:.3f}s while {first.message_id} (delivered {first.start:.3f}-"
                        f"{first.end:.3f}s, visibility {first.visibility_s:.0f}s) was in "
                        f"flight until at least {until:.3f}s",
                    )
                )
    return out[:5]


def _surely_hidden_until(
    d: Delivered, changes: list[Changed], deletes: list[Acked], lease_skew_s: float
) -> float:
    """Until when the message of delivery `d` is surely hidden from every node, its lease
    taken by the end of the receive: its visibility from the receive's start, less the skew;
    moved by each visibility change after it (one answered "ok" while the message was surely
    hidden sets it from the change's start; one unanswered may have cut it short); ended by the
    first delete tried (a delete or change over before the receive began touched an earlier
    lease, or nothing)."""
    until = d.start + d.visibility_s - lease_skew_s
    for c in changes:
        if c.end < d.start:
            continue
        after = c.start + max(0.0, c.visibility_s - lease_skew_s)
        if c.result == "ok" and c.start >= d.end and c.end <= until:
            until = after
        elif c.result == UNANSWERED or c.result == "ok":
            until = min(until, after)
    return min([until, *(a.start for a in deletes if a.end >= d.start)])


def _purged_between(h: History, queue: str, after: float, before: float) -> bool:
    """Might a purge of `queue` have taken effect between `after` and `before`? A purge clears
    the deduplication window, as on SQS (recorded)."""
    return any(p.queue == queue and p.end > after and p.start < before for p in h.purged)


def dedup_one_message(h: History, skew_s: float) -> list[Violation]:
    out = []
    answers: dict[tuple[str, str], list[Sent]] = defaultdict(list)
    for s in h.sent:
        if s.dedup_id is not None:
            answers[(s.queue, s.dedup_id)].append(s)
    for (queue, dedup_id), ss in answers.items():
        ss.sort(key=lambda s: s.start)
        for s1, s2 in itertools.pairwise(ss):
            if s1.message_id != s2.message_id and s2.start - s1.start < WINDOW_S - skew_s:
                if _purged_between(h, queue, s1.start, s2.end):
                    continue
                out.append(
                    Violation(
                        "dedup_one_message",
                        f"{queue} deduplication id {dedup_id}: sends at {s1.start:.3f}s and "
                        f"{s2.start:.3f}s answered {s1.message_id} and {s2.message_id}",
                    )
                )
    carried: dict[tuple[str, str], set[str]] = defaultdict(set)
    delivered: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for d in _fifo_deliveries(h):
        carried[(d.queue, d.message_id)].add(d.dedup_id or "")
        if d.dedup_id is not None:
            delivered[(d.queue, d.dedup_id)][d.message_id] = d.sent_s
    for s in h.sent:
        named = carried.get((s.queue, s.message_id), set())
        if s.dedup_id is not None and named - {s.dedup_id}:
            out.append(
                Violation(
                    "dedup_one_message",
                    f"{s.queue}: a send with deduplication id {s.dedup_id} answered "
                    f"{s.message_id}, which carries {sorted(named)}",
                )
            )
    for (queue, dedup_id), messages in delivered.items():
        items = sorted(messages.items(), key=lambda kv: kv[1])
        for (a, at), (b, bt) in itertools.pairwise(items):
            if bt - at < WINDOW_S - EPSILON_S:
                if _purged_between(h, queue, at - skew_s, bt + skew_s):
                    continue
                out.append(
                    Violation(
                        "dedup_one_message",
                        f"{queue} deduplication id {dedup_id}: {a} and {b}, sent "
                        f"{bt - at:.3f}s apart, were both delivered",
                    )
                )
    return out[:5]


def duplicate_never_delivered(h: History) -> list[Violation]:
    dups = {s.body: s for s in h.sent if s.duplicate}
    return [
        Violation(
            "duplicate_never_delivered",
            f"{d.queue}/{d.message_id} body {d.body!r} was delivered, but its send was "
            f"answered as a duplicate of {dups[d.body].message_id}",
        )
        for d in h.delivered
        if d.body in dups
    ][:5]
