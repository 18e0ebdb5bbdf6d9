"""The open-loop bench's FIFO workload: one high-throughput FIFO queue, and what it must keep.

Why a module of its own: a FIFO row counts only when order within each group and the
deduplication window held, so the bench checks both from outside, the way a client would see
them. The queue is made as SQS's high-throughput FIFO mode asks (DeduplicationScope
messageGroup, FifoThroughputLimit perMessageGroupId); messages spread over `groups` groups in
turn, each with its own deduplication id, and one batch in `COPY_EVERY` also carries the first
message of the producer's batch before (same group, id and body): a retry whose copy must never
be delivered. (A send holding a key seen before waits for its slot's adoption, a commit, to
answer with the original's id; a retry in every batch would time retries, not sends.)

Order, as SQS promises it: a message whose send was answered before another's send began, in
the same group, is received first. `FifoCheck` records each send's start and answer and each
message's first receive, and counts the pairs received the other way round.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from okuri.engine import QueueAttrs, SendRequest

QUEUE = "scaleout.fifo"
GROUPS_MAX = 100_000
COPY_EVERY = 10
ATTRS = QueueAttrs(
    fifo=True,
    extra={"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
)


def group_of(seq: int, groups: int) -> str:
    return f"g{seq % groups}"


def request(body: bytes, seq: int, groups: int) -> SendRequest:
    """Message `seq`'s send: its group in turn, its deduplication id its number."""
    return SendRequest(body, group_id=group_of(seq, groups), dedup_id=str(seq))


@dataclass
class FifoCheck:
    """What the FIFO promises looked like from the clients' side."""

    groups: int
    began_s: dict[int, float] = field(default_factory=dict)  # message -> its send began
    answered_s: dict[int, float] = field(default_factory=dict)  # message -> its send answered
    received: list[int] = field(default_factory=list)  # first receives, in order
    ids: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))

    def sent(self, seqs: list[int], began_s: float, answered_s: float) -> None:
        for s in seqs:
            self.began_s.setdefault(s, began_s)
            self.answered_s.setdefault(s, answered_s)

    def receive(self, seq: int, message_id: str, first: bool) -> None:
        self.ids[seq].add(message_id)
        if first:
            self.received.append(seq)

    def duplicates_delivered(self) -> int:
        """Messages received under two message ids: a copy the window should have caught."""
        return sum(1 for ids in self.ids.values() if len(ids) > 1)

    def out_of_order(self) -> int:
        """Messages received after one of their group whose send began after theirs was
        answered."""
        latest_began: dict[str, float] = {}
        wrong = 0
        for seq in self.received:
            g = group_of(seq, self.groups)
            answered = self.answered_s.get(seq)
            if answered is not None and answered < latest_began.get(g, float("-inf")):
                wrong += 1
            began = self.began_s.get(seq)
            if began is not None:
                latest_began[g] = max(latest_began.get(g, float("-inf")), began)
        return wrong
