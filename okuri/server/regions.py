"""Every region on one endpoint: the region a request is signed for picks the queues it sees.

SQS keeps each region's queues apart: the same name in two regions is two queues, with two
URLs, and ListQueues shows the caller's region only. okuri serves them all from one listener
and one bucket: the configured (home) region's queues live where they always have, each other
region's under `regions/<region>/` through its own engine, created when that region is first
used. A queue URL of another region carries the region in its path; a request signed for one
region that names another's queue URL is refused, never served from its own region's queue of
that name (okuri.sqs.queue_urls).

The regions served are a fixed set: AWS's own (okuri.sqs.aws_regions) and those the operator
names (OKURI_REGIONS), besides the home region. A request signed for any other region is refused
as AWS refuses a credential scoped to an invalid region, never served from the home region's
queues; so no client can invent regions, and the engines a node runs for them are bounded by
that set.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from okuri.clock import Clock
from okuri.engine import Engine, Quotas
from okuri.sqs.actions import SqsActions
from okuri.sqs.aws_regions import AWS_REGIONS
from okuri.sqs.sigv4_errors import invalid_region
from okuri.store.port import ObjectStore
from okuri.store.prefixed import PrefixedStore

log = logging.getLogger("okuri.server")

KEY_PREFIX = "regions/"


class Regions:
    def __init__(
        self,
        home: SqsActions,
        store: ObjectStore,
        clock: Clock,
        linger_ms: int,
        make_actions: Callable[[Engine, str], SqsActions],
        configured: frozenset[str] = frozenset(),
        quotas: Quotas | None = None,
    ) -> None:
        """`configured`: regions served besides AWS's own and the home region; `quotas`: each
        region's engine's (okuri/engine/quotas.py), counted per region."""
        self._quotas = quotas
        self.home = home
        self.served = (AWS_REGIONS | configured) - {home.region}
        self._store = store
        self._clock = clock
        self._linger_ms = linger_ms
        self._make_actions = make_actions
        self._other: dict[str, SqsActions] = {}

    def actions_for(self, region: str | None) -> SqsActions:
        """The SQS surface of `region`'s queues (the home region's for None). Raises AuthError
        (SignatureDoesNotMatch) for a region that is not served: never the home region's
        queues in its stead."""
        if region is None or region == self.home.region:
            return self.home
        actions = self._other.get(region)
        if actions is None:
            if region not in self.served:
                raise invalid_region(region)
            store = PrefixedStore(self._store, f"{KEY_PREFIX}{region}/")
            engine = Engine(store, self._clock, linger_ms=self._linger_ms, quotas=self._quotas)
            actions = self._other[region] = self._make_actions(engine, region)
            log.info("serving queues of region %s", region)
        return actions

    def engines(self) -> list[Engine]:
        """The engines of the other regions in use (not the home region's)."""
        return [actions.engine for actions in self._other.values()]

    def stop_waiting(self) -> None:
        """End the long polls of every other region's engine (Engine.stop_waiting)."""
        for actions in self._other.values():
            actions.engine.stop_waiting()

    async def close(self) -> None:
        for actions in self._other.values():
            await actions.engine.close()
        self._other.clear()
