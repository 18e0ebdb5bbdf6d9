"""The bucket's key layout, owned here and nowhere else.

    m/{queue}                         the queue's manifest (the single authority, CAS-advanced)
    s/{queue}/{incarnation}/{seq:016x} immutable segment in slot `seq` (create-only)
    a/{queue}/{digest}                the receipts a FIFO receive answered under a
                                      ReceiveRequestAttemptId (okuri/engine/attempts.py)
    t/{queue}/{incarnation}/{due:013d}/{sent:013d}-{sid}
                                      items scheduled beyond the longest delay, due within the
                                      minute starting at `due` (okuri/engine/schedule.py);
                                      `.claim` beside it while a node moves them in
    x/{exchange}                      an exchange: its type and bindings, CAS-advanced
                                      (okuri/core/exchanges.py, okuri/engine/exchanges.py)
    e/{queue}                         empty marker of a queue that may expire (its manifest has
                                      expires_s): what each node's expiry sweeper LISTs
                                      (okuri/engine/expiry.py)
    k/{queue}/{incarnation}/{log}     a follower's ack log: deletes it answered before its
                                      leader committed them (okuri/engine/ack_logs.py)
    l/{queue}/{lane}                  the manifest of one of the queue's lanes: a slot log and
                                      manifest of its own, written by one producer node
                                      (okuri/engine/lanes.py); its segments and ack logs sit
                                      under the lane's name, `{queue}~{lane}`, as a queue's do

Manifests sit apart from segments so listing queues is one LIST page over `m/` that never sees a
segment. The incarnation (a random id per CreateQueue) keeps a recreated queue from ever reading
or reusing the slots of a deleted one. Slots are fixed-width hex so they list in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SLOT = re.compile(r"^[0-9a-f]{16}$")
_SCHEDULED = re.compile(r"^([0-9]{13})/([0-9]{13})-([A-Za-z0-9_-]{1,64})(\.claim)?$")
MANIFESTS = "m/"
SEGMENTS = "s/"
RECEIVE_ATTEMPTS = "a/"
SCHEDULED = "t/"
EXCHANGES = "x/"
EXPIRING = "e/"
ACK_LOGS = "k/"
LANES = "l/"
# Between a queue's name and a lane's id in the lane's name; no queue name may hold it.
LANE_SEP = "~"
CLAIM = ".claim"


def manifest(queue: str) -> str:
    """The manifest of a queue, or of a lane of one (named by `lane_name`)."""
    root, sep, lane = queue.partition(LANE_SEP)
    return f"{LANES}{root}/{lane}" if sep else f"{MANIFESTS}{queue}"


def lane_name(queue: str, lane: str) -> str:
    """The name a lane of `queue` goes by in its keys and receipts."""
    return f"{queue}{LANE_SEP}{lane}"


def root_of(name: str) -> str:
    """The queue a lane's name belongs to (a queue's own name for a queue)."""
    return name.partition(LANE_SEP)[0]


def lanes_of_queue(queue: str) -> str:
    return f"{LANES}{queue}/"


def lane_of_manifest(key: str) -> str | None:
    """The lane's name (`lane_name`) of a lane manifest's key, or None for anything else."""
    if not key.startswith(LANES):
        return None
    root, sep, lane = key[len(LANES) :].partition("/")
    return lane_name(root, lane) if sep and root and lane and "/" not in lane else None


def queue_of_manifest(key: str) -> str:
    return key[len(MANIFESTS) :]


def exchange(name: str) -> str:
    return f"{EXCHANGES}{name}"


def exchange_of_key(key: str) -> str:
    return key[len(EXCHANGES) :]


def segments_of_queue(queue: str) -> str:
    return f"{SEGMENTS}{queue}/"


def segments_of(queue: str, incarnation: str) -> str:
    return f"{SEGMENTS}{queue}/{incarnation}/"


def segment(queue: str, incarnation: str, seq: int) -> str:
    return f"{segments_of(queue, incarnation)}{seq:016x}"


def parse_segment(key: str) -> tuple[str, str, int] | None:
    """(queue, incarnation, seq) of a segment key, or None for anything else."""
    if not key.startswith(SEGMENTS):
        return None
    parts = key[len(SEGMENTS) :].split("/")
    if len(parts) != 3 or not SLOT.match(parts[2]):
        return None
    return parts[0], parts[1], int(parts[2], 16)


def receive_attempts_of_queue(queue: str) -> str:
    return f"{RECEIVE_ATTEMPTS}{queue}/"


def receive_attempt(queue: str, digest: str) -> str:
    return f"{receive_attempts_of_queue(queue)}{digest}"


def scheduled_of_queue(queue: str) -> str:
    return f"{SCHEDULED}{queue}/"


def scheduled_of(queue: str, incarnation: str) -> str:
    return f"{SCHEDULED}{queue}/{incarnation}/"


def scheduled(queue: str, incarnation: str, due_ms: int, sent_ms: int, sid: str) -> str:
    """A batch of scheduled items; keys list in order of `due_ms`, the start of their minute."""
    return f"{scheduled_of(queue, incarnation)}{due_ms:013d}/{sent_ms:013d}-{sid}"


def claim(scheduled_key: str) -> str:
    return scheduled_key + CLAIM


@dataclass(frozen=True, slots=True)
class ScheduledKey:
    queue: str
    incarnation: str
    due_ms: int
    sent_ms: int
    sid: str
    is_claim: bool

    @property
    def batch(self) -> str:
        """The key of the batch itself (for a claim, the batch it claims)."""
        return scheduled(self.queue, self.incarnation, self.due_ms, self.sent_ms, self.sid)


def parse_scheduled(key: str) -> ScheduledKey | None:
    """What a key under `t/` names, or None for anything else."""
    if not key.startswith(SCHEDULED):
        return None
    parts = key[len(SCHEDULED) :].split("/", 2)
    if len(parts) != 3 or (m := _SCHEDULED.match(parts[2])) is None:
        return None
    return ScheduledKey(
        parts[0], parts[1], int(m.group(1)), int(m.group(2)), m.group(3), m.group(4) is not None
    )


def expiry_marker(queue: str) -> str:
    return f"{EXPIRING}{queue}"


def queue_of_expiry_marker(key: str) -> str | None:
    """The queue an expiry marker names, or None for a key that is no marker."""
    if not key.startswith(EXPIRING) or "/" in key[len(EXPIRING) :]:
        return None
    return key[len(EXPIRING) :] or None


def ack_logs_of_queue(queue: str) -> str:
    return f"{ACK_LOGS}{queue}/"


def ack_log(queue: str, incarnation: str, log: str) -> str:
    """A follower's log of deletes it answered (okuri/engine/ack_logs.py)."""
    return f"{ack_logs_of_queue(queue)}{incarnation}/{log}"


def parse_ack_log(key: str) -> tuple[str, str, str] | None:
    """(queue, incarnation, log id) of an ack log's key, or None for anything else."""
    if not key.startswith(ACK_LOGS):
        return None
    parts = key[len(ACK_LOGS) :].split("/")
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]
