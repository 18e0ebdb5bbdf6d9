"""`python -m bench sqs` at a tiny load: it runs, prints its figures, and really moves messages.

These start real `okuri serve` processes (and, in some tests, moto's or ministack's server) on
127.0.0.1 for a
couple of seconds each; they check shapes and that messages flowed, never how fast: the machine
is shared.
"""

from __future__ import annotations

import asyncio
import calendar
import dataclasses
import json
import math
import os
import stat
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from bench import launch, load, measure, ministack, servers, sqs, sqs_report
from bench.__main__ import main
from bench.profiler import Profiler
from bench.sqs_client import Signer
from okuri.sqs.sigv4 import SignedRequest, verify
from okuri.sqs.sigv4_errors import AuthError

TINY = ["--seconds", "2", "--producers", "2", "--consumers", "2"]
SHORT = ["--warmup-seconds", "0.5", "--drain-seconds", "3"]


def assert_moved_messages(figures: dict[str, Any]) -> None:
    assert isinstance(figures["messages_deleted"], int) and figures["messages_deleted"] > 0
    assert isinstance(figures["messages_per_s"], float) and figures["messages_per_s"] > 0
    latency = figures["latency_ms"]
    assert latency["samples"] > 0
    assert 0 < latency["p50"] <= latency["p99"]
    assert figures["errors"] == 0, figures["first_error"]


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_with_aiobotocore_against_okuri_alone_prints_every_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["sqs", *TINY, *SHORT, "--no-peer", "--linger-ms", "5"]
    assert main([*argv, "--client", "aiobotocore"]) == 0
    out = capsys.readouterr().out
    for label, _, _ in sqs_report.ROWS:
        if label not in sqs_report.OPTIONAL_ROWS:  # S3 (--store s3), FIFO (--fifo-groups)
            assert label in out
    assert "aiobotocore client" in out
    assert "okuri x1" in out
    assert "moto" not in out.split("note:")[0] and "ministack" not in out.split("note:")[0]
    assert "okuri x1, per node" in out and "manifest commits" in out
    assert "share this machine's" in out  # the load generator caveat is always printed
    line = next(x for x in out.splitlines() if x.startswith("messages/s end to end"))
    assert float(line.split()[-1]) > 0


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_json_reports_okuri_and_moto_side_by_side_with_the_light_client(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sqs.cli_main([*TINY, *SHORT, "--peer", "moto", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"config", "machine", "okuri", "peer", "peer_skipped", "rounds"}
    assert result["config"]["peer"] == "moto" and result["peer_skipped"] is None
    assert result["rounds"] is None  # one round: its columns say it all
    assert result["config"]["producers"] == 2 and result["config"]["consumers"] == 2
    assert result["config"]["client"] == "light" and result["config"]["nodes"] == [1]
    [okuri] = result["okuri"]
    moto = result["peer"]
    for name, figures in (("okuri", okuri), ("moto", moto)):
        assert figures["target"] == name
        assert figures["endpoint"].startswith("http://127.0.0.1:")
        assert_moved_messages(figures)
        assert {"server_percent", "client_percent", "server_messages_per_cpu_s"} <= set(
            figures["cpu"]
        )
        # Time the host took from this machine's CPUs, apart from anyone's busy time (Linux).
        stolen = figures["cpu"]["stolen_percent"]
        assert stolen is None or stolen >= 0
        assert set(figures["drain"]) == {"seconds", "left_in_queue"}
        assert figures["server"]["exit_code"] == 0
    assert okuri["ratio_to_peer"] == pytest.approx(
        okuri["messages_per_s"] / moto["messages_per_s"], abs=0.01
    )


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_over_one_then_two_nodes_reports_each_nodes_commits_and_store_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--nodes", "1,2", "--rounds", "2", "--seconds", "1.5", "--producers", "2"]
    assert sqs.cli_main([*argv, "--consumers", "2", *SHORT, "--no-peer", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["nodes"] == [1, 2]
    # Two rounds, alternating, each on fresh nodes and a fresh store.
    assert [(run["nodes"], run["round"]) for run in result["okuri"]] == [
        (1, 1), (2, 1), (1, 2), (2, 2)
    ]  # fmt: skip
    for run in result["okuri"]:
        assert_moved_messages(run)
        assert run["server"]["exit_code"] == 0
        assert [n["node"] for n in run["per_node"]] == list(range(run["nodes"]))
        assert sum(n["manifest_commits"] for n in run["per_node"]) > 0
        for node in run["per_node"]:
            assert node["endpoint"].startswith("http://127.0.0.1:")
            assert node["manifest_conflicts"] is None or node["manifest_conflicts"] >= 0
            assert set(node["store_requests"]) >= {"put", "cas", "get"}
        # The producers and consumers were spread: every node took writes.
        assert all(n["store_requests"]["put"] > 0 for n in run["per_node"])
    rates = [run["messages_per_s"] for run in result["okuri"]]
    assert result["rounds"]["ratio_to_base"] == {
        "2": [round(rates[1] / rates[0], 2), round(rates[3] / rates[2], 2)]
    }
    text = sqs_report.render(result)
    header = next(x for x in text.splitlines() if "x1 #1" in x)
    assert "x2 #2" in header and "moto" not in header
    assert "x2 #1, per node" in text and "x2 #2, per node" in text
    assert "okuri x2/okuri x1 round by round: " in text
    deletes = [x for x in text.splitlines() if x.startswith("DeleteMessageBatch p50 ms")]
    # The runs' row (a column per run), then each run's row (a column per node).
    assert [len(x.split()) - 3 for x in deletes] == [4, 1, 2, 1, 2]
    assert all(float(v) > 0 for x in deletes for v in x.split()[3:])
    conflicts = next(x for x in text.splitlines() if x.startswith("manifest conflicts"))
    assert conflicts.split()[2:] and all(
        cell == "n/a" or cell.isdigit() for cell in conflicts.split()[2:]
    )


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_sequential_client_against_one_node(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--sequential", "1", "--seconds", "1.5", "--wait-seconds", "0", *SHORT]
    assert sqs.cli_main([*argv, "--no-peer", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["sequential"] is True
    assert (result["config"]["producers"], result["config"]["consumers"]) == (1, 0)
    [run] = result["okuri"]
    assert_moved_messages(run)
    assert run["drain"]["left_in_queue"] == 0
    # One client, one call at a time: as many receives that got messages as sends, about.
    assert run["empty_receives"] <= run["receive_requests_per_s"] * run["window_s"] / 2


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_nodes_can_share_a_bucket_on_moto(capsys: pytest.CaptureFixture[str]) -> None:
    # 4 s: on a loaded machine two nodes on moto have moved nothing yet after 1.5 s.
    argv = ["--nodes", "2", "--store", "s3", "--seconds", "4", *SHORT, "--no-peer", "--json"]
    assert sqs.cli_main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["store"].startswith("S3 on moto")
    [run] = result["okuri"]
    assert_moved_messages(run)
    assert run["cpu"]["store_percent"] is not None  # moto's S3 process, measured apart
    # Every node committed: by its own compare-and-swap, or through the queue's leader.
    assert all(
        n["store_requests"]["cas"] > 0 or n["engine_events"].get("manifest_forwards", 0) > 0
        for n in run["per_node"]
    )


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_drives_a_running_server_given_its_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = servers.StoreSpec(data_dir=tmp_path / "data")
    with servers.cluster(1, store, tmp_path) as [node]:
        argv = [*TINY, *SHORT, "--no-peer", "--json", "--endpoint", node.endpoint]
        argv += ["--server-pid", str(node.pid)]
        assert sqs.cli_main(argv) == 0
    assert node.exit_codes == [0]
    [figures] = json.loads(capsys.readouterr().out)["okuri"]
    assert_moved_messages(figures)
    assert figures["cpu"]["server_percent"] is not None


@pytest.mark.parametrize(
    "argv",
    [
        ["--producers", "0"],
        ["--seconds", "1e9"],
        ["--linger-ms", "soon"],
        ["--server-pid", "123"],
        ["--nodes", "0"],
        ["--nodes", "1,99"],
        ["--nodes", "1,2,3,4,5,6,7,8,1"],
        ["--client", "boto2"],
        ["--store", "nfs"],
        ["--nodes", "1,2", "--profile", "out.txt"],
        ["--endpoint", "http://127.0.0.1:1", "--linger-ms", "5"],
        ["--endpoint", "http://127.0.0.1:1", "--nodes", "2"],
        ["--endpoint", "http://127.0.0.1:1", "--store", "s3"],
        ["--endpoint", "http://127.0.0.1:1", "--profile", "out.txt"],
        ["--rounds", "0"],
        ["--rounds", "11"],
        ["--rounds", "2", "--endpoint", "http://127.0.0.1:1"],
        ["--rounds", "2", "--profile", "out.txt"],
        ["--sequential", "0"],
        ["--sequential", "1", "--producers", "2"],
        ["--sequential", "1", "--consumers", "2"],
        ["--sequential", "1", "--backlog-max", "5"],
        ["--peer", "localstack"],
        ["--messages", "0"],
        ["--messages", "many"],
    ],
)
def test_out_of_range_or_conflicting_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        sqs.cli_main(argv)
    assert exit_.value.code == 2


def test_a_server_that_cannot_start_is_one_line_and_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launch, "START_S", 0.0)
    assert sqs.cli_main([*TINY, "--no-peer"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m bench sqs: error: okuri serve did not become ready")


def test_the_light_clients_signature_is_what_okuri_verifies() -> None:
    body = b'{"QueueName":"q"}'
    headers = Signer("AKID", "secret", "eu-west-1").headers(
        "127.0.0.1:9", "AmazonSQS.CreateQueue", body
    )
    amz = headers["X-Amz-Date"]
    now_ms = calendar.timegm(time.strptime(amz, "%Y%m%dT%H%M%SZ")) * 1000
    request = SignedRequest("POST", "/", "", headers, body)
    assert verify(request, {"AKID": "secret"}.get, now_ms) == "AKID"
    with pytest.raises(AuthError) as refused:
        verify(SignedRequest("POST", "/", "", headers, body + b" "), {"AKID": "secret"}.get, now_ms)
    assert refused.value.code == "SignatureDoesNotMatch"
    with pytest.raises(AuthError):
        verify(request, {"AKID": "other secret"}.get, now_ms)


def test_bodies_are_100_bytes_and_carry_their_send_time() -> None:
    body = measure.make_body(3, 41)
    assert len(body.encode()) == measure.BODY_BYTES
    stamp = measure.sent_ns(body)
    assert stamp is not None and stamp > 0
    assert measure.sent_ns("not a stamp") is None


def test_latency_histogram_percentiles_are_within_a_bucket() -> None:
    hist = measure.LatencyHistogram()
    assert hist.percentile_ms(0.5) is None
    for ms in range(1, 1001):
        hist.add(ms / 1000)
    assert hist.samples == 1000
    p50, p99 = hist.percentile_ms(0.50), hist.percentile_ms(0.99)
    assert p50 is not None and p99 is not None
    assert math.isclose(p50, 500, rel_tol=0.01)
    assert math.isclose(p99, 990, rel_tol=0.01)
    assert hist.max_s == pytest.approx(1.0)


class FakeSqs:
    """An in-memory stand-in for an SQS client that also fails on purpose: the first call of
    each action raises, and every fifth batch has one entry refused."""

    def __init__(
        self, queue: deque[tuple[str, str]] | None = None, delay_s: float = 0.001
    ) -> None:
        self.queue: deque[tuple[str, str]] = deque() if queue is None else queue
        self.delay_s = delay_s
        self.calls: dict[str, int] = {}
        self.next_handle = 0

    async def _call(self, action: str) -> int:
        await asyncio.sleep(self.delay_s)  # yield, as a network round trip would
        n = self.calls[action] = self.calls.get(action, 0) + 1
        if n == 1:
            raise RuntimeError(f"{action} refused once")
        return n

    async def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        n = await self._call("send")
        refused = Entries[:1] if n % 5 == 0 else []
        for entry in Entries[len(refused) :]:
            self.next_handle += 1
            self.queue.append((str(self.next_handle), entry["MessageBody"]))
        return {
            "Successful": [{"Id": e["Id"]} for e in Entries[len(refused) :]],
            "Failed": [{"Id": e["Id"], "Code": "Nope"} for e in refused],
        }

    async def receive_message(self, QueueUrl: str, MaxNumberOfMessages: int, **_: Any) -> Any:
        await self._call("receive")
        got = [self.queue.popleft() for _ in range(min(MaxNumberOfMessages, len(self.queue)))]
        return {"Messages": [{"ReceiptHandle": h, "Body": b} for h, b in got]} if got else {}

    async def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        await self._call("delete")
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


WORKLOAD = load.Workload(
    producers=2, consumers=2, seconds=1.0, warmup_s=0.0, drain_s=1.0, wait_s=0, backlog_max=50
)


def test_driver_counts_failures_and_keeps_moving_messages() -> None:
    client = FakeSqs()
    driver = load.Driver([client], "http://fake/q", WORKLOAD)
    figures = asyncio.run(driver.run(lambda: None))
    assert figures["messages_deleted"] > 0 and figures["latency_ms"]["samples"] > 0
    assert figures["errors"] >= 3  # one refusal per action, plus refused entries
    assert figures["first_error"] is not None and "refused once" in figures["first_error"]
    assert figures["cpu"]["server_percent"] is None  # no server pid: unknown, not zero
    # Everything sent was received; a batch whose delete failed stays counted as left over
    # (a real queue would deliver it again after its visibility timeout).
    assert not client.queue
    assert 0 < figures["drain"]["left_in_queue"] == driver.sent - driver.deleted <= 10


def test_driver_spreads_producers_and_consumers_over_every_client() -> None:
    shared: deque[tuple[str, str]] = deque()  # one queue behind two "nodes"
    clients = [FakeSqs(shared), FakeSqs(shared)]
    figures = asyncio.run(load.Driver(clients, "http://fake/q", WORKLOAD).run(lambda: None))
    assert figures["messages_deleted"] > 0
    for client in clients:
        assert client.calls["send"] > 1 and client.calls["receive"] > 1


def test_each_calls_round_trip_is_timed_per_node() -> None:
    shared: deque[tuple[str, str]] = deque()
    clients = [FakeSqs(shared, delay_s=0.001), FakeSqs(shared, delay_s=0.02)]  # node 1 slow
    figures = asyncio.run(load.Driver(clients, "http://fake/q", WORKLOAD).run(lambda: None))
    by_node = figures["call_p50_ms_by_node"]
    for action in load.CALLS:
        fast, slow = by_node[action]
        assert fast is not None and slow is not None
        assert fast < 10 <= 20 <= slow < 200, (action, fast, slow)
        assert fast <= figures["call_p50_ms"][action] <= slow
    run = {"nodes": 2, **figures, "per_node": [{"node": 0}, {"node": 1}]}
    rows = sqs_report._per_node_rows(run)
    delete_row = next(line for line in rows if line.startswith("DeleteMessageBatch p50 ms"))
    fast_cell, slow_cell = (float(x) for x in delete_row.split()[-2:])
    assert fast_cell < 10 <= 20 <= slow_cell


class Hook:
    def __init__(self) -> None:
        self.events: list[str] = []

    async def opened(self) -> None:
        self.events.append("opened")

    async def closed(self) -> None:
        self.events.append("closed")


def test_window_hooks_open_and_close_once_around_the_window() -> None:
    hook = Hook()
    driver = load.Driver([FakeSqs()], "http://fake/q", WORKLOAD)
    asyncio.run(driver.run(lambda: None, [hook]))
    assert hook.events == ["opened", "closed"]


# py-spy installs its own SIGINT handler, which works even when SIGINT was ignored on entry (as it
# is for a job a non-interactive shell starts in the background); a shell's `trap` would not.
FAKE_PY_SPY = """#!{python}
import pathlib, signal, sys, time
out = sys.argv[sys.argv.index("--output") + 1]
def stop(*_):
    pathlib.Path(out).write_text("main (server.py:1) 3\\n")
    sys.exit(0)
signal.signal(signal.SIGINT, stop)
pathlib.Path(out + ".ready").touch()
for _ in range(600):
    time.sleep(0.05)
"""


def test_profiler_stops_py_spy_when_the_window_closes(tmp_path: Path) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text(FAKE_PY_SPY.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "stacks.txt"
    profiler = Profiler(os.getpid(), str(out), tmp_path / "py-spy.log", exe=str(fake))

    async def window() -> None:
        await profiler.opened()
        # Interrupt only once the fake has its handler: on a loaded machine the shell may not
        # have reached `trap` yet, and an early SIGINT would kill it without a profile.
        ready = tmp_path / "stacks.txt.ready"
        for _ in range(200):
            if ready.exists():
                break
            await asyncio.sleep(0.05)
        await profiler.closed()

    asyncio.run(window())
    profiler.check()
    assert out.read_text().strip() == "main (server.py:1) 3"


def test_profiler_without_output_is_a_bench_error(tmp_path: Path) -> None:
    profiler = Profiler(1, str(tmp_path / "none.txt"), tmp_path / "log", exe="/bin/true")
    profiler.start()
    asyncio.run(profiler.stop())
    with pytest.raises(servers.BenchError, match="py-spy wrote no profile"):
        profiler.check()


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_sqs_on_a_fifo_queue_over_two_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--nodes", "2", "--seconds", "1.5", "--producers", "2", "--consumers", "2"]
    assert sqs.cli_main([*argv, *SHORT, "--no-peer", "--fifo-groups", "50", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["fifo_groups"] == 50
    (run,) = result["okuri"]
    assert_moved_messages(run)
    assert run["errors"] == 0
    assert "FIFO queue, 50 message groups" in sqs_report.render(result)


def test_a_fifo_workload_names_groups_and_deduplication_ids() -> None:
    fifo = load.Workload(1, 1, 1.0, 0.0, 1.0, 0, 0, fifo_groups=3)
    assert fifo.queue_request("q") == {"QueueName": "q.fifo", "Attributes": {"FifoQueue": "true"}}
    entries = [fifo.entry(0, n, n) for n in range(6)]
    assert {e["MessageGroupId"] for e in entries} == {"g0", "g1", "g2"}
    assert len({e["MessageDeduplicationId"] for e in entries}) == 6
    standard = load.Workload(1, 1, 1.0, 0.0, 1.0, 0, 0)
    assert standard.queue_request("q") == {"QueueName": "q"}
    assert set(standard.entry(0, 0, 0)) == {"Id", "MessageBody"}


class SlowSends(FakeSqs):
    """Sends take a while and never fail: one is still in flight when producing stops, while
    the consumer has already deleted everything sent before it."""

    async def _call(self, action: str) -> int:
        # Sends land every 50 ms; the producing window closes at 120 ms, after the batch that
        # landed at 100 ms was received and while its delete (30 ms) is still out.
        await asyncio.sleep({"send": 0.05, "delete": 0.03}.get(action, 0.001))
        return 2  # never the first call: nothing refused

    async def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        await self._call("send")
        for entry in Entries:
            self.next_handle += 1
            self.queue.append((str(self.next_handle), entry["MessageBody"]))
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def test_the_drain_waits_for_a_send_that_lands_after_the_backlog_emptied() -> None:
    workload = load.Workload(
        producers=1, consumers=1, seconds=0.12, warmup_s=0.0, drain_s=2.0, wait_s=0, backlog_max=0
    )
    driver = load.Driver([SlowSends()], "http://fake/q", workload)
    figures = asyncio.run(driver.run(lambda: None))
    assert figures["errors"] == 0
    assert figures["drain"]["left_in_queue"] == 0 and driver.sent == driver.deleted > 0


def test_a_fifo_run_reports_the_rate_its_in_flight_rule_allows() -> None:
    fifo = dataclasses.replace(WORKLOAD, fifo_groups=1)
    figures = asyncio.run(load.Driver([FakeSqs()], "http://fake/q", fifo).run(lambda: None))
    bound = figures["fifo_group_bound"]
    assert bound["holders_max"] == 1  # one group: one receive at a time, whatever the consumers
    assert 0 < bound["messages_per_receive"] <= 10 and bound["hold_ms"] > 0
    expected = bound["messages_per_receive"] / (bound["hold_ms"] / 1000)
    assert bound["messages_per_s"] == pytest.approx(expected, rel=0.01)
    result = {
        "config": {
            "producers": 2,
            "consumers": 2,
            "batch_entries": 10,
            "wait_s": 0,
            "body_bytes": 100,
            "client": "light",
            "fifo_groups": 1,
            "warmup_s": 0,
            "seconds": 1,
            "drain_s": 1,
            "backlog_max": 50,
            "linger_ms": None,
            "store": "local",
        },
        "okuri": [{**figures, "nodes": 1}],
        "peer": None,
        "machine": {"cpus": 2},
    }
    text = sqs_report.render(result)
    assert "FIFO: in-flight bound msgs/s" in text and "one receive at a time" in text
    many = dataclasses.replace(WORKLOAD, fifo_groups=50)
    figures = asyncio.run(load.Driver([FakeSqs()], "http://fake/q", many).run(lambda: None))
    assert figures["fifo_group_bound"]["holders_max"] == WORKLOAD.consumers
    standard = asyncio.run(load.Driver([FakeSqs()], "http://fake/q", WORKLOAD).run(lambda: None))
    assert standard["fifo_group_bound"] is None
    result["config"]["fifo_groups"] = 0
    result["okuri"] = [{**standard, "nodes": 1}]
    assert "FIFO:" not in sqs_report.render(result)


def test_rounds_report_each_counts_median_and_its_ratio_to_the_first_count_round_by_round() -> None:
    figures = asyncio.run(load.Driver([FakeSqs()], "http://fake/q", WORKLOAD).run(lambda: None))
    rates = [(1, 1, 1000.0), (3, 1, 1100.0), (1, 2, 2000.0), (3, 2, 1800.0), (1, 3, 1500.0),
             (3, 3, 1500.0)]  # fmt: skip
    runs = [{**figures, "nodes": n, "round": r, "messages_per_s": v} for n, r, v in rates]
    summary = sqs.summarize_rounds(runs, 3)
    assert summary is not None
    assert summary["base_nodes"] == 1
    assert summary["median_messages_per_s"] == {"1": 1500.0, "3": 1500.0}
    # Ratios are taken within each round: 1.1, 0.9, 1.0, whose median is 1.0.
    assert summary["ratio_to_base"] == {"3": [1.1, 0.9, 1.0]}
    assert summary["median_ratio_to_base"] == {"3": 1.0}
    assert sqs.summarize_rounds(runs[:2], 1) is None
    result = {
        "rounds": summary,
        "config": {
            "producers": 2,
            "consumers": 2,
            "batch_entries": 10,
            "wait_s": 0,
            "body_bytes": 100,
            "client": "light",
            "warmup_s": 0,
            "seconds": 1,
            "drain_s": 1,
            "backlog_max": 50,
            "linger_ms": None,
            "store": "local",
        },
        "okuri": runs,
        "peer": None,
        "machine": {"cpus": 2},
    }
    text = sqs_report.render(result).splitlines()
    header = next(x for x in text if "x1 #1" in x)
    assert header.split() == [f"{c}" for r in "123" for c in ("x1", f"#{r}", "x3", f"#{r}")]
    assert "over 3 rounds, median messages/s end to end: okuri x1 1500, okuri x3 1500" in text
    assert "okuri x3/okuri x1 round by round: 1.10, 0.90, 1.00; median 1.00" in text


def test_a_sequential_client_sends_receives_and_deletes_in_turn_then_drains() -> None:
    client = FakeSqs()
    order: list[str] = []
    for action in ("send_message_batch", "receive_message", "delete_message_batch"):
        call = getattr(client, action)

        async def noted(*args: Any, _call: Any = call, _name: str = action, **kw: Any) -> Any:
            order.append(_name)
            return await _call(*args, **kw)

        setattr(client, action, noted)
    one = dataclasses.replace(WORKLOAD, producers=1, consumers=0, sequential=True, backlog_max=0)
    driver = load.Driver([client], "http://fake/q", one)
    figures = asyncio.run(driver.run(lambda: None))
    assert figures["messages_deleted"] > 0
    # One call at a time, in turn: never a second send before the receive of the first.
    turns = "".join(name[0] for name in order)  # s, r, d
    assert turns.startswith("srsrd") and "ss" not in turns  # the first send and delete fail
    assert figures["send_requests_per_s"] == pytest.approx(
        figures["receive_requests_per_s"], rel=0.2
    )
    # The batch whose delete failed stays counted; everything else was drained.
    assert not client.queue and figures["drain"]["left_in_queue"] <= 10
    text = sqs_report.render(
        {
            "config": {**dataclasses.asdict(one), "batch_entries": 10, "body_bytes": 100,
                       "client": "light", "linger_ms": None, "store": "local"},
            "okuri": [{**figures, "nodes": 1}],
            "peer": None,
            "machine": {"cpus": 2},
        }
    )  # fmt: skip
    assert text.startswith(
        "python -m bench sqs: 1 sequential client(s) x SendMessageBatch(10), ReceiveMessage(10, "
        "wait 0 s), DeleteMessageBatch in turn;"
    )


def test_the_peer_is_ministack_unless_told_and_no_peer_means_none() -> None:
    def peer(*argv: str) -> str | None:
        return sqs.options(sqs.build_parser().parse_args(list(argv))).peer

    assert peer() == "ministack"  # the fastest emulator installable here
    assert peer("--peer", "moto") == "moto"
    assert peer("--peer", "none") is None and peer("--no-peer") is None
    assert peer("--no-peer", "--peer", "ministack") == "ministack"  # the last one said wins


def test_a_counted_window_defaults_to_a_long_bound_and_a_timed_one_to_twenty_seconds() -> None:
    def workload(*argv: str) -> load.Workload:
        return sqs.options(sqs.build_parser().parse_args(list(argv))).workload

    assert (workload().messages, workload().seconds) == (0, sqs.SECONDS_DEFAULT)
    counted = workload("--messages", "20000")
    assert (counted.messages, counted.seconds) == (20_000, sqs.COUNTED_SECONDS_DEFAULT)
    assert workload("--messages", "5", "--seconds", "3").seconds == 3


class NeverFails(FakeSqs):
    """No call raises; every fifth send still has one entry refused."""

    async def _call(self, action: str) -> int:
        await asyncio.sleep(self.delay_s)
        n = self.calls[action] = self.calls.get(action, 0) + 1
        return n + 1  # never 1, so never refused whole


def test_a_counted_window_sends_exactly_the_count_and_closes_once_all_are_deleted() -> None:
    counted = dataclasses.replace(WORKLOAD, warmup_s=0.2, seconds=30.0, messages=137)
    driver = load.Driver([NeverFails()], "http://fake/q", counted)
    figures = asyncio.run(driver.run(lambda: None))
    # Refused entries went back to the count and were sent again: exactly 137 in the window.
    assert figures["errors"] > 0 and "entry failed" in figures["first_error"]
    assert figures["messages_sent"] == figures["messages_deleted"] == 137
    assert figures["window_s"] < 10  # it closed on the count, not on the 30 s bound
    assert figures["messages_per_s"] == pytest.approx(137 / figures["window_s"], rel=0.05)
    assert figures["drain"]["left_in_queue"] == 0


class DeletesFail(NeverFails):
    async def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> Any:
        raise RuntimeError("delete refused")


def test_a_counted_window_that_cannot_be_reached_ends_at_its_seconds_bound() -> None:
    counted = dataclasses.replace(WORKLOAD, seconds=0.3, drain_s=0.2, messages=40)
    figures = asyncio.run(load.Driver([DeletesFail()], "http://fake/q", counted).run(lambda: None))
    # No warm-up: nothing was sent before the count, and exactly the count within it.
    assert figures["messages_sent"] == 40 and figures["messages_deleted"] == 0
    assert figures["window_s"] >= 0.3 and figures["errors"] > 0


def test_sequential_clients_under_a_count_send_it_exactly_then_only_receive() -> None:
    one = dataclasses.replace(
        WORKLOAD, producers=2, consumers=0, sequential=True, backlog_max=0, messages=55
    )
    figures = asyncio.run(load.Driver([NeverFails()], "http://fake/q", one).run(lambda: None))
    assert figures["messages_sent"] == figures["messages_deleted"] == 55


def _figures() -> dict[str, Any]:
    short = dataclasses.replace(WORKLOAD, seconds=0.1)
    return asyncio.run(load.Driver([NeverFails()], "http://fake/q", short).run(lambda: None))


def _result(peer: str | None, **config: Any) -> dict[str, Any]:
    return {
        "config": {
            "producers": 4, "consumers": 4, "batch_entries": 10, "wait_s": 1,
            "body_bytes": 100, "client": "light", "warmup_s": 3, "seconds": 20, "drain_s": 10,
            "backlog_max": 200, "linger_ms": None, "store": "local", "peer": peer, **config,
        },
        "okuri": [{**_figures(), "nodes": 1, "messages_per_s": 620.0, "ratio_to_peer": 0.62}],
        "peer": {**_figures(), "messages_per_s": 1000.0} if peer else None,
        "peer_skipped": None,
        "machine": {"cpus": 2},
    }  # fmt: skip


def test_the_report_names_the_peer_in_its_column_and_its_ratio() -> None:
    text = sqs_report.render(_result("ministack")).splitlines()
    header = next(x for x in text if "okuri x1" in x and "per node" not in x)
    assert header.split() == ["okuri", "x1", "ministack"]
    assert "okuri x1/ministack, messages/s end to end: 0.62x" in text
    text = sqs_report.render(_result("moto")).splitlines()
    assert "okuri x1/moto, messages/s end to end: 0.62x" in text


def test_the_report_says_a_counted_windows_count_and_bound() -> None:
    text = sqs_report.render(_result("ministack", messages=20_000, seconds=600))
    assert "window 20000 messages sent and deleted (at most 600 s), from an empty queue" in text


def test_a_peer_that_cannot_be_installed_is_skipped_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    okuri_run = {**_figures(), "nodes": 1}
    monkeypatch.setattr(sqs, "run_okuri", lambda opts, workdir: [okuri_run])
    # No virtualenv can be made under a file: the install fails as an unreachable registry would.
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(ministack, "cache_root", lambda: tmp_path / "a-file" / "peers")
    assert sqs.cli_main(["--peer", "ministack"]) == 0
    out, err = capsys.readouterr()
    [line] = err.splitlines()
    assert line.startswith("python -m bench sqs: skipping the peer: ministack: cannot make ")
    assert "peer ministack skipped: ministack: cannot make " in out
    assert "Traceback" not in out + err and "okuri x1/ministack" not in out
