"""What one root seed decides: the shape of a simulated run (swarm testing).

Why apart from the run: a seed's configuration (node count, linger, fault rates, clock skew,
workload mix) is a pure function of the seed, drawn before any node starts, and okuri/sim/runner.py
prints it so a failure can be read before it is replayed. Every draw comes from a generator named
after the seed, so one seed always gives one shape.

Two workload shapes (okuri/sim/chaos.py and okuri/sim/steady.py run them). Most seeds are the
*chaos* shape. One seed in `STEADY_SEED_EVERY` is the *steady* shape: the same faults, clocks
and linger, on two to four nodes with producers pinned to some and consumers to the others, at
a send rate set from what its consumers take on a healthy engine (`steady_capacity_per_s`).

About one chaos seed in `1 / FIFO_SHARE` runs a FIFO queue instead (`fifo_variant`): the same
faults, clocks, nodes and clients, with messages spread over a few message groups, a FIFO
dead-letter queue where the standard shape has one, and producers that send again with the same
deduplication id, after a lost answer or on purpose. The choice comes from a generator of its
own, so every other seed keeps the shape it always had.

One seed in `FAILOVER_SEED_EVERY` is the *failover* shape (`failover_variant`): what an
operator's kill -9 test runs against three or five nodes behind a load balancer: nodes forward to
the leader and crash every few seconds, on a standard queue with a short visibility timeout and
no store faults; the chaos shape's clients, more of them and longer, each consumer deleting what
a receive brought through another node than the one that served it (issue 28: a delivery after
an answered delete that the chaos shape did not reach).
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from okuri import limits

# The steady shape ("steady load, many nodes"). One seed in STEADY_SEED_EVERY is steady (50,
# 250, 450, ...): three in the suite's 600, ten in `okuri dst --seeds 2000`. A steady seed runs
# thousands of messages and costs as much as fifty to a hundred chaos seeds, so it is a share.
# Its rate is set from its consumers, at STEADY_LOAD_SHARE of what they take on a healthy engine
# (`steady_capacity_per_s`), so a cluster that falls behind says something about the engine.
STEADY_SEED_EVERY = 200
STEADY_SEED_OFFSET = 50
STEADY_FAULT_PHASE_S = 8.0
STEADY_PHASE_S = 10.0  # load goes on this long after the fault phase, faults off
# The fault phase ends with the consumer nodes down this long (0: it does not), so the heal
# brings them back to a backlog: catching up is where finding other nodes' slots is tested.
STEADY_OUTAGE_S_CHOICES = (0.0, 2.0, 5.0)
STEADY_LATENCY_MS_CHOICES = (20.0, 30.0, 40.0)  # medians; S3 answers in tens of milliseconds
STEADY_CONSUMERS_PER_NODE_MAX = 12  # a worker pool
STEADY_LOAD_SHARE = 0.5
STEADY_RATE_PER_S_MAX = 600.0  # messages; a steady seed costs about a second per 400/s
STEADY_BATCH_MESSAGES_CHOICES = (5, 10)  # SendMessageBatch; fewer calls, cheaper seeds

# The failover shape: one seed in FAILOVER_SEED_EVERY (7, 17, 27, ...: fifty in the suite's
# 500), whatever the chaos shape drew for it. Thousands of messages, so a seed costs about what
# ten chaos seeds do.
FAILOVER_SEED_EVERY = 10
FAILOVER_SEED_OFFSET = 7
FAILOVER_NODES_CHOICES = (3, 5)
FAILOVER_VISIBILITY_S_CHOICES = (1, 2, 5)
FAILOVER_MESSAGES = 3000  # more than 40 s of the chaos producers send: they never run out
FAILOVER_FAULT_PHASE_S = 40.0
FAILOVER_CRASH_EVERY_S_CHOICES = (2.0, 4.0)  # across the cluster, as `crash_every_s`
FAILOVER_LATENCY_MS_CHOICES = (5.0, 20.0)
# One failover seed in five (47, 97, 147, ...: ten in the suite's 500) runs sixteen nodes and
# twice the clients, so that producers on many nodes open lanes (okuri/engine/lanes.py) and the
# lanes, their leads and their owners' deaths move across a wide cluster while nodes crash.
FAILOVER_WIDE_EVERY = 50
FAILOVER_WIDE_OFFSET = 47
FAILOVER_WIDE_NODES = 16
# Every other wide seed (47, 147, ...) runs a high-throughput FIFO queue instead: its groups'
# partitions, their leads and the sends forwarded to those leads move while nodes crash.
FAILOVER_WIDE_FIFO_EVERY = 100
FAILOVER_WIDE_FIFO_GROUPS = 8

# The FIFO shape (okuri/sim/chaos.py): a share of the chaos seeds, drawn per seed.
FIFO_SHARE = 0.25
# The native shape: a share of the standard chaos seeds whose clients also use what only the
# native API offers: enqueue times (some beyond the longest delay, so they wait outside the
# queue, okuri/engine/schedule.py), leases of up to a hundred, retry at a time, dead-lettering
# on a consumer's word and extending a lease. Drawn per seed from a generator of its own.
NATIVE_SHARE = 0.3
NATIVE_FAR_CHOICES = (0.02, 0.05)  # share of sends scheduled 15 to 17 minutes ahead
# Seeds whose nodes forward commits to the queue's leader; the others all commit for themselves.
PEERING_SHARE = 0.75
# Of every seed, those whose nodes keep ack logs (they matter where nodes forward).
ACK_LOGS_SHARE = 0.6
# How long a lane must hold nothing before a node retires it (okuri/engine/lanes.py): the
# engine's five minutes never pass in a chaos seed's fault phase; a second or three do, over
# and over, so lanes close, drop and open again while nodes crash.
LANE_QUIET_S_CHOICES = (limits.lane_quiet_s, 1.0, 3.0)
FIFO_GROUPS_CHOICES = (1, 2, 3, 5, 8)  # one group serialises everything; eight barely do
# Chance that a producer sends an acknowledged message again with its deduplication id (on
# purpose: the answer must name the first message); half of those go out twice at once,
# through two nodes, before either answer is back.
FIFO_RESEND_CHOICES = (0.05, 0.2)
# Of the FIFO seeds, those whose queue is made in SQS's high-throughput mode: its groups spread
# over partitions, each a lane written by its leader (okuri/engine/partitions.py).
FIFO_PARTITIONED_SHARE = 0.5


@dataclass(frozen=True)
class SimConfig:
    seed: int
    nodes: int
    linger_ms: int
    latency_ms: float
    p_transient: float
    p_conflict: float
    p_ambiguous: float
    skew_ms_max: int
    crash_every_s: float  # mean seconds between crashes across the cluster; 0 = never
    producers: int
    consumers: int
    messages: int
    visibility_s: int
    max_receive_count: int | None
    retention_s: int
    purges: int
    fault_phase_s: float
    # The steady shape: producers on nodes [0, producer_nodes), consumers on the others; each
    # producer sends `batches` batches of `batch_messages`, one every `batch_interval_s`.
    steady: bool = False
    producer_nodes: int = 0
    batch_messages: int = 0
    batch_interval_s: float = 0.0
    batches: int = 0
    steady_phase_s: float = 0.0
    outage_s: float = 0.0  # the fault phase ends with the consumer nodes down this long
    # The FIFO shape: a FIFO queue (and dead-letter queue) with messages spread over `groups`
    # message groups, and producers that send again with the same deduplication id.
    fifo: bool = False
    groups: int = 0
    p_resend: float = 0.0
    fifo_partitioned: bool = False
    # Nodes forward their commits to the queue's leader (okuri/engine/peering.py) over a
    # simulated network that loses a forward, or its answer, with this probability.
    peering: bool = False
    p_peer_lost: float = 0.0
    # Followers answer deletes from ack logs of their own (okuri/engine/ack_logs.py).
    ack_logs: bool = False
    # The native shape (okuri/sim/chaos.py): clients use enqueue times, big leases, retry at a
    # time, dead-lettering and extending; `p_far` of the sends are due beyond the longest delay.
    native: bool = False
    p_far: float = 0.0
    # The failover shape (okuri/sim/chaos.py): consumers delete what a receive brought, at
    # once, through another node than the one that served it.
    failover: bool = False
    lane_quiet_s: float = limits.lane_quiet_s

    @property
    def send_rate_per_s(self) -> float:
        """The steady shape's nominal send rate across all producers (0 for the chaos shape)."""
        if not self.steady:
            return 0.0
        return self.producers * self.batch_messages / self.batch_interval_s

    @staticmethod
    def from_seed(seed: int) -> SimConfig:
        r = random.Random(f"config-{seed}")
        chaos = SimConfig(
            seed=seed,
            nodes=r.choice([1, 2, 2, 3, 4]),
            linger_ms=r.choice([5, 20, 100]),
            latency_ms=r.choice([0.0, 5.0, 20.0]),
            p_transient=r.choice([0.0, 0.01, 0.05]),
            p_conflict=r.choice([0.0, 0.01, 0.05]),
            p_ambiguous=r.choice([0.0, 0.01, 0.05]),
            skew_ms_max=r.choice([0, 200, 3000]),
            crash_every_s=r.choice([0.0, 5.0, 15.0]),
            producers=r.randint(1, 3),
            consumers=r.randint(1, 3),
            messages=r.randint(40, 160),
            visibility_s=r.randint(1, 4),
            max_receive_count=r.choice([None, None, 2, 4]),
            retention_s=r.choice([4 * 86400, 4 * 86400, 4 * 86400, 60]),
            purges=r.choice([0, 0, 0, 1, 2]),
            fault_phase_s=30.0,
        )
        # Drawn from a generator of its own, so every seed keeps the shape it had before.
        wire = random.Random(f"peering-{seed}")
        chaos = dataclasses.replace(
            chaos,
            peering=wire.random() < PEERING_SHARE,
            p_peer_lost=wire.choice([0.0, 0.02, 0.1]),
            ack_logs=random.Random(f"ack-logs-{seed}").random() < ACK_LOGS_SHARE,
            lane_quiet_s=random.Random(f"lanes-{seed}").choice(LANE_QUIET_S_CHOICES),
        )
        if seed % FAILOVER_SEED_EVERY == FAILOVER_SEED_OFFSET:
            failover = chaos.failover_variant(random.Random(f"failover-{seed}"))
            if seed % FAILOVER_WIDE_EVERY == FAILOVER_WIDE_OFFSET:
                wide = dataclasses.replace(
                    failover, nodes=FAILOVER_WIDE_NODES, producers=4, consumers=6
                )
                if seed % FAILOVER_WIDE_FIFO_EVERY == FAILOVER_WIDE_OFFSET:
                    return dataclasses.replace(
                        wide.fifo_variant(random.Random(f"fifo-{seed}")),
                        groups=FAILOVER_WIDE_FIFO_GROUPS,
                        fifo_partitioned=True,
                    )
                return wide
            return failover
        if seed % STEADY_SEED_EVERY != STEADY_SEED_OFFSET:
            fifo = random.Random(f"fifo-{seed}")
            if fifo.random() < FIFO_SHARE:
                return chaos.fifo_variant(fifo)
            native = random.Random(f"native-{seed}")
            if native.random() < NATIVE_SHARE:
                return dataclasses.replace(
                    chaos, native=True, p_far=native.choice(NATIVE_FAR_CHOICES)
                )
            return chaos
        # Drawn from a generator of its own, so the steady seeds keep the chaos seeds' faults,
        # clocks and linger and every other seed keeps the shape it always had.
        return chaos.steady_variant(random.Random(f"shape-{seed}"))

    def fifo_variant(self, shape: random.Random) -> SimConfig:
        """This seed's chaos shape on a FIFO queue, its messages spread over a few groups."""
        return dataclasses.replace(
            self,
            consumers=max(2, self.consumers),  # so a group may be split across receive calls
            fifo=True,
            groups=shape.choice(FIFO_GROUPS_CHOICES),
            p_resend=shape.choice(FIFO_RESEND_CHOICES),
            fifo_partitioned=shape.random() < FIFO_PARTITIONED_SHARE,
        )

    def failover_variant(self, shape: random.Random) -> SimConfig:
        """Three or five nodes forwarding to a leader, crashing every few seconds, under
        clients that receive through one node and delete through another; this seed's linger
        and store latency, none of its store faults or skew (the node crashes are the faults)."""
        return dataclasses.replace(
            self,
            nodes=shape.choice(FAILOVER_NODES_CHOICES),
            p_transient=0.0,
            p_conflict=0.0,
            p_ambiguous=0.0,
            skew_ms_max=0,
            latency_ms=shape.choice(FAILOVER_LATENCY_MS_CHOICES),
            crash_every_s=shape.choice(FAILOVER_CRASH_EVERY_S_CHOICES),
            producers=2,
            consumers=3,
            messages=FAILOVER_MESSAGES,
            visibility_s=shape.choice(FAILOVER_VISIBILITY_S_CHOICES),
            max_receive_count=None,
            retention_s=4 * 86400,
            purges=0,
            fault_phase_s=FAILOVER_FAULT_PHASE_S,
            peering=True,
            p_peer_lost=0.0,
            ack_logs=shape.random() < 0.5,
            failover=True,
        )

    def steady_variant(self, shape: random.Random) -> SimConfig:
        """This seed's faults, clocks and linger, with the steady workload on 2 to 4 nodes."""
        nodes = shape.choice([2, 3, 3, 4, 4])
        producer_nodes = shape.randint(1, nodes - 1)
        consumer_nodes = nodes - producer_nodes
        consumers = consumer_nodes * shape.randint(1, STEADY_CONSUMERS_PER_NODE_MAX)
        producers = producer_nodes * shape.randint(1, 3)
        batch_messages = shape.choice(STEADY_BATCH_MESSAGES_CHOICES)
        latency_ms = shape.choice(STEADY_LATENCY_MS_CHOICES)
        capacity = steady_capacity_per_s(consumers, consumer_nodes, self.linger_ms, latency_ms)
        rate = min(STEADY_LOAD_SHARE * capacity, STEADY_RATE_PER_S_MAX)
        interval = producers * batch_messages / rate
        return dataclasses.replace(
            self,
            nodes=nodes,
            latency_ms=latency_ms,
            producers=producers,
            consumers=consumers,
            messages=0,
            max_receive_count=None,
            retention_s=4 * 86400,
            purges=0,
            fault_phase_s=STEADY_FAULT_PHASE_S,
            steady=True,
            producer_nodes=producer_nodes,
            batch_messages=batch_messages,
            batch_interval_s=interval,
            batches=int((STEADY_FAULT_PHASE_S + STEADY_PHASE_S) / interval),
            steady_phase_s=STEADY_PHASE_S,
            outage_s=shape.choice(STEADY_OUTAGE_S_CHOICES),
        )


def steady_capacity_per_s(
    consumers: int, consumer_nodes: int, linger_ms: int, latency_ms: float
) -> float:
    """What `consumers` well-behaved consumers on `consumer_nodes` nodes take on a healthy
    engine, messages per second: the lesser of two limits.

    - Each consumer loops receive(10) then delete. With leasing ahead (design.md), the receive
      is served from the node's buffer after one manifest read, and the delete costs one commit:
      a linger, a read and a CAS. So ten messages per linger plus three round trips.
    - The manifest takes one CAS at a time, whichever node it comes from: one round trip for a
      node alone on it (its cached copy is current), two where nodes contend (the loser reads
      it again). One commit carries one node's window: about half its consumers' receives or
      deletes, ten messages each.

    Measured on an engine that keeps up, consumers do better than this; the workload sends at
    `STEADY_LOAD_SHARE` of it.
    """
    per_consumer_s = (linger_ms + 3 * latency_ms) / 1000
    looping = consumers * limits.receive_messages_max / per_consumer_s
    commits_per_s = 1000 / ((1 if consumer_nodes == 1 else 2) * latency_ms)
    per_commit = consumers / consumer_nodes * limits.receive_messages_max / 2
    return min(looping, commits_per_s * per_commit)
