"""`okuri bench cluster`'s parts that need no cluster: the checker, failover, report and flags.

The checker is judged on hand-written histories (acknowledged, delivered, deleted, with times);
failover against one loopback HTTP server that answers and one port where nothing listens.
The real chaos run is tests/cluster/test_chaos.py.
"""

from __future__ import annotations

import base64
import http.server
import json
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from okuri.bench import failover
from okuri.bench.cluster import build_parser, cli_main, render
from okuri.bench.failover import Caller, Exhausted, NodeSet
from okuri.bench.fifo_ledger import DEDUP_WINDOW_S, Answered, FifoLedger, Received
from okuri.bench.ledger import Ledger, receipt_epoch
from okuri.bench.servers import Node, free_port
from okuri.bench.sqs_client import Signer, SqsCallError
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
    assert example["deleted"] == {"at_s": 1.2, "node": 2, "message_id": "sqs-m", "epoch": 1}
    assert [(d["node"], d["epoch"], d["after_delete"]) for d in example["deliveries"]] == [
        (2, 1, False),
        (1, 1, True),
    ]


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


def test_receipt_epochs_are_read_for_diagnostics_only() -> None:
    assert receipt_epoch(receipt(7)) == 7  # a handle of the first format
    assert receipt_epoch(Receipt("q", "inc", 3, 4, 12).encode()) == 12
    assert receipt_epoch("not okuri's") is None
    assert receipt_epoch("okr1!!!") is None


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
