"""Every region on one endpoint: the region a request is signed for picks the queues it sees.

SQS keeps each region's queues apart: the same name in two regions is two queues, with two
URLs, and ListQueues shows the caller's region only. okuri serves them all from one listener
and one bucket: the configured (home) region's queues live where they always have, each other
region's under `regions/<region>/` through its own engine, created when that region is first
used. A queue URL of another region carries the region in its path; a request signed for one
region that names another's queue URL is refused, never served from its own region's queue of
that name (okuri.sqs.queue_urls).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from okuri.clock import Clock
from okuri.engine import Engine
from okuri.sqs.actions import SqsActions
from okuri.sqs.queue_urls import REGION  # AWS's form: us-east-1, eu-central-2
from okuri.store.port import ObjectStore
from okuri.store.prefixed import PrefixedStore

log = logging.getLogger("okuri.server")

REGIONS_MAX = 64  # regions served at once; more is surely a client inventing names
KEY_PREFIX = "regions/"


class Regions:
    def __init__(
        self,
        home: SqsActions,
        store: ObjectStore,
        clock: Clock,
        linger_ms: int,
        make_actions: Callable[[Engine, str], SqsActions],
    ) -> None:
        self.home = home
        self._store = store
        self._clock = clock
        self._linger_ms = linger_ms
        self._make_actions = make_actions
        self._other: dict[str, SqsActions] = {}

    def actions_for(self, region: str | None) -> SqsActions:
        """The SQS surface of `region`'s queues (the home region's for None or a name that is
        not a region's)."""
        if region is None or region == self.home.region or not REGION.fullmatch(region):
            return self.home
        actions = self._other.get(region)
        if actions is None:
            if len(self._other) >= REGIONS_MAX:
                return self.home
            store = PrefixedStore(self._store, f"{KEY_PREFIX}{region}/")
            engine = Engine(store, self._clock, linger_ms=self._linger_ms)
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
