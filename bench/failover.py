"""A blocking SQS caller that sends each request to a random live node and fails over on error.

Why: in `python -m bench cluster` nodes die mid-request by design, and a client must behave as a
careful application would: pick another node and try again. Any node can serve any request
(receipt handles and queue URLs name no node), so a retry elsewhere is always meaningful. A
retried send may duplicate a message whose first answer was lost (allowed: at-least-once);
nothing is dropped silently, since a request that exhausts its attempts raises `Exhausted`.

What counts as "the node did not answer": a connection refused or reset, a timeout, a broken
HTTP exchange (OSError, http.client.HTTPException), or a 5xx answer. A 4xx answer is the
request's own fault and is raised as SqsCallError at once. One caller per thread: it keeps one
keep-alive connection per node. Counts are per caller, merged by the caller's owner after the
threads end, so the hot path takes no lock.

Two ways to choose a node. Informed (the default): only among the nodes the chaos thread has
up, as a load balancer with instant health checks would. Blind: among all nodes, as a load
balancer that learns of a dead node only from the failed request itself; a call then moves
on to a node it has not failed on yet. A call may also name a node to avoid on its first
attempt (`avoid`), so that a delete goes to another node than the receive that returned it.
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bench.measure import error_line
from bench.servers import Node
from bench.sqs_client import BlockingSqs, Signer, SqsCallError

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

    def pick_blind(self, rng: random.Random, avoid: set[int]) -> int:
        """A random node, up or not, other than those in `avoid` when there is a choice."""
        everyone = list(range(len(self.nodes)))
        return rng.choice([i for i in everyone if i not in avoid] or everyone)


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


@dataclass(frozen=True)
class Try:
    """One attempt of a call that got no answer: the node, when it was sent (monotonic s), and
    what happened ("refused", "timeout", "dropped" or the 5xx's code)."""

    node: int
    sent_s: float
    what: str


def _unanswered(err: BaseException) -> str:
    if isinstance(err, ConnectionRefusedError):
        return "refused"
    if isinstance(err, TimeoutError):  # socket.timeout is TimeoutError
        return "timeout"
    return "dropped"


class NodeClient(Protocol):
    """One node's client: BlockingSqs, or bench.cluster_boto.BotoSqs."""

    def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]: ...

    def close(self) -> None: ...


class Caller:
    """Calls with failover, for one thread. `timeout_s` bounds each read of an answer,
    `connect_timeout_s` each connect (default: `timeout_s`); `blind`: choose among all nodes,
    not only those the chaos thread has up; `client_for` makes a node's client from its
    endpoint (default: BlockingSqs)."""

    def __init__(
        self,
        nodes: NodeSet,
        signer: Signer,
        rng: random.Random,
        timeout_s: float,
        connect_timeout_s: float | None = None,
        blind: bool = False,
    ):
        self.nodes = nodes
        self.signer = signer
        self.rng = rng
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.blind = blind
        self.tally = Tally()
        # the attempts of the latest call that got no answer (each maybe applied by its node)
        self.last_tries: list[Try] = []
        self.client_for: Callable[[str], NodeClient] | None = None
        self._clients: dict[int, NodeClient] = {}

    def _client(self, index: int) -> NodeClient:
        client = self._clients.get(index)
        if client is None:
            endpoint = self.nodes.nodes[index].endpoint
            client = (
                BlockingSqs(endpoint, self.signer, self.timeout_s, self.connect_timeout_s)
                if self.client_for is None
                else self.client_for(endpoint)
            )
            self._clients[index] = client
        return client

    def _pick(self, failed: list[int], avoid: int | None) -> int:
        if self.blind:
            shunned = set(failed)
            if len(shunned) >= len(self.nodes):
                shunned = {failed[-1]}  # every node failed once: start over, not at once again
            if avoid is not None and not failed:
                shunned.add(avoid)
            return self.nodes.pick_blind(self.rng, shunned)
        return self.nodes.pick(self.rng, avoid=failed[-1] if failed else avoid)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()

    def call(
        self, action: str, params: dict[str, Any], avoid: int | None = None
    ) -> tuple[dict[str, Any], int, float]:
        """(answer, node that answered, monotonic time just before that attempt was sent). The
        first attempt goes to another node than `avoid` when there is one."""
        failed: list[int] = []
        self.last_tries = []
        deadline_s = time.monotonic() + CALL_S_MAX
        for attempt in range(ATTEMPTS_MAX):
            if attempt and time.monotonic() >= deadline_s:
                break
            index = self._pick(failed, avoid)
            client = self._client(index)
            sent_s = time.monotonic()
            try:
                answer = client.call(action, params)
            except SqsCallError as err:
                if not err.server_fault:
                    raise
                self.tally.server_faults[index] += 1
                self.tally.error(f"node {index}: {action}: {err}")
                self.last_tries.append(Try(index, sent_s, f"{err.status} {err.code}"))
            except (OSError, http.client.HTTPException) as err:
                self.tally.failovers[index] += 1
                self.tally.error(f"node {index}: {action}: {type(err).__name__}: {err}")
                self.last_tries.append(Try(index, sent_s, _unanswered(err)))
            else:
                self.tally.answered[(index, action)] += 1
                return answer, index, sent_s
            failed.append(index)
            self.tally.unanswered[action] += 1
            pause = min(RETRY_PAUSE_S_MAX, RETRY_PAUSE_S_MIN * 2 ** min(attempt, 8))
            time.sleep(pause * (0.5 + self.rng.random()))
        self.tally.exhausted += 1
        raise Exhausted(f"{action}: no node answered in {attempt + 1} attempts")
