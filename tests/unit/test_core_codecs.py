"""Everything the core writes to or reads from the bucket: manifests, segments, receipt handles,
object keys, and the named invariants that guard every manifest read and write.
"""

from __future__ import annotations

import base64
import struct

import orjson
import pytest

from okuri import limits
from okuri.core import keys
from okuri.core.invariants import InvariantViolation, check_state, check_step
from okuri.core.message import (
    MAGIC,
    Message,
    Segment,
    SegmentCorrupt,
    decode_segment,
    encode_segment,
)
from okuri.core.receipts import PREFIX, PREFIX_V1, Receipt
from okuri.core.state import (
    ManifestCorrupt,
    QueueAttrs,
    QueueState,
    SegmentState,
    decode_state,
    encode_state,
)
from okuri.errors import QueueError, ReceiptHandleInvalid

T0 = 1_700_000_000_000


def rich_state() -> QueueState:
    attrs = QueueAttrs(
        visibility_timeout_s=45,
        delay_s=3,
        retention_s=3_600,
        max_message_bytes=2048,
        receive_wait_s=7,
        max_receive_count=5,
        dead_letter_queue="graveyard",
        extra={"Policy": '{"Version":"2012-10-17"}', "tag:team": "ops"},
    )
    big = SegmentState(
        seq=9,
        sid="sid-big",
        count=4096,
        sent_ms=T0 + 1,
        done=(1 << 4095) | (1 << 2048) | 0b1011,
        leases={0b100: (3, T0 + 30_000, T0 - 5), 4094: (0, T0 + 900_000, 0)},
    )
    small = SegmentState(seq=7, sid="sid-small", count=2, sent_ms=T0, done=0, leases={})
    return QueueState(
        name="orders",
        incarnation="5b3f6c1e-aaaa-4bbb-8ccc-123456789abc",
        created_ms=T0 - 10_000,
        attrs=attrs,
        modified_ms=T0 - 5_000,
        version=42,
        next_seq=11,
        segments={7: small, 9: big},
        recent=[(7, "sid-small"), (8, "sid-gone"), (9, "sid-big"), (10, "sid-ten")],
        commits=["node-a.1", "node-b.17"],
        purged_ms=T0 - 7_000,
    )


# --- manifest codec ----------------------------------------------------------------------------


def test_manifest_round_trips_with_leases_big_done_masks_and_rings() -> None:
    st = rich_state()
    check_state(st)
    back = decode_state(encode_state(st))
    assert back == st
    assert back.segments[9].done == st.segments[9].done
    assert back.segments[9].is_done(4095) and not back.segments[9].is_done(4094)
    assert back.segments[9].leases[4094] == (0, T0 + 900_000, 0)
    assert list(back.segments) == [7, 9]  # slot order survives, leasing relies on it
    check_state(back)


def test_manifest_round_trips_with_default_attrs_and_no_segments() -> None:
    st = QueueState("q", "inc", T0, QueueAttrs(), modified_ms=T0)
    assert decode_state(encode_state(st)) == st


def test_manifest_round_trips_a_fully_done_full_size_segment_mask() -> None:
    st = QueueState("q", "inc", T0, QueueAttrs(), next_seq=1)
    n = limits.segment_messages_max
    st.segments[0] = SegmentState(0, "s", n, T0, done=(1 << n) - 2)
    back = decode_state(encode_state(st))
    assert back.segments[0].remaining() == 1
    assert back == st


def test_successive_versions_encode_to_different_bytes() -> None:
    st = rich_state()
    nxt = st.copy()
    nxt.version += 1
    assert encode_state(st) != encode_state(nxt)


def test_copy_is_deep_enough_that_edits_never_reach_the_original() -> None:
    st = rich_state()
    cp = st.copy()
    cp.segments[7].leases[0] = (1, 2, 3)
    cp.segments[7].done = 1
    cp.recent.append((11, "x"))
    cp.commits.append("y")
    assert st == rich_state()


def _manifest_json(**changes: object) -> bytes:
    d = orjson.loads(encode_state(rich_state()))
    d.update(changes)
    return orjson.dumps(d)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{not json", id="not-json"),
        pytest.param(b"\xff\xfe\x00garbage", id="binary"),
        pytest.param(b"[]", id="top-level-array"),
        pytest.param(b"null", id="top-level-null"),
        pytest.param(b"17", id="top-level-number"),
        pytest.param(b'"manifest"', id="top-level-string"),
        pytest.param(b"{}", id="empty-object"),
        pytest.param(_manifest_json(f=4), id="future-format"),
        pytest.param(_manifest_json(f=None), id="no-format"),
        pytest.param(_manifest_json(segs={"7": 1}), id="segs-not-a-list"),
        pytest.param(_manifest_json(segs=[[7, "sid", 2, T0, "zz", []]]), id="done-not-hex"),
        pytest.param(_manifest_json(segs=[[7, "sid", 2, T0, "0", [[0, 1, 2]]]]), id="short-lease"),
        pytest.param(_manifest_json(segs=[[7, "sid", 2]]), id="short-segment"),
        pytest.param(_manifest_json(attrs={"vis": 1}), id="attrs-missing-fields"),
        pytest.param(_manifest_json(attrs=[1, 2]), id="attrs-not-an-object"),
        pytest.param(_manifest_json(recent=[[1, "a", "b"]]), id="recent-triples"),
        pytest.param(_manifest_json(commits=None), id="commits-null"),
    ],
)
def test_corrupt_manifest_raises_manifest_corrupt(data: bytes) -> None:
    with pytest.raises(ManifestCorrupt):
        decode_state(data)


def test_manifest_without_a_required_key_is_corrupt() -> None:
    full = orjson.loads(encode_state(rich_state()))
    for key in ["name", "inc", "v", "created", "modified", "attrs", "next", "segs", "recent"]:
        d = {k: v for k, v in full.items() if k != key}
        with pytest.raises(ManifestCorrupt):
            decode_state(orjson.dumps(d))


def test_manifest_corrupt_is_a_value_error_carrying_the_cause() -> None:
    with pytest.raises(ManifestCorrupt) as info:
        decode_state(b"{not json")
    assert isinstance(info.value, ValueError)
    assert info.value.__cause__ is not None


def test_queue_attrs_round_trip_through_json() -> None:
    attrs = rich_state().attrs
    assert QueueAttrs.from_json(attrs.to_json()) == attrs
    assert QueueAttrs.from_json(QueueAttrs().to_json()) == QueueAttrs()
    legacy = QueueAttrs().to_json()
    del legacy["extra"]
    assert QueueAttrs.from_json(legacy).extra == {}


# --- segment codec -----------------------------------------------------------------------------


def msg(i: int, body: bytes, **kw: object) -> Message:
    return Message(id=f"id-{i}", body=body, sent_ms=T0 + i, visible_at_ms=T0 + i, **kw)  # type: ignore[arg-type]


def test_segment_round_trips_binary_empty_and_annotated_messages() -> None:
    every_byte = bytes(range(256)) * 3
    messages = (
        msg(0, every_byte),
        msg(1, b""),
        Message(
            id="id-2",
            body=b"delayed",
            sent_ms=T0,
            visible_at_ms=T0 + 900_000,
            attributes={"color": {"DataType": "String", "StringValue": "blue"}, "n": 3},
            system_attributes={"AWSTraceHeader": "Root=1-abc"},
            group_id="group-7",
            dead_letter_source="orders",
        ),
        msg(3, "héllo wörld ✓".encode()),
        msg(4, b"\x00"),
    )
    seg = Segment("sid-1", messages)
    back = decode_segment(encode_segment(seg))
    assert back == seg
    assert back.messages[0].body == every_byte
    assert back.messages[1].body == b""
    assert back.messages[2].visible_at_ms == T0 + 900_000
    assert back.messages[2].group_id == "group-7"
    assert back.messages[2].dead_letter_source == "orders"
    assert back.messages[4].body == b"\x00"


def test_segment_of_only_empty_bodies_round_trips() -> None:
    seg = Segment("s", (msg(0, b""), msg(1, b"")))
    assert decode_segment(encode_segment(seg)) == seg


def test_segment_layout_is_magic_length_header_bodies() -> None:
    seg = Segment("s", (msg(0, b"abc"), msg(1, b"de")))
    data = encode_segment(seg)
    assert data[:4] == MAGIC
    (hlen,) = struct.unpack(">I", data[4:8])
    header = orjson.loads(data[8 : 8 + hlen])
    assert header["sid"] == "s"
    assert [m["len"] for m in header["msgs"]] == [3, 2]
    assert data[8 + hlen :] == b"abcde"
    # fields at their defaults are left out of the header
    assert set(header["msgs"][0]) == {"id", "len", "sent"}


def test_segment_sent_ms_and_delays() -> None:
    seg = Segment(
        "s",
        (
            Message("a", b"", sent_ms=T0 + 5, visible_at_ms=T0 + 5),
            Message("b", b"", sent_ms=T0 + 2, visible_at_ms=T0 + 60_000),
            Message("c", b"", sent_ms=T0 + 9, visible_at_ms=T0 + 9),
        ),
    )
    assert seg.sent_ms == T0 + 2
    assert seg.delays() == ((1, T0 + 60_000),)
    assert seg.messages[0].size_bytes == 0


def _segment_bytes(header: object, bodies: bytes = b"") -> bytes:
    raw = orjson.dumps(header)
    return MAGIC + struct.pack(">I", len(raw)) + raw + bodies


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"OKS1", id="magic-only"),
        pytest.param(b"OKS1\x00\x00", id="short-length"),
        pytest.param(b"OKS2" + b"\x00\x00\x00\x02{}", id="wrong-magic"),
        pytest.param(b'{"sid": "s", "msgs": []}', id="plain-json"),
        pytest.param(MAGIC + struct.pack(">I", 4) + b"nope", id="header-not-json"),
        pytest.param(MAGIC + struct.pack(">I", 1000) + b'{"sid"', id="header-length-too-big"),
        pytest.param(_segment_bytes([1, 2]), id="header-array"),
        pytest.param(_segment_bytes(None), id="header-null"),
        pytest.param(_segment_bytes("x"), id="header-string"),
        pytest.param(_segment_bytes({"msgs": []}), id="no-sid"),
        pytest.param(_segment_bytes({"sid": "s"}), id="no-msgs"),
        pytest.param(_segment_bytes({"sid": "s", "msgs": [7]}), id="meta-not-object"),
        pytest.param(_segment_bytes({"sid": "s", "msgs": [{"id": "a", "sent": 1}]}), id="no-len"),
        pytest.param(
            _segment_bytes({"sid": "s", "msgs": [{"id": "a", "len": "2", "sent": 1}]}, b"ab"),
            id="len-string",
        ),
        pytest.param(
            _segment_bytes({"sid": "s", "msgs": [{"id": "a", "len": 5, "sent": 1}]}, b"ab"),
            id="body-short",
        ),
    ],
)
def test_corrupt_segment_raises_segment_corrupt(data: bytes) -> None:
    with pytest.raises(SegmentCorrupt):
        decode_segment(data)


def test_segment_truncated_anywhere_is_corrupt() -> None:
    data = encode_segment(Segment("sid", (msg(0, b"first body"), msg(1, b""), msg(2, b"last"))))
    decode_segment(data)
    for cut in range(len(data)):
        with pytest.raises(SegmentCorrupt):
            decode_segment(data[:cut])


def test_segment_with_a_negative_body_length_is_corrupt() -> None:
    """A forged length must not make a body overlap the header or another body."""
    header = {
        "sid": "s",
        "msgs": [{"id": "a", "len": -3, "sent": 1}, {"id": "b", "len": 2, "sent": 1}],
    }
    with pytest.raises(SegmentCorrupt):
        decode_segment(_segment_bytes(header, b"hi"))


# --- receipt handles ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "receipt",
    [
        Receipt("q", "inc", 0, 0, 1),
        Receipt("orders-dlq_2", "5b3f6c1e-aaaa-4bbb-8ccc-123456789abc", 2**40, 4095, 1000),
        Receipt("a" * 80, "i" * 36, 1, 2, 3),
    ],
)
def test_receipt_round_trips(receipt: Receipt) -> None:
    handle = receipt.encode()
    assert handle.startswith(PREFIX)
    assert "=" not in handle and "\n" not in handle
    assert len(handle) <= 1024
    assert Receipt.decode(handle) == receipt


def test_a_receipt_of_the_first_format_still_decodes() -> None:
    assert Receipt.decode(_handle(b"q\ninc\n3\n4\n7")) == Receipt("q", "inc", 3, 4, 7)


def test_two_receipts_of_one_message_differ_from_their_first_two_characters() -> None:
    first, tenth = Receipt("q", "inc", 1, 2, 1).encode(), Receipt("q", "inc", 1, 2, 10).encode()
    start = len(PREFIX)
    assert first[start : start + 2] != tenth[start : start + 2]
    assert first not in tenth


def test_receipts_differ_in_every_field() -> None:
    base = Receipt("q", "inc", 1, 2, 3)
    variants = [
        Receipt("r", "inc", 1, 2, 3),
        Receipt("q", "inc2", 1, 2, 3),
        Receipt("q", "inc", 2, 2, 3),
        Receipt("q", "inc", 1, 3, 3),
        Receipt("q", "inc", 1, 2, 4),
    ]
    handles = {base.encode(), *(v.encode() for v in variants)}
    assert len(handles) == 6


def _handle(raw: bytes) -> str:
    """A handle of the first format (fields: queue, incarnation, slot, index, epoch)."""
    return PREFIX_V1 + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _handle2(raw: bytes) -> str:
    """A handle of the current format (the epoch first)."""
    return PREFIX + base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "handle",
    [
        pytest.param("", id="empty"),
        pytest.param("okr1", id="prefix-only"),
        pytest.param("okr3" + Receipt("q", "i", 0, 0, 1).encode()[4:], id="wrong-prefix"),
        pytest.param(_handle2(b"0\nq\ninc\n0\n0"), id="v2-epoch-zero"),
        pytest.param(_handle2(b"1\nq\ninc\n0"), id="v2-four-fields"),
        pytest.param(_handle2(b"1\nq\ninc\n-1\n0"), id="v2-negative-seq"),
        pytest.param(Receipt("q", "i", 0, 0, 1).encode()[4:], id="no-prefix"),
        pytest.param("okr1A", id="impossible-base64-length"),
        pytest.param("okr1!!!!", id="not-base64"),
        pytest.param("okr1é", id="non-ascii"),
        pytest.param(_handle(b"\xff\xfe\xfd\xfc"), id="not-utf8"),
        pytest.param(_handle(b"q\ninc\n0\n0"), id="four-fields"),
        pytest.param(_handle(b"q\ninc\n0\n0\n1\n9"), id="six-fields"),
        pytest.param(_handle(b"q\ninc\nzero\n0\n1"), id="seq-not-int"),
        pytest.param(_handle(b"q\ninc\n0\n0\n1.5"), id="epoch-float"),
        pytest.param(_handle(b"q\ninc\n-1\n0\n1"), id="negative-seq"),
        pytest.param(_handle(b"q\ninc\n0\n-1\n1"), id="negative-idx"),
        pytest.param(_handle(b"q\ninc\n0\n0\n0"), id="epoch-zero"),
        pytest.param(_handle(b"q\ninc\n0\n0\n-4"), id="negative-epoch"),
        pytest.param(_handle("q\ninc\n\u0661\n0\n1".encode()), id="arabic-indic-seq"),
        pytest.param(_handle(b"q\ninc\n 1\n0\n1"), id="spaced-seq"),
        pytest.param(_handle(b"q\ninc\n0\n1_0\n1"), id="underscored-idx"),
        pytest.param("okr1" + "A" * 1100, id="too-long"),
    ],
)
def test_malformed_receipt_handle_is_invalid(handle: str) -> None:
    with pytest.raises(ReceiptHandleInvalid):
        Receipt.decode(handle)


@pytest.mark.parametrize("handle", [None, 17, b"okr1abc", ["okr1"]])
def test_receipt_handle_of_the_wrong_type_is_invalid(handle: object) -> None:
    with pytest.raises(ReceiptHandleInvalid):
        Receipt.decode(handle)  # type: ignore[arg-type]


def test_receipt_handle_invalid_is_a_queue_error_that_retrying_cannot_fix() -> None:
    err = ReceiptHandleInvalid("x")
    assert isinstance(err, QueueError)
    assert not err.retryable


# --- key layout --------------------------------------------------------------------------------


def test_manifest_and_segment_keys_follow_the_documented_layout() -> None:
    assert keys.manifest("orders") == "m/orders"
    assert keys.queue_of_manifest(keys.manifest("orders")) == "orders"
    assert keys.segments_of_queue("orders") == "s/orders/"
    assert keys.segments_of("orders", "inc") == "s/orders/inc/"
    assert keys.segment("orders", "inc", 0) == "s/orders/inc/0000000000000000"
    assert keys.segment("orders", "inc", 255) == "s/orders/inc/00000000000000ff"
    assert keys.segment("orders", "inc", 2**64 - 1) == "s/orders/inc/ffffffffffffffff"
    assert keys.manifest("q").startswith(keys.MANIFESTS)
    assert keys.segment("q", "i", 1).startswith(keys.SEGMENTS)


def test_segment_keys_list_in_slot_order() -> None:
    seqs = [0, 1, 9, 10, 15, 16, 255, 256, 4095, 2**32, 2**40 + 3]
    listed = sorted(keys.segment("q", "inc", s) for s in reversed(seqs))
    assert [keys.parse_segment(k) for k in listed] == [("q", "inc", s) for s in seqs]


def test_a_queue_prefix_never_covers_another_queue() -> None:
    assert not keys.segment("orders-dlq", "i", 0).startswith(keys.segments_of_queue("orders"))
    assert not keys.segment("orders2", "i", 0).startswith(keys.segments_of_queue("orders"))
    assert not keys.segment("orders", "i2", 0).startswith(keys.segments_of("orders", "i"))
    assert not keys.manifest("q").startswith(keys.SEGMENTS)
    assert not keys.segment("q", "i", 0).startswith(keys.MANIFESTS)


@pytest.mark.parametrize("seq", [0, 1, 17, 2**40, 2**64 - 1])
def test_parse_segment_inverts_segment(seq: int) -> None:
    assert keys.parse_segment(keys.segment("q_1-x", "inc-9", seq)) == ("q_1-x", "inc-9", seq)


@pytest.mark.parametrize(
    "key",
    [
        "m/orders",
        "s/orders/inc",
        "s/orders/inc/",
        "s/orders/inc/00ff",
        "s/orders/inc/00000000000000000",
        "s/orders/inc/000000000000000g",
        "s/orders/inc/0000000000000000/extra",
        "x/orders/inc/0000000000000000",
        "orders/inc/0000000000000000",
        "",
    ],
)
def test_parse_segment_rejects_what_is_not_a_segment_key(key: str) -> None:
    assert keys.parse_segment(key) is None


@pytest.mark.parametrize(
    "slot",
    [
        "0x00000000000001",
        "-000000000000001",
        "+000000000000001",
        "0000_0000_0000_1",
        " 00000000000001 ",
        "000000000000000A",
    ],
)
def test_parse_segment_accepts_only_the_canonical_slot_spelling(slot: str) -> None:
    """Only what `segment` writes is a slot; a sweeper must not mistake a foreign key for one."""
    key = f"s/q/inc/{slot}"
    parsed = keys.parse_segment(key)
    assert parsed is None or (parsed[2] >= 0 and keys.segment(*parsed) == key)


# --- invariants --------------------------------------------------------------------------------


def good() -> QueueState:
    st = QueueState("q", "inc", T0, QueueAttrs(), version=3, next_seq=3)
    st.segments[1] = SegmentState(1, "s1", 3, T0, done=0b001, leases={1: (2, T0 + 5, T0)})
    st.segments[2] = SegmentState(2, "s2", 1, T0)
    st.recent = [(1, "s1"), (2, "s2")]
    st.commits = ["a", "b"]
    return st


def test_a_well_formed_manifest_passes() -> None:
    check_state(good())
    nxt = good()
    nxt.version += 1
    check_step(good(), nxt)


def _broken(rule: str) -> QueueState:
    st = good()
    if rule == "version_positive":
        st.version = 0
    elif rule == "cursor_non_negative":
        st.next_seq = -1
        st.segments.clear()
        st.recent.clear()
    elif rule == "recent_bounded":
        st.next_seq = 10_000
        st.recent = [(i, "x") for i in range(limits.manifest_recent_slots + 1)]
    elif rule == "commits_bounded":
        st.commits = ["c"] * (limits.manifest_recent_commits + 1)
    elif rule == "segments_below_cursor":
        st.segments[3] = SegmentState(3, "s3", 1, T0)
    elif rule == "segments_below_cursor:key-mismatch":
        st.segments[2] = SegmentState(1, "s2", 1, T0)
    elif rule == "done_within_segment":
        st.segments[2].done = 0b10
    elif rule == "done_within_segment:empty":
        st.segments[2].count = 0
    elif rule == "lease_within_segment":
        st.segments[2].leases[1] = (1, T0, T0)
    elif rule == "finished_messages_hold_no_lease":
        st.segments[1].leases[0] = (1, T0, T0)
    elif rule == "epoch_non_negative":
        st.segments[1].leases[1] = (-1, 0, 0)
    elif rule == "recent_below_cursor":
        st.recent.append((3, "s3"))
    else:  # pragma: no cover - a typo in the table below
        raise AssertionError(rule)
    return st


@pytest.mark.parametrize(
    "rule",
    [
        "version_positive",
        "cursor_non_negative",
        "recent_bounded",
        "commits_bounded",
        "segments_below_cursor",
        "segments_below_cursor:key-mismatch",
        "done_within_segment",
        "done_within_segment:empty",
        "lease_within_segment",
        "finished_messages_hold_no_lease",
        "epoch_non_negative",
        "recent_below_cursor",
    ],
)
def test_hand_broken_manifest_names_the_rule_it_breaks(rule: str) -> None:
    with pytest.raises(InvariantViolation, match=repr(rule.split(":")[0])) as info:
        check_state(_broken(rule))
    assert isinstance(info.value, AssertionError)
    assert "'q'" in str(info.value)


def test_too_many_segments_breaks_segments_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "manifest_segments_max", 1)
    with pytest.raises(InvariantViolation, match="'segments_bounded'"):
        check_state(good())


def _step_broken(rule: str) -> tuple[QueueState, QueueState]:
    old, new = good(), good()
    new.version = old.version + 1
    if rule == "version_increments":
        new.version = old.version + 2
    elif rule == "version_increments:same":
        new.version = old.version
    elif rule == "incarnation_fixed":
        new.incarnation = "other"
    elif rule == "cursor_monotonic":
        new.next_seq = 2
        new.segments.pop(2)
        new.recent = [(1, "s1")]
    elif rule == "adopted_once":
        old.segments.pop(2)
    elif rule == "segment_identity_fixed":
        new.segments[2].sid = "someone-else"
    elif rule == "finished_stays_finished":
        new.segments[1].done = 0
    elif rule == "epochs_monotonic":
        new.segments[1].leases[1] = (1, T0, T0)
    else:  # pragma: no cover
        raise AssertionError(rule)
    return old, new


@pytest.mark.parametrize(
    "rule",
    [
        "version_increments",
        "version_increments:same",
        "incarnation_fixed",
        "cursor_monotonic",
        "adopted_once",
        "segment_identity_fixed",
        "finished_stays_finished",
        "epochs_monotonic",
    ],
)
def test_hand_broken_step_names_the_rule_it_breaks(rule: str) -> None:
    old, new = _step_broken(rule)
    with pytest.raises(InvariantViolation, match=repr(rule.split(":")[0])):
        check_step(old, new)


def test_an_epoch_steps_back_only_by_one_and_only_for_a_release() -> None:
    old, new = good(), good()
    new.version += 1
    assert old.segments[1].leases[1][0] == 2
    new.segments[1].leases[1] = (1, 0, T0)  # released: visible at once
    check_step(old, new)
    new.segments[1].leases[1] = (1, T0 + 5_000, T0)  # stepped back but still hidden
    with pytest.raises(InvariantViolation, match="'epochs_monotonic'"):
        check_step(old, new)
    new.segments[1].leases[1] = (0, 0, 0)  # two steps back
    with pytest.raises(InvariantViolation, match="'epochs_monotonic'"):
        check_step(old, new)


def test_check_step_also_checks_the_new_state() -> None:
    old, new = good(), good()
    new.version += 1
    new.commits = ["c"] * (limits.manifest_recent_commits + 1)
    with pytest.raises(InvariantViolation, match="'commits_bounded'"):
        check_step(old, new)
