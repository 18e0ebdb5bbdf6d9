"""The FIFO rules both surfaces share (okuri/core/fifo.py): the ids' form, the content-based
id, the key duplicates match on, and the scope a queue goes on deduplicating with once its
DeduplicationScope was changed."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from okuri.core.fifo import (
    content_dedup_id,
    dedup_key,
    dedup_scope,
    fifo_setting,
    is_fifo_id,
    keep_dedup_scope,
)
from okuri.core.state import QueueAttrs, QueueState, decode_state, encode_state
from okuri.core.transitions import SetAttributes, apply

T0 = 1_700_000_000_000


def test_an_id_is_one_to_128_printable_ascii_characters_without_spaces() -> None:
    assert is_fifo_id("a") and is_fifo_id("!" * 128) and is_fifo_id("order-7/retry#2")
    for bad in ("", "a" * 129, "a b", "grüppe", "tab\there", "line\n", None, 7):
        assert not is_fifo_id(bad), bad


def test_the_content_based_id_of_a_text_body_is_the_sha256_of_its_utf8() -> None:
    body = "héllo"
    assert content_dedup_id(body.encode()) == hashlib.sha256(body.encode("utf-8")).hexdigest()
    assert is_fifo_id(content_dedup_id(b"\x00\xff"))  # a hex digest is itself a valid id


def test_the_key_carries_the_group_only_when_the_scope_is_the_message_group() -> None:
    assert dedup_key({}, "g", "d") == "d"
    assert dedup_key({"DeduplicationScope": "queue"}, "g", "d") == "d"
    scoped = {"DeduplicationScope": "messageGroup"}
    assert dedup_key(scoped, "g", "d") != dedup_key(scoped, "h", "d")
    assert fifo_setting({}, "ContentBasedDeduplication") == "false"


def _changed(created: dict[str, str], *changes: dict[str, str]) -> QueueState:
    """A FIFO queue created with settings `created`, its attributes then set to each of
    `changes` in turn through the manifest's transition, as SetQueueAttributes does."""
    st = QueueState("q.fifo", "inc", T0, QueueAttrs(fifo=True, extra=dict(created)))
    for change in changes:
        extra = {**st.attrs.extra, **change}
        st = apply(st, T0, [SetAttributes(replace(st.attrs, extra=extra))], "tok").state
    return st


def test_a_queue_changed_to_group_scope_goes_on_deduplicating_queue_wide() -> None:
    """Recorded from SQS: after queue -> messageGroup, an id is still a duplicate in another
    group, whether first sent before the change or after it; the new value is reported."""
    group = {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
    st = _changed({"DeduplicationScope": "queue"}, group)
    extra = st.attrs.extra
    assert fifo_setting(extra, "DeduplicationScope") == "messageGroup"
    assert dedup_scope(extra) == "queue"
    assert dedup_key(extra, "g1", "d") == dedup_key(extra, "g2", "d") == "d"


def test_a_queue_changed_to_queue_scope_goes_on_deduplicating_per_group() -> None:
    st = _changed(
        {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
        {"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"},
    )
    extra = st.attrs.extra
    assert fifo_setting(extra, "DeduplicationScope") == "queue"
    assert dedup_key(extra, "g1", "d") != dedup_key(extra, "g2", "d")


def test_the_scope_in_force_survives_later_changes_and_the_codec_and_leaves_when_set_back() -> None:
    group = {"DeduplicationScope": "messageGroup"}
    st = _changed({}, group, {"ContentBasedDeduplication": "true"})
    assert dedup_scope(st.attrs.extra) == "queue"
    st = _changed({}, group, group)
    assert dedup_scope(decode_state(encode_state(st)).attrs.extra) == "queue"
    st = _changed({}, group, {"DeduplicationScope": "queue"})
    assert st.attrs.extra == {"DeduplicationScope": "queue"}  # nothing hidden left over


def test_a_standard_queue_keeps_no_scope() -> None:
    assert keep_dedup_scope({}, {}) == {}
    st = QueueState("q", "inc", T0, QueueAttrs(extra={"tag:a": "b"}))
    st = apply(st, T0, [SetAttributes(QueueAttrs(extra={"tag:a": "c"}))], "tok").state
    assert st.attrs.extra == {"tag:a": "c"}
