"""A blocking SQS caller that sends each request to a random live node and fails over on error.

Why: in `okuri bench cluster` nodes die mid-request by design, and a client must behave as a
careful application would: pick another node and try again. Any node can serve any request
(receipt handles and queue URLs name no node), so a retry elsewhere is always meaningful. A
retried send may duplicate a message whose first answer was lost (allowed: at-least-once);
nothing is dropped silently, since a request that exhausts its attempts raises `Exhausted`.

What counts as "the node did not answer": a connection refused or reset, a timeout, a broken
HTTP exchange (OSError, http.client.HTTPException), or a 5xx answer. A 4xx answer is the
request's own fault and is raised as SqsCallError at once. One caller per thread: it keeps one
keep-alive connection per node. Counts are per caller, merged by the caller's owner after the
threads end, so the hot path takes no lock.
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from okuri.bench.measure import error_line
from okuri.bench.servers import Node
from okuri.bench.sqs_client import BlockingSqs, Signer, SqsCallError

ATTEMPTS_MAX = 60
CALL_S_MAX = 60.0  # all attempts of one call, however slow each is
RETRY_PAUSE_S_MIN = 0.02
RETRY_PAUSE_S_MAX = 0.5  # nodes restart in about a second; no need to wait longer between tries


class Exhausted(Exception):
    """No node answered within the attempts allowed."""


class NodeSet:
    """The nodes of a run, and which of them the chaos thread currently has up."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self._up = [True] * len(nodes)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.nodes)

    def set_up(self, index: int, up: bool) -> None:
        with self._lock:
            self._up[index] = up

    def up(self) -> list[int]:
        with self._lock:
            return [i for i, up in enumerate(self._up) if up]

    def pick(self, rng: random.Random, avoid: int | None = None) -> int:
        """A random node believed up, other than `avoid` when there is a choice."""
        live = self.up()
        choices = [i for i in live if i != avoid] or live or list(range(len(self.nodes)))
        return rng.choice(choices)


@dataclass
class Tally:
    """What one caller saw, per node: requests answered, failovers, 5xx answers."""

    answered: Counter[tuple[int, str]] = field(default_factory=Counter)
    messages: Counter[tuple[int, str]] = field(default_factory=Counter)
    failovers: Counter[int] = field(default_factory=Counter)
    server_faults: Counter[int] = field(default_factory=Counter)
    refused_entries: Counter[str] = field(default_factory=Counter)  # by error code
    refused_calls: Counter[str] = field(default_factory=Counter)  # 4xx answers, by error code
    # attempts that got no answer (dropped or 5xx), by action: a send among them may have
    # landed, and the next attempt sends the same entries again
    unanswered: Counter[str] = field(default_factory=Counter)
    exhausted: int = 0
    first_error: str | None = None

    def error(self, what: str) -> None:
        if self.first_error is None:
            self.first_error = error_line(what)

    def merge(self, other: Tally) -> None:
        self.answered.update(other.answered)
        self.messages.update(other.messages)
        self.failovers.update(other.failovers)
        self.server_faults.update(other.server_faults)
        self.refused_entries.update(other.refused_entries)
        self.refused_calls.update(other.refused_calls)
        self.unanswered.update(other.unanswered)
        self.exhausted += other.exhausted
        if self.first_error is None:
            self.first_error = other.first_error


class Caller:
    """Calls with failover, for one thread."""

    def __init__(self, nodes: NodeSet, signer: Signer, rng: random.Random, timeout_s: float):
        self.nodes = nodes
        self.signer = signer
        self.rng = rng
        self.timeout_s = timeout_s
        self.tally = Tally()
        self._clients: dict[int, BlockingSqs] = {}

    def _client(self, index: int) -> BlockingSqs:
        client = self._clients.get(index)
        if client is None:
            client = BlockingSqs(self.nodes.nodes[index].endpoint, self.signer, self.timeout_s)
            self._clients[index] = client
        return client

    def close(self) -> None:
        for client in self._clients.values():
            client.close()

    def call(self, action: str, params: dict[str, Any]) -> tuple[dict[str, Any], int, float]:
        """(answer, node that answered, monotonic time just before that attempt was sent)."""
        failed: int | None = None
        deadline_s = time.monotonic() + CALL_S_MAX
        for attempt in range(ATTEMPTS_MAX):
            if attempt and time.monotonic() >= deadline_s:
                break
            index = self.nodes.pick(self.rng, avoid=failed)
            client = self._client(index)
            sent_s = time.monotonic()
            try:
                answer = client.call(action, params)
            except SqsCallError as err:
                if not err.server_fault:
                    raise
                self.tally.server_faults[index] += 1
                self.tally.error(f"node {index}: {action}: {err}")
            except (OSError, http.client.HTTPException) as err:
                self.tally.failovers[index] += 1
                self.tally.error(f"node {index}: {action}: {type(err).__name__}: {err}")
            else:
                self.tally.answered[(index, action)] += 1
                return answer, index, sent_s
            failed = index
            self.tally.unanswered[action] += 1
            pause = min(RETRY_PAUSE_S_MAX, RETRY_PAUSE_S_MIN * 2 ** min(attempt, 8))
            time.sleep(pause * (0.5 + self.rng.random()))
        self.tally.exhausted += 1
        raise Exhausted(f"{action}: no node answered in {attempt + 1} attempts")
