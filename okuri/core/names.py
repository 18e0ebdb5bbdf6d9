"""The rule for queue names, shared by the engine and every surface so they cannot disagree."""

from __future__ import annotations

import re

from okuri import limits
from okuri.errors import InvalidArgument

FIFO_SUFFIX = ".fifo"
# Use fullmatch: "$" would admit a trailing newline. A FIFO queue's name ends in ".fifo",
# counted in the 80 characters.
QUEUE_NAME = re.compile(
    rf"[A-Za-z0-9_-]{{1,{limits.queue_name_chars_max}}}"
    rf"|[A-Za-z0-9_-]{{1,{limits.queue_name_chars_max - len(FIFO_SUFFIX)}}}\.fifo"
)


def validate_queue_name(name: str) -> None:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise InvalidArgument(
            "Can only include alphanumeric characters, hyphens, or underscores. "
            f"1 to {limits.queue_name_chars_max} in length",
            "QueueName",
        )


def is_fifo_name(name: str) -> bool:
    return name.endswith(FIFO_SUFFIX)
