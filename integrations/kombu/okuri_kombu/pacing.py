"""When a consuming channel leases, and how long each lease long-polls: pure rules.

Why apart: they decide how many requests a busy worker sends per task (the transport's cost on
the worker and on okuri), so they are stated, and tested, on their own numbers: the prefetch
window's room, the clock, what the connection consumes.

- **Leases go in batches.** While at least half of the prefetch window is still held (the worker
  has work), a lease waits until half of the window is free, or LEASE_BATCH_WAIT_S since the
  channel's last lease, whichever comes first: a worker that acks one message at a time would
  otherwise send a lease per ack.
- **Several queues take turns**, each long-polled MULTI_QUEUE_WAIT_S at most, so that an idle
  queue cannot hold up another.
- **An `auto_delete` queue beside others** (Celery's remote-control, reply and event queues) is
  short-polled between them, at most every AUX_POLL_S: a worker sees `celery inspect` within
  about a second however long its task queue's poll is, and a busy worker does not send a
  remote-control poll per task.
- **A long poll takes whole seconds** (okuri's wait is a whole number of seconds): a drain long-
  polls the whole seconds it has left, counting one that lacks at most POLL_SLACK_S (a
  `drain_events(timeout=1)` has 0.999 s left by its lease); less than that is a short poll, and
  the transport waits out the rest (okuri_kombu/transport.py).
"""

from __future__ import annotations

MULTI_QUEUE_WAIT_S = 1  # the long poll per queue when a channel consumes from several
LEASE_BATCH_WAIT_S = 0.02  # how long a small lease waits for more room
AUX_POLL_S = 0.1  # an auto_delete queue beside others is short-polled at most this often
NO_POLL = -1  # poll_wait_s: not now
POLL_SLACK_S = 0.1  # a long poll may outlast the drain's timeout by this much


def lease_wait_s(room: int | None, window: int, leased_at: float, now: float) -> float | None:
    """How long from `now` until a channel with `room` free in its prefetch `window` (None: no
    limit), which last leased at `leased_at`, leases: 0 now; None not before an ack."""
    if room is None:
        return 0.0
    if room <= 0:
        return None
    if 2 * room >= window:
        return 0.0
    return max(0.0, leased_at + LEASE_BATCH_WAIT_S - now)


def poll_wait_s(
    wait_time_s: int,
    timeout: float | None,
    *,
    queues_consumed: int,
    auto_delete_beside_others: bool,
    since_poll_s: float,
) -> int:
    """The long poll of one lease of a queue: 0 (a short poll) for an auto_delete queue beside
    others, or NO_POLL when it was polled less than AUX_POLL_S ago; else the transport's
    `wait_time_s`, a second at most when the connection consumes several queues, within the
    drain's `timeout` (the time it has left), rounded down to whole seconds within POLL_SLACK_S."""
    if auto_delete_beside_others:
        return NO_POLL if since_poll_s < AUX_POLL_S else 0
    wait_s = wait_time_s
    if queues_consumed > 1:
        wait_s = min(wait_s, MULTI_QUEUE_WAIT_S)
    if timeout is not None:
        wait_s = min(wait_s, int(timeout + POLL_SLACK_S))
    return max(wait_s, 0)
