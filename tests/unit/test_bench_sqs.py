"""`okuri bench sqs` at a tiny load: it runs, prints its figures, and really moves messages.

These start a real `okuri serve` (and, in one test, moto's server) on 127.0.0.1 for a couple of
seconds each; they check shapes and that messages flowed, never how fast: the machine is shared.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import stat
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from okuri.bench import sqs
from okuri.server.cli import main

TINY = ["--seconds", "2", "--producers", "2", "--consumers", "2"]
SHORT = ["--warmup-seconds", "0.5", "--drain-seconds", "3"]


def assert_moved_messages(figures: dict[str, object]) -> None:
    assert isinstance(figures["messages_deleted"], int) and figures["messages_deleted"] > 0
    assert isinstance(figures["messages_per_s"], float) and figures["messages_per_s"] > 0
    latency = figures["latency_ms"]
    assert isinstance(latency, dict)
    assert latency["samples"] > 0
    assert 0 < latency["p50"] <= latency["p99"]
    assert figures["errors"] == 0, figures["first_error"]


def test_bench_sqs_against_okuri_alone_prints_every_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "sqs", *TINY, *SHORT, "--no-peer", "--linger-ms", "5"]) == 0
    out = capsys.readouterr().out
    for label, _, _ in sqs._ROWS:
        assert label in out
    assert "okuri" in out and "moto" not in out.split("note:")[0]
    assert "share this machine's" in out  # the load generator caveat is always printed
    line = next(x for x in out.splitlines() if x.startswith("messages/s end to end"))
    assert float(line.split()[-1]) > 0


def test_bench_sqs_json_reports_okuri_and_moto_side_by_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sqs.cli_main([*TINY, *SHORT, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"config", "machine", "okuri", "moto", "ratio_okuri_to_moto"}
    assert result["config"]["producers"] == 2 and result["config"]["consumers"] == 2
    for name in ("okuri", "moto"):
        figures = result[name]
        assert figures["target"] == name
        assert figures["endpoint"].startswith("http://127.0.0.1:")
        assert_moved_messages(figures)
        assert {"server_percent", "client_percent", "server_messages_per_cpu_s"} <= set(
            figures["cpu"]
        )
        assert set(figures["drain"]) == {"seconds", "left_in_queue"}
        assert figures["server"]["exit_code"] == 0
    assert result["ratio_okuri_to_moto"] == pytest.approx(
        result["okuri"]["messages_per_s"] / result["moto"]["messages_per_s"], abs=0.01
    )


def test_bench_sqs_drives_a_running_server_given_its_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server: dict[str, object] = {}
    with sqs.okuri_server(None, tmp_path, server) as target:
        argv = [*TINY, *SHORT, "--no-peer", "--json", "--endpoint", target.endpoint]
        argv += ["--server-pid", str(server["pid"])]
        assert sqs.cli_main(argv) == 0
    assert server["exit_code"] == 0
    figures = json.loads(capsys.readouterr().out)["okuri"]
    assert_moved_messages(figures)
    assert figures["cpu"]["server_percent"] is not None


@pytest.mark.parametrize(
    "argv",
    [
        ["--producers", "0"],
        ["--seconds", "1e9"],
        ["--linger-ms", "soon"],
        ["--server-pid", "123"],
        ["--endpoint", "http://127.0.0.1:1", "--linger-ms", "5"],
        ["--endpoint", "http://127.0.0.1:1", "--profile", "out.txt"],
    ],
)
def test_out_of_range_or_conflicting_flags_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        sqs.cli_main(argv)
    assert exit_.value.code == 2


def test_a_server_that_cannot_start_is_one_line_and_exit_code_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sqs, "START_S", 0.0)
    assert sqs.cli_main([*TINY, "--no-peer"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("okuri bench sqs: error: okuri serve did not become ready")


def test_bodies_are_100_bytes_and_carry_their_send_time() -> None:
    body = sqs.make_body(3, 41)
    assert len(body.encode()) == sqs.BODY_BYTES
    stamp = sqs.sent_ns(body)
    assert stamp is not None and stamp > 0
    assert sqs.sent_ns("not a stamp") is None


def test_latency_histogram_percentiles_are_within_a_bucket() -> None:
    hist = sqs.LatencyHistogram()
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
    """An in-memory stand-in for an aiobotocore SQS client that also fails on purpose: the first
    call of each action raises, and every fifth batch has one entry refused."""

    def __init__(self) -> None:
        self.queue: deque[tuple[str, str]] = deque()
        self.calls: dict[str, int] = {}
        self.next_handle = 0

    async def _call(self, action: str) -> int:
        await asyncio.sleep(0.001)  # yield, as a network round trip would
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


def test_driver_counts_failures_and_keeps_moving_messages() -> None:
    workload = sqs.Workload(
        producers=2, consumers=2, seconds=1.0, warmup_s=0.0, drain_s=1.0, wait_s=0,
        backlog_max=50,
    )  # fmt: skip
    client = FakeSqs()
    driver = sqs.Driver(client, "http://fake/q", workload)
    figures = asyncio.run(driver.run(lambda: None))
    assert figures["messages_deleted"] > 0 and figures["latency_ms"]["samples"] > 0
    assert figures["errors"] >= 3  # one refusal per action, plus refused entries
    assert figures["first_error"] is not None and "refused once" in figures["first_error"]
    assert figures["cpu"]["server_percent"] is None  # no server pid: unknown, not zero
    # Everything sent was received; a batch whose delete failed stays counted as left over
    # (a real queue would deliver it again after its visibility timeout).
    assert not client.queue
    assert 0 < figures["drain"]["left_in_queue"] == driver.sent - driver.deleted <= 10


FAKE_PY_SPY = """#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--output" ]; then out="$2"; fi
  shift
done
trap 'echo "main (server.py:1) 3" > "$out"; exit 0' INT
while :; do sleep 0.05; done
"""


def test_profiler_stops_py_spy_when_the_window_closes(tmp_path: Path) -> None:
    fake = tmp_path / "py-spy"
    fake.write_text(FAKE_PY_SPY)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "stacks.txt"
    profiler = sqs.Profiler(os.getpid(), str(out), tmp_path / "py-spy.log", exe=str(fake))

    async def window() -> None:
        profiler.start()
        await asyncio.sleep(0.2)
        await profiler.stop()

    asyncio.run(window())
    profiler.check()
    assert out.read_text().strip() == "main (server.py:1) 3"


def test_profiler_without_output_is_a_bench_error(tmp_path: Path) -> None:
    profiler = sqs.Profiler(1, str(tmp_path / "none.txt"), tmp_path / "log", exe="/bin/true")
    profiler.start()
    asyncio.run(profiler.stop())
    with pytest.raises(sqs.BenchError, match="py-spy wrote no profile"):
        profiler.check()
