"""The FIFO rules both surfaces share (okuri/core/fifo.py): the ids' form, the content-based
id, and the key duplicates match on."""

from __future__ import annotations

import hashlib

from okuri.core.fifo import content_dedup_id, dedup_key, fifo_setting, is_fifo_id


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
