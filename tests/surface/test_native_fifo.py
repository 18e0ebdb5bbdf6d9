"""FIFO queues through the native API against a real `okuri serve`: creating them, producing
with groups, leases in group order with one lease of a group at a time, deduplication in one id
space with SQS (both ways, and by content), and clear 400s for what a FIFO item lacks or
carries wrongly."""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from tests.servers import ServerProcess, start_server

ADMIN = "native-fifo-test-admin-key-0123456789"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("native-fifo")
    proc = start_server(tmp, {"OKURI_DATA_DIR": str(tmp / "data"), "OKURI_ADMIN_KEY": ADMIN})
    yield proc
    proc.terminate()


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {ADMIN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def sqs(server: ServerProcess) -> Any:
    return server.sqs_client(retries={"max_attempts": 1})


def ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, answer.text
    return answer.json()


def refused(answer: httpx.Response, status: int = 400) -> tuple[str, str]:
    """The (code, message) of an error answer of `status`."""
    assert answer.status_code == status, answer.text
    error = answer.json()["error"]
    return error["code"], error["message"]


def fifo_queue(api: httpx.Client, **attributes: Any) -> str:
    name = f"nf-{uuid.uuid4().hex[:10]}.fifo"
    created = ok(api.post("/v1/queues", json={"name": name, "attributes": attributes}))
    assert created["fifo"] is True
    return name


def produce(api: httpx.Client, queue: str, *items: dict[str, Any]) -> Any:
    return ok(api.post(f"/v1/queues/{queue}/messages", json={"items": list(items)}))


def lease(api: httpx.Client, queue: str, most: int = 10, wait_s: int = 0) -> list[Any]:
    body = {"max_items": most, "request_timeout_s": wait_s, "lease_s": 60}
    return list(ok(api.post(f"/v1/queues/{queue}/lease", json=body))["items"])


def complete(api: httpx.Client, queue: str, *items: dict[str, Any]) -> None:
    handles = [i["handle"] for i in items]
    done = ok(api.post(f"/v1/queues/{queue}/complete", json={"handles": handles}))
    assert done["results"] == ["completed"] * len(items)


# --- queues ----------------------------------------------------------------------------------


def test_a_fifo_queue_is_made_by_its_name_or_the_flag_and_shows_its_attributes_to_sqs(
    api: httpx.Client, sqs: Any
) -> None:
    base = f"nf-{uuid.uuid4().hex[:10]}"
    by_name = ok(api.post("/v1/queues", json={"name": base + "-a.fifo"}))
    assert by_name["fifo"] is True
    assert by_name["attributes"]["content_based_dedup"] is False
    flagged = ok(
        api.post(
            "/v1/queues",
            json={
                "name": base + "-b.fifo",
                "fifo": True,
                "attributes": {"content_based_dedup": True},
            },
        )
    )
    assert flagged["attributes"]["content_based_dedup"] is True
    url = sqs.get_queue_url(QueueName=base + "-b.fifo")["QueueUrl"]
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert got["FifoQueue"] == "true" and got["ContentBasedDeduplication"] == "true"

    changed = ok(
        api.patch(f"/v1/queues/{base}-b.fifo", json={"attributes": {"content_based_dedup": False}})
    )
    assert changed["attributes"]["content_based_dedup"] is False
    got = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ContentBasedDeduplication"])
    assert got["Attributes"] == {"ContentBasedDeduplication": "false"}
    standard = ok(api.post("/v1/queues", json={"name": base + "-c", "fifo": False}))
    assert standard["fifo"] is False and "content_based_dedup" not in standard["attributes"]


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({"name": "nf-plain", "fifo": True}, "invalid_argument", ".fifo"),
        ({"name": "nf-named.fifo", "fifo": False}, "invalid_argument", ".fifo"),
        ({"name": "nf-plain", "fifo": "yes"}, "wrong_type", "true or false"),
        (
            {"name": "nf-plain", "attributes": {"content_based_dedup": True}},
            "invalid_argument",
            "standard queue",
        ),
        (
            {"name": "nf-named.fifo", "attributes": {"content_based_dedup": "true"}},
            "wrong_type",
            "true or false",
        ),
        (
            {"name": "nf-a.fifo", "attributes": {"dead_letter_queue": "nf-plain-dlq"}},
            "invalid_argument",
            "both be FIFO",
        ),
    ],
    ids=[
        "flag-no-suffix",
        "suffix-flag-false",
        "flag-not-bool",
        "cbd-standard",
        "cbd-text",
        "dlq-standard",
    ],
)
def test_creating_a_fifo_queue_refuses_what_does_not_fit(
    api: httpx.Client, body: dict[str, Any], code: str, words: str
) -> None:
    got_code, message = refused(api.post("/v1/queues", json=body))
    assert got_code == code and words in message, message


# --- producing and leasing -------------------------------------------------------------------


def wait_for_long_polls(server: ServerProcess, n: int, timeout_s: float = 10) -> None:
    """Until the server's metrics show `n` leases waiting (long polls) in flight."""
    line = f'okuri_inflight{{kind="long_polls"}} {n}'
    deadline = time.monotonic() + timeout_s
    while line not in server.get("/metrics").text:
        assert time.monotonic() < deadline, f"no {line!r} within {timeout_s} s"
        time.sleep(0.02)


def test_items_are_leased_in_group_order_one_lease_of_a_group_at_a_time(
    api: httpx.Client, server: ServerProcess
) -> None:
    q = fifo_queue(api)
    produced = produce(
        api,
        q,
        {"body": "a1", "group": "a", "dedup_id": "a1"},
        {"body": "a2", "group": "a", "dedup_id": "a2"},
        {"body": "b1", "group": "b", "dedup_id": "b1"},
        {"body": "a3", "group": "a", "dedup_id": "a3"},
    )
    numbers = [int(n) for n in produced["sequence_numbers"]]
    assert numbers == sorted(numbers) and len(set(numbers)) == 4
    assert produced["duplicates"] == []

    (a1,) = lease(api, q, most=1)
    assert (a1["body"], a1["group"]) == ("a1", "a")
    assert a1["sequence_number"] == produced["sequence_numbers"][0]
    assert a1["id"] == produced["ids"][0]
    # Group a is leased: the next lease skips it, however many it asks for.
    rest = lease(api, q)
    assert [i["body"] for i in rest] == ["b1"]
    assert lease(api, q) == []

    # A lease that waits gets group a's next item once its first is completed.
    waited: list[list[Any]] = []
    waiter = threading.Thread(target=lambda: waited.append(lease(api, q, wait_s=10)))
    waiter.start()
    wait_for_long_polls(server, 1)
    complete(api, q, a1)
    waiter.join(timeout=15)
    assert not waiter.is_alive()
    assert [i["body"] for i in waited[0]] == ["a2", "a3"]
    assert [i["group"] for i in waited[0]] == ["a", "a"]
    complete(api, q, *rest, *waited[0])
    assert ok(api.get(f"/v1/queues/{q}"))["stats"] == {
        "visible": 0, "leased": 0, "delayed": 0, "dead_lettered": 0
    }


def test_a_retried_item_comes_back_before_the_rest_of_its_group(api: httpx.Client) -> None:
    q = fifo_queue(api)
    produce(
        api,
        q,
        {"body": "first", "group": "g", "dedup_id": "1"},
        {"body": "second", "group": "g", "dedup_id": "2"},
    )
    first, second = lease(api, q)
    assert (first["body"], second["body"]) == ("first", "second")
    retried = ok(
        api.post(
            f"/v1/queues/{q}/retry",
            json={"items": [{"handle": first["handle"]}, {"handle": second["handle"]}]},
        )
    )
    assert retried["results"] == ["retried", "retried"]
    again = lease(api, q)
    assert [(i["body"], i["attempts"]) for i in again] == [("first", 2), ("second", 2)]
    complete(api, q, *again)


# --- deduplication ---------------------------------------------------------------------------


def test_a_repeated_dedup_id_answers_the_first_items_id_and_is_not_enqueued(
    api: httpx.Client,
) -> None:
    q = fifo_queue(api)
    first = produce(api, q, {"body": "x", "group": "g", "dedup_id": "order-1"})
    again = produce(
        api,
        q,
        {"body": "other", "group": "h", "dedup_id": "order-1"},  # same id, other group
        {"body": "y", "group": "g", "dedup_id": "order-2"},
        {"body": "y again", "group": "g", "dedup_id": "order-2"},  # within the request
    )
    assert again["ids"][0] == first["ids"][0]
    assert again["sequence_numbers"][0] == first["sequence_numbers"][0]
    assert again["ids"][2] == again["ids"][1]
    assert again["duplicates"] == [0, 2]
    assert [i["body"] for i in lease(api, q)] == ["x", "y"]


def test_native_and_sqs_sends_share_one_dedup_id_space_both_ways(
    api: httpx.Client, sqs: Any
) -> None:
    q = fifo_queue(api)
    url = sqs.get_queue_url(QueueName=q)["QueueUrl"]
    native = produce(api, q, {"body": "from native", "group": "g", "dedup_id": "n-1"})
    over_sqs = sqs.send_message(
        QueueUrl=url, MessageBody="from sqs", MessageGroupId="g", MessageDeduplicationId="n-1"
    )
    assert over_sqs["MessageId"] == native["ids"][0]
    assert over_sqs["SequenceNumber"] == native["sequence_numbers"][0]

    sent = sqs.send_message(
        QueueUrl=url, MessageBody="sqs first", MessageGroupId="g", MessageDeduplicationId="s-1"
    )
    repeated = produce(api, q, {"body": "native second", "group": "g", "dedup_id": "s-1"})
    assert repeated["ids"] == [sent["MessageId"]] and repeated["duplicates"] == [0]

    # An SQS consumer sees a native item's group and deduplication id.
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    bodies = [(m["Body"], m["Attributes"]["MessageGroupId"]) for m in got["Messages"]]
    assert bodies == [("from native", "g"), ("sqs first", "g")]
    assert got["Messages"][0]["Attributes"]["MessageDeduplicationId"] == "n-1"
    assert got["Messages"][0]["Attributes"]["SequenceNumber"] == native["sequence_numbers"][0]


def test_a_dedup_scope_of_message_group_set_over_sqs_holds_for_native_items(
    api: httpx.Client, sqs: Any
) -> None:
    name = f"nf-{uuid.uuid4().hex[:10]}.fifo"
    sqs.create_queue(
        QueueName=name, Attributes={"FifoQueue": "true", "DeduplicationScope": "messageGroup"}
    )
    out = produce(
        api,
        name,
        {"body": "g1", "group": "g", "dedup_id": "same"},
        {"body": "h1", "group": "h", "dedup_id": "same"},
        {"body": "g2", "group": "g", "dedup_id": "same"},
    )
    assert out["duplicates"] == [2] and len(set(out["ids"])) == 2


def test_content_based_dedup_hashes_the_bytes_on_both_surfaces(api: httpx.Client, sqs: Any) -> None:
    q = fifo_queue(api, content_based_dedup=True)
    url = sqs.get_queue_url(QueueName=q)["QueueUrl"]
    first = produce(api, q, {"body": "same text", "group": "g"})
    text_again = produce(
        api,
        q,
        {"body_base64": base64.b64encode(b"same text").decode(), "group": "h"},
        {"body": "other text", "group": "g"},
        {"body": "same text", "group": "g", "dedup_id": "explicit"},  # an id given wins
    )
    assert text_again["ids"][0] == first["ids"][0]
    assert text_again["duplicates"] == [0]
    over_sqs = sqs.send_message(QueueUrl=url, MessageBody="same text", MessageGroupId="z")
    assert over_sqs["MessageId"] == first["ids"][0]

    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
    seen = [(m["Body"], m["Attributes"]["MessageDeduplicationId"]) for m in got["Messages"]]
    assert seen == [
        ("same text", hashlib.sha256(b"same text").hexdigest()),
        ("other text", hashlib.sha256(b"other text").hexdigest()),
        ("same text", "explicit"),
    ]


# --- bad input -------------------------------------------------------------------------------

IN_A_MINUTE = (datetime.now(UTC) + timedelta(minutes=1)).isoformat()
ITEM_CASES: list[tuple[str, dict[str, Any], str, str]] = [
    # (id, item, code, words in the message)
    ("missing group", {"body": "x", "dedup_id": "d"}, "missing_field", "'group' is required"),
    ("empty group", {"body": "x", "group": "", "dedup_id": "d"}, "invalid_argument",
     "ASCII letters"),
    ("group with a space", {"body": "x", "group": "a b", "dedup_id": "d"}, "invalid_argument",
     "ASCII letters"),
    ("group not ascii", {"body": "x", "group": "grüppe", "dedup_id": "d"}, "invalid_argument",
     "ASCII letters"),
    ("group too long", {"body": "x", "group": "g" * 129, "dedup_id": "d"}, "invalid_argument",
     "1 to 128"),
    ("group not text", {"body": "x", "group": 7, "dedup_id": "d"}, "wrong_type", "string"),
    ("missing dedup", {"body": "x", "group": "g"}, "missing_field", "content_based_dedup"),
    ("dedup with a space", {"body": "x", "group": "g", "dedup_id": "a b"}, "invalid_argument",
     "ASCII letters"),
    ("enqueue_at", {"body": "x", "group": "g", "dedup_id": "d", "enqueue_at": IN_A_MINUTE},
     "invalid_argument", "enqueue_at"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("item", "code", "words"), [c[1:] for c in ITEM_CASES], ids=[c[0] for c in ITEM_CASES]
)
def test_a_fifo_item_lacking_or_misusing_a_field_is_a_clear_400_and_nothing_is_enqueued(
    api: httpx.Client, item: dict[str, Any], code: str, words: str
) -> None:
    q = fifo_queue(api)
    good = {"body": "fine", "group": "g", "dedup_id": "fine"}
    answer = api.post(f"/v1/queues/{q}/messages", json={"items": [good, item]})
    got_code, message = refused(answer)
    assert got_code == code and words in message, message
    if code != "wrong_type":  # a type error names the field; the rest name the item too
        assert message.startswith("items[1]"), message
    assert ok(api.get(f"/v1/queues/{q}"))["stats"]["visible"] == 0


def test_a_group_on_a_standard_queue_is_refused(api: httpx.Client) -> None:
    q = f"nf-{uuid.uuid4().hex[:10]}"
    ok(api.post("/v1/queues", json={"name": q}))
    answer = api.post(f"/v1/queues/{q}/messages", json={"items": [{"body": "x", "group": "g"}]})
    code, message = refused(answer)
    assert code == "invalid_argument" and "standard queue" in message
    standard = produce(api, q, {"body": "x", "dedup_id": "d"})
    assert set(standard) == {"ids"}  # no FIFO fields on a standard queue's answer
