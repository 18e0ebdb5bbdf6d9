"""The native operations by name: the one table both surfaces run, HTTP/JSON
(okuri/native/http.py) and gRPC (okuri/native/grpc_service.py), each after reading its wire
into the same request document.

An operation is named by okuri/api/operations.py, which also says whether its path names a
queue or an exchange; `target` checks that name, `run` runs the operation on it with the
document of its other fields (query or body, already typed: a listing's `limit` is a number
here, whichever wire it came by).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from okuri.api.operations import OPERATIONS, SPECS, Operation
from okuri.clock import Clock
from okuri.engine import Engine, Gate
from okuri.native import codec
from okuri.native.access import Access
from okuri.native.browse import Browse
from okuri.native.exchanges import Exchanges, exchange_name
from okuri.native.messages import Messages
from okuri.native.queues import Queues, queue_name

Run = Callable[[Access, str, codec.Obj], Awaitable[dict[str, Any]]]
Unnamed = Callable[[Access, codec.Obj], Awaitable[dict[str, Any]]]


def _unnamed(run: Unnamed) -> Run:
    """An operation that names what it acts on in its document (create, list)."""

    async def named(access: Access, name: str, doc: codec.Obj) -> dict[str, Any]:
        return await run(access, doc)

    return named


class Operations:
    def __init__(self, engine: Engine, clock: Clock, gate: Gate | None = None) -> None:
        """`gate` admits each lease that may wait (None: no bound)."""
        self.queues = Queues(engine)
        self.messages = Messages(engine, clock, gate)
        self.exchanges = Exchanges(engine, clock)
        self.browse = Browse(engine)
        self._runs: dict[Operation, Run] = {
            "create_queue": _unnamed(self.queues.create),
            "get_queue": self.queues.get,
            "list_queues": _unnamed(self.queues.list),
            "update_queue": self.queues.update,
            "delete_queue": self.queues.delete,
            "purge_queue": self.queues.purge,
            "produce": self.messages.produce,
            "lease": self.messages.lease,
            "complete": self.messages.complete,
            "retry": self.messages.retry,
            "extend": self.messages.extend,
            "redrive": self.messages.redrive,
            "browse": self.browse.browse,
            "create_exchange": _unnamed(self.exchanges.create),
            "get_exchange": self.exchanges.get,
            "list_exchanges": _unnamed(self.exchanges.list),
            "delete_exchange": self.exchanges.delete,
            "bind": self.exchanges.bind,
            "unbind": self.exchanges.unbind,
            "publish": self.exchanges.publish,
        }
        if tuple(self._runs) != OPERATIONS:
            raise RuntimeError("okuri.native.operations does not run every operation, in order")

    def target(self, operation: Operation, name: object) -> str:
        """The queue or exchange the path names, checked ("" for an operation without one)."""
        field = SPECS[operation].path_field
        if field is None:
            return ""
        if field.name == "exchange":
            return exchange_name(name, "exchange")
        return queue_name(name, "queue")

    async def run(
        self, operation: Operation, access: Access, name: str, doc: codec.Obj
    ) -> dict[str, Any]:
        """Run `operation` on `name` (from `target`) with the request document `doc`."""
        return await self._runs[operation](access, name, doc)
