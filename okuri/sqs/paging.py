"""Pagination as SQS's list actions share it: MaxResults bounds and opaque NextTokens.

okuri's token is the last queue name a page returned, URL-safe base64: every list action walks
queues in name order, so the name is all a node needs to continue where another left off.
"""

from __future__ import annotations

import base64

from okuri.engine import QUEUE_NAME
from okuri.sqs.errors import invalid

list_results_max = 1000  # ListQueues and ListDeadLetterSourceQueues


def check_max_results(value: int | None, highest: int = list_results_max) -> int | None:
    if value is not None and not 1 <= value <= highest:
        raise invalid(
            f"Value {value} for parameter MaxResults is invalid. Reason: "
            f"MaxResults must be an integer between 1 and {highest}."
        )
    return value


def decode_token(token: str | None) -> str:
    """The queue name a NextToken continues after ("" for none)."""
    if not token:
        return ""
    try:
        after = base64.urlsafe_b64decode(token.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise invalid("Invalid NextToken value.") from None
    # Anything but a queue name must not reach the store (a control character there made
    # moto's S3 answer unparseable XML).
    if not QUEUE_NAME.fullmatch(after):
        raise invalid("Invalid NextToken value.")
    return after


def encode_token(after: str) -> str:
    return base64.urlsafe_b64encode(after.encode()).decode()
