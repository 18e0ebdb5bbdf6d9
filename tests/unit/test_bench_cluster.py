"""`python -m bench cluster`'s parts that need no cluster: the checker, failover, report and flags.

The checker is judged on hand-written histories (acknowledged, delivered, deleted, with times);
failover against one loopback HTTP server that answers and one port where nothing listens.
The real chaos run is tests/cluster/test_chaos.py.
"""

from __future__ import annotations

import base64
import dataclasses
import http.server
import io
import json
import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import failover
from bench.chaos import Chaos
from bench.cluster import build_parser, cli_main, parse_args, plan_from, render
from bench.cluster_watch import (
    ManifestWatch,
    Version,
    copy_kind,
    load_history,
    local_reader,
    message_state,
    node_names,
    receipt_place,
    story,
    tell,
)
from bench.failover import Caller, Exhausted, NodeSet
from bench.fifo_ledger import DEDUP_WINDOW_S, Answered, FifoLedger, Received
from bench.ledger import Ledger, late_kind
from bench.servers import Node, free_port
from bench.sqs_client import BlockingSqs, Signer, SqsCallError
from okuri.core.receipts import Receipt


def receipt(epoch: int) -> str:
    raw = f"q\ninc\n3\n4\n{epoch}".encode()
    return "okr1" + base64.urlsafe_b64encode(raw).decode().rstrip("=")


def test_a_redelivery_before_the_delete_is_allowed_and_nothing_is_lost() -> None:
    ledger = Ledger(start_s=100.0)
    ledger.acknowledged(["a", "b"], 100.1)
    ledger.delivered([("a", "sqs-a", receipt(1)), ("b", "sqs-b", receipt(1))], 100.2, node=0)
    # visibility ran out: at-least-once
    ledger.delivered([("a", "sqs-a", receipt(2))], 111.0, node=1)
    ledger.deleted([("a", "sqs-a", receipt(2)), ("b", "sqs-b", receipt(1))], 111.5, node=2)
    ledger.delivered([("a", "sqs-a", receipt(3))], 111.4, node=0)  # sent before the delete answered
    verdict = ledger.verdict()
    assert verdict.ok
    assert (verdict.acknowledged, verdict.delivered, verdict.deliveries) == (2, 2, 4)
    assert (verdict.redeliveries, verdict.lost, verdict.after_delete) == (2, 0, 0)


def test_a_receive_sent_after_a_delete_answered_that_delivers_it_again_fails_the_check() -> None:
    ledger = Ledger(start_s=10.0)
    ledger.acknowledged(["m"], 10.5)
    ledger.delivered([("m", "sqs-m", receipt(1))], 11.0, node=2)
    ledger.deleted([("m", "sqs-m", receipt(1))], 11.2, node=2)
    ledger.delivered([("m", "sqs-m", receipt(1))], 11.3, node=1)
    verdict = ledger.verdict()
    assert not verdict.ok and verdict.after_delete == 1 and verdict.lost == 0
    [example] = verdict.after_delete_examples
    assert example["id"] == "m" and example["acknowledged_at_s"] == 0.5
    deleted = example["deleted"]
    assert {k: deleted[k] for k in ("at_s", "node", "message_id", "receipt")} == {
        "at_s": 1.2, "node": 2, "message_id": "sqs-m", "receipt": receipt(1)
    }  # fmt: skip
    assert deleted["receipt_from"] == {"node": 2, "call": 1}
    assert [(d["node"], d["receipt"], d["after_delete"]) for d in example["deliveries"]] == [
        (2, receipt(1), False),
        (1, receipt(1), True),
    ]
    assert verdict.after_delete_kinds == {"same receipt": 1}
    assert example["deliveries"][1]["sent_after_delete_s"] == 0.1


def test_an_acknowledged_send_never_delivered_is_lost_and_an_unacknowledged_one_is_not() -> None:
    ledger = Ledger(start_s=0.0)
    # its ack is recorded after it
    ledger.delivered([("early", "sqs-early", receipt(1))], 0.1, node=0)
    ledger.acknowledged(["early", "lost"], 0.2)
    # its answer was lost: never acked
    ledger.delivered([("retried", "sqs-retried", receipt(1))], 0.3, node=0)
    assert ledger.outstanding == 1
    verdict = ledger.verdict()
    assert verdict.lost == 1 and verdict.lost_examples == ["lost"]
    assert verdict.delivered_unacknowledged == 1
    assert verdict.figures()["lost"] == 1


def test_the_earliest_successful_delete_is_the_one_judged() -> None:
    ledger = Ledger(start_s=0.0)
    ledger.acknowledged(["m"], 0.0)
    ledger.delivered([("m", "sqs-m", receipt(1))], 1.0, node=0)
    ledger.deleted([("m", "sqs-m", receipt(1))], 3.0, node=1)
    ledger.deleted([("m", "sqs-m", receipt(1))], 2.0, node=0)  # a retry's answer, read earlier
    ledger.delivered([("m", "sqs-m", receipt(2))], 2.5, node=0)
    assert ledger.verdict().after_delete == 1


def test_a_resent_send_is_another_message_that_may_come_after_the_first_ones_delete() -> None:
    """A send whose answer was lost is sent again: the body is the same, the message is not."""
    ledger = Ledger(start_s=0.0)
    ledger.acknowledged(["m"], 1.0)
    ledger.delivered([("m", "sqs-first", receipt(1))], 2.0, node=0)
    ledger.deleted([("m", "sqs-first", receipt(1))], 2.5, node=0)
    ledger.delivered([("m", "sqs-second", receipt(1))], 3.0, node=1)
    ledger.deleted([("m", "sqs-second", receipt(1))], 3.5, node=1)
    verdict = ledger.verdict()
    assert verdict.ok and verdict.after_delete == 0 and verdict.redeliveries == 1
    ledger.delivered([("m", "sqs-first", receipt(2))], 4.0, node=2)
    assert ledger.verdict().after_delete == 1


def test_a_late_delivery_is_told_with_both_calls_timings_receive_counts_and_failed_tries() -> None:
    ledger = Ledger(start_s=100.0)
    batch = [(f"m{i}", f"sqs-{i}", Receipt("q", "inc", 7, i, 2).encode()) for i in range(10)]
    ledger.acknowledged([m for m, _, _ in batch], 100.5)
    first = ledger.delivered(batch, 101.0, node=0, answered_s=101.2, receive_counts=[2] * 10)
    deleted = ledger.deleted(batch, 101.6, node=1, sent_s=101.4, tries=[(2, 101.25, "refused")])
    again = [(m, sqs, Receipt("q", "inc", 7, int(m[1:]), 3).encode()) for m, sqs, _ in batch]
    ledger.delivered(again[:3], 107.0, node=2, answered_s=107.1, receive_counts=[3, 3, 3])
    verdict = ledger.verdict()
    assert verdict.after_delete == 3 and first != deleted
    # the whole delete call is described: 3 of its 10 messages came back
    assert verdict.after_delete_calls == [
        {"delete_call": deleted, "node": 1, "answered_at_s": 1.6, "messages": 10, "came_back": 3}
    ]
    example = verdict.after_delete_examples[0]
    d = example["deleted"]
    assert (d["sent_at_s"], d["at_s"], d["receipt"]) == (1.4, 1.6, batch[0][2])
    assert d["call_messages"] == 10 and d["receipt_from"] == {"node": 0, "call": first}
    assert d["unanswered_first"] == [{"node": 2, "sent_at_s": 1.25, "what": "refused"}]
    late = example["deliveries"][-1]
    assert (late["node"], late["receipt"], late["receive_count"]) == (2, again[0][2], 3)
    assert (late["sent_after_delete_s"], late["answered_after_delete_s"]) == (5.4, 5.5)
    assert late["after_delete"] and not example["deliveries"][0]["after_delete"]
    assert len(ledger.after_delete_timelines()) == 3
    assert verdict.after_delete_kinds == {"another receipt, receive count went up": 3}


def test_the_ledger_tells_late_deliveries_apart_by_opaque_receipts_and_receive_counts() -> None:
    assert late_kind("r1", "r1") == "same receipt"
    assert late_kind("r2", "r1", 3, 2) == "another receipt, receive count went up"
    assert late_kind("r2", "r1", 1, 2) == "another receipt, receive count did not go up"
    assert late_kind("r2", "r1", None, 2) == "another receipt, receive count unknown"


def test_the_watch_tells_another_copy_apart_from_the_same_copy_leased_again() -> None:
    deleted = Receipt("q", "inc", 7, 2, 3).encode()
    assert copy_kind(Receipt("q", "inc", 9, 0, 1).encode(), deleted) == "another copy"
    assert copy_kind(Receipt("q", "inc", 7, 2, 4).encode(), deleted) == "same copy, later epoch"
    assert copy_kind(deleted, deleted) == "same copy, same epoch"
    assert copy_kind(Receipt("q", "inc", 7, 2, 1).encode(), deleted) == "same copy, earlier epoch"
    assert copy_kind("junk", deleted) == "receipt unreadable"


def test_a_body_sent_again_under_another_message_id_is_shown_apart_and_not_counted() -> None:
    """A send whose first node wrote its messages and died before answering is sent again:
    a second copy, under other MessageIds, may come after the first copy's delete."""
    ledger = Ledger(start_s=0.0)
    first = Receipt("q", "inc", 390, 0, 1).encode()
    second = Receipt("q", "inc", 400, 0, 1).encode()
    ledger.acknowledged(["m"], 37.3, node=2, tries=[(1, 36.3, "dropped")])
    ledger.delivered([("m", "sqs-first", first)], 44.6, node=0)
    ledger.deleted([("m", "sqs-first", first)], 44.7, node=0)
    ledger.delivered([("m", "sqs-second", second)], 45.1, node=2)
    verdict = ledger.verdict()
    assert verdict.ok and verdict.after_delete == 0
    assert verdict.other_message_after_delete == 1
    [example] = verdict.other_message_examples
    assert example["send"] == {
        "node": 2, "unanswered_first": [{"node": 1, "sent_at_s": 36.3, "what": "dropped"}]
    }  # fmt: skip
    assert [d["receipt"] for d in example["deliveries"]] == [first, second]
    assert verdict.figures()["other_message_after_delete"] == 1


def test_the_watch_reads_what_a_receipt_names_for_diagnostics_only() -> None:
    assert receipt_place(receipt(7)) == (3, 4, 7)  # a handle of the first format
    assert receipt_place(Receipt("q", "inc", 3, 4, 12).encode()) == (3, 4, 12)
    assert receipt_place("not okuri's") is None
    assert receipt_place("okr1!!!") is None


# --- the FIFO checker ------------------------------------------------------------------------


def fifo_message(dedup_id: str, sequence: int, group: str = "g0") -> Received:
    return Received(dedup_id, f"sqs-{dedup_id}", group, f"{sequence:020d}")


def test_a_later_message_delivered_before_an_earlier_one_of_its_group_was_asked_for_fails() -> None:
    fifo = FifoLedger(start_s=0.0)
    fifo.delivered([fifo_message("b", 2)], sent_s=1.0, answered_s=1.1)
    fifo.delivered([fifo_message("a", 1)], sent_s=1.2, answered_s=1.3)  # after b's answer
    fifo.delivered([fifo_message("c", 3), fifo_message("z", 1, group="g1")], 1.4, 1.5)
    verdict = fifo.verdict()
    assert not verdict.ok and verdict.order_violations == 1 and verdict.dedup_violations == 0
    assert (verdict.groups, verdict.messages) == (2, 4)
    [example] = verdict.order_examples
    assert example["group"] == "g0"
    earlier = example["earlier"]
    assert earlier["dedup_id"] == "a" and earlier["first_receive_sent_s"] == 1.2
    assert example["delivered_before_it"]["dedup_id"] == "b"


def test_one_receive_with_both_or_an_earlier_long_poll_answering_later_is_in_order() -> None:
    fifo = FifoLedger(start_s=0.0)
    fifo.delivered([fifo_message("a", 1), fifo_message("b", 2)], sent_s=1.0, answered_s=1.1)
    # a long poll sent at 2.0 waits while another receive takes c and a delete finishes it
    fifo.delivered([fifo_message("c", 3)], sent_s=2.5, answered_s=2.6)
    fifo.delivered([fifo_message("d", 4)], sent_s=2.0, answered_s=3.0)
    # redelivering an earlier message after later ones is no reordering of first deliveries
    fifo.delivered([fifo_message("a", 1)], sent_s=9.0, answered_s=9.1)
    verdict = fifo.verdict()
    assert verdict.ok and verdict.order_violations == 0


def test_a_resend_answered_with_another_message_id_splits_its_deduplication_id() -> None:
    fifo = FifoLedger(start_s=0.0)
    fifo.attempted(["m", "n"], 1.0)
    fifo.answered([Answered("m", "sqs-m", "1"), Answered("n", "sqs-n", "2")], 1.1)
    fifo.attempted(["m", "n"], 2.0)  # sent again on purpose
    fifo.answered([Answered("m", "sqs-m", "1"), Answered("n", "sqs-n2", "3")], 2.1)
    verdict = fifo.verdict()
    assert not verdict.ok and verdict.dedup_violations == 1 and verdict.duplicate_answers == 2
    [example] = verdict.dedup_examples
    assert example["dedup_id"] == "n"
    assert [a["message_id"] for a in example["answers"]] == ["sqs-n", "sqs-n2"]


def test_two_message_ids_delivered_for_one_deduplication_id_fail_unless_a_window_apart() -> None:
    fifo = FifoLedger(start_s=0.0)
    fifo.attempted(["m"], 1.0)
    fifo.attempted(["m"], 1.5)  # the first answer was lost
    fifo.answered([Answered("m", "sqs-m", "1")], 1.6)
    fifo.delivered([Received("m", "sqs-m", "g0", "1")], 2.0, 2.1)
    fifo.delivered([Received("m", "sqs-m2", "g0", "2")], 3.0, 3.1)
    verdict = fifo.verdict()
    assert verdict.dedup_violations == 1 and verdict.order_violations == 0
    assert verdict.dedup_examples[0]["delivered_message_ids"] == ["sqs-m", "sqs-m2"]
    fifo.attempted(["m"], 1.0 + DEDUP_WINDOW_S)  # a resend a whole window later may be new
    verdict = fifo.verdict()
    assert verdict.ok and verdict.dedup_unjudged == 1


def test_a_delivery_without_its_group_or_sequence_number_fails_the_order_check() -> None:
    fifo = FifoLedger(start_s=0.0)
    fifo.delivered([Received("m", "sqs-m", "", "")], 1.0, 1.1)
    assert not fifo.verdict().ok and fifo.verdict().unsequenced == 1


# --- failover -------------------------------------------------------------------------------


class Answering(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        target = self.headers["X-Amz-Target"]
        if target.endswith("Broken"):
            body, status = b'{"__type":"InternalFailure","message":"oops"}', 500
        elif target.endswith("Refused"):
            body, status = b'{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"no"}', 400
        else:
            body, status = json.dumps({"Target": target}).encode(), 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def live_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()
    thread.join(5)


def node(index: int, port: int) -> Node:
    return Node(index, port, free_port(), {}, Path("unused.log"))


def caller(nodes: NodeSet, seed: int = 1) -> Caller:
    return Caller(nodes, Signer("k", "s", "us-east-1"), random.Random(seed), timeout_s=5.0)


def test_a_request_fails_over_from_a_dead_node_to_a_live_one(live_port: int) -> None:
    nodes = NodeSet([node(0, free_port()), node(1, live_port)])  # nothing listens on node 0
    c = caller(nodes)
    for _ in range(10):
        answer, index, sent_s = c.call("GetQueueUrl", {"QueueName": "q"})
        assert answer == {"Target": "AmazonSQS.GetQueueUrl"} and index == 1 and sent_s > 0
    c.close()
    assert c.tally.answered[(1, "GetQueueUrl")] == 10
    assert c.tally.failovers[0] > 0 and c.tally.failovers[1] == 0
    assert c.tally.unanswered["GetQueueUrl"] == c.tally.failovers[0]
    assert c.tally.first_error is not None and "node 0" in c.tally.first_error


def test_a_5xx_is_retried_elsewhere_and_a_4xx_is_the_callers(
    live_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(failover, "ATTEMPTS_MAX", 3)
    monkeypatch.setattr(failover, "RETRY_PAUSE_S_MAX", 0.01)
    nodes = NodeSet([node(0, live_port)])
    c = caller(nodes)
    with pytest.raises(Exhausted):
        c.call("Broken", {})
    assert c.tally.server_faults[0] == 3 and c.tally.exhausted == 1
    with pytest.raises(SqsCallError) as refused:
        c.call("Refused", {})
    assert refused.value.code == "QueueDoesNotExist" and not refused.value.server_fault
    c.close()


def test_requests_go_to_nodes_marked_up_only() -> None:
    nodes = NodeSet([node(i, free_port()) for i in range(3)])
    nodes.set_up(1, False)
    rng = random.Random(5)
    picks = {nodes.pick(rng) for _ in range(50)}
    assert picks == {0, 2}
    assert {nodes.pick(rng, avoid=0) for _ in range(20)} == {2}
    for i in range(3):
        nodes.set_up(i, False)
    assert nodes.pick(rng) in {0, 1, 2}  # none up: any, rather than none


def test_a_call_may_avoid_a_node_first_and_records_the_attempts_that_got_no_answer(
    live_port: int,
) -> None:
    dead = free_port()
    nodes = NodeSet([node(0, live_port), node(1, dead), node(2, live_port)])
    c = caller(nodes, seed=3)
    for _ in range(20):
        _, index, _ = c.call("GetQueueUrl", {}, avoid=0)
        assert index == 2 or c.last_tries  # node 0 only after node 1 refused
        assert all(t.node == 1 and t.what == "refused" for t in c.last_tries)
    c.close()


def test_blind_clients_call_nodes_marked_down_and_move_on_to_others(live_port: int) -> None:
    nodes = NodeSet([node(0, free_port()), node(1, live_port)])
    nodes.set_up(1, False)  # an informed client would call only node 0, which refuses
    c = Caller(nodes, Signer("k", "s", "us-east-1"), random.Random(2), 5.0, blind=True)
    for _ in range(10):
        _, index, _ = c.call("GetQueueUrl", {})
        assert index == 1
    assert c.tally.failovers[0] > 0  # it did try the dead node, and learnt of it that way
    assert {nodes.pick_blind(random.Random(i), {1}) for i in range(20)} == {0}
    c.close()


def test_the_blocking_client_connects_within_its_connect_timeout_and_reads_within_the_other(
    live_port: int,
) -> None:
    client = BlockingSqs(f"http://127.0.0.1:{live_port}", Signer("k", "s", "r"), 7.0, 0.5)
    assert client.call("GetQueueUrl", {}) == {"Target": "AmazonSQS.GetQueueUrl"}
    assert client._conn is not None and client._conn.sock is not None
    assert client._conn.sock.gettimeout() == 7.0
    client.close()


@dataclasses.dataclass
class FakeNode(Node):
    """A node whose process is a stand-in: spawned and killed at recorded times."""

    events: list[tuple[str, float]] = dataclasses.field(default_factory=list)
    alive: bool = True

    def spawn(self) -> None:
        self.events.append(("spawn", time.monotonic()))
        self.alive = True

    def kill(self) -> None:
        self.events.append(("kill", time.monotonic()))
        self.alive = False

    def ready(self) -> bool:
        return self.alive


def test_a_killed_node_is_started_again_only_after_the_restart_delay() -> None:
    fake = FakeNode(0, free_port(), free_port(), {}, Path("unused.log"))
    nodes = NodeSet([fake])
    start = time.monotonic()
    chaos = Chaos(nodes, every_s=0.1, until_s=start + 0.15, rng=random.Random(1),
                  restart_after_s=0.4)  # fmt: skip
    chaos.start()
    time.sleep(0.3)
    assert nodes.up() == []  # killed, not started yet
    chaos.join(5)
    assert not chaos.is_alive() and nodes.up() == [0]
    (kill, killed_s), (spawn, spawned_s) = fake.events
    assert (kill, spawn) == ("kill", "spawn") and spawned_s - killed_s >= 0.4
    assert len(chaos.log.kills) == 1 and chaos.log.restart_s[0] >= 0.4


def test_a_killed_node_is_started_again_at_once_by_default() -> None:
    fake = FakeNode(0, free_port(), free_port(), {}, Path("unused.log"))
    chaos = Chaos(NodeSet([fake]), every_s=0.1, until_s=time.monotonic() + 0.15,
                  rng=random.Random(1))  # fmt: skip
    chaos.start()
    chaos.join(5)
    (_, killed_s), (_, spawned_s) = fake.events
    assert spawned_s - killed_s < 0.05


# --- the manifest's history -----------------------------------------------------------------------


def manifest(v: int, leases: list[list[int]], done: str = "0", **more: Any) -> dict[str, Any]:
    return {"v": v, "next": 8, "segs": [[7, "sid", 10, 0, done, leases]], "commits": [], **more}


def test_a_message_finished_and_then_unfinished_again_is_marked_in_its_story() -> None:
    start_wall_s = 1000.0
    versions = [
        Version(1.0, manifest(10, [[3, 1, 1_006_000, 1_001_000]], commits=["aa.1"],
                              lead=["aa", "http://127.0.0.1:4001", 0])),
        Version(1.1, manifest(11, [[3, 1, 1_006_000, 1_001_000]], commits=["aa.1", "bb.1"])),
        Version(2.0, manifest(12, [], done="8", commits=["aa.1", "bb.1", "aa.2"])),
        Version(7.0, manifest(14, [[3, 2, 1_012_000, 1_001_000]],
                              commits=["aa.2", "cc.1", "cc.2"], logs={"cc-1-x": [[7, 3]]})),
    ]  # fmt: skip
    names = node_names(versions, {2: 4001})
    assert names == {"aa": "node 2"}
    told = list(story(versions, 7, 3, start_wall_s, names))
    assert [e["state"] for e in told] == ["leased", "finished", "leased"]
    assert told[0]["until_s"] == 6.0 and told[0]["written_by"] == ["aa.1 (node 2)"]
    assert told[1]["written_by"] == ["aa.2 (node 2)"] and "went_back" not in told[1]
    again = told[2]
    assert again["went_back"] and again["epoch"] == 2 and again["missed_versions"] == 1
    assert again["logs"] == ["cc-1-x"] and again["written_by"] == ["cc.1", "cc.2"]
    assert message_state(versions[0].m, 7, 4, start_wall_s)["state"] == "visible, never received"
    assert message_state(versions[0].m, 6, 0, start_wall_s)["state"].startswith("finished")
    assert message_state(versions[0].m, 9, 0, start_wall_s)["state"] == "not adopted yet"


@pytest.mark.parametrize("layout", ["journal", "files"])
def test_the_watch_records_each_new_version_of_a_local_manifest_and_reads_it_back(
    tmp_path: Path, layout: str
) -> None:
    import asyncio

    from okuri.store.directory import open_local

    store = open_local(str(tmp_path / "data"), layout)
    asyncio.run(store.put_if_absent("m/q.x", b'{"v": 1}'))
    read = local_reader(tmp_path / "data", "q.x")
    assert read() == b'{"v": 1}'
    assert local_reader(tmp_path / "data", "other")() is None
    watch = ManifestWatch(read, tmp_path / "h.jsonl.gz", time.monotonic(), every_s=0.005)
    watch.start()
    time.sleep(0.1)
    etag = asyncio.run(store.get("m/q.x")).etag
    asyncio.run(store.put_if_match("m/q.x", b'{"v": 2}', etag))
    time.sleep(0.1)
    watch.stop()
    watch.join(5)
    _, versions = load_history(tmp_path / "h.jsonl.gz")
    assert [v.v for v in versions] == [1, 2] and watch.versions == 2 and watch.reads > 2


def test_the_stories_of_late_messages_are_told_from_a_kept_directory(tmp_path: Path) -> None:
    ledger = Ledger(start_s=0.0)
    first = Receipt("q", "inc", 7, 3, 1).encode()
    copy = Receipt("q", "inc", 9, 0, 1).encode()  # the same message written again
    ledger.acknowledged(["m"], 0.5)
    ledger.delivered([("m", "sqs-m", first)], 0.2, node=0)
    ledger.deleted([("m", "sqs-m", first)], 0.4, node=1)
    ledger.delivered([("m", "sqs-m", copy)], 0.6, node=2)
    (tmp_path / "after_delete.json").write_text(json.dumps(ledger.after_delete_timelines()))
    (tmp_path / "nodes.json").write_text(json.dumps({"nodes": {"0": {"port": 4001}}}))
    import gzip

    with gzip.open(tmp_path / "manifests.jsonl.gz", "wt") as f:
        f.write(json.dumps({"start_wall_s": 1000.0}) + "\n")
        m = manifest(3, [[3, 1, 1_006_000, 1_000_200]], lead=["aa", "http://h:4001", 0])
        f.write(json.dumps({"t": 0.3, "m": m}) + "\n")
        f.write(json.dumps({"t": 0.5, "m": {**manifest(4, []), "next": 10}}) + "\n")
    out = io.StringIO()
    assert tell(tmp_path, out) == 1
    text = out.getvalue()
    assert "2 manifest versions seen (v3..v4); 1 messages delivered after delete" in text
    assert '"aa": "node 0"' in text
    assert "slot 7 index 3:" in text and "slot 9 index 0:" in text
    assert "delivered after delete: another copy (epoch 1)" in text
    assert '"state": "finished (segment dropped)"' in text


# --- report and flags -------------------------------------------------------------------------


def test_the_report_names_every_failed_check() -> None:
    verdict = Ledger(0.0).verdict().figures()
    result = {
        "plan": {"nodes": 3, "store": "local directory", "fault_s": 20.0, "kill_every_s": 4.0,
                 "producers": 2, "consumers": 2, "visibility_s": 10, "seed": 7},
        "checks": {"no_loss": True, "no_delivery_after_delete": False, "nodes_restarted": True,
                   "clients_ran": True},
        "ok": False,
        **verdict,
        "deliveries_after_delete": 1,
        "after_delete_examples": [{"id": "m"}],
        "kills": 1,
        "kill_log": [{"at_s": 4.0, "node": 2}],
        "restart_s": {"p50": 0.7, "max": 0.7},
        "duration_s": {"fault_s": 20.0, "restart_wait_s": 0.1, "drain_s": 15.0, "total_s": 35.1},
        "nodes": {"per_node": [{"node": 0, "kills": 1, "requests_per_s": 5.0,
                                "acknowledged_per_s": 1.0, "received_per_s": 1.0,
                                "deleted_per_s": 1.0, "failovers": 2, "server_faults": 0}],
                  "restart_failures": []},
        "errors": {"failovers": 2, "server_faults": 0, "exhausted_calls": 0,
                   "first_error": None, "client_crashes": [], "stuck_threads": []},
        "ack_logs": {"deletes_answered": 40, "closed_by_committers": 2},
    }  # fmt: skip
    text = render(result)
    assert "ack logs (auto)           40 deletes answered from logs, 2 logs closed" in text
    assert "no delivery after delete: FAIL" in text and "no loss: PASS" in text
    assert "deliveries after delete   1" in text
    assert 'after delete: {"id": "m"}' in text
    assert "node 2 at 4.0 s" in text and "seed 7" in text
    assert "standard queue" in text and "FIFO" not in text


def test_the_report_shows_fifo_figures_and_examples() -> None:
    fifo = FifoLedger(0.0)
    fifo.delivered([fifo_message("b", 2)], 1.0, 1.1)
    fifo.delivered([fifo_message("a", 1)], 1.2, 1.3)
    result = {
        "plan": {"nodes": 3, "store": "local directory", "fault_s": 20.0, "kill_every_s": 4.0,
                 "producers": 2, "consumers": 2, "visibility_s": 10, "seed": 7},
        "checks": {"no_loss": True, "fifo_group_order": False},
        "ok": False,
        **Ledger(0.0).verdict().figures(),
        "fifo": {"groups": 20, **fifo.verdict().figures()},
        "kills": 0, "kill_log": [], "restart_s": {"p50": None, "max": None},
        "duration_s": {"fault_s": 20.0, "restart_wait_s": 0.1, "drain_s": 15.0, "total_s": 35.1},
        "nodes": {"per_node": [], "restart_failures": []},
        "errors": {"failovers": 0, "server_faults": 0, "exhausted_calls": 0,
                   "unanswered_attempts": {"SendMessageBatch": 3, "ReceiveMessage": 1},
                   "first_error": None, "client_crashes": [], "stuck_threads": []},
    }  # fmt: skip
    text = render(result)
    assert "unanswered attempts       1 ReceiveMessage, 3 SendMessageBatch" in text
    assert "FIFO queue, 20 groups" in text and "fifo group order: FAIL" in text
    assert "FIFO groups               1 of 20 delivered" in text
    assert "group order violations    1" in text and "dedup violations          0" in text
    assert 'out of group order: {"group": "g0"' in text


@pytest.mark.parametrize(
    "argv",
    [
        ["--nodes", "0"],
        ["--nodes", "9"],
        ["--kill-every-s", "0.1"],
        ["--fault-seconds", "1e9"],
        ["--visibility-s", "1"],
        ["--store", "nfs"],
        ["--s3-endpoint", "http://127.0.0.1:1"],  # only with --store s3
        ["--fifo-groups", "-1"],
        ["--ack-logs", "sometimes"],
    ],
)
def test_out_of_range_or_conflicting_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(argv)
    assert exit_.value.code == 2


def test_defaults_are_the_issues_three_nodes_and_a_kill_every_four_seconds() -> None:
    args = build_parser().parse_args([])
    assert (args.nodes, args.kill_every_s, args.store) == (3, 4.0, "local")
    plan = plan_from(parse_args([]))
    assert (plan.shape, plan.restart_after_s, plan.blind_clients) == ("default", 0.0, False)
    assert not plan.delete_elsewhere and plan.reply_timeout_s == plan.wait_s + 20


def test_the_failover_shape_is_issue_28s_load_and_a_flag_beside_it_wins() -> None:
    plan = plan_from(parse_args(["--shape", "failover", "--nodes", "5", "--store", "s3"]))
    assert (plan.nodes, plan.store, plan.shape) == (5, "s3", "failover")
    assert (plan.visibility_s, plan.wait_s, plan.producers, plan.consumers) == (5, 1, 2, 3)
    assert (plan.fault_s, plan.kill_every_s, plan.restart_after_s, plan.drain_s) == (
        40.0, 4.0, 1.0, 60.0
    )  # fmt: skip
    assert (plan.connect_timeout_s, plan.read_timeout_s, plan.reply_timeout_s) == (2, 25, 25)
    assert plan.blind_clients and plan.delete_elsewhere
    plan = plan_from(
        parse_args(["--fault-seconds", "10", "--shape", "failover", "--no-delete-elsewhere"])
    )
    assert (plan.fault_s, plan.delete_elsewhere, plan.visibility_s) == (10.0, False, 5)
    with pytest.raises(SystemExit):
        parse_args(["--shape", "storm"])
    with pytest.raises(SystemExit):
        parse_args(["--restart-after-s", "-1"])
    with pytest.raises(SystemExit):
        parse_args(["--fifo-partitions"])  # only with --fifo-groups
    plan = plan_from(parse_args(["--fifo-groups", "8", "--fifo-partitions"]))
    assert (plan.fifo_groups, plan.fifo_partitions) == (8, True)


def test_the_report_says_how_the_failover_shapes_clients_behave_and_which_deletes_came_back() -> (
    None
):
    verdict = Ledger(0.0).verdict().figures()
    plan = plan_from(parse_args(["--shape", "failover", "--seed", "3"]))
    result = {
        "plan": {**dataclasses.asdict(plan), "store": "local directory"},
        "checks": {"no_delivery_after_delete": False},
        "ok": False,
        **verdict,
        "after_delete_calls": [{"delete_call": 12, "node": 1, "answered_at_s": 9.5,
                                "messages": 10, "came_back": 10}],
        "kills": 0, "kill_log": [], "restart_s": {"p50": None, "max": None},
        "duration_s": {"fault_s": 40.0, "restart_wait_s": 0.1, "drain_s": 15.0, "total_s": 55.1},
        "nodes": {"per_node": [], "restart_failures": []},
        "errors": {"failovers": 0, "server_faults": 0, "exhausted_calls": 0,
                   "first_error": None, "client_crashes": [], "stuck_threads": []},
    }  # fmt: skip
    text = render(result)
    assert "every 4 s, started again 1 s after" in text
    assert "shape failover" in text and "read timeout 25.0 s" in text
    assert "any node, up or not" in text and "deletes first to another node" in text
    assert "delete call 12 (answered by node 1 at 9.500 s): 10 of its 10 messages" in text
    result["after_delete_kinds"] = {"another copy": 10}
    result["deliveries_after_delete"] = 10
    result["other_message_after_delete"] = 20
    text = render(result)
    assert "deliveries after delete   10 (10 another copy)" in text
    assert "(and 20 deliveries of a body sent again under another MessageId" in text
