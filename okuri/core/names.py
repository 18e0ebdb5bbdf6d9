"""The rule for queue names, shared by the engine and every surface so they cannot disagree."""

from __future__ import annotations

import re

from okuri import limits
from okuri.errors import InvalidArgument

# Use fullmatch: "$" would admit a trailing newline.
QUEUE_NAME = re.compile(rf"^[A-Za-z0-9_-]{{1,{limits.queue_name_chars_max}}}$")


def validate_queue_name(name: str) -> None:
    if not isinstance(name, str) or not QUEUE_NAME.fullmatch(name):
        raise InvalidArgument(
            "Can only include alphanumeric characters, hyphens, or underscores. "
            f"1 to {limits.queue_name_chars_max} in length",
            "QueueName",
        )
