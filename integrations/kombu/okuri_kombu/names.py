"""From kombu's queue and exchange names to okuri's, in one place.

okuri's queue and exchange names are SQS's queue names: 1 to 80 letters, digits, `-` and `_` (a
FIFO queue's ends in `.fifo`). kombu names queues freely (Celery's own carry dots and `@`:
`w1@host.celery.pidbox`, `celeryev.<uuid>`), so a name is translated as kombu's SQS transport
translates it: `.` becomes `-`, any other character outside the set becomes `_`. Two kombu names
that differ only there (`a.b`, `a-b`) are one okuri queue, as they are one SQS queue.

A translated name past 80 characters (a long worker hostname in a pidbox queue's name) is
shortened, the same way in every process: its first 67 characters, `-`, and 12 hex digits of
the SHA-256 of the whole translated name.

FIFO queues are refused: the native API does not produce to them yet (sqs:// does).
"""

from __future__ import annotations

import hashlib
import re

QUEUE_NAME_CHARS_MAX = 80  # okuri's limits.queue_name_chars_max, as SQS (exchanges: the same)
HASH_CHARS = 12  # of a shortened name: 48 bits of SHA-256
FIFO_SUFFIX = ".fifo"
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


class QueueNameError(ValueError):
    """A kombu queue name that cannot be an okuri queue of this transport."""


def okuri_queue_name(name: str, prefix: str = "") -> str:
    """The okuri queue that kombu's queue `name` is, under `queue_name_prefix` `prefix`."""
    full = prefix + name
    if full.endswith(FIFO_SUFFIX):
        raise QueueNameError(
            f"Queue {full!r} is a FIFO queue: okuri:// does not produce to FIFO queues yet; "
            "use sqs:// for them."
        )
    if not name:
        raise QueueNameError("A queue needs a name of 1 to 80 characters.")
    return _translated(full)


def okuri_exchange_name(name: str, prefix: str = "") -> str:
    """The okuri exchange that kombu's exchange `name` is, under `queue_name_prefix` `prefix`
    (kombu's default exchange, "", is not one: it puts to the queue named by the key)."""
    if not name:
        raise QueueNameError("kombu's default exchange is not an okuri exchange.")
    return _translated(prefix + name)


def _translated(full: str) -> str:
    translated = _OUTSIDE.sub(lambda m: "-" if m.group() == "." else "_", full)
    if len(translated) <= QUEUE_NAME_CHARS_MAX:
        return translated
    digest = hashlib.sha256(translated.encode()).hexdigest()[:HASH_CHARS]
    return f"{translated[: QUEUE_NAME_CHARS_MAX - HASH_CHARS - 1]}-{digest}"
