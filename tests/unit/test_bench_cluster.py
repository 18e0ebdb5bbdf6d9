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
from okuri.bench.ledger import Ledger, receipt_epoch
from okuri.bench.servers import Node, free_port
from okuri.bench.sqs_client import Signer, SqsCallError


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
    assert receipt_epoch(receipt(7)) == 7
    assert receipt_epoch("not okuri's") is None
    assert receipt_epoch("okr1!!!") is None


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
    }  # fmt: skip
    text = render(result)
    assert "no delivery after delete: FAIL" in text and "no loss: PASS" in text
    assert "deliveries after delete   1" in text
    assert 'after delete: {"id": "m"}' in text
    assert "node 2 at 4.0 s" in text and "seed 7" in text


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
    ],
)
def test_out_of_range_or_conflicting_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(argv)
    assert exit_.value.code == 2


def test_defaults_are_the_issues_three_nodes_and_a_kill_every_four_seconds() -> None:
    args = build_parser().parse_args([])
    assert (args.nodes, args.kill_every_s, args.store) == (3, 4.0, "local")
