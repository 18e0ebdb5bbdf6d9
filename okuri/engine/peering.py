"""Commits forwarded between nodes: the wire format, and what a node knows of its peers.

A node whose queue has a leader elsewhere (okuri/core/leadership.py) sends the operations of
its commit window to that node instead of compare-and-swapping the manifest itself; the leader
applies them in its own next commit and answers their results with the manifest it wrote, so
the follower's cache is as fresh as a read would have made it. Only per-message operations
travel (leases, deletes, visibility changes, dead-letter marks, releases, and a FIFO send's
wait for its slot to be adopted): anything rarer is committed where it was asked. With a
standard queue's operations go the slots the follower knows past the cursor, so the leader
adopts them without reading them; a FIFO queue's leader reads what it adopts itself, since
judging duplicates needs every id in the deduplication window. Back with a lease's answer go
the segments its grants came from that the leader holds (below, "replies").

Nothing here opens a connection: the server supplies a `PeerClient`. Without one (the
simulator, an embedded engine) every node commits for itself, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from okuri import limits
from okuri.core.transitions import (
    Ack,
    Adopt,
    ChangeVisibility,
    Grant,
    Lease,
    LeaseResult,
    MarkDead,
    Op,
    Reach,
    Release,
    Result,
)
from okuri.errors import OkuriError

FORWARDED = (Lease, Ack, ChangeVisibility, MarkDead, Release, Reach)


class PeerUnreachable(OkuriError):
    """The leader did not take the commit, or may have taken it without answering.

    Either way the follower commits the same operations itself: every one of them is safe to
    apply twice (a second delete or release finds the message finished or its lease gone; a
    second lease only hides other messages until their visibility runs out, as a node that
    dies with leases taken ahead does).
    """


class PeerRequestInvalid(OkuriError):
    """A forwarded commit that does not decode, or names another life of the queue."""


class PeerClient(Protocol):
    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        """POST a forwarded commit to the node at `url`; its reply body. Raises
        PeerUnreachable for anything but a complete answer."""


@dataclass
class Peering:
    """One engine's side of forwarding: how to reach peers, and where they reach it.

    `url` empty: this node cannot be reached, so it never leads and never forwards (its
    leader could not hand the lead back). `scope` names this engine among a node's engines
    (one per region) in the requests it sends.
    """

    client: PeerClient | None = None
    url: str = ""
    scope: str = ""
    _passed_over: dict[str, float] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return self.client is not None and bool(self.url)

    def pass_over(self, node: str, now_s: float) -> None:
        """`node` did not answer: commit without it for a while (and take its lead)."""
        self._passed_over[node] = now_s + limits.peer_retry_s

    def passed_over(self, now_s: float) -> str:
        """The leader this node is not forwarding to at the moment, if any."""
        for node, until_s in list(self._passed_over.items()):
            if until_s > now_s:
                return node
            del self._passed_over[node]
        return ""


@dataclass(frozen=True, slots=True)
class CommitRequest:
    queue: str
    incarnation: str
    ops: list[Op]
    slots: list[Adopt]
    segments: bool = False  # send back the segments of the messages a lease takes


def forwardable(ops: Sequence[Op]) -> bool:
    return all(isinstance(op, FORWARDED) for op in ops)


# --- requests --------------------------------------------------------------------------------


def _op_json(op: Op) -> list[Any]:
    match op:
        case Lease():
            return ["L", op.max_messages, op.visibility_ms, *([op.log] if op.log else [])]
        case Ack():
            return ["A", op.seq, op.idx, op.epoch, op.incarnation]
        case ChangeVisibility():
            return ["V", op.seq, op.idx, op.epoch, op.incarnation, op.visibility_ms]
        case MarkDead():
            return ["D", op.seq, op.idx, op.epoch, op.incarnation]
        case Release():
            return ["R", op.seq, op.idx, op.epoch, op.incarnation, op.until_ms]
        case Reach():
            return ["H", op.seq]
    raise ValueError(f"not forwarded: {op!r}")


def encode_request(req: CommitRequest) -> bytes:
    return orjson.dumps(
        {
            "q": req.queue,
            "inc": req.incarnation,
            "ops": [_op_json(op) for op in req.ops],
            "slots": [_slot_json(a) for a in req.slots],
            **({"segs": 1} if req.segments else {}),
        }
    )


def _int(v: Any) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ValueError(f"not a count: {v!r}")
    return v


def _str(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"not a string: {v!r}")
    return v


def _op(raw: list[Any]) -> Op:
    kind, *a = raw
    if kind == "L" and len(a) in (2, 3):
        max_messages = _int(a[0])
        if not 1 <= max_messages <= limits.lease_ahead_messages_max + limits.lease_messages_max:
            raise ValueError("lease size out of range")
        log = _str(a[2]) if len(a) == 3 else ""
        if len(log) > limits.ack_log_id_chars_max:
            raise ValueError("ack log id too long")
        return Lease(max_messages, _int(a[1]), log)
    if (kind in ("A", "D", "R") and len(a) == 4) or (kind == "R" and len(a) == 5):
        seq, idx, epoch, inc = _int(a[0]), _int(a[1]), _int(a[2]), _str(a[3])
        if kind == "A":
            return Ack(seq, idx, epoch, inc)
        if kind == "D":
            return MarkDead(seq, idx, epoch, inc)
        return Release(seq, idx, epoch, inc, _int(a[4]) if len(a) == 5 else 0)
    if kind == "H" and len(a) == 1:
        return Reach(_int(a[0]))
    if kind == "V" and len(a) == 5:
        return ChangeVisibility(_int(a[0]), _int(a[1]), _int(a[2]), _int(a[4]), _str(a[3]))
    raise ValueError(f"unknown operation {kind!r}")


def _slot_json(a: Adopt) -> list[Any]:
    return [a.seq, a.sid, a.count, a.sent_ms, a.delays]


def _slot(raw: list[Any]) -> Adopt:
    seq, sid, count, sent_ms, delays = raw
    return Adopt(
        _int(seq),
        _str(sid),
        _int(count),
        _int(sent_ms),
        tuple((_int(i), _int(at)) for i, at in delays),
    )


def decode_request(body: bytes) -> CommitRequest:
    try:
        d = orjson.loads(body)
        ops = [_op(raw) for raw in d["ops"]]
        if not ops or len(ops) > limits.commit_ops_max:
            raise ValueError("no operations, or too many")
        slots = [_slot(raw) for raw in d["slots"][: limits.probe_segments_max]]
        return CommitRequest(_str(d["q"]), _str(d["inc"]), ops, slots, d.get("segs") == 1)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise PeerRequestInvalid(f"forwarded commit unreadable: {err}") from err


# --- replies: a JSON line of results and the etag, then the manifest as stored, then any
# segments the request asked for -------------------------------------------------------------
#
# A lease forwarded to a lane's leader takes messages of segments its writer, usually that
# leader, holds in memory, where the asking node has most often never read them: sent with the
# answer, they spare it a GET per receive. The asking node checks each against the manifest as
# it checks a read (okuri/engine/slot_log.py, `segment_for`), so a segment sent wrong is read
# again.


@dataclass(frozen=True, slots=True)
class CommitReply:
    results: list[Result]
    etag: str
    manifest: bytes  # as stored after the commit
    segments: list[tuple[int, bytes]] = field(default_factory=list)  # (slot, encoded segment)


def _grants(grants: tuple[Grant, ...]) -> list[list[int]]:
    return [[g.seq, g.idx, g.epoch, g.first_receive_ms, g.until_ms] for g in grants]


def _result_json(r: Result) -> Any:
    if isinstance(r, LeaseResult):
        return {"g": _grants(r.granted), "d": _grants(r.dead)}
    return r


def leased_slots(results: Sequence[Result]) -> list[int]:
    """The slots whose messages `results` granted, each once, in order."""
    seqs = [g.seq for r in results if isinstance(r, LeaseResult) for g in r.granted]
    return list(dict.fromkeys(seqs))


def encode_reply(reply: CommitReply) -> bytes:
    head: dict[str, Any] = {"results": [_result_json(r) for r in reply.results], "etag": reply.etag}
    if reply.segments:
        head["mlen"] = len(reply.manifest)
        head["segs"] = [[seq, len(data)] for seq, data in reply.segments]
    segments = (data for _, data in reply.segments)
    return b"".join([orjson.dumps(head), b"\n", reply.manifest, *segments])


def _result(raw: Any) -> Result:
    if isinstance(raw, dict):
        return LeaseResult(
            tuple(Grant(*g) for g in raw["g"]), tuple(Grant(*g) for g in raw["d"])
        )
    if raw in ("acked", "stale", "gone", "expired", "ok") or isinstance(raw, bool):
        return raw  # type: ignore[no-any-return]
    raise ValueError(f"unknown result {raw!r}")


def _segments(rest: bytes, lengths: Any) -> list[tuple[int, bytes]]:
    out, at = [], 0
    for seq, n in lengths:
        if _int(n) > len(rest) - at:
            raise ValueError("segments cut short")
        out.append((_int(seq), rest[at : at + n]))
        at += n
    if at != len(rest):
        raise ValueError("bytes after the segments")
    return out


def decode_reply(body: bytes) -> CommitReply:
    """Raises PeerUnreachable for a reply that is not one."""
    head, sep, rest = body.partition(b"\n")
    try:
        d = orjson.loads(head)
        segments: list[tuple[int, bytes]] = []
        manifest = rest
        if "mlen" in d:
            mlen = _int(d["mlen"])
            manifest, rest = rest[:mlen], rest[mlen:]
            segments = _segments(rest, d["segs"])
        if not sep or not manifest:
            raise ValueError("no manifest")
        results = [_result(r) for r in d["results"]]
        return CommitReply(results, _str(d["etag"]), manifest, segments)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as err:
        raise PeerUnreachable(f"forwarded commit's reply unreadable: {err}") from err
