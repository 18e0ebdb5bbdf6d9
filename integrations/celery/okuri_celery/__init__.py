"""Celery on okuri (or any SQS): keep held task messages invisible while a worker holds them.

    from okuri_celery import install
    install(app)          # or: app.steps["consumer"].add(VisibilityHeartbeat)

See docs/celery.md in the okuri repository for the whole broker and result configuration.
"""

from __future__ import annotations

from .bootstep import VisibilityHeartbeat, held_from_request, install, settings_from_conf
from .heartbeat import BeatReport, Heartbeat, HeartbeatSettings, Held, Plan, plan

__all__ = [
    "BeatReport",
    "Heartbeat",
    "HeartbeatSettings",
    "Held",
    "Plan",
    "VisibilityHeartbeat",
    "held_from_request",
    "install",
    "plan",
    "settings_from_conf",
]
