"""Quotas: bounds an operator sets on what clients may make the bucket hold.

- queues of this engine's region in all (`queues_max`), and within one key's namespace
  (`namespace_queues_max`, for a create made by a key limited to a namespace): each queue costs
  every node that serves it memory and /metrics lines, and the bucket a manifest;
- the bytes of the attributes a queue stores verbatim (`queue_attributes_bytes_max`: tags,
  policies), which ride every manifest write of that queue.

Counting is a LIST of the manifests under the prefix (one request per 1,000 queues), made only
when a create names a queue that does not exist yet, so re-declaring a queue at start-up costs
nothing more and is never refused. A node counts and creates one queue at a time, so its own
concurrent creates never overshoot; creates on several nodes at once may each count before the
others' manifests land, so a bound can be passed by at most one queue per other node creating
at that moment. Dead-letter queues the engine creates itself on first use (a message
dead-lettered to a queue not there yet) are never refused, so that message has somewhere to
go: at most one per queue, so a namespace holds at most twice its bound.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from okuri import limits
from okuri.core.state import QueueAttrs
from okuri.errors import QuotaExceeded


@dataclass(frozen=True, slots=True)
class Quotas:
    queues_max: int = limits.queues_max_default
    namespace_queues_max: int = limits.namespace_queues_max_default
    queue_attributes_bytes_max: int = limits.queue_attributes_bytes_max_default


def check_attributes(quotas: Quotas, attrs: QueueAttrs, old: QueueAttrs | None = None) -> None:
    """Refuse attributes past the bound, unless they shrink what the queue already stores (a
    bound lowered under an existing queue must not stop its tags being removed)."""
    most = quotas.queue_attributes_bytes_max
    size = attrs.extra_bytes()
    if size > most and (old is None or size > old.extra_bytes()):
        raise QuotaExceeded(
            f"The queue's stored attributes (tags, policies) would take {size} bytes, which "
            f"would exceed the maximum of {most} bytes per queue.",
            "queue_attributes_bytes",
        )


@dataclass
class QueueCount:
    """Checks the queue-count quotas before a queue is created, one create at a time."""

    quotas: Quotas
    # (prefix, at most how many) -> the queue names under prefix, up to that many (a LIST).
    names: Callable[[str, int], Awaitable[list[str]]]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def check(self, name: str, namespace: str) -> None:
        """Raise QuotaExceeded when creating `name` (by a key limited to `namespace`, "" for
        every queue) would pass a bound; call with `lock` held, and create before releasing."""
        bounds = [("", self.quotas.queues_max, "queues", "")]
        if namespace:
            bounds.insert(
                0,
                (
                    namespace,
                    self.quotas.namespace_queues_max,
                    "namespace_queues",
                    f" in the namespace {namespace!r}",
                ),
            )
        for prefix, most, quota, where in bounds:
            if len(await self.names(prefix, most)) >= most:
                raise QuotaExceeded(
                    f"Creating queue {name!r} would exceed the maximum number of queues{where}: "
                    f"{most}.",
                    quota,
                )
