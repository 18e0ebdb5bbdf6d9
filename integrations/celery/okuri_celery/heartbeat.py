"""The visibility heartbeat: keep the SQS messages a worker holds invisible until it settles them.

An SQS message stays invisible for its visibility timeout after it is received. A Celery worker
holds a message from the moment it receives it until it acknowledges or rejects it: while the
task waits for a pool slot, while an eta/countdown task waits for its time, and (with
`acks_late`) while the task runs. If holding lasts longer than the visibility timeout, SQS hands
the message to another consumer and the task runs twice.

`Heartbeat` knows nothing of Celery. Whoever receives a message calls `hold()` with a `Held`
entry; a background thread then sets the visibility of every unsettled entry to `visibility_s`
every `interval_s`, with ChangeMessageVisibilityBatch through the entry's SQS client, and drops an
entry as soon as it is settled (its `settled()` answers true), refused by SQS, or held longer
than `hold_s_max`. The visibility timeout itself stays short, so when the worker dies the beats
stop and its messages come back within `visibility_s`.

What to extend and what to drop is decided by `plan()`, a pure function of the entries and the
time, so it is tested without threads, clocks or a server.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "BATCH_ENTRIES_MAX",
    "BeatReport",
    "Heartbeat",
    "HeartbeatSettings",
    "Held",
    "Plan",
    "SqsClient",
    "plan",
]

logger = logging.getLogger("okuri_celery.heartbeat")

BATCH_ENTRIES_MAX = 10  # ChangeMessageVisibilityBatch takes at most 10 entries
SQS_VISIBILITY_S_MAX = 43_200  # SQS's ceiling for one visibility timeout (12 h)
DEFAULT_HOLD_S_MAX = 43_200.0  # SQS refuses to extend a message past 12 h after it was received
DEFAULT_HELD_MAX = 10_000
KOMBU_DEFAULT_VISIBILITY_S = 1800  # kombu's SQS transport default when none is configured

# Batch entry errors that mean "this receipt is finished here": the message was deleted or
# received again since, or the handle is not one the queue knows. The entry is dropped.
GONE_CODES = frozenset(
    {
        "ReceiptHandleIsInvalid",
        "MessageNotInflight",
        "AWS.SimpleQueueService.MessageNotInflight",
        "InvalidParameterValue",
    }
)


class SqsClient(Protocol):
    """The one call the heartbeat makes; a boto3 SQS client satisfies it."""

    def change_message_visibility_batch(self, **kwargs: Any) -> Mapping[str, Any]: ...


@dataclass(eq=False)
class Held:
    """One received message, from the moment it is received until it is settled.

    `settled` is asked on the heartbeat thread; it must only read state (a flag the consumer
    sets when it acknowledges or rejects the message), never call the broker.
    """

    queue_url: str
    receipt_handle: str
    client: SqsClient
    settled: Callable[[], bool]
    task: str = ""  # for log lines only: "name[id]"
    held_since_s: float = 0.0  # monotonic seconds, set by Heartbeat.hold
    beats: int = 0  # successful extensions so far


@dataclass(frozen=True)
class HeartbeatSettings:
    """How hard the heartbeat works; all durations in seconds."""

    visibility_s: int  # what each beat sets the visibility timeout to
    interval_s: float  # time between beats; must leave room for a late beat
    hold_s_max: float = DEFAULT_HOLD_S_MAX  # stop extending a message held this long
    held_max: int = DEFAULT_HELD_MAX  # most messages tracked at once; beyond it, not extended

    def __post_init__(self) -> None:
        if not 1 <= self.visibility_s <= SQS_VISIBILITY_S_MAX:
            raise ValueError(
                f"heartbeat visibility_s must be 1..{SQS_VISIBILITY_S_MAX}, got {self.visibility_s}"
            )
        if not 0 < self.interval_s < self.visibility_s:
            raise ValueError(
                f"heartbeat interval_s ({self.interval_s}) must be above 0 and below "
                f"visibility_s ({self.visibility_s}), or a message expires between two beats"
            )
        if self.hold_s_max <= 0 or self.held_max <= 0:
            raise ValueError("heartbeat hold_s_max and held_max must be positive")

    @classmethod
    def derive(
        cls,
        visibility_s: float | None = None,
        interval_s: float | None = None,
        hold_s_max: float | None = None,
        held_max: int | None = None,
    ) -> HeartbeatSettings:
        """Fill in defaults: kombu's visibility when none is set, a beat every third of it."""
        visibility = int(visibility_s) if visibility_s is not None else KOMBU_DEFAULT_VISIBILITY_S
        interval = float(interval_s) if interval_s is not None else visibility / 3
        return cls(
            visibility_s=visibility,
            interval_s=interval,
            hold_s_max=float(hold_s_max) if hold_s_max is not None else DEFAULT_HOLD_S_MAX,
            held_max=int(held_max) if held_max is not None else DEFAULT_HELD_MAX,
        )


@dataclass(frozen=True)
class Plan:
    """What one beat does: extend these batches, drop these entries (with the reason)."""

    batches: tuple[tuple[SqsClient, str, tuple[Held, ...]], ...]
    dropped: tuple[tuple[Held, str], ...]


def plan(entries: Iterable[Held], now_s: float, settings: HeartbeatSettings) -> Plan:
    """Decide one beat: settled and over-age entries are dropped, the rest batched by queue."""
    dropped: list[tuple[Held, str]] = []
    groups: dict[tuple[int, str], list[Held]] = {}
    clients: dict[int, SqsClient] = {}
    for entry in entries:
        if entry.settled():
            dropped.append((entry, "settled"))
        elif now_s - entry.held_since_s >= settings.hold_s_max:
            dropped.append((entry, f"held longer than {settings.hold_s_max:g} s"))
        else:
            clients[id(entry.client)] = entry.client
            groups.setdefault((id(entry.client), entry.queue_url), []).append(entry)
    batches = [
        (clients[client_id], queue_url, tuple(group[i : i + BATCH_ENTRIES_MAX]))
        for (client_id, queue_url), group in groups.items()
        for i in range(0, len(group), BATCH_ENTRIES_MAX)
    ]
    return Plan(tuple(batches), tuple(dropped))


@dataclass
class BeatReport:
    extended: int = 0
    dropped: int = 0
    failed_calls: int = 0
    reasons: list[str] = field(default_factory=list)


class Heartbeat:
    """Tracks held messages and extends their visibility on a daemon thread.

    `hold` is called on the consumer's thread, `beat` on the heartbeat thread (or directly by a
    test); the entry table is guarded by a lock and no broker call is made while holding it.
    """

    def __init__(
        self,
        settings: HeartbeatSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        log: logging.Logger = logger,
    ) -> None:
        self.settings = settings
        self._monotonic = monotonic
        self._log = log
        self._lock = threading.Lock()
        self._held: dict[int, Held] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # --- consumer side -----------------------------------------------------------------------

    def hold(self, entry: Held) -> bool:
        """Start extending `entry`; False if the table is full (the entry is left to SQS)."""
        entry.held_since_s = self._monotonic()
        with self._lock:
            full = len(self._held) >= self.settings.held_max
            if not full:
                self._held[id(entry)] = entry
        if full:
            self._log.warning(
                "okuri heartbeat: already holding %d messages (held_max); %s is not extended "
                "and may be redelivered after %d s",
                self.settings.held_max,
                entry.task or entry.receipt_handle[:16],
                self.settings.visibility_s,
            )
        return not full

    def held(self) -> list[Held]:
        with self._lock:
            return list(self._held.values())

    def release_all(self) -> None:
        """Forget every entry (they come back after their current visibility runs out)."""
        with self._lock:
            self._held.clear()

    # --- heartbeat side ----------------------------------------------------------------------

    def beat(self) -> BeatReport:
        """One round: drop what is settled or too old, extend the rest."""
        report = BeatReport()
        decided = plan(self.held(), self._monotonic(), self.settings)
        gone: list[Held] = [entry for entry, _ in decided.dropped]
        for entry, reason in decided.dropped:
            if reason != "settled":
                self._log.warning("okuri heartbeat: no longer extending %s: %s", entry.task, reason)
                report.reasons.append(reason)
        for client, queue_url, entries in decided.batches:
            refused, ok = self._extend(client, queue_url, entries, report)
            gone.extend(refused)
            report.extended += ok
        with self._lock:
            for entry in gone:
                self._held.pop(id(entry), None)
        report.dropped = len(gone)
        return report

    def _extend(
        self, client: SqsClient, queue_url: str, entries: Sequence[Held], report: BeatReport
    ) -> tuple[list[Held], int]:
        by_id = {str(i): entry for i, entry in enumerate(entries)}
        try:
            answer = client.change_message_visibility_batch(
                QueueUrl=queue_url,
                Entries=[
                    {
                        "Id": i,
                        "ReceiptHandle": entry.receipt_handle,
                        "VisibilityTimeout": self.settings.visibility_s,
                    }
                    for i, entry in by_id.items()
                ],
            )
        except Exception as err:  # a foreign client's errors are many; all mean "try next beat"
            report.failed_calls += 1
            code = _error_code(err)
            if code in {"QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"}:
                self._log.warning("okuri heartbeat: queue %s is gone: %s", queue_url, err)
                return list(entries), 0
            self._log.warning(
                "okuri heartbeat: extending %d message(s) on %s failed, retrying next beat: %r",
                len(entries),
                queue_url,
                err,
            )
            return [], 0
        refused: list[Held] = []
        for failure in answer.get("Failed", []) or []:
            entry = by_id.get(str(failure.get("Id")))
            if entry is None:
                continue
            refused.append(entry)
            code = str(failure.get("Code", ""))
            if code not in GONE_CODES:
                self._log.warning(
                    "okuri heartbeat: SQS refused to extend %s: %s %s",
                    entry.task,
                    code,
                    failure.get("Message", ""),
                )
            report.reasons.append(code)
        ok = 0
        for success in answer.get("Successful", []) or []:
            entry = by_id.get(str(success.get("Id")))
            if entry is not None:
                entry.beats += 1
                ok += 1
        return refused, ok

    # --- thread ------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="okuri-visibility-heartbeat", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
        self.release_all()

    def _run(self) -> None:
        self._log.info(
            "okuri heartbeat: extending held messages to %d s every %g s",
            self.settings.visibility_s,
            self.settings.interval_s,
        )
        while not self._stop.wait(self.settings.interval_s):
            try:
                report = self.beat()
            except Exception:  # the thread must outlive any one bad beat
                self._log.exception("okuri heartbeat: beat failed")
                continue
            if report.extended or report.dropped:
                self._log.debug(
                    "okuri heartbeat: extended %d, dropped %d", report.extended, report.dropped
                )


def _error_code(err: BaseException) -> str:
    response = getattr(err, "response", None)
    if isinstance(response, Mapping):
        error = response.get("Error")
        if isinstance(error, Mapping):
            return str(error.get("Code", ""))
    return ""
