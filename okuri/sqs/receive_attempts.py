"""ReceiveRequestAttemptId on FIFO queues: a retried receive gets the answer it missed.

SQS returns the same messages and receipt handles to a receive retried with the same attempt id
within five minutes, while their visibility lasts; a client whose answer was lost thus does not
leave a group held up by messages it never saw. okuri keeps the answers on the node that gave
them (bounded, oldest dropped first): a retry that reaches another node receives anew, and the
messages it missed come back when their visibility runs out (docs/sqs-compatibility.md).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from okuri import limits

ATTEMPTS_MAX = 10_000


class ReceiveAttempts:
    def __init__(self, entries_max: int = ATTEMPTS_MAX) -> None:
        self._entries_max = entries_max
        self._answers: OrderedDict[tuple[str, str], tuple[float, dict[str, Any]]] = OrderedDict()

    def get(self, queue: str, attempt: str, now_s: float) -> dict[str, Any] | None:
        hit = self._answers.get((queue, attempt))
        if hit is None:
            return None
        if hit[0] <= now_s:
            del self._answers[(queue, attempt)]
            return None
        return hit[1]

    def put(
        self, queue: str, attempt: str, answer: dict[str, Any], now_s: float, visibility_s: int
    ) -> None:
        """Remember `answer` while its messages stay leased, five minutes at most."""
        keep_s = min(limits.dedup_window_s, visibility_s)
        if keep_s <= 0:
            return
        self._answers[(queue, attempt)] = (now_s + keep_s, answer)
        self._answers.move_to_end((queue, attempt))
        while len(self._answers) > self._entries_max:
            self._answers.popitem(last=False)
