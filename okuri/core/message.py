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

    def delays(self) -> tuple[tuple[int, int], ...]:
        """(index, visible_at_ms) of each message that was sent with a delay."""
        return tuple(
            (i, m.visible_at_ms) for i, m in enumerate(self.messages) if m.visible_at_ms > m.sent_ms
        )


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
                )
            )
            offset = end
        return Segment(sid=header["sid"], messages=tuple(messages))
    except (orjson.JSONDecodeError, KeyError, TypeError) as err:
        raise SegmentCorrupt(f"segment header unreadable: {err}") from err
