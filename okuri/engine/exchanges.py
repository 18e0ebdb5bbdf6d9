"""The engine's exchanges room: exchange documents in the bucket, this node's cache of them,
and publishing through them.

Each exchange is one object (`keys.exchange`), written only through a CasObject, so concurrent
binds from any number of processes all land. A publish routes by this node's copy of the
exchange when it is at most `limits.exchange_cache_ms` old (else it reads it again: one GET per
exchange per period while publishing), and a bind or unbind through this node replaces its
copy at once. A queue a publish finds gone is skipped and its bindings are dropped.

It knows queues only through the callables the engine hands it (`queue_state`, `send`), so it
sits beside the queue room, not above it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from okuri import limits
from okuri.clock import Clock
from okuri.core import exchanges as rules
from okuri.core import keys
from okuri.core.exchanges import Binding, ExchangeState, ExchangeType
from okuri.core.views import QueueView
from okuri.engine.cas import CasObject, Change
from okuri.engine.retry import retrying
from okuri.engine.types import SendRequest, SendResult
from okuri.errors import ExchangeAlreadyExists, ExchangeDoesNotExist, QueueDoesNotExist
from okuri.store.port import ObjectStore

QueueViewOf = Callable[[str], Awaitable[QueueView]]
Send = Callable[[str, Sequence[SendRequest]], Awaitable[list[SendResult | Exception]]]
# What a publish sends to one routed queue, given its attributes; may raise to refuse them all.
RequestsFor = Callable[[str, QueueView], Sequence[SendRequest]]


@dataclass(frozen=True, slots=True)
class Routed:
    """What a publish sent to one queue: each request's result, in order."""

    queue: str
    results: list[SendResult | Exception]


class ExchangeCodec:
    """Exchange documents for `CasObject`."""

    def decode(self, data: bytes) -> ExchangeState:
        return rules.decode(data)

    def encode(self, state: ExchangeState) -> bytes:
        return rules.encode(state)

    def check(self, state: ExchangeState) -> None:
        rules.check(state)

    def check_step(self, old: ExchangeState, new: ExchangeState) -> None:
        rules.check_step(old, new)

    def version(self, state: ExchangeState) -> int:
        return state.version

    def lineage(self, state: ExchangeState) -> str:
        return state.lineage

    def has_token(self, state: ExchangeState, token: str) -> bool:
        return token in state.tokens

    def gone(self, state: ExchangeState) -> bool:
        return False  # exchanges are deleted outright, never left as tombstones


class Exchanges:
    def __init__(
        self,
        store: ObjectStore,
        clock: Clock,
        stats: Counter[str],
        queue_state: QueueViewOf,
        cached_queue_state: QueueViewOf,
        send: Send,
    ) -> None:
        """`queue_state(name)` reads a queue fresh and `cached_queue_state(name)`
        as this node last saw it (both raise QueueDoesNotExist when it is gone); `send` is the
        engine's send path."""
        self.store = store
        self.clock = clock
        self.stats = stats
        self._queue_state = queue_state
        self._cached_queue_state = cached_queue_state
        self._send = send
        self._objects: dict[str, CasObject[ExchangeState]] = {}

    def _object(self, name: str) -> CasObject[ExchangeState]:
        rules.validate_exchange_name(name)
        obj = self._objects.get(name)
        if obj is None:
            obj = self._objects[name] = CasObject(
                self.store,
                self.clock,
                keys.exchange(name),
                ExchangeCodec(),
                ExchangeDoesNotExist,
                f"The exchange {name!r} does not exist.",
                lambda old, new: None,
                self.stats,
                "exchange",
            )
        return obj

    async def declare(self, name: str, kind: ExchangeType) -> ExchangeState:
        """Create the exchange; idempotent when it exists with the same type."""
        state = ExchangeState(name, kind, self.clock.now_ms(), self.clock.new_id())
        found = await self._object(name).create(state)
        if found.type != kind:
            raise ExchangeAlreadyExists(
                f"An exchange named {name!r} exists with type {found.type!r}."
            )
        return found

    async def get(self, name: str) -> ExchangeState:
        """The exchange read fresh from the bucket."""
        return await self._object(name).read()

    async def names(self, prefix: str, limit: int, after: str) -> list[str]:
        """Exchange names starting with `prefix`, in order, after `after` (at most `limit`)."""
        names: list[str] = []
        start = keys.exchange(after) if after else ""
        while len(names) < limit:
            page = await retrying(
                self.clock,
                lambda s=start: self.store.list(keys.EXCHANGES + prefix, s, limits.list_keys_max),  # type: ignore[misc]
            )
            names.extend(keys.exchange_of_key(k) for k in page)
            if len(page) < limits.list_keys_max:
                break
            start = page[-1]
        return names[:limit]

    async def delete(self, name: str) -> None:
        obj = self._object(name)
        await obj.read()  # ExchangeDoesNotExist when it is not there
        await retrying(self.clock, lambda: self.store.delete(obj.key))
        obj.forget()

    async def bind(self, name: str, binding: Binding) -> ExchangeState:
        await self._queue_state(binding.queue)  # QueueDoesNotExist when it is not there
        token = self.clock.new_id()
        return await self._object(name).update(
            lambda st: _change(st, rules.bind(st, binding, token)), token, read_first=True
        )

    async def unbind(self, name: str, binding: Binding) -> ExchangeState:
        token = self.clock.new_id()
        return await self._object(name).update(
            lambda st: _change(st, rules.unbind(st, binding, token)), token, read_first=True
        )

    async def current(self, name: str) -> ExchangeState:
        """This node's copy of the exchange, read again when older than the cache bound."""
        obj = self._object(name)
        if obj.state is None or obj.age_s() * 1000 > limits.exchange_cache_ms:
            return await obj.read()
        return obj.state

    async def publish(self, name: str, routing_key: str, requests_for: RequestsFor) -> list[Routed]:
        """Send to every queue `routing_key` reaches: first every routed queue's requests are
        made (so a refusal sends nothing), then all are sent at once. Queues gone since they
        were bound are skipped and unbound."""
        state = await self.current(name)
        targets: list[tuple[str, Sequence[SendRequest]]] = []
        gone: set[str] = set()
        for queue in rules.route(state, routing_key):
            try:
                qs = await self._cached_queue_state(queue)
            except QueueDoesNotExist:
                gone.add(queue)
                continue
            targets.append((queue, requests_for(queue, qs)))
        sent = await asyncio.gather(*(self._send_to(q, reqs) for q, reqs in targets))
        routed = [Routed(q, results) for (q, _), results in zip(targets, sent, strict=True)]
        gone |= {r.queue for r in routed if r.results and _all_missing(r.results)}
        if gone:
            await self._drop(name, frozenset(gone))
        return [r for r in routed if r.queue not in gone]

    async def _send_to(
        self, queue: str, requests: Sequence[SendRequest]
    ) -> list[SendResult | Exception]:
        """The send's results; a queue deleted through another node (this node's copy of its
        manifest not yet knowing) answers QueueDoesNotExist for every request."""
        try:
            return await self._send(queue, requests)
        except QueueDoesNotExist as err:
            return [err for _ in requests]

    async def _drop(self, name: str, queues: frozenset[str]) -> None:
        token = self.clock.new_id()
        with contextlib.suppress(ExchangeDoesNotExist):  # deleted meanwhile: nothing to drop
            await self._object(name).update(
                lambda st: _change(st, rules.drop_queues(st, queues, token)), token
            )


def _all_missing(results: list[SendResult | Exception]) -> bool:
    return all(isinstance(r, QueueDoesNotExist) for r in results)


def _change(
    state: ExchangeState, new: ExchangeState | None
) -> Change[ExchangeState, ExchangeState]:
    return Change(new, state if new is None else new)
