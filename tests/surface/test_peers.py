"""Two real `okuri serve` processes on one data directory: the second forwards its commits to
the queue's leader over the main listener, signed; an unsigned or forged forward is refused."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from okuri.server.peers import PATH, SIGNATURE
from tests.servers import ServerProcess, start_server


def _event(server: ServerProcess, name: str) -> int:
    text = server.get("/metrics").text
    m = re.search(rf'^okuri_engine_events_total{{event="{name}"}} (\d+)$', text, re.M)
    return int(m.group(1)) if m else 0


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    """Two real servers on one data directory; both stopped after the test."""
    data = tmp_path / "data"
    nodes = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        env = {"OKURI_DATA_DIR": str(data), "OKURI_FIFO_PARTITIONS": "on"}
        nodes.append(start_server(tmp_path / name, env))
    try:
        yield nodes[0], nodes[1]
    finally:
        for node in reversed(nodes):
            node.terminate()


def test_a_second_node_commits_through_the_leader(
    two_nodes: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = two_nodes
    sqs_a, sqs_b = a.sqs_client(), b.sqs_client()
    url = sqs_a.create_queue(QueueName="peered")["QueueUrl"]
    sqs_a.send_message(QueueUrl=url, MessageBody="first")
    assert len(sqs_a.receive_message(QueueUrl=url).get("Messages", [])) == 1  # a leads
    sent = set()
    for i in range(5):
        entries = [{"Id": str(j), "MessageBody": f"{i}-{j}"} for j in range(10)]
        assert not sqs_b.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
        sent.update(e["MessageBody"] for e in entries)
    got: set[str] = set()
    for _ in range(40):
        reply = sqs_b.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=1
        )
        msgs = reply.get("Messages", [])
        got.update(m["Body"] for m in msgs)
        if msgs:
            entries = [
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"]} for k, m in enumerate(msgs)
            ]
            deleted = sqs_b.delete_message_batch(QueueUrl=url, Entries=entries)
            assert not deleted.get("Failed")
        if got >= sent:
            break
    assert got >= sent
    assert _event(b, "manifest_forwards") > 0
    assert _event(a, "peer_commit_ops") > 0
    assert _event(b, "manifest_forward_failures") == 0
    # Nothing is left but the first message, leased through a. b answered its deletes from its
    # ack log and commits them through a in the background, so the counts (approximate, as
    # SQS's are) settle shortly after; a fast machine asks before they have.
    counts: tuple[str, str] = ("", "")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        attrs = sqs_a.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        counts = (
            attrs["ApproximateNumberOfMessages"],
            attrs["ApproximateNumberOfMessagesNotVisible"],
        )
        if counts == ("0", "1"):
            break
        time.sleep(0.1)
    assert counts == ("0", "1")


def test_a_forward_without_the_deployments_signature_is_refused(tmp_path: Path) -> None:
    server = start_server(tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data")})
    try:
        body = b'{"q":"jobs","inc":"i","ops":[["L",10,30000]],"slots":[]}'
        assert server.request("POST", PATH, body).status == 403
        forged = {SIGNATURE: "9999999999:00"}
        assert server.request("POST", PATH, body, forged).status == 403
        stale = {SIGNATURE: f"{int(time.time()) - 3600}:00"}
        assert server.request("POST", PATH, body, stale).status == 403
    finally:
        assert server.terminate() == 0


def test_a_receive_retried_on_another_node_gets_the_same_answer(
    two_nodes: tuple[ServerProcess, ServerProcess],
) -> None:
    a, b = two_nodes
    sqs_a, sqs_b = a.sqs_client(), b.sqs_client()
    url = sqs_a.create_queue(
        QueueName="retried.fifo",
        Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"},
    )["QueueUrl"]
    for i in range(3):
        sqs_a.send_message(QueueUrl=url, MessageBody=f"m{i}", MessageGroupId="g")
    first = sqs_a.receive_message(
        QueueUrl=url, MaxNumberOfMessages=2, ReceiveRequestAttemptId="lost-answer"
    )["Messages"]
    retried = sqs_b.receive_message(
        QueueUrl=url, MaxNumberOfMessages=2, ReceiveRequestAttemptId="lost-answer"
    )["Messages"]
    assert [m["Body"] for m in retried] == ["m0", "m1"]
    assert [m["ReceiptHandle"] for m in retried] == [m["ReceiptHandle"] for m in first]
    # Another attempt gets nothing: the group is held by the messages in flight.
    other = sqs_b.receive_message(QueueUrl=url, ReceiveRequestAttemptId="other")
    assert other.get("Messages", []) == []


def test_a_high_throughput_fifo_queue_is_written_by_its_partitions_leader(
    two_nodes: tuple[ServerProcess, ServerProcess],
) -> None:
    """Created in SQS's high-throughput mode, a FIFO queue spreads its groups over partitions
    (okuri/engine/partitions.py); a send through a node that does not lead a group's partition
    travels to the node that does (okuri/engine/peer_sends.py), and every group keeps its order
    whichever node each message went through."""
    a, b = two_nodes
    sqs_a, sqs_b = a.sqs_client(), b.sqs_client()
    url = sqs_a.create_queue(
        QueueName="orders.fifo",
        Attributes={
            "FifoQueue": "true",
            "ContentBasedDeduplication": "true",
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
        },
    )["QueueUrl"]
    groups = [f"g{i}" for i in range(16)]
    sqs_a.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": g, "MessageBody": f"{g}-0", "MessageGroupId": g} for g in groups[:10]],
    )
    sqs_a.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": g, "MessageBody": f"{g}-0", "MessageGroupId": g} for g in groups[10:]],
    )
    sqs_a.receive_message(QueueUrl=url, VisibilityTimeout=0)  # a commits: it leads them all
    numbers: dict[str, list[int]] = {g: [] for g in groups}
    for n in range(1, 4):
        client = sqs_b if n % 2 else sqs_a
        for chunk in (groups[:10], groups[10:]):
            entries = [{"Id": g, "MessageBody": f"{g}-{n}", "MessageGroupId": g} for g in chunk]
            answer = client.send_message_batch(QueueUrl=url, Entries=entries)
            assert not answer.get("Failed")
            for ok in answer["Successful"]:
                numbers[ok["Id"]].append(int(ok["SequenceNumber"]))
    assert all(ns == sorted(ns) and len(set(ns)) == 3 for ns in numbers.values())
    assert _event(b, "sends_forwarded") > 0
    got: dict[str, list[str]] = {g: [] for g in groups}
    for _ in range(60):
        reply = sqs_b.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=1
        )
        msgs = reply.get("Messages", [])
        for m in msgs:
            got[m["Body"].split("-")[0]].append(m["Body"])
        if msgs:
            entries = [
                {"Id": str(k), "ReceiptHandle": m["ReceiptHandle"]} for k, m in enumerate(msgs)
            ]
            assert not sqs_b.delete_message_batch(QueueUrl=url, Entries=entries).get("Failed")
        if sum(len(v) for v in got.values()) == 4 * len(groups):
            break
    assert got == {g: [f"{g}-{n}" for n in range(4)] for g in groups}
