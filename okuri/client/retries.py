"""When the clients try a request again, and how long they wait first: one pure decision.

What is retried, and why:

- **429 overloaded**, every operation: the server shed the request before doing anything, so
  sending it again cannot do anything twice. The wait is the answer's Retry-After (a hint
  longer than `retry_after_s_max` is not waited out: the error is raised at once).
- **A connection that could not be opened**, every operation: the request never left.
- **503 unavailable, a timeout or a connection lost mid-request**, every operation but
  `produce`. The server may have done the request; repeating it cannot create work twice:
  a repeated complete answers `gone`, a repeated create the same queue, a repeated delete
  `NotFoundError`, and a repeated lease leaves the items of a lost answer leased until their
  lease runs out (then they come back, as after any lost consumer). A repeated produce would
  enqueue its items again, so it is not retried there; the caller decides (a `dedup_id` lets a
  caller's own retry be answered with the first id, on the same node within five minutes).
- Nothing else: a 4xx is the caller's to fix, another 5xx a fault a retry would only repeat.

Waits grow exponentially from `backoff_s_base`, capped at `backoff_s_max`, with full jitter;
`attempts_max` bounds the tries (the first included).
"""

from __future__ import annotations

from dataclasses import dataclass

from okuri.client.errors import (
    OkuriClientError,
    OverloadedError,
    RetryableError,
    TransportError,
)
from okuri.client.transport import Operation

NOT_RETRIED_WHEN_UNSURE: frozenset[Operation] = frozenset({"produce", "publish"})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts_max: int = 4  # tries in all, the first included; 1 never retries
    backoff_s_base: float = 0.1
    backoff_s_max: float = 5.0
    retry_after_s_max: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts_max < 1:
            raise ValueError("attempts_max must be at least 1")
        if not 0 <= self.backoff_s_base <= self.backoff_s_max:
            raise ValueError("backoff_s_base must be from 0 to backoff_s_max")


NO_RETRIES = RetryPolicy(attempts_max=1)


def retried(operation: Operation, error: OkuriClientError) -> bool:
    """Whether sending `operation` again after `error` is safe and may help."""
    if not isinstance(error, RetryableError):
        return False
    if isinstance(error, OverloadedError):
        return True
    if isinstance(error, TransportError) and not error.sent:
        return True
    return operation not in NOT_RETRIED_WHEN_UNSURE


def next_wait_s(
    policy: RetryPolicy, operation: Operation, error: OkuriClientError, tries: int, draw: float
) -> float | None:
    """Seconds to wait before another try, after `tries` tries ended in `error`; None: raise it.
    `draw` is uniform in [0, 1), the jitter."""
    if tries >= policy.attempts_max or not retried(operation, error):
        return None
    jitter = draw * min(policy.backoff_s_max, policy.backoff_s_base * 2.0 ** (tries - 1))
    hint = error.retry_after_s if isinstance(error, RetryableError) else None
    if hint is None:
        return jitter
    if hint > policy.retry_after_s_max:
        return None
    return hint + draw * policy.backoff_s_base  # spread out clients told the same moment
