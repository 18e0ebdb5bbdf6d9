"""The invariants every simulated run must keep, each checked on its own from the history.

- no_loss: an acknowledged send is delivered, purged, expired or dead-lettered, nothing else;
- no_delivery_after_ack: once a delete was acknowledged, the message is never received again;
- ack_by_a_delivered_receipt: an ack that took effect carried the epoch of some delivery of the
  message (any earlier receipt deletes, as on SQS; a receipt never handed out does not), and a
  message is acked at most once;
- epochs_unique: two deliveries of one message never share a lease epoch;
- no_invented_messages: every delivered body was really sent by some client;
- final state: counts are zero after the drain and no orphaned object is left in the bucket.

A dead-letter move copies first and finishes the source message second, so an interrupted move
may put two copies (same message id, as on SQS) into the dead-letter queue. The checks about one
message's leases (epochs, single ack, no delivery after ack) therefore apply to source queues,
and there to each copy of a message: a scheduled item moved in twice (a mover died between
appending it and deleting its batch) is two copies with one id in two slots.

FIFO queues keep all of these (a send answered as a duplicate names the first message, which
must then be delivered like any other); what only FIFO queues promise is checked in
okuri/sim/fifo_checks.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from okuri import limits
from okuri.sim.history import Delivered, History

# Delete answers a client reads as "deleted": committed, durable in an ack log, and those SQS
# answers as success too, the receipt found stale (no lease of its epoch) or the message found
# finished already. A stale verdict on a receipt some receive handed out is an engine bug: the
# message is not finished, and comes back after a delete the client saw succeed (issue 28).
ANSWERED_DELETES = ("acked", "logged", "stale", "gone")


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


def check_history(
    h: History, queue: str, retention_s: float, skew_s: float, dlq: str | None = None
) -> list[Violation]:
    """Every invariant over the run of `queue`, whose dead-letter queue is `dlq` (by default
    the `-dlq` one the engine creates)."""
    out: list[Violation] = []
    out += no_invented_messages(h)
    out += epochs_unique(h)
    out += ack_by_a_delivered_receipt(h)
    out += no_delivery_after_ack(h)
    out += no_loss(h, queue, retention_s, skew_s, dlq)
    return out


def _is_dlq(queue: str) -> bool:
    return queue.removesuffix(".fifo").endswith("-dlq")


Copy = tuple[str, str, str]  # (queue, message id, slot): one copy of a message


def _by_message(h: History) -> dict[Copy, list[Delivered]]:
    out: dict[Copy, list[Delivered]] = defaultdict(list)
    for d in h.delivered:
        if not _is_dlq(d.queue):
            out[(d.queue, d.message_id, d.slot)].append(d)
    return out


def no_invented_messages(h: History) -> list[Violation]:
    return [
        Violation("no_invented_messages", f"{d.queue}/{d.message_id} body {d.body[:40]!r}")
        for d in h.delivered
        if d.body not in h.attempted_bodies
    ][:5]


def epochs_unique(h: History) -> list[Violation]:
    out = []
    for key, ds in _by_message(h).items():
        epochs = [d.epoch for d in ds]
        if len(set(epochs)) != len(epochs):
            out.append(Violation("epochs_unique", f"{key} delivered with epochs {sorted(epochs)}"))
    return out[:5]


def ack_by_a_delivered_receipt(h: History) -> list[Violation]:
    out = []
    deliveries = _by_message(h)
    effective: dict[Copy, int] = defaultdict(int)
    for a in h.acked:
        if a.result not in ANSWERED_DELETES or _is_dlq(a.queue):
            continue
        key = (a.queue, a.message_id, a.slot)
        # A logged delete may find the message finished already: only commits count here.
        effective[key] += a.result == "acked"
        epochs = {d.epoch for d in deliveries.get(key, [])}
        if a.epoch not in epochs:
            out.append(
                Violation(
                    "ack_by_a_delivered_receipt",
                    f"{key} acked with epoch {a.epoch}; delivered epochs {sorted(epochs)}",
                )
            )
    out += [
        Violation("acked_at_most_once", f"{key} acked {n} times")
        for key, n in effective.items()
        if n > 1
    ]
    return out[:5]


def no_delivery_after_ack(h: History) -> list[Violation]:
    out = []
    acked_at: dict[Copy, float] = {}
    for a in h.acked:
        if a.result in ANSWERED_DELETES and not _is_dlq(a.queue):
            key = (a.queue, a.message_id, a.slot)
            acked_at[key] = min(acked_at.get(key, a.end), a.end)
    for d in h.delivered:
        t = acked_at.get((d.queue, d.message_id, d.slot))
        if t is not None and d.start > t:
            out.append(
                Violation(
                    "no_delivery_after_ack",
                    f"{d.queue}/{d.message_id} acked at {t:.3f}s, delivered again by a receive "
                    f"started at {d.start:.3f}s (epoch {d.epoch})",
                )
            )
    return out[:5]


def no_loss(
    h: History, queue: str, retention_s: float, skew_s: float, dlq: str | None = None
) -> list[Violation]:
    delivered = {(d.queue, d.message_id) for d in h.delivered}
    dlq = dlq or f"{queue}-dlq"
    end = max([d.end for d in h.delivered], default=0.0)
    # A lease whose answer was lost (a forward to a leader that died, committed again here)
    # hides a message for one visibility timeout (docs/design.md, "Several nodes on one
    # manifest"); taken by the last delivery, it may outlast the message's retention, as a lost
    # ReceiveMessage answer may on SQS. Leases taken ahead hold up to a second longer.
    hidden_s = max((d.visibility_s for d in h.delivered), default=0.0) + 1.0
    out = []
    for s in h.sent:
        if (s.queue, s.message_id) in delivered or (dlq, s.message_id) in delivered:
            continue
        # A FIFO duplicate stands for a message sent earlier, by the first attempt or after it.
        began = min(s.start, h.first_attempt.get(s.dedup_id, s.start)) if s.dedup_id else s.start
        # A purge drops scheduled items by the nodes' clocks, which may be `skew_s` apart (SQS
        # too may delete what was sent just after a purge).
        margin_s = skew_s if s.at_s is not None else 0.0
        if any(p.queue == s.queue and p.end + margin_s > began for p in h.purged):
            continue  # a purge that ended after this send began may have taken it
        if s.at_s is not None and s.at_s - s.start > limits.delay_s_max:
            # Scheduled beyond the longest delay: it joined the queue at most that long before
            # it was due, and its retention counts from then.
            began = s.at_s - limits.delay_s_max
        if began + retention_s - skew_s <= end + hidden_s:
            continue  # old enough that some node's clock may have expired it, maybe hidden
        if s.at_s is not None and began + retention_s - skew_s <= s.at_s + skew_s:
            continue  # due after its retention period ends: it may expire unseen, as on SQS
        out.append(
            Violation(
                "no_loss",
                f"{s.queue}/{s.message_id} (sent {s.start:.3f}-{s.end:.3f}s) was never delivered",
            )
        )
    return out[:5]
