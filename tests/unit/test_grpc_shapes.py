"""gRPC messages as the native JSON documents and back, and refusals as gRPC statuses: the
mapping is the only thing the gRPC surface adds, so each of its choices is pinned here."""

from __future__ import annotations

import base64

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from okuri.api import grpc_codec
from okuri.api.grpc_codec import CodecError
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.native import grpc_shapes
from okuri.native.errors import NativeError
from okuri.native.grpc_service import status_of


def test_a_utf8_payload_travels_as_text_and_other_bytes_as_base64() -> None:
    req = pb.ProduceRequest(
        queue="q",
        items=[
            pb.ProduceItem(payload="héllo".encode(), headers={"k": "v"}, dedup_id="d"),
            pb.ProduceItem(payload=b"\xff\x00"),
            pb.ProduceItem(payload=b""),
        ],
    )
    assert grpc_shapes.request_doc(req) == {
        "items": [
            {"body": "héllo", "headers": {"k": "v"}, "dedup_id": "d"},
            {"body_base64": base64.b64encode(b"\xff\x00").decode()},
            {"body": ""},
        ]
    }


def test_answers_always_carry_the_bytes() -> None:
    assert grpc_codec.payload({"body": "héllo"}) == "héllo".encode()
    assert grpc_codec.payload({"body_base64": base64.b64encode(b"\xff").decode()}) == b"\xff"


def test_unset_optional_fields_are_absent_and_set_zeros_are_present() -> None:
    assert grpc_shapes.request_doc(pb.LeaseRequest(queue="q")) == {}
    assert grpc_shapes.request_doc(pb.LeaseRequest(queue="q", max_items=0, lease_s=5)) == {
        "max_items": 0,
        "lease_s": 5,
    }
    attrs = pb.QueueAttributes(delay_s=0, dead_letter_queue="dlq")
    assert grpc_shapes.request_doc(attrs) == {"delay_s": 0, "dead_letter_queue": "dlq"}


def test_reset_attributes_are_json_nulls_and_may_not_also_be_set() -> None:
    req = pb.UpdateQueueRequest(
        queue="q", attributes=pb.QueueAttributes(delay_s=3), reset_attributes=["max_attempts"]
    )
    assert grpc_shapes.request_doc(req) == {"attributes": {"delay_s": 3, "max_attempts": None}}
    assert grpc_shapes.request_doc(pb.UpdateQueueRequest(queue="q")) == {}
    both = pb.UpdateQueueRequest(
        queue="q", attributes=pb.QueueAttributes(delay_s=3), reset_attributes=["delay_s"]
    )
    with pytest.raises(NativeError) as refused:
        grpc_shapes.request_doc(both)
    assert refused.value.status == 400 and "delay_s" in refused.value.message


def test_timestamps_become_rfc3339_and_out_of_range_ones_are_refused() -> None:
    ts = Timestamp(seconds=1_800_000_000, nanos=123_456_789)
    assert grpc_codec.rfc3339(ts, "enqueue_at") == "2027-01-15T08:00:00.123Z"
    assert grpc_codec.timestamp("2027-01-15T08:00:00.123Z") == Timestamp(
        seconds=1_800_000_000, nanos=123_000_000
    )
    for bad in (Timestamp(seconds=2**62), Timestamp(seconds=0, nanos=-1)):
        with pytest.raises(CodecError) as refused:
            grpc_codec.rfc3339(bad, "enqueue_at")
        assert "'enqueue_at'" in refused.value.message


def test_a_refused_item_has_an_empty_id_and_an_error_entry() -> None:
    doc = {"ids": ["a", None], "errors": [{"index": 1, "code": "too_large", "message": "m"}]}
    answer = grpc_shapes.answer("ProduceResponse", doc)
    assert list(answer.ids) == ["a", ""]
    assert answer.errors[0] == pb.ProduceError(index=1, code="too_large", message="m")


def test_a_queue_without_max_attempts_or_dead_letter_queue_leaves_them_unset() -> None:
    doc = {
        "name": "q",
        "fifo": False,
        "attributes": {
            "lease_timeout_s": 30,
            "max_attempts": None,
            "dead_letter_queue": None,
            "retention_s": 60,
            "delay_s": 0,
        },
        "stats": {"visible": 1, "leased": 2, "delayed": 3},
        "created_at": "2026-12-01T10:00:00.000Z",
    }
    q = grpc_shapes.answer("Queue", doc)
    assert not q.attributes.HasField("max_attempts")
    assert not q.attributes.HasField("dead_letter_queue")
    assert q.attributes.HasField("delay_s") and q.attributes.delay_s == 0
    assert (q.stats.visible, q.stats.leased, q.stats.delayed) == (1, 2, 3)


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (400, "out_of_range", grpc.StatusCode.INVALID_ARGUMENT),
        (401, "missing_key", grpc.StatusCode.UNAUTHENTICATED),
        (403, "forbidden", grpc.StatusCode.PERMISSION_DENIED),
        (403, "quota_exceeded", grpc.StatusCode.FAILED_PRECONDITION),
        (404, "queue_not_found", grpc.StatusCode.NOT_FOUND),
        (409, "queue_exists", grpc.StatusCode.ALREADY_EXISTS),
        (409, "some_conflict", grpc.StatusCode.FAILED_PRECONDITION),
        (413, "too_large", grpc.StatusCode.INVALID_ARGUMENT),
        (429, "overloaded", grpc.StatusCode.RESOURCE_EXHAUSTED),
        (500, "internal", grpc.StatusCode.INTERNAL),
        (503, "unavailable", grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_each_http_status_has_its_grpc_code(
    status: int, code: str, expected: grpc.StatusCode
) -> None:
    assert status_of(NativeError(status, code, "m")) == expected
