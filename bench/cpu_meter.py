"""CPU seconds per simulated node: the simulator charges no time for computation, this does.

Why: the simulated nodes share one process and one virtual-time loop, so the process's CPU time
says nothing about any one node. Method: every task on the loop is wrapped so that each of its
steps (one `send` or `throw` into its coroutine) is timed with `perf_counter`, and the time is
charged to the node named by the `NODE` context variable at that moment. A caller sets `NODE`
around each engine call (`on_node`), so the engine's work, the store calls it makes and every
task it starts (which inherit the context) are charged to that node; a commit forwarded to a
leader switches the charge to the leader for as long as the leader works on it. The loop is
single-threaded and does no I/O, so wall time within a step is that step's CPU time. Not
charged to any node: the clients' own code and the loop's bookkeeping between steps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Generator
from contextvars import Context, ContextVar
from time import perf_counter
from typing import Any, TypeVar

T = TypeVar("T")

NODE: ContextVar[str | None] = ContextVar("bench_cpu_node", default=None)


class CpuMeter:
    """Seconds of computation per node, charged by `switch` from one charge point to the next."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._node: str | None = None
        self._since = 0.0

    def switch(self, node: str | None) -> None:
        """Charge the time since the last switch to the node then working; `node` works from now."""
        now = perf_counter()
        if self._node is not None:
            self.seconds[self._node] = self.seconds.get(self._node, 0.0) + now - self._since
        self._node, self._since = node, now

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Time every task that `loop` creates from now on."""

        def factory(
            loop: asyncio.AbstractEventLoop,
            coro: Coroutine[Any, Any, Any] | Generator[Any, None, Any],
            context: Context | None = None,
        ) -> asyncio.Task[Any]:
            assert isinstance(coro, Coroutine)
            return asyncio.Task(_Metered(coro, self), loop=loop, context=context)

        loop.set_task_factory(factory)

    async def on_node(self, node: str, call: Awaitable[T]) -> T:
        """Await `call` with its work (and the tasks it starts) charged to `node`."""
        token = NODE.set(node)
        self.switch(node)
        try:
            return await call
        finally:
            NODE.reset(token)
            self.switch(NODE.get())


class _Metered(Coroutine[Any, Any, T]):
    """A task's coroutine whose every step is charged to the node current in its context."""

    def __init__(self, coro: Coroutine[Any, Any, T], meter: CpuMeter) -> None:
        self._coro = coro
        self._meter = meter

    def send(self, value: Any) -> Any:
        self._meter.switch(NODE.get())
        try:
            return self._coro.send(value)
        finally:
            self._meter.switch(None)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._meter.switch(NODE.get())
        try:
            if val is None and tb is None:
                return self._coro.throw(typ)
            return self._coro.throw(typ, val, tb)
        finally:
            self._meter.switch(None)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, T]:
        return self._coro.__await__()
