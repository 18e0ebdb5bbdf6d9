"""The bucket's key layout, owned here and nowhere else.

    m/{queue}                         the queue's manifest (the single authority, CAS-advanced)
    s/{queue}/{incarnation}/{seq:016x} immutable segment in slot `seq` (create-only)
    a/{queue}/{digest}                the receipts a FIFO receive answered under a
                                      ReceiveRequestAttemptId (okuri/engine/attempts.py)

Manifests sit apart from segments so listing queues is one LIST page over `m/` that never sees a
segment. The incarnation (a random id per CreateQueue) keeps a recreated queue from ever reading
or reusing the slots of a deleted one. Slots are fixed-width hex so they list in order.
"""

from __future__ import annotations

import re

SLOT = re.compile(r"^[0-9a-f]{16}$")
MANIFESTS = "m/"
SEGMENTS = "s/"
RECEIVE_ATTEMPTS = "a/"


def manifest(queue: str) -> str:
    return f"{MANIFESTS}{queue}"


def queue_of_manifest(key: str) -> str:
    return key[len(MANIFESTS) :]


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
