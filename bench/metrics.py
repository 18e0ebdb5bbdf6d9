"""A node's own counters, read from `/metrics` on its health listener, and their differences.

Why: with several nodes on one store, messages/s alone cannot say where the time goes; each
node's manifest commits, commit conflicts (412s on the manifest) and object-store requests by
price class can. They are read the way an operator's Prometheus would read them, over HTTP,
so the bench needs nothing from inside the server. A counter the server does not export is
None ("n/a"), never 0: `manifest_conflicts` exists only on engines that count it.
"""

from __future__ import annotations

import contextlib
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field

SCRAPE_TIMEOUT_S = 5.0
SCRAPE_BYTES_MAX = 4 * 1024 * 1024

ENGINE_EVENTS = "okuri_engine_events_total"
STORE_REQUESTS = "okuri_store_requests_total"
COMMITS_EVENT = "manifest_commits"
CONFLICTS_EVENT = "manifest_conflicts"

SYNCS = "okuri_store_syncs_total"
API_REQUESTS = ("okuri_native_requests_total", "okuri_sqs_requests_total")
# The API families' operation (native) or action (SQS) label, wherever it stands.
_API_OPERATION = re.compile(r'(?:operation|action)="([^"\\]*)"')
_SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(\w+)="((?:[^"\\]|\\.)*)"\}\s+(\S+)')


@dataclass(frozen=True)
class NodeCounters:
    """One scrape: engine events and store requests by class (absent names are not there)."""

    events: dict[str, float] = field(default_factory=dict)
    store: dict[str, float] = field(default_factory=dict)
    api: dict[str, float] = field(default_factory=dict)  # requests by operation, outcomes summed
    syncs: float | None = None  # a local store's fsync and fdatasync calls; None on S3

    def minus(self, before: NodeCounters) -> NodeCounters:
        return NodeCounters(
            {k: v - before.events.get(k, 0.0) for k, v in self.events.items()},
            {k: v - before.store.get(k, 0.0) for k, v in self.store.items()},
            {k: v - before.api.get(k, 0.0) for k, v in self.api.items()},
            None if self.syncs is None else self.syncs - (before.syncs or 0.0),
        )

    def figures(self) -> dict[str, object]:
        commits = self.events.get(COMMITS_EVENT)
        conflicts = self.events.get(CONFLICTS_EVENT)
        return {
            # No commit event yet means none happened: the engine counts from its first.
            "manifest_commits": int(commits or 0),
            "manifest_conflicts": None if conflicts is None else int(conflicts),
            "store_requests": {k: int(v) for k, v in sorted(self.store.items())},
            # Everything else the engine counts, for --json readers digging into one run.
            "engine_events": {k: int(v) for k, v in sorted(self.events.items())},
        }


def parse(text: str) -> NodeCounters:
    """Engine events, store requests by class, a local store's syncs and API requests by
    operation, out of Prometheus text format."""
    events: dict[str, float] = {}
    store: dict[str, float] = {}
    api: dict[str, float] = {}
    syncs: float | None = None
    for line in text.splitlines():
        if line.startswith(SYNCS + " "):
            with contextlib.suppress(ValueError):
                syncs = float(line.split()[1])
            continue
        if line.startswith(API_REQUESTS):
            operation = _API_OPERATION.search(line)
            with contextlib.suppress(ValueError):
                n = float(line.rsplit(None, 1)[-1])
                if operation is not None:
                    api[operation[1]] = api.get(operation[1], 0.0) + n
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        name, label, value, number = match.groups()
        try:
            n = float(number)
        except ValueError:
            continue
        if name == ENGINE_EVENTS and label == "event":
            events[value] = n
        elif name == STORE_REQUESTS and label == "class":
            store[value] = n
    return NodeCounters(events, store, api, syncs)


def scrape(health_url: str) -> NodeCounters | None:
    """GET /metrics; None when the node does not answer (it is down, or not yet up)."""
    try:
        with urllib.request.urlopen(health_url + "/metrics", timeout=SCRAPE_TIMEOUT_S) as reply:
            return parse(reply.read(SCRAPE_BYTES_MAX).decode(errors="replace"))
    except (urllib.error.URLError, OSError):
        return None
