"""Background work of one queue on one node, so shutdown can wait for it and a crash drop it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any


class Tasks:
    def __init__(self) -> None:
        self._tasks: dict[asyncio.Task[Any], None] = {}  # ordered: simulator replays must match

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self._tasks[task] = None
        task.add_done_callback(lambda t: self._tasks.pop(t, None))
        return task

    async def wait(self) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def cancel(self) -> None:
        for task in list(self._tasks):
            task.cancel()
