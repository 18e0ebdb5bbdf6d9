"""Messages and the immutable segment objects that carry them.

A segment is written once into a slot and never edited, so nodes may cache it forever and races
over message content cannot exist. Layout: b"OKS1", a 4-byte big-endian header length, a JSON
header (segment id and per-message metadata), then the bodies back to back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

import orjson

MAGIC = b"OKS1"


class SegmentCorrupt(ValueError):
    """A segment object does not decode; it was not written by okuri."""


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    body: bytes
    sent_ms: int
    visible_at_ms: int
    attributes: dict[str, Any] = field(default_factory=dict)
    system_attributes: dict[str, Any] = field(default_factory=dict)
    group_id: str | None = None
    dead_letter_source: str | None = None
    # FIFO: the key a duplicate is recognised by (the deduplication id, scoped to the group when
    # the queue deduplicates per group); None on standard queues.
    dedup_key: str | None = None
    # A dead letter's receives in the queue it left: its count goes on from there, as on SQS.
    receives_before: int = 0

    @property
    def size_bytes(self) -> int:
        return len(self.body)


@dataclass(frozen=True, slots=True)
class Segment:
    sid: str
    messages: tuple[Message, ...]

    @property
    def sent_ms(self) -> int:
        return min((m.sent_ms for m in self.messages), default=0)

    def groups(self) -> tuple[str, ...]:
        """Each message's group (FIFO segments give every message one)."""
        return tuple(m.group_id or "" for m in self.messages)

    def delays(self) -> tuple[tuple[int, int], ...]:
        """(index, visible_at_ms) of each message that was sent with a delay."""
        return tuple(
            (i, m.visible_at_ms) for i, m in enumerate(self.messages) if m.visible_at_ms > m.sent_ms
        )


SEQUENCE_BASE = 10**19  # FIFO sequence numbers print as 20 digits, as SQS's do
SEQUENCE_INDEX_BITS = 16  # above segment_messages_max


SEQUENCE_PARTITION_BITS = 6  # a partition's lane (okuri/engine/partitions.py), of lanes_max


def sequence_number(seq: int, idx: int, partition: int | None = None) -> str:
    """A FIFO message's SequenceNumber: it grows with slot order, which is group order. In a
    partition's lane (a group lives in one) the partition goes in the lowest bits, so no two
    messages of the queue share a number and each group's still grow."""
    number = (seq << SEQUENCE_INDEX_BITS) + idx
    if partition is not None:
        number = (number << SEQUENCE_PARTITION_BITS) + partition
    return str(SEQUENCE_BASE + number)


def encode_segment(segment: Segment) -> bytes:
    metas = []
    for m in segment.messages:
        meta: dict[str, Any] = {"id": m.id, "len": len(m.body), "sent": m.sent_ms}
        if m.visible_at_ms != m.sent_ms:
            meta["vis"] = m.visible_at_ms
        if m.attributes:
            meta["attrs"] = m.attributes
        if m.system_attributes:
            meta["sys"] = m.system_attributes
        if m.group_id is not None:
            meta["grp"] = m.group_id
        if m.dead_letter_source is not None:
            meta["dls"] = m.dead_letter_source
        if m.dedup_key is not None:
            meta["ddk"] = m.dedup_key
        if m.receives_before:
            meta["rcv"] = m.receives_before
        metas.append(meta)
    header = orjson.dumps({"sid": segment.sid, "msgs": metas})
    return b"".join(
        [MAGIC, struct.pack(">I", len(header)), header, *(m.body for m in segment.messages)]
    )


def decode_segment(data: bytes) -> Segment:
    if len(data) < 8 or data[:4] != MAGIC:
        raise SegmentCorrupt("not an okuri segment")
    (header_len,) = struct.unpack(">I", data[4:8])
    try:
        header = orjson.loads(data[8 : 8 + header_len])
        offset = 8 + header_len
        messages = []
        for meta in header["msgs"]:
            length = meta["len"]
            if not isinstance(length, int) or isinstance(length, bool) or length < 0:
                raise SegmentCorrupt("segment body length invalid")
            end = offset + length
            if end > len(data):
                raise SegmentCorrupt("segment body truncated")
            messages.append(
                Message(
                    id=meta["id"],
                    body=data[offset:end],
                    sent_ms=meta["sent"],
                    visible_at_ms=meta.get("vis", meta["sent"]),
                    attributes=meta.get("attrs", {}),
                    system_attributes=meta.get("sys", {}),
                    group_id=meta.get("grp"),
                    dead_letter_source=meta.get("dls"),
                    dedup_key=meta.get("ddk"),
                    receives_before=meta.get("rcv", 0),
                )
            )
            offset = end
        return Segment(sid=header["sid"], messages=tuple(messages))
    except (orjson.JSONDecodeError, KeyError, TypeError) as err:
        raise SegmentCorrupt(f"segment header unreadable: {err}") from err
