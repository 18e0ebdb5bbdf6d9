"""`python -m bench native` at a tiny load: both surfaces of one real server move messages, the
ledger finds none lost, and the figures are shaped as printed.

The slow tests start a real `okuri serve` on 127.0.0.1 for a few seconds; they check shapes and
that messages flowed, never how fast: the machine is shared.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bench import launch, native, native_report
from bench.__main__ import main
from bench.ledger import Ledger
from bench.load import Workload
from bench.native_load import NativeDriver

TINY = ["--seconds", "1.5", "--producers", "2", "--consumers", "2"]
SHORT = ["--warmup-seconds", "0.5", "--drain-seconds", "5"]


def assert_moved_without_loss(figures: dict[str, Any]) -> None:
    assert figures["messages_deleted"] > 0 and figures["messages_per_s"] > 0
    assert 0 < figures["latency_ms"]["p50"] <= figures["latency_ms"]["p99"]
    assert figures["errors"] == 0, figures["first_error"]
    ledger = figures["ledger"]
    assert ledger["drained"] and figures["drain"]["left_in_queue"] == 0
    assert ledger["lost"] == 0 and ledger["received_after_complete"] == 0, ledger
    assert ledger["acknowledged"] >= figures["messages_sent"] > 0
    assert ledger["completed"] == ledger["acknowledged"]
    per_message = figures["store_requests_per_message"]
    assert per_message is not None and per_message["put"] > 0 and per_message["cas"] > 0
    assert figures["manifest_commits"] > 0


@pytest.mark.slow  # starts a server: `make test`, not `make check`
def test_bench_native_measures_both_surfaces_of_one_server_and_loses_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["native", *TINY, *SHORT, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["native_items_per_request"] == 100
    assert result["config"]["sqs_batch_entries"] == 10
    assert result["native"]["surface"] == "native" and result["sqs"]["surface"] == "sqs"
    for surface in ("native", "sqs"):
        assert_moved_without_loss(result[surface])
    # Whole requests of 100 items went out on the native surface, of 10 on SQS.
    native_sent, sqs_sent = result["native"]["messages_sent"], result["sqs"]["messages_sent"]
    assert native_sent % 100 == 0 and sqs_sent % 10 == 0
    assert result["ratio_native_to_sqs"] == pytest.approx(
        result["native"]["messages_per_s"] / result["sqs"]["messages_per_s"], abs=0.01
    )
    assert result["server"]["exit_code"] == 0


@pytest.mark.slow  # starts a server: `make test`, not `make check`
def test_bench_native_through_the_python_client_prints_every_figure_and_the_ledger(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["native", *TINY, *SHORT, "--client", "okuri", "--no-sqs", "--linger-ms", "5"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    for label, _, _ in native_report.ROWS:
        if label != native_report.S3_CPU:  # only with --store s3
            assert label in out
    assert "okuri client" in out and "linger 5 ms" in out
    assert "native ledger: ok: lost=0 of " in out
    assert "sqs ledger" not in out and "native/sqs" not in out and "sqs:" not in out
    assert "share this machine's" in out
    line = next(x for x in out.splitlines() if x.startswith("messages/s end to end"))
    assert float(line.split()[-1]) > 0


@pytest.mark.slow  # starts moto's S3 and a server: `make test`, not `make check`
def test_bench_native_on_a_bucket_on_moto_counts_its_s3_requests(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--store", "s3", "--no-sqs", "--json", *TINY, *SHORT]
    assert native.cli_main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["config"]["store"].startswith("S3 on moto") and result["sqs"] is None
    assert_moved_without_loss(result["native"])
    assert result["native"]["cpu"]["store_percent"] is not None  # moto's S3, measured apart
    assert result["ratio_native_to_sqs"] is None


@pytest.mark.parametrize(
    "argv",
    [
        ["--producers", "0"],
        ["--consumers", "1000"],
        ["--seconds", "1e9"],
        ["--wait-seconds", "21"],
        ["--linger-ms", "soon"],
        ["--client", "boto3"],
        ["--store", "nfs"],
    ],
)
def test_out_of_range_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        native.cli_main(argv)
    assert exit_.value.code == 2


def test_a_server_that_cannot_start_is_one_line_and_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(launch, "START_S", 0.0)
    assert native.cli_main(TINY) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m bench native: error: okuri serve did not become ready")


class FakeNative:
    """An in-memory native API that fails on purpose: the first call of each operation raises,
    and every fourth complete answers one item "stale" (its lease gone)."""

    def __init__(self) -> None:
        self.queue: list[tuple[str, str]] = []
        self.leased: dict[str, tuple[str, str]] = {}
        self.calls: dict[str, int] = {}
        self.next_id = 0

    async def _call(self, operation: str) -> int:
        await asyncio.sleep(0.001)  # yield, as a round trip would
        n = self.calls[operation] = self.calls.get(operation, 0) + 1
        if n == 1:
            raise RuntimeError(f"{operation} refused once")
        return n

    async def create_queue(self, name: str) -> None: ...

    async def delete_queue(self, name: str) -> None: ...

    async def close(self) -> None: ...

    async def produce(self, queue: str, bodies: list[str]) -> list[str]:
        await self._call("produce")
        ids = []
        for body in bodies:
            self.next_id += 1
            ids.append(f"id{self.next_id}")
            self.queue.append((ids[-1], body))
        return ids

    async def lease(
        self, queue: str, max_items: int, request_timeout_s: int
    ) -> list[dict[str, Any]]:
        await self._call("lease")
        got, self.queue = self.queue[:max_items], self.queue[max_items:]
        items = []
        for item_id, body in got:
            handle = f"h-{item_id}-{self.calls['lease']}"
            self.leased[handle] = (item_id, body)
            items.append({"id": item_id, "handle": handle, "body": body})
        return items

    async def complete(self, queue: str, handles: list[str]) -> list[str]:
        n = await self._call("complete")
        results = []
        for k, handle in enumerate(handles):
            item = self.leased.pop(handle)
            if n % 4 == 0 and k == 0:  # its lease ran out: leased again later
                self.queue.append(item)
                results.append("stale")
            else:
                results.append("completed")
        return results


WORKLOAD = Workload(
    producers=2, consumers=2, seconds=0.5, warmup_s=0.0, drain_s=2.0, wait_s=0, backlog_max=400
)


def test_native_driver_counts_failures_and_its_ledger_sees_every_item_completed() -> None:
    client = FakeNative()
    ledger = Ledger(0.0)
    driver = NativeDriver([client], "q", WORKLOAD, ledger)
    figures = asyncio.run(driver.run(lambda: None))
    assert figures["messages_deleted"] > 0 and figures["latency_ms"]["samples"] > 0
    assert figures["errors"] >= 4  # one refusal per operation, plus "stale" answers
    assert figures["first_error"] is not None and "refused once" in figures["first_error"]
    # A batch whose complete failed stays leased in the fake (as on a server, until its lease
    # runs out), so it is delivered but not completed; nothing acknowledged goes unreceived.
    verdict = ledger.verdict()
    assert verdict.acknowledged == driver.sent and verdict.lost == 0
    assert verdict.after_delete == 0
    assert verdict.deleted == driver.deleted
    assert verdict.redeliveries > 0  # the "stale" items were leased again


def test_the_report_prints_a_dash_for_what_could_not_be_read() -> None:
    figures: dict[str, Any] = {
        "messages_per_s": 10.0,
        "sent_messages_per_s": 10.0,
        "send_requests_per_s": 1.0,
        "receive_requests_per_s": 1.0,
        "delete_requests_per_s": 1.0,
        "empty_receives": 0,
        "latency_ms": {"p50": 1.0, "p99": 2.0},
        "cpu": {
            "server_percent": None,
            "client_percent": 1.0,
            "other_processes_percent": None,
            "server_messages_per_cpu_s": None,
        },
        "manifest_commits": None,
        "store_requests_per_message": None,
        "errors": 0,
        "first_error": None,
        "ledger": {
            "acknowledged": 10,
            "lost": 0,
            "redeliveries": 0,
            "received_after_complete": 0,
            "drained": True,
        },
        "drain": {"left_in_queue": 0},
    }
    result = {
        "config": {
            "linger_ms": None,
            "wait_s": 1,
            "native_items_per_request": 100,
            "sqs_batch_entries": 10,
            "store": "local",
            "producers": 1,
            "consumers": 1,
            "body_bytes": 100,
            "client": "light",
            "warmup_s": 0,
            "seconds": 1,
            "drain_s": 1,
        },
        "machine": {"cpus": 2},
        "native": figures,
        "sqs": None,
        "server": {"exit_code": 0},
        "ratio_native_to_sqs": None,
    }
    text = native_report.render(result)
    commits = next(x for x in text.splitlines() if x.startswith("manifest commits"))
    assert commits.split()[-1] == "-"
    assert "native ledger: ok: lost=0 of 10 acknowledged" in text
