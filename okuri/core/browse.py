"""Browsing a queue without leasing: what one message looks like to an operator, and the
cursor that pages through a queue in slot order (oldest first).

Pure: the engine reads the manifest and the segments (okuri/engine/browse.py) and asks here
how each message stands at `now_ms`; nothing here reads a clock or changes a manifest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from okuri.core.message import Message, sequence_number
from okuri.core.state import Lease

MessageState = Literal["visible", "in_flight", "delayed"]

# A page's cursor: the slot and index of the last message it showed ("12.3").
_POSITION = re.compile(r"(0|[1-9][0-9]{0,17})\.(0|[1-9][0-9]{0,4})")
# A position in a queue with lanes: which log (0 the queue's own, k its k-th lane), then where.
_LANE_POSITION = re.compile(r"([1-9][0-9]{0,3}):(.*)")


class PositionInvalid(ValueError):
    """A browse cursor that no page of okuri's made."""


@dataclass(frozen=True, slots=True)
class MessageView:
    """One message as an operator browsing a queue sees it. `until_ms`: when an in-flight
    message's lease, or a delayed message's delay, runs out (0 when visible). `receives`
    counts every lease, those in a queue it was dead-lettered from included.
    `dead_letter_source`: the queue it was dead-lettered from, when it was."""

    id: str
    body: bytes
    attributes: dict[str, Any]
    sent_ms: int
    receives: int
    first_receive_ms: int
    state: MessageState
    until_ms: int
    group: str | None
    sequence_number: str | None
    dead_letter_source: str | None


@dataclass(frozen=True, slots=True)
class BrowsePage:
    """A page of messages, oldest first; `next`: pass as `after` for the next page (None: the
    queue had no more when this page was read)."""

    messages: tuple[MessageView, ...]
    next: str | None


def position(seq: int, idx: int) -> str:
    return f"{seq}.{idx}"


def parse_position(text: str) -> tuple[int, int]:
    """(slot, index) of a cursor `position` made; PositionInvalid otherwise."""
    m = _POSITION.fullmatch(text)
    if m is None:
        raise PositionInvalid(f"{text!r} is not a browse cursor (the previous page's next)")
    return int(m.group(1)), int(m.group(2))


def view(
    m: Message,
    seq: int,
    idx: int,
    lease: Lease | None,
    now_ms: int,
    fifo: bool,
    partition: int | None = None,
) -> MessageView:
    """How message `m` in slot `seq` at `idx` stands at `now_ms`, given its manifest lease
    (None: never leased or delayed in the manifest, or not adopted yet)."""
    receives, until_ms, first_ms = lease or (0, 0, 0)
    state: MessageState = "visible"
    if lease is None:
        if m.visible_at_ms > now_ms:
            state, until_ms = "delayed", m.visible_at_ms
        else:
            until_ms = 0
    elif until_ms > now_ms:
        state = "in_flight" if receives else "delayed"
    else:
        until_ms = 0
    return MessageView(
        id=m.id,
        body=m.body,
        attributes=m.attributes,
        sent_ms=m.sent_ms,
        receives=m.receives_before + receives,
        first_receive_ms=first_ms,
        state=state,
        until_ms=until_ms,
        group=m.group_id,
        sequence_number=sequence_number(seq, idx, partition) if fifo else None,
        dead_letter_source=m.dead_letter_source,
    )


def position_in_lane(lane: int, pos: str) -> str:
    """`pos` (a `position`) in log `lane` of a queue with lanes (0: the queue's own log, whose
    positions read as they always did)."""
    return pos if lane == 0 else f"{lane}:{pos}"


def lane_position(text: str | None) -> tuple[int, tuple[int, int]]:
    """(log, (slot, index)) of a position `position_in_lane` made, or of the start for None;
    PositionInvalid otherwise."""
    if text is None:
        return 0, (0, 0)
    m = _LANE_POSITION.fullmatch(text)
    if m is None:
        return 0, parse_position(text)
    return int(m.group(1)), parse_position(m.group(2))
