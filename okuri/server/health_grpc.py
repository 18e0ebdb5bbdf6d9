"""`grpc.health.v1.Health` on the main listener's gRPC side, answering as /readyz does.

Check (and List) answer SERVING exactly when readiness says ready (the same store probe, its
answer reused for a second, so probes cannot become a storm of billed requests), for the
whole server ("") and for each service it serves; another service name is NOT_FOUND. From
the moment the node starts stopping every answer is NOT_SERVING. Watch answers as Check does,
then streams each change (that a later Check or List sees, or the shutdown makes), and ends
once it has sent NOT_SERVING for a shutdown, so a watcher never holds the drain for its grace.
grpcio's stock servicer is not used because its Watch streams never end on their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeAlias

import grpc
from grpc_health.v1 import health_pb2

Readiness = Callable[[], Awaitable[tuple[bool, str]]]
Status: TypeAlias = health_pb2.HealthCheckResponse.ServingStatus
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
SERVICE_UNKNOWN = health_pb2.HealthCheckResponse.SERVICE_UNKNOWN


class HealthService:
    """The servicer `health_pb2_grpc.add_HealthServicer_to_server` takes."""

    def __init__(self, readiness: Readiness, services: Iterable[str]) -> None:
        self.readiness = readiness
        self.services = ("", *services)
        self.ready = False
        self.stopping = False
        self._changed = asyncio.Event()

    def status(self, service: str) -> Status | None:
        if service not in self.services:
            return None
        return SERVING if self.ready and not self.stopping else NOT_SERVING

    async def refresh(self) -> None:
        """Ask readiness again (at most one store request a second)."""
        if not self.stopping:
            ready, _ = await self.readiness()
            if ready != self.ready:
                self.ready = ready
                self._notify()

    def stop(self) -> None:
        """NOT_SERVING from now on; watches send it and end."""
        self.stopping = True
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def Check(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthCheckResponse:
        await self.refresh()
        status = self.status(request.service)
        if status is None:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"No service {request.service[:200]!r} here."
            )
        return health_pb2.HealthCheckResponse(status=status)

    async def Watch(
        self, request: health_pb2.HealthCheckRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[health_pb2.HealthCheckResponse]:
        await self.refresh()
        last: Status | None = None
        while True:
            changed = self._changed
            status = self.status(request.service)
            status = SERVICE_UNKNOWN if status is None else status
            if status != last:
                yield health_pb2.HealthCheckResponse(status=status)
                last = status
            if self.stopping:
                return
            await changed.wait()

    async def List(
        self, request: health_pb2.HealthListRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> health_pb2.HealthListResponse:
        await self.refresh()
        return health_pb2.HealthListResponse(
            statuses={
                s: health_pb2.HealthCheckResponse(status=self.status(s)) for s in self.services
            }
        )
