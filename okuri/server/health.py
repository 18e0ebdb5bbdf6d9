"""The health listener: liveness, readiness through the store, and Prometheus metrics.

It lives on its own port so probes and scrapes never queue behind SQS traffic, and so the
SQS port can be exposed without exposing these. Liveness answers while the process runs;
readiness makes a real, cheap request to the bucket (one LIST of at most one manifest), because
a node that cannot reach its bucket can serve nothing. Readiness answers are reused for a
second, so a probe storm cannot turn into a storm of billed requests.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal

from aiohttp import web

from okuri import __version__, access_log, limits
from okuri.clock import Clock
from okuri.engine import Admission, Engine
from okuri.errors import StoreError
from okuri.store.counting import RequestCounts

Phase = Literal["starting", "serving", "stopping"]
# One cheap request to the bucket (Engine.probe_store); raises StoreError when it fails.
StoreProbe = Callable[[], Awaitable[None]]


class Health:
    """What the server currently is, as the health listener reports it."""

    def __init__(self, counts: RequestCounts, clock: Clock) -> None:
        self.counts = counts
        self.clock = clock
        self.phase: Phase = "starting"
        self.probe: StoreProbe | None = None
        self.engine_stats: Mapping[str, int] = {}
        self.sources: list[Callable[[], list[str]]] = []
        self._last: tuple[float, bool, str] | None = None

    def serving(
        self,
        probe: StoreProbe,
        engine_stats: Mapping[str, int],
        sources: Sequence[Callable[[], list[str]]] = (),
    ) -> None:
        """`probe` asks the bucket whether it answers (the engine's probe_store); `sources` add
        their own metric lines (the SQS surface, queue depths)."""
        self.probe = probe
        self.engine_stats = engine_stats
        self.sources = list(sources)
        self.phase = "serving"

    async def readiness(self) -> tuple[bool, str]:
        """(ready, reason); a reason is one line for whoever reads the probe's output."""
        if self.phase == "starting" or self.probe is None:
            return False, "starting: checking the object store"
        if self.phase == "stopping":
            return False, "shutting down"
        now_s = self.clock.monotonic_s()
        if self._last is not None and now_s - self._last[0] < limits.ready_cache_s:
            return self._last[1], self._last[2]
        try:
            await asyncio.wait_for(self.probe(), limits.ready_timeout_s)
            ready, reason = True, "ready"
        except TimeoutError:
            ready, reason = (
                False,
                f"object store did not answer within {limits.ready_timeout_s:g} s",
            )
        except StoreError as err:
            ready, reason = False, "object store: " + " ".join(str(err).split())
        self._last = (now_s, ready, reason)
        return ready, reason

    def metrics(self, ready: bool = False) -> str:
        """The exposition; `ready` is what readiness answers now (okuri_ready)."""
        text = render_metrics(self.counts.snapshot(), dict(self.engine_stats), ready)
        extra = [line for source in self.sources for line in source()]
        return text + ("\n".join(extra) + "\n" if extra else "")


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_metrics(
    store_requests: Mapping[str, int], engine_events: Mapping[str, int], ready: bool = False
) -> str:
    """Prometheus text exposition format 0.0.4."""
    lines = [
        "# HELP okuri_up 1 while the server process runs.",
        "# TYPE okuri_up gauge",
        "okuri_up 1",
        "# HELP okuri_ready 1 while /readyz answers 200: serving, and its bucket answers.",
        "# TYPE okuri_ready gauge",
        f"okuri_ready {int(ready)}",
        "# HELP okuri_build_info The running okuri version.",
        "# TYPE okuri_build_info gauge",
        f'okuri_build_info{{version="{_label(__version__)}"}} 1',
        "# HELP okuri_store_requests_total Object-store requests by price class, failed ones too.",
        "# TYPE okuri_store_requests_total counter",
    ]
    lines += [
        f'okuri_store_requests_total{{class="{_label(cls)}"}} {n}'
        for cls, n in sorted(store_requests.items())
    ]
    lines += [
        "# HELP okuri_engine_events_total Notable engine events since start.",
        "# TYPE okuri_engine_events_total counter",
    ]
    lines += [
        f'okuri_engine_events_total{{event="{_label(event)}"}} {n}'
        for event, n in sorted(engine_events.items())
    ]
    return "\n".join(lines) + "\n"


def sync_lines(store: object) -> list[str]:
    """The local stores' durable write barriers (fsync and fdatasync calls), which a price class
    does not tell: the journal syncs once for the writes that arrive together. None on S3."""
    syncs = getattr(store, "syncs", None)
    if not isinstance(syncs, int):
        return []
    return [
        "# HELP okuri_store_syncs_total fsync and fdatasync calls of the local store.",
        "# TYPE okuri_store_syncs_total counter",
        f"okuri_store_syncs_total {syncs}",
    ]


def admission_lines(admission: Admission) -> list[str]:
    """The node's in-flight gauges, their bounds, and the requests shed by surface and bound."""
    now = admission.snapshot()
    lines = [
        "# HELP okuri_inflight What this node holds now: requests, their body bytes, long polls.",
        "# TYPE okuri_inflight gauge",
    ]
    lines += [f'okuri_inflight{{kind="{kind}"}} {n}' for kind, n in now.in_flight.items()]
    lines += [
        "# HELP okuri_inflight_max The bounds past which this node sheds requests.",
        "# TYPE okuri_inflight_max gauge",
    ]
    lines += [f'okuri_inflight_max{{kind="{kind}"}} {n}' for kind, n in now.bounds.items()]
    lines += [
        "# HELP okuri_shed_requests_total Requests refused with the surface's overload answer, "
        "by surface and the bound that was full.",
        "# TYPE okuri_shed_requests_total counter",
    ]
    lines += [
        f'okuri_shed_requests_total{{surface="{_label(surface)}",kind="{kind}"}} {n}'
        for (surface, kind), n in sorted(now.shed.items())
    ]
    return lines


def queue_lines(engine: Engine | None, now_ms: int) -> list[str]:
    """Per-queue gauges from this node's cached manifests, and this node's per-queue sends and
    deletes since it started (a sum over nodes is the cluster's rate)."""
    lines = [
        "# HELP okuri_queue_messages Approximate messages per queue and state, from this "
        "node's cached manifests.",
        "# TYPE okuri_queue_messages gauge",
    ]
    depths = engine.cached_counts() if engine is not None else {}
    for name, c in sorted(depths.items()):
        for state, n in (
            ("visible", c.visible),
            ("in_flight", c.in_flight),
            ("delayed", c.delayed),
        ):
            lines.append(f'okuri_queue_messages{{queue="{_label(name)}",state="{state}"}} {n}')
    lines += [
        "# HELP okuri_queue_oldest_message_age_seconds Age of the oldest visible message "
        "per queue (0 when none is visible), from this node's cached manifests.",
        "# TYPE okuri_queue_oldest_message_age_seconds gauge",
    ]
    oldest = engine.cached_oldest_visible_ms() if engine is not None else {}
    for name, sent_ms in sorted(oldest.items()):
        age_s = 0.0 if sent_ms is None else max(now_ms - sent_ms, 0) / 1000
        lines.append(f'okuri_queue_oldest_message_age_seconds{{queue="{_label(name)}"}} {age_s:g}')
    lines += [
        "# HELP okuri_queue_unadopted_slots Slots this node knows to be written past the "
        "queue's manifest cursor, not yet adopted by any consumer.",
        "# TYPE okuri_queue_unadopted_slots gauge",
    ]
    waiting = engine.cached_unadopted_slots() if engine is not None else {}
    lines += [
        f'okuri_queue_unadopted_slots{{queue="{_label(name)}"}} {n}'
        for name, n in sorted(waiting.items())
    ]
    sent: Mapping[str, int] = engine.sent if engine is not None else {}
    deleted: Mapping[str, int] = engine.deleted if engine is not None else {}
    names = sorted(set(sent) | set(deleted))  # both series from a queue's first send or delete
    for metric, what, counts in (
        ("okuri_queue_sent_messages_total", "Messages this node accepted", sent),
        ("okuri_queue_deleted_messages_total", "Messages this node deleted", deleted),
    ):
        lines += [f"# HELP {metric} {what} per queue since it started.", f"# TYPE {metric} counter"]
        lines += [f'{metric}{{queue="{_label(name)}"}} {counts.get(name, 0)}' for name in names]
    return lines


def health_app(health: Health) -> web.Application:
    """The listener's routes; each answer carries x-request-id, and with the access log on each
    request has a record at DEBUG (probes and scrapes come every few seconds: at INFO they
    would drown the requests that matter)."""
    clock = health.clock

    @web.middleware
    async def request_ids(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        request_id = clock.new_id()
        logging_on = access_log.on(logging.DEBUG)
        started_s = clock.monotonic_s() if logging_on else 0.0
        try:
            response = await handler(request)
        except web.HTTPException as exc:  # 404, 405: answered by aiohttp
            response = exc
        response.headers[access_log.REQUEST_ID_HEADER] = request_id
        if logging_on:
            entry = access_log.Entry(request.path)
            duration_ms = (clock.monotonic_s() - started_s) * 1000
            access_log.emit(
                "health", request_id, entry, response.status, duration_ms, logging.DEBUG
            )
        return response

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        ready, reason = await health.readiness()
        return web.Response(status=200 if ready else 503, text=reason + "\n")

    async def metrics(request: web.Request) -> web.Response:
        ready, _ = await health.readiness()  # reused for a second: a scrape costs no more
        return web.Response(
            body=health.metrics(ready).encode(),
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    app = web.Application(middlewares=[request_ids])
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    return app
