"""The fault injector of `python -m bench cluster`: SIGKILL a random node, start it again, repeat.

Why SIGKILL: it is the crash a node cannot prepare for (no flush, no lease release, requests
cut mid-flight), which is exactly what okuri claims to survive with nothing lost. A node is
killed by its own pid, never by name, and started again on the same ports, so the clients'
idea of the cluster stays right; it counts as up again only when /readyz answers. It is
started again at once, or `restart_after_s` after the kill (a supervisor's restart delay:
meanwhile its port refuses connections).

Only a node that is up is chosen, so a kill never lands on a node still starting. Kills happen
on a fixed schedule during the fault phase; after it, `settle` waits (bounded) until every node
is up again. A node that exits on its own while restarting (a port briefly taken) is spawned
again, at most RESPAWNS_MAX times per kill; one that never comes up fails the run.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from bench.failover import NodeSet
from bench.servers import START_S

TICK_S = 0.05
RESPAWNS_MAX = 3


@dataclass
class Restart:
    node: int
    killed_s: float
    respawns: int = 0
    spawn_at_s: float | None = None  # not spawned yet: when to (monotonic s)


@dataclass
class ChaosLog:
    kills: list[tuple[float, int]] = field(default_factory=list)  # (monotonic s, node)
    restart_s: list[float] = field(default_factory=list)  # kill to ready again
    failed: list[str] = field(default_factory=list)  # nodes that did not come back

    def kills_by_node(self, count: int) -> list[int]:
        per = [0] * count
        for _, node in self.kills:
            per[node] += 1
        return per


class Chaos(threading.Thread):
    """Kills a random up node every `every_s` seconds until `until_s` (monotonic)."""

    def __init__(
        self,
        nodes: NodeSet,
        every_s: float,
        until_s: float,
        rng: random.Random,
        restart_after_s: float = 0.0,
    ) -> None:
        super().__init__(name="okuri-bench-chaos", daemon=True)
        self.nodes = nodes
        self.every_s = every_s
        self.until_s = until_s
        self.rng = rng
        self.restart_after_s = restart_after_s
        self.log = ChaosLog()
        self._restarting: dict[int, Restart] = {}
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        next_kill_s = time.monotonic() + self.every_s
        while not self._halt.is_set():
            now_s = time.monotonic()
            self._check_restarts(now_s)
            if now_s >= self.until_s:
                if not self._restarting:
                    return
            elif now_s >= next_kill_s:
                self._kill_one(now_s)
                next_kill_s += self.every_s
            self._halt.wait(TICK_S)

    def _kill_one(self, now_s: float) -> None:
        up = self.nodes.up()
        if not up:
            return
        index = self.rng.choice(up)
        node = self.nodes.nodes[index]
        self.nodes.set_up(index, False)
        node.kill()
        self.log.kills.append((now_s, index))
        restart = Restart(index, now_s, spawn_at_s=now_s + self.restart_after_s)
        self._restarting[index] = restart
        if self.restart_after_s <= 0:
            node.spawn()
            restart.spawn_at_s = None

    def _check_restarts(self, now_s: float) -> None:
        for index, restart in list(self._restarting.items()):
            node = self.nodes.nodes[index]
            if restart.spawn_at_s is not None:
                if now_s >= restart.spawn_at_s:
                    node.spawn()
                    restart.spawn_at_s = None
                continue
            if node.ready():
                self.nodes.set_up(index, True)
                self.log.restart_s.append(time.monotonic() - restart.killed_s)
                del self._restarting[index]
            elif node.process is not None and not node.process.running():
                if restart.respawns >= RESPAWNS_MAX:
                    self._give_up(index, f"node {index} exited on restart {restart.respawns + 1}")
                else:
                    restart.respawns += 1
                    node.spawn()
            elif now_s - restart.killed_s > self.restart_after_s + START_S * (restart.respawns + 1):
                self._give_up(index, f"node {index} not ready {START_S:g} s after its restart")

    def _give_up(self, index: int, why: str) -> None:
        self.log.failed.append(why)
        del self._restarting[index]
