"""kombu's queue arguments as okuri queue attributes and transport behaviour: pure.

kombu hands a transport a queue's `expires` and `message_ttl` as RabbitMQ's arguments
(`x-expires`, `x-message-ttl`, in milliseconds; kombu's `to_rabbitmq_queue_arguments`), and its
`auto_delete` flag beside them. okuri:// maps them so:

- `expires` (`x-expires`): the queue's `expires_s`, seconds rounded up, at least 1 (okuri
  deletes a queue unused that long);
- `message_ttl` (`x-message-ttl`): a message older than this when leased is completed and
  dropped by the transport; the queue is created with `retention_s` = max(60, ttl);
- `auto_delete`: the queue is deleted when its last consumer in the connection is cancelled;
- `max_priority` (`x-max-priority`): ignored, okuri leases the oldest first.

Celery names its remote-control queues with `expires` 10 s and `message_ttl` 300 s, its reply
queues likewise, and its event queues with `expires` 60 s and `message_ttl` 5 s, all
`auto_delete`: so a process that dies without cancelling leaves nothing behind for long.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

RETENTION_S_MIN = 60  # okuri's limits.retention_s_min
EXPIRES_S_MAX = 366 * 24 * 60 * 60  # the contract's bound on expires_s


@dataclass(frozen=True, slots=True)
class QueueArguments:
    expires_s: int | None = None
    message_ttl_s: float | None = None
    auto_delete: bool = False

    @classmethod
    def read(cls, arguments: Mapping[str, Any] | None, auto_delete: bool = False) -> QueueArguments:
        """The arguments of kombu's `queue_declare` (RabbitMQ's `x-` names, milliseconds)."""
        arguments = arguments or {}
        expires_ms = _milliseconds(arguments, "x-expires")
        ttl_ms = _milliseconds(arguments, "x-message-ttl")
        return cls(
            expires_s=None
            if expires_ms is None
            else min(EXPIRES_S_MAX, max(1, math.ceil(expires_ms / 1000))),
            message_ttl_s=None if ttl_ms is None else ttl_ms / 1000,
            auto_delete=bool(auto_delete),
        )

    def attributes(self) -> dict[str, Any]:
        """The okuri attributes these arguments add to a queue the transport creates."""
        attributes: dict[str, Any] = {}
        if self.expires_s is not None:
            attributes["expires_s"] = self.expires_s
        if self.message_ttl_s is not None:
            attributes["retention_s"] = max(RETENTION_S_MIN, math.ceil(self.message_ttl_s))
        return attributes

    def expired(self, enqueued_at_s: float, now_s: float) -> bool:
        """Whether a message enqueued at `enqueued_at_s` is past the queue's message TTL."""
        return self.message_ttl_s is not None and now_s - enqueued_at_s > self.message_ttl_s


def _milliseconds(arguments: Mapping[str, Any], name: str) -> float | None:
    value = arguments.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"queue argument {name!r} must be a number of milliseconds, not {value!r}")
    return float(value)
