"""The manifest: a queue's whole mutable state, advanced only by compare-and-swap.

It holds the queue's attributes, the slot cursor (`next_seq`: every slot below it has been read
into the manifest or skipped by a purge), and, per adopted segment, which messages are done and
the lease of every message that has been received or delayed. Message bodies never live here:
they stay in the immutable segments, so the manifest stays a few KB however large messages are.

`version` grows by one on every write. Since an S3 etag is the MD5 of the body, two successive
manifests must never be byte-equal, or a writer holding a stale etag could win (ABA).

FIFO queues add two things, both small: each adopted segment's message groups (a group's
order is slot order, then index), and the deduplication window: a checkpoint (slot, when it
was adopted) at most once a second for the last five minutes, and which adopted messages were
duplicates. The deduplication ids themselves stay in the segments, which a FIFO queue keeps
until they leave the window (see okuri/engine/dedup.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from okuri import limits

FORMAT = 1
# A manifest with open ack logs: a node that does not know them must refuse it (it would drop
# them on its next write and lease messages whose deletes sit in a log), not misread it.
FORMAT_WITH_LOGS = 2
# A queue's manifest listing lanes: a node that does not know them must refuse it (it would drop
# the list on its next write, and the lanes' messages with it), not misread it.
FORMAT_WITH_LANES = 3


class ManifestCorrupt(ValueError):
    """A manifest object does not decode."""


@dataclass(frozen=True, slots=True)
class QueueAttrs:
    visibility_timeout_s: int = limits.visibility_s_default
    delay_s: int = 0
    retention_s: int = limits.retention_s_default
    max_message_bytes: int = limits.message_bytes_max
    receive_wait_s: int = 0
    max_receive_count: int | None = None
    dead_letter_queue: str | None = None
    fifo: bool = False
    # Seconds without use after which the queue is deleted (okuri/core/expiry.py); None: never.
    expires_s: int | None = None
    # Attributes the engine stores but never interprets (tags, policies, redrive-allow policy).
    extra: dict[str, str] = field(default_factory=dict)

    def extra_bytes(self) -> int:
        """UTF-8 bytes of the attributes stored verbatim, names included: what every manifest
        write of the queue carries beyond its fixed fields, and what an operator bounds."""
        return sum(len(k.encode()) + len(v.encode()) for k, v in self.extra.items())

    def to_json(self) -> dict[str, Any]:
        return {
            "vis": self.visibility_timeout_s,
            "delay": self.delay_s,
            "ret": self.retention_s,
            "max": self.max_message_bytes,
            "wait": self.receive_wait_s,
            "mrc": self.max_receive_count,
            "dlq": self.dead_letter_queue,
            "extra": self.extra,
            **({"fifo": True} if self.fifo else {}),
            **({"exp": self.expires_s} if self.expires_s is not None else {}),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> QueueAttrs:
        return QueueAttrs(
            visibility_timeout_s=d["vis"],
            delay_s=d["delay"],
            retention_s=d["ret"],
            max_message_bytes=d["max"],
            receive_wait_s=d["wait"],
            max_receive_count=d["mrc"],
            dead_letter_queue=d["dlq"],
            extra=dict(d.get("extra") or {}),
            fifo=bool(d.get("fifo", False)),
            expires_s=d.get("exp"),
        )


# A message's lease: (receives, until_ms, first_receive_ms). receives doubles as the lease epoch:
# each receive bumps it, so a receipt minted before the latest receive is stale by construction.
# A delayed message that was never received has (0, visible_at_ms, 0).
Lease = tuple[int, int, int]


@dataclass(slots=True)
class SegmentState:
    seq: int
    sid: str
    count: int
    sent_ms: int
    done: int = 0  # bitmask of finished messages (acked, expired, dead-lettered)
    leases: dict[int, Lease] = field(default_factory=dict)
    groups: tuple[str, ...] | None = None  # FIFO: each message's group, by index

    def is_done(self, idx: int) -> bool:
        return bool(self.done >> idx & 1)

    def all_done(self) -> bool:
        return self.done == (1 << self.count) - 1

    def remaining(self) -> int:
        return self.count - self.done.bit_count()

    def copy(self) -> SegmentState:
        return SegmentState(
            self.seq, self.sid, self.count, self.sent_ms, self.done, dict(self.leases), self.groups
        )


@dataclass(slots=True)
class QueueState:
    name: str
    incarnation: str
    created_ms: int
    attrs: QueueAttrs
    modified_ms: int = 0
    version: int = 1
    next_seq: int = 0
    segments: dict[int, SegmentState] = field(default_factory=dict)
    # (seq, segment id) of the latest adopted slots: lets a producer learn whether the slot it
    # wrote was read, or was a stale slot freed before its write landed.
    recent: list[tuple[int, str]] = field(default_factory=list)
    # Tokens of the latest commits: lets a writer whose CAS reply was lost learn if it landed.
    commits: list[str] = field(default_factory=list)
    purged_ms: int = 0
    # FIFO deduplication window: (first slot adopted in that second, when), oldest first; every
    # slot from the first checkpoint up is kept in the bucket (its ids may still be matched).
    window: list[tuple[int, int]] = field(default_factory=list)
    # Slot -> bitmask of its messages that were duplicates when adopted (slots in the window,
    # or not yet loaded).
    dups: dict[int, int] = field(default_factory=dict)
    # FIFO: slots from here up to the cursor are adopted (their order and verdicts fixed) but
    # not yet loaded into `segments`: a deep backlog waits in its segments, as on a standard
    # queue. -1: the cursor (every adopted slot is loaded; always so on a standard queue).
    load_seq: int = -1
    # The node that commits for the others while its lead lasts (a hint for speed, never for
    # safety: every write is still a compare-and-swap): (node id, URL, until_ms), or None.
    lead: tuple[str, str, int] | None = None
    # Queue expiry (okuri/core/expiry.py): when the queue was last used, as recorded (at most
    # every quarter of expires_s; 0: never recorded, counted from `created_ms`), and, when not
    # 0, when a node found it expired: a tombstone, read as "no such queue" until deleted.
    used_ms: int = 0
    gone_ms: int = 0
    # Open ack logs (okuri/engine/ack_logs.py): log id -> the messages a follower leased under
    # it, whose deletes it may have recorded in the log's object rather than here. Such a
    # message is leased again only once a committer has closed the log and applied its acks.
    logs: dict[str, set[tuple[int, int]]] = field(default_factory=dict)
    # The queue's lanes beside its own slot log (okuri/engine/lanes.py), by id, oldest first;
    # only ever in a queue's manifest, never in a lane's.
    lanes: list[str] = field(default_factory=list)
    # A lane being retired (okuri/engine/lanes.py): when a node found it quiet and closed it
    # to new sends (0: open). Only ever in a lane's manifest.
    closed_ms: int = 0

    def __post_init__(self) -> None:
        if self.load_seq < 0:
            self.load_seq = self.next_seq

    def copy(self) -> QueueState:
        return replace(
            self,
            segments={s: st.copy() for s, st in self.segments.items()},
            recent=list(self.recent),
            commits=list(self.commits),
            window=list(self.window),
            dups=dict(self.dups),
            logs={log: set(places) for log, places in self.logs.items()},
            lanes=list(self.lanes),
        )

    def retention_cutoff(self, now_ms: int) -> int:
        """A message sent at or before this time has outlived the queue's retention period."""
        return now_ms - self.attrs.retention_s * 1000

    def window_start(self) -> int:
        """The oldest slot whose deduplication ids still count (the cursor if none do)."""
        return self.window[0][0] if self.window else self.next_seq

    def loaded_upto(self) -> int:
        """One past the last slot loaded into `segments` (the cursor on a standard queue)."""
        return self.load_seq if self.attrs.fifo else self.next_seq

    def kept_from(self) -> int:
        """The lowest slot whose object must stay in the bucket whether finished or not."""
        return min(self.window_start(), self.loaded_upto())

    def recent_sid(self, seq: int) -> str | None:
        for s, sid in self.recent:
            if s == seq:
                return sid
        seg = self.segments.get(seq)
        return seg.sid if seg else None


def encode_state(st: QueueState) -> bytes:
    return orjson.dumps(
        {
            "f": FORMAT_WITH_LANES if st.lanes else FORMAT_WITH_LOGS if st.logs else FORMAT,
            "name": st.name,
            "inc": st.incarnation,
            "v": st.version,
            "created": st.created_ms,
            "modified": st.modified_ms,
            "attrs": st.attrs.to_json(),
            "next": st.next_seq,
            "segs": [
                [
                    g.seq,
                    g.sid,
                    g.count,
                    g.sent_ms,
                    format(g.done, "x"),
                    [[i, *lease] for i, lease in sorted(g.leases.items())],
                    *([list(g.groups)] if g.groups is not None else []),
                ]
                for g in st.segments.values()
            ],
            "recent": [list(r) for r in st.recent],
            "commits": st.commits,
            "purged": st.purged_ms,
            **({"window": [list(w) for w in st.window]} if st.window else {}),
            **({"dups": [[s, format(m, "x")] for s, m in st.dups.items()]} if st.dups else {}),
            **({"load": st.load_seq} if st.load_seq != st.next_seq else {}),
            **({"lead": list(st.lead)} if st.lead is not None else {}),
            **({"used": st.used_ms} if st.used_ms else {}),
            **({"gone": st.gone_ms} if st.gone_ms else {}),
            **({"logs": {k: sorted(v) for k, v in st.logs.items()}} if st.logs else {}),
            **({"lanes": st.lanes} if st.lanes else {}),
            **({"closed": st.closed_ms} if st.closed_ms else {}),
        }
    )


def _lead(raw: Any) -> tuple[str, str, int] | None:
    if raw is None:
        return None
    node, url, until_ms = raw
    if not (isinstance(node, str) and isinstance(url, str) and isinstance(until_ms, int)):
        raise ManifestCorrupt("manifest lead unreadable")
    return (node, url, until_ms)


def decode_state(data: bytes) -> QueueState:
    try:
        d = orjson.loads(data)
        if not isinstance(d, dict):
            raise ManifestCorrupt("manifest is not a JSON object")
        if d.get("f") not in (FORMAT, FORMAT_WITH_LOGS, FORMAT_WITH_LANES):
            raise ManifestCorrupt(f"unknown manifest format {d.get('f')!r}")
        segments = {}
        for seq, sid, count, sent_ms, done_hex, leases, *groups in d["segs"]:
            segments[seq] = SegmentState(
                seq,
                sid,
                count,
                sent_ms,
                int(done_hex, 16),
                {i: (r, u, f) for i, r, u, f in leases},
                tuple(groups[0]) if groups else None,
            )
        return QueueState(
            name=d["name"],
            incarnation=d["inc"],
            created_ms=d["created"],
            modified_ms=d["modified"],
            attrs=QueueAttrs.from_json(d["attrs"]),
            version=d["v"],
            next_seq=d["next"],
            segments=segments,
            recent=[(s, sid) for s, sid in d["recent"]],
            commits=list(d["commits"]),
            purged_ms=d["purged"],
            window=[(s, at) for s, at in d.get("window", [])],
            dups={s: int(m, 16) for s, m in d.get("dups", [])},
            load_seq=d["load"] if "load" in d else d["next"],
            lead=_lead(d.get("lead")),
            used_ms=int(d.get("used", 0)),
            gone_ms=int(d.get("gone", 0)),
            logs={
                str(log): {(int(seq), int(idx)) for seq, idx in places}
                for log, places in d.get("logs", {}).items()
            },
            lanes=[str(lane) for lane in d.get("lanes", [])],
            closed_ms=int(d.get("closed", 0)),
        )
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        if isinstance(err, ManifestCorrupt):
            raise
        raise ManifestCorrupt(f"manifest unreadable: {err}") from err
