"""The client threads of `python -m bench cluster` (producers, consumers that fail over), and
its plan.

Why apart from the run: this is what an application does against a cluster that loses nodes,
and it only reports facts to bench.ledger, which judges them. A producer sends
SendMessageBatch(10) with ids it makes up (the id starts the body), sends the same ids again
until each is acknowledged, and pauses while too many acknowledged sends are not yet deleted. A
consumer loops ReceiveMessage(10, short wait) + DeleteMessageBatch, noting the time just before
each receive was sent and just after each delete answered. Both go through bench.failover,
one caller (and so one connection per node) per thread; both are bounded by the run's events and
by `messages_max`.

How clients reach nodes is the plan's too: each read of an answer is bounded by
`read_timeout_s` (default: the receive's wait plus REPLY_SLACK_S) and each connect by
`connect_timeout_s`; `blind_clients` choose among all nodes rather than those the chaos thread
has up; `delete_elsewhere` sends each DeleteMessageBatch first to another node than the
receive that returned its receipts (a load balancer spreads them so). Receives ask for
ApproximateReceiveCount, which the ledger shows beside each delivery. `client` "boto3" makes
every client botocore's (bench.cluster_boto) instead of the bench's light one.

With `fifo_groups` > 0 the queue is a FIFO queue: each entry goes to message group
`g<n % groups>` with the body's id as its MessageDeduplicationId, every DUPLICATE_EVERY-th
acknowledged batch is sent once more on purpose (its answer must name the same messages), and
the facts deduplication and group order are judged from go to bench.fifo_ledger as well.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bench.cluster_boto import BotoSqs
from bench.failover import Caller, Exhausted, NodeSet, Tally
from bench.fifo_ledger import Answered, FifoLedger, Received
from bench.ledger import Ledger
from bench.load import BATCH_ENTRIES, ERROR_PAUSE_S
from bench.servers import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY, REGION
from bench.sqs_client import Signer, SqsCallError

BODY_BYTES = 64  # an id, padded
SETTLE_SLACK_S = 5.0  # past the visibility timeout: lease-ahead hold, commit latency
BACKLOG_POLL_S = 0.05
REPLY_SLACK_S = 20.0  # a reply's timeout, past the receive's wait
DUPLICATE_EVERY = 5  # FIFO: every fifth acknowledged batch of a producer is sent again
FIFO_ATTRIBUTES = ["MessageGroupId", "SequenceNumber"]
RECEIVE_COUNT = "ApproximateReceiveCount"

T = TypeVar("T")


@dataclass(frozen=True)
class Plan:
    """What one run does; each field is a flag of `python -m bench cluster`."""

    nodes: int = 3
    store: str = "local"
    s3_endpoint: str | None = None  # with store "s3": use this server instead of starting moto
    fault_s: float = 20.0
    kill_every_s: float = 4.0
    producers: int = 2
    consumers: int = 2
    visibility_s: int = 10
    wait_s: int = 1
    drain_s: float = 60.0
    messages_max: int = 200_000
    backlog_max: int = 2_000
    seed: int = 0
    fifo_groups: int = 0  # 0: a standard queue; N: a FIFO queue, messages over N groups
    fifo_partitions: bool = False  # the FIFO queue in high-throughput mode, partitioned
    ack_logs: str = "auto"  # the nodes' OKURI_ACK_LOGS
    shape: str = "default"  # the preset the flags started from (bench.cluster.SHAPES)
    restart_after_s: float = 0.0  # a killed node starts again this long after its kill
    connect_timeout_s: float | None = None  # None: as read_timeout_s
    read_timeout_s: float | None = None  # None: the receive's wait plus REPLY_SLACK_S
    blind_clients: bool = False  # clients choose among all nodes, not only those up
    delete_elsewhere: bool = False  # a delete goes first to another node than its receive
    node_log_level: str = "info"  # the nodes' OKURI_LOG_LEVEL
    keep: str | None = None  # a directory to keep the nodes' logs, the store's manifest history
    watch_ms: int = 10  # with keep: how often to read the manifest for its history (0: never)
    client: str = "light"  # the clients: bench.sqs_client's, or boto3's (cluster_boto)

    drain_min_s: float = 0.0  # consumers drain at least this long (besides settle_s)

    @property
    def settle_s(self) -> float:
        """The least drain: a dead node's leases expire, deleted messages would reappear (or
        longer, as asked)."""
        return max(self.visibility_s + SETTLE_SLACK_S, self.drain_min_s)

    @property
    def reply_timeout_s(self) -> float:
        """How long a client waits for each read of an answer."""
        if self.read_timeout_s is not None:
            return self.read_timeout_s
        return self.wait_s + REPLY_SLACK_S


@dataclass
class Load:
    """What the client threads share: the nodes, the ledger, and when to stop."""

    plan: Plan
    nodes: NodeSet
    ledger: Ledger
    queue_url: str
    run_id: str
    fifo: FifoLedger | None = None  # with plan.fifo_groups
    producing: threading.Event = field(default_factory=threading.Event)
    consuming: threading.Event = field(default_factory=threading.Event)
    tallies: list[Tally] = field(default_factory=list)
    crashed: list[str] = field(default_factory=list)
    sends_abandoned: int = 0
    backlog_peak: int = 0  # the most acknowledged sends not yet deleted a producer saw
    backlog_pauses: int = 0  # how often a producer paused for the backlog
    _claimed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def claim(self, n: int) -> int:
        """How many of `n` more messages the run may still send (messages_max in all)."""
        with self._lock:
            n = max(0, min(n, self.plan.messages_max - self._claimed))
            self._claimed += n
            return n

    def caller(self, seed: str) -> Caller:
        caller = dev_caller(self.nodes, seed, self.plan.reply_timeout_s)
        caller.connect_timeout_s = self.plan.connect_timeout_s
        caller.blind = self.plan.blind_clients
        if self.plan.client == "boto3":
            read_s = self.plan.reply_timeout_s
            connect_s = self.plan.connect_timeout_s or read_s
            caller.client_for = lambda endpoint: BotoSqs(
                endpoint, DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY, REGION, read_s, connect_s
            )
        return caller

    def body(self, message_id: str) -> str:
        return (message_id + " ").ljust(BODY_BYTES, "x")

    def thread(self, name: str, work: Callable[[Caller], None]) -> threading.Thread:
        def main() -> None:
            caller = self.caller(f"{self.plan.seed}-{name}")
            try:
                work(caller)
            except Exception as err:  # a bug in the load invalidates the run: say so
                self.crashed.append(f"{name}: {type(err).__name__}: {err}")
            finally:
                caller.close()
                with self._lock:
                    self.tallies.append(caller.tally)

        return threading.Thread(target=main, name=name, daemon=True)

    def produce(self, producer: int, caller: Caller) -> None:
        seq = 0
        batches = 0
        pending: list[str] = []  # ids not yet acknowledged, sent again until they are
        group: dict[str, str] = {}  # FIFO: each pending id's message group
        tries: list[tuple[int, float, str]] = []  # the pending ids' attempts without answer
        while self.producing.is_set():
            backlog = self.ledger.backlog
            self.backlog_peak = max(self.backlog_peak, backlog)  # a racy max: a figure only
            if backlog >= self.plan.backlog_max:
                self.backlog_pauses += 1
                time.sleep(BACKLOG_POLL_S)
                continue
            if not pending:
                fresh = self.claim(BATCH_ENTRIES)
                if not fresh:
                    return
                pending = [f"{self.run_id}-p{producer}-{seq + k}" for k in range(fresh)]
                if self.plan.fifo_groups:
                    group = {
                        m: f"g{(producer * 7919 + seq + k) % self.plan.fifo_groups}"
                        for k, m in enumerate(pending)
                    }
                seq += fresh
                tries = []
            sent = self._send(caller, pending, group)
            tries += _tries(caller)
            if sent is None:
                continue  # the same ids again: a send is given up only when the run ends
            ok, answered_s, node = sent
            self.ledger.acknowledged(ok, answered_s, node, tries)
            batches += 1
            if self.fifo is not None and ok and batches % DUPLICATE_EVERY == 0:
                self._send(caller, ok, group)  # answered as duplicates, or judged
            done = set(ok)
            pending = [m for m in pending if m not in done]
        with self._lock:
            self.sends_abandoned += len(pending)

    def _send(
        self, caller: Caller, ids: list[str], group: dict[str, str]
    ) -> tuple[list[str], float, int] | None:
        """One SendMessageBatch of `ids`: those acknowledged, when the answer was read and the
        node that answered, or None if no node answered."""
        entries: list[dict[str, Any]] = []
        for k, m in enumerate(ids):
            entry = {"Id": str(k), "MessageBody": self.body(m)}
            if self.fifo is not None:
                entry["MessageGroupId"] = group[m]
                entry["MessageDeduplicationId"] = m
            entries.append(entry)
        if self.fifo is not None:
            self.fifo.attempted(ids, time.monotonic())
        sent = self._batch(caller, "SendMessageBatch", entries, ids, "acknowledged")
        if sent is None:
            return None
        ok, answers, node, _, answered_s = sent
        if self.fifo is not None:
            self.fifo.answered(
                (
                    Answered(m, str(a.get("MessageId", "")), str(a.get("SequenceNumber", "")))
                    for m, a in zip(ok, answers, strict=True)
                ),
                answered_s,
            )
        return ok, answered_s, node

    def consume(self, caller: Caller) -> None:
        params: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MaxNumberOfMessages": BATCH_ENTRIES,
            "WaitTimeSeconds": self.plan.wait_s,
            "MessageSystemAttributeNames": [RECEIVE_COUNT],
        }
        if self.fifo is not None:
            params["MessageSystemAttributeNames"] = [*FIFO_ATTRIBUTES, RECEIVE_COUNT]
        while self.consuming.is_set():
            try:
                answer, node, sent_s = caller.call("ReceiveMessage", params)
            except (Exhausted, SqsCallError) as err:
                _failed(caller, "ReceiveMessage", err)
                continue
            answered_s = time.monotonic()
            tries = _tries(caller)
            received = answer.get("Messages") or ()
            messages = [
                (
                    str(m.get("Body", "")).split(" ", 1)[0],
                    str(m.get("MessageId", "")),
                    str(m["ReceiptHandle"]),
                )
                for m in received
            ]
            if not messages:
                continue
            caller.tally.messages[(node, "received")] += len(messages)
            counts = [_receive_count(m) for m in received]
            self.ledger.delivered(messages, sent_s, node, answered_s, counts, tries)
            if self.fifo is not None:
                self.fifo.delivered(_sequenced(messages, received), sent_s, answered_s)
            entries = [{"Id": str(i), "ReceiptHandle": r} for i, (_, _, r) in enumerate(messages)]
            avoid = node if self.plan.delete_elsewhere else None
            deleted = self._batch(
                caller, "DeleteMessageBatch", entries, messages, "deleted", avoid=avoid
            )
            if deleted is None:
                continue  # the messages come back after their visibility timeout
            ok_messages, _, node, sent_s, answered_s = deleted
            self.ledger.deleted(ok_messages, answered_s, node, sent_s, _tries(caller))

    def _batch(
        self,
        caller: Caller,
        action: str,
        entries: list[dict[str, Any]],
        items: Sequence[T],
        counted: str,
        avoid: int | None = None,
    ) -> tuple[list[T], list[dict[str, Any]], int, float, float] | None:
        """One batch call (first to another node than `avoid`): the items whose entries the
        answer lists as Successful (counted under `counted` for the node) and those entries,
        the node that answered, the time just before its attempt was sent and the time just
        after the answer was read; None when no node answered or the call was refused."""
        try:
            answer, node, sent_s = caller.call(
                action, {"QueueUrl": self.queue_url, "Entries": entries}, avoid=avoid
            )
        except (Exhausted, SqsCallError) as err:
            _failed(caller, action, err)
            return None
        answered_s = time.monotonic()
        successful = list(answer.get("Successful") or ())
        ok = [items[int(e["Id"])] for e in successful]
        caller.tally.messages[(node, counted)] += len(ok)
        for failed in answer.get("Failed") or ():
            caller.tally.refused_entries[str(failed.get("Code"))] += 1
        return ok, successful, node, sent_s, answered_s


def _receive_count(message: dict[str, Any]) -> int | None:
    value = (message.get("Attributes") or {}).get(RECEIVE_COUNT)
    try:
        return None if value is None else int(value)
    except (TypeError, ValueError):
        return None


def _tries(caller: Caller) -> list[tuple[int, float, str]]:
    """The attempts of the caller's latest call that got no answer, for the ledger."""
    return [(t.node, t.sent_s, t.what) for t in caller.last_tries]


def _sequenced(
    messages: list[tuple[str, str, str]], received: Sequence[dict[str, Any]]
) -> list[Received]:
    """What the FIFO checker needs of each message one receive returned."""
    out = []
    for (body_id, sqs_id, _), m in zip(messages, received, strict=True):
        attributes = m.get("Attributes") or {}
        out.append(
            Received(
                body_id,
                sqs_id,
                str(attributes.get("MessageGroupId", "")),
                str(attributes.get("SequenceNumber", "")),
            )
        )
    return out


def _failed(caller: Caller, action: str, err: Exhausted | SqsCallError) -> None:
    """A call that no node could answer, or that one refused: counted, then a short pause so a
    refusal that will not change (a missing queue) is not repeated in a tight loop."""
    if isinstance(err, SqsCallError):
        caller.tally.refused_calls[err.code] += 1
    caller.tally.error(f"{action}: {err}")
    time.sleep(ERROR_PAUSE_S)


def dev_caller(nodes: NodeSet, seed: int | str, timeout_s: float) -> Caller:
    """A failover caller signing with okuri's development pair, choosing nodes from `seed`."""
    signer = Signer(DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY, REGION)
    return Caller(nodes, signer, random.Random(seed), timeout_s)


def producer(load: Load, producer: int) -> Callable[[Caller], None]:
    return lambda caller: load.produce(producer, caller)
