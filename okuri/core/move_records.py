"""Message move tasks as records in the bucket, and the pure rules for changing them.

A move task (SQS's StartMessageMoveTask) takes messages out of a dead-letter queue. Its record
lives in that queue's manifest, in `QueueAttrs.extra` under `MOVE_TASKS_KEY`: a JSON list of the
queue's latest tasks, newest first, at most `limits.move_tasks_kept` (SQS lists up to ten). Every
change is one compare-and-swap of the manifest (`Engine.update_attributes`), so any node reads
the same history, and at most one task per queue is active (RUNNING or CANCELLING).

The task itself runs on the node that started it (`okuri.engine.move_tasks`), which refreshes
`heartbeat_ms` and the moved count at least every `limits.move_heartbeat_ms`. A node can die
without a word, so readers judge an active record whose heartbeat is older than
`limits.move_stale_ms` by their own clock: a RUNNING one is reported FAILED
(`FAILURE_NODE_LOST`), a CANCELLING one CANCELLED, and a new StartMessageMoveTask may replace
it. The bound is generous against clock skew between
nodes (seconds) and a slow store (a step retries for at most tens of seconds).

Also here: which queue a queue dead-letters to (`dead_letter_target`), the one definition the
engine's dead-letter move, ListDeadLetterSourceQueues and the move tasks share.

Pure: no I/O, clock or randomness; times are arguments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from okuri import limits
from okuri.core.state import QueueAttrs
from okuri.errors import QueueDoesNotExist, QueueError

MOVE_TASKS_KEY = "okuri:move-tasks"

RUNNING = "RUNNING"
COMPLETED = "COMPLETED"
CANCELLING = "CANCELLING"
CANCELLED = "CANCELLED"
FAILED = "FAILED"
ACTIVE = frozenset({RUNNING, CANCELLING})
STATUSES = frozenset({RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED})

# FailureReason texts. SQS's own for a queue that went away (recorded); the others are okuri's.
FAILURE_NO_QUEUE = "AWS.SimpleQueueService.NonExistentQueue"
FAILURE_NO_SOURCE = (
    "A message has no recorded source queue and the dead-letter queue has more than one "
    "source; give a DestinationArn to move it."
)
FAILURE_NODE_LOST = "The node running the task stopped reporting progress before it finished."
FAILURE_SHUTDOWN = "The node running the task shut down before it finished."
FAILURE_UNAVAILABLE = "The object store was unavailable; the task stopped."


def dead_letter_target(name: str, attrs: QueueAttrs) -> str | None:
    """The queue `name` moves messages past maxReceiveCount to; None if it has no limit.

    The RedrivePolicy's dead-letter queue when set, else `{name}-dlq` by convention (a queue
    given only a receive limit, as the engine's own API allows).
    """
    if attrs.max_receive_count is None:
        return None
    return attrs.dead_letter_queue or f"{name}-dlq"


# --- errors ---------------------------------------------------------------------------------


class NotADeadLetterQueue(QueueError):
    """A move task was asked for on a queue no other queue dead-letters to."""


class DestinationDoesNotExist(QueueDoesNotExist):
    """A move task's destination queue does not exist (the source does)."""


class MoveTaskActive(QueueError):
    """The queue already has an active move task (only one at a time)."""


class MoveTaskNotFound(QueueError):
    """No such task on the queue, or it is no longer running (so it cannot be cancelled)."""


# --- the record -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MoveTask:
    id: str
    source: str  # the dead-letter queue the messages leave
    destination: str | None  # None: each message goes back to the queue it came from
    rate: int | None  # messages per second; None: as fast as the node goes
    status: str
    moved: int
    to_move: int  # visible messages in the source when the task started
    started_ms: int
    heartbeat_ms: int  # the running node's clock at its last report
    node: str  # the node running the task
    failure: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "src": self.source,
            "dst": self.destination,
            "rate": self.rate,
            "st": self.status,
            "moved": self.moved,
            "total": self.to_move,
            "start": self.started_ms,
            "beat": self.heartbeat_ms,
            "node": self.node,
            "why": self.failure,
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> MoveTask:
        return MoveTask(
            id=str(d["id"]),
            source=str(d["src"]),
            destination=None if d.get("dst") is None else str(d["dst"]),
            rate=None if d.get("rate") is None else int(d["rate"]),
            status=str(d["st"]),
            moved=int(d["moved"]),
            to_move=int(d["total"]),
            started_ms=int(d["start"]),
            heartbeat_ms=int(d["beat"]),
            node=str(d["node"]),
            failure=None if d.get("why") is None else str(d["why"]),
        )


def decode_tasks(attrs: QueueAttrs) -> list[MoveTask]:
    """The queue's task records, newest first; an unreadable list reads as none (it is only
    history: losing it never loses a message)."""
    raw = attrs.extra.get(MOVE_TASKS_KEY)
    if not raw:
        return []
    try:
        items = json.loads(raw)
        tasks = [MoveTask.from_json(d) for d in items]
    except (ValueError, TypeError, KeyError):
        return []
    return [t for t in tasks if t.status in STATUSES]


def encode_tasks(attrs: QueueAttrs, tasks: Sequence[MoveTask]) -> QueueAttrs:
    extra = dict(attrs.extra)
    if tasks:
        kept = [t.to_json() for t in tasks[: limits.move_tasks_kept]]
        extra[MOVE_TASKS_KEY] = json.dumps(kept, separators=(",", ":"))
    else:
        extra.pop(MOVE_TASKS_KEY, None)
    return replace(attrs, extra=extra)


def as_seen(task: MoveTask, now_ms: int) -> MoveTask:
    """The task as a reader at `now_ms` must report it: an active task whose node stopped
    reporting is over (RUNNING becomes FAILED, CANCELLING becomes CANCELLED)."""
    if task.status not in ACTIVE or now_ms - task.heartbeat_ms <= limits.move_stale_ms:
        return task
    if task.status == CANCELLING:
        return replace(task, status=CANCELLED)
    return replace(task, status=FAILED, failure=FAILURE_NODE_LOST)


def add_task(tasks: Sequence[MoveTask], task: MoveTask, now_ms: int) -> list[MoveTask]:
    """Record a new task; refused while another is active. Stale records are settled as seen."""
    seen = [as_seen(t, now_ms) for t in tasks]
    if any(t.status in ACTIVE for t in seen):
        raise MoveTaskActive(
            "There is already a task running. Only one active task is allowed for a source "
            "queue arn at a given time."
        )
    return [task, *seen][: limits.move_tasks_kept]


def request_cancel(
    tasks: Sequence[MoveTask], task_id: str, now_ms: int
) -> tuple[list[MoveTask], MoveTask]:
    """Mark a RUNNING task CANCELLING; its node stops it at its next report."""
    out = list(tasks)
    for i, t in enumerate(out):
        if t.id != task_id:
            continue
        status = as_seen(t, now_ms).status
        if status != RUNNING:
            raise MoveTaskNotFound(f"Task is {status}; only a RUNNING task can be cancelled.")
        out[i] = replace(t, status=CANCELLING)
        return out, out[i]
    raise MoveTaskNotFound("Task does not exist.")


def report(
    tasks: Sequence[MoveTask],
    task_id: str,
    node: str,
    moved: int,
    now_ms: int,
    final: str | None = None,
    failure: str | None = None,
) -> tuple[list[MoveTask], MoveTask | None]:
    """The running node's progress (or, with `final`, its last word) on its own task.

    Returns the new list and the record as stored before, or None when the task is no longer
    this node's to report on (replaced, settled as stale, or gone): the node must stop.
    """
    out = list(tasks)
    for i, t in enumerate(out):
        if t.id != task_id:
            continue
        if t.node != node or as_seen(t, now_ms).status not in ACTIVE:
            return out, None
        status = t.status if final is None else final
        out[i] = replace(
            t,
            status=status,
            moved=max(t.moved, moved),
            heartbeat_ms=now_ms,
            failure=failure if status == FAILED else None,
        )
        return out, t
    return out, None


# --- pacing ---------------------------------------------------------------------------------


class Pacer:
    """A token bucket: `rate` messages per second, at most `burst` at once (None: no limit).

    Over any window of T seconds at most `burst + rate * T` messages are taken. Times are the
    caller's monotonic seconds, so a test can drive it with a fake clock.
    """

    def __init__(self, rate: int | None, burst: int, now_s: float) -> None:
        self.rate = rate
        self.burst = max(1, burst if rate is None else min(burst, rate))
        self._tokens = float(self.burst)
        self._at_s = now_s

    def _refill(self, now_s: float) -> None:
        if self.rate is not None and now_s > self._at_s:
            self._tokens = min(float(self.burst), self._tokens + (now_s - self._at_s) * self.rate)
        self._at_s = max(self._at_s, now_s)

    def wait_s(self, n: int, now_s: float) -> float:
        """How long until `n` messages (at most `burst`) may go."""
        if self.rate is None:
            return 0.0
        self._refill(now_s)
        return max(0.0, (min(n, self.burst) - self._tokens) / self.rate)

    def take(self, n: int, now_s: float) -> None:
        if self.rate is None:
            return
        self._refill(now_s)
        self._tokens -= n

    def give_back(self, n: int) -> None:
        """Return tokens taken for messages that were not there to move."""
        if self.rate is not None:
            self._tokens = min(float(self.burst), self._tokens + n)
