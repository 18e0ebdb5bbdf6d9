"""From a kombu queue name to an okuri queue name, in one place.

okuri's queue names are SQS's: 1 to 80 letters, digits, `-` and `_` (a FIFO queue's ends in
`.fifo`). kombu names queues freely (Celery's own carry dots, `celery.pidbox`), so a name is
translated as kombu's SQS transport translates it: `.` becomes `-`, any other character outside
the set becomes `_`. Two kombu names that differ only there (`a.b`, `a-b`) are one okuri queue,
as they are one SQS queue.

FIFO queues are refused: the native API does not produce to them yet (sqs:// does).
"""

from __future__ import annotations

import re

QUEUE_NAME_CHARS_MAX = 80  # okuri's limits.queue_name_chars_max, as SQS
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
    translated = _OUTSIDE.sub(lambda m: "-" if m.group() == "." else "_", full)
    if not 1 <= len(translated) <= QUEUE_NAME_CHARS_MAX:
        raise QueueNameError(
            f"Queue name {full!r} is {len(full)} characters; okuri takes 1 to "
            f"{QUEUE_NAME_CHARS_MAX} (queue_name_prefix included)."
        )
    return translated
