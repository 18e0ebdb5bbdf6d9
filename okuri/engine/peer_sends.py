"""FIFO sends forwarded to a partition's leader: the wire format.

A high-throughput FIFO queue's partition (okuri/engine/partitions.py) is written by every node
whose clients send to its groups. Written by all of them at once, its slot log is raced for (a
loser reads forward and writes again) and a send can rarely answer before its slot is adopted,
since no node holds every slot the deduplication window spans. So a node that sees another
lead the partition's lane forwards its checked messages there, and the leader writes them into
its own next segment, where it holds the whole window and answers at once
(`FifoSlots.surely_original`). The forward rides the commit endpoint (okuri/server/peers.py),
told apart by its first byte; a forward without a complete answer is written by the node that
asked, and a copy the leader wrote too is judged a duplicate by its deduplication key.

Body: `S`, a JSON line (`q` the lane, `inc` its incarnation), then the messages as one segment
(okuri/core/message.py). Reply: a JSON list, one item a message: `[id, sent_ms, duplicate,
sequence number]`, or `["E", kind, text]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from okuri import limits
from okuri.core.message import Message, Segment, SegmentCorrupt, decode_segment, encode_segment
from okuri.engine.peering import PeerRequestInvalid, PeerUnreachable
from okuri.engine.types import SendResult
from okuri.errors import QueueDoesNotExist, Unavailable

MARK = b"S"  # a forwarded commit's body is JSON, so it starts with "{"


def is_send(body: bytes) -> bool:
    return body[:1] == MARK


def encode_send(queue: str, incarnation: str, messages: Sequence[Message]) -> bytes:
    head = orjson.dumps({"q": queue, "inc": incarnation})
    return MARK + head + b"\n" + encode_segment(Segment("", tuple(messages)))


def decode_send(body: bytes) -> tuple[str, str, list[Message]]:
    """(lane, incarnation, messages); PeerRequestInvalid for anything else."""
    head, sep, segment = body[1:].partition(b"\n")
    try:
        d = orjson.loads(head)
        queue, incarnation = d["q"], d["inc"]
        if not sep or not isinstance(queue, str) or not isinstance(incarnation, str):
            raise ValueError("no lane named")
        messages = list(decode_segment(segment).messages)
        if not 0 < len(messages) <= limits.segment_messages_max:
            raise ValueError("no messages, or too many")
        if any(m.group_id is None or m.dedup_key is None for m in messages):
            raise ValueError("a FIFO message without its group or deduplication key")
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, SegmentCorrupt) as err:
        raise PeerRequestInvalid(f"forwarded send unreadable: {err}") from err
    return queue, incarnation, messages


def _result_json(r: SendResult | Exception) -> list[Any]:
    if isinstance(r, SendResult):
        return [r.message_id, r.sent_ms, r.duplicate, r.sequence_number]
    kind = "gone" if isinstance(r, QueueDoesNotExist) else "unavailable"
    return ["E", kind, str(r)]


def encode_send_reply(results: Sequence[SendResult | Exception]) -> bytes:
    return orjson.dumps([_result_json(r) for r in results])


def _result(raw: Any) -> SendResult | Exception:
    if raw[0] == "E":
        kind, text = raw[1], str(raw[2])
        return QueueDoesNotExist(text) if kind == "gone" else Unavailable(text)
    message_id, sent_ms, duplicate, seq = raw
    if not isinstance(message_id, str) or not isinstance(sent_ms, int):
        raise ValueError("not a send's result")
    if not isinstance(duplicate, bool) or not isinstance(seq, str):
        raise ValueError("not a FIFO send's result")
    return SendResult(message_id, sent_ms, duplicate, seq)


def decode_send_reply(body: bytes, count: int) -> list[SendResult | Exception]:
    """The leader's answers to `count` messages; PeerUnreachable for a reply that is not."""
    try:
        results = [_result(raw) for raw in orjson.loads(body)]
        if len(results) != count:
            raise ValueError("a forwarded send answered the wrong number of results")
    except (orjson.JSONDecodeError, TypeError, ValueError, IndexError) as err:
        raise PeerUnreachable(f"forwarded send's reply unreadable: {err}") from err
    return results
