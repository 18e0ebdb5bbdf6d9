"""`python -m bench celery` at a tiny size: real `okuri serve`, a real prefork worker and producer
processes on okuri:// and sqs://; every task sent runs, and the table is printed. Shapes and
counts only, never speeds: the machine is shared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import celery_bench, celery_brokers, celery_report, metrics, ministack
from bench.__main__ import main
from bench.celery_tasks import RECORD_BYTES, RecordReader, record_line
from bench.servers import Unavailable


def test_records_are_fixed_width_and_a_half_written_one_waits_for_the_next_poll(
    tmp_path: Path,
) -> None:
    line = record_line(7, 12.5)
    assert len(line) == RECORD_BYTES
    path = tmp_path / "runs-1.rec"
    path.write_bytes(line + record_line(8, 13.0)[:10])
    reader = RecordReader(tmp_path)
    assert reader.poll() == 1 and reader.runs == {7: 12.5}
    with open(path, "ab") as f:
        f.write(record_line(8, 13.0)[10:] + record_line(7, 14.0))
    assert reader.poll() == 2
    assert reader.done(range(7, 9)) and reader.last_s(range(7, 9)) == 13.0
    assert reader.executions - len(reader.runs) == 1  # task 7 ran twice


@pytest.mark.slow  # starts two servers, a Celery worker each and producers: about a minute
def test_bench_celery_runs_every_task_on_okuri_and_sqs(capsys: pytest.CaptureFixture[str]) -> None:
    brokers = "okuri,okuri-unconfirmed,sqs"
    argv = ["celery", "--tasks", "20", "--producers", "2", "--brokers", brokers]
    assert main([*argv, "--sqs-wait-time-seconds", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["brokers"]) == set(brokers.split(",")) and result["skipped"] == {}
    for broker in result["brokers"].values():
        for run in broker["runs"].values():
            assert run["complete"] and run["sent"] == run["executed"] == 20, run
            assert run["enqueue_tasks_per_s"] > 0 and run["end_to_end_tasks_per_s"] > 0
    text = celery_report.render(result)
    assert "2 producers: 2 producer process(es)" in text and "okuri " in text


def _run(enqueue: float, e2e: float) -> dict[str, object]:
    return {
        "complete": True, "sent": 10, "executed": 10, "tasks": 10,
        "enqueue_tasks_per_s": enqueue, "end_to_end_tasks_per_s": e2e,
    }  # fmt: skip


def _result(
    runs: dict[str, dict[str, object]], skipped: dict[str, str] | None = None
) -> dict[str, Any]:
    """What `measure` returns for one load of ten tasks, each broker with its run."""
    config = {
        "tasks": 10, "concurrency": 2, "cpus": 2, "sqs_wait_time_seconds": 10,
        "sqs_polling_interval": 0.1, "okuri_lease_s": 60, "okuri_wait_time_s": 10,
    }  # fmt: skip
    return {
        "config": config,
        "skipped": skipped or {},
        "loads": [{"name": "one producer", "producers": 1}],
        "brokers": {
            name: {"described": name, "runs": {"one producer": run}} for name, run in runs.items()
        },
    }


def test_the_table_sets_each_broker_against_redis_and_sqs_on_okuri_against_each_emulator() -> None:
    runs = {
        "sqs": _run(150, 90), "ministack": _run(600, 120), "moto": _run(300, 60),
        "redis": _run(1000, 600),
    }  # fmt: skip
    result = _result(runs, skipped={"rabbitmq": "not installed"})
    lines = celery_report.render(result).splitlines()
    emulator = "(sqs:// on okuri against an emulator)"
    assert f"sqs / ministack {emulator}: enqueue 0.25x, end2end 0.75x" in lines
    assert f"sqs / moto {emulator}: enqueue 0.50x, end2end 1.50x" in lines
    (sqs_row,) = [line for line in lines if line.startswith("sqs ") and " / " not in line]
    assert sqs_row.split() == ["sqs", "150", "0.15x", "90", "0.15x", "-"]
    assert "skipped rabbitmq: not installed" in lines
    del result["brokers"]["moto"]
    text = celery_report.render(result)
    assert "sqs / moto" not in text and "sqs / ministack" in text


def test_okuri_is_set_against_brokers_as_durable_and_unconfirmed_against_their_defaults() -> None:
    runs = {
        "okuri": {**_run(200, 90), "broker_cpu_ms_per_task": 1.25},
        "okuri-unconfirmed": _run(1400, 450), "redis": _run(1000, 500),
        "redis-always": _run(800, 200), "rabbitmq": _run(1400, 600),
        "rabbitmq-confirm": _run(500, 300),
    }  # fmt: skip
    result = _result(runs)
    lines = celery_report.render(result).splitlines()
    durable, lazy = "(durable against durable)", "(lazy against lazy)"
    assert f"okuri / rabbitmq-confirm {durable}: enqueue 0.40x, end2end 0.30x" in lines
    assert f"okuri / redis-always {durable}: enqueue 0.25x, end2end 0.45x" in lines
    assert f"okuri-unconfirmed / rabbitmq {lazy}: enqueue 1.00x, end2end 0.75x" in lines
    assert f"okuri-unconfirmed / redis {lazy}: enqueue 1.40x, end2end 0.90x" in lines
    (okuri_row,) = [line for line in lines if line.startswith("okuri ") and " / " not in line]
    assert okuri_row.split() == ["okuri", "200", "0.20x", "90", "0.18x", "1.25"]


def test_okuri_rows_say_what_a_task_cost_in_store_requests_commits_and_api_requests() -> None:
    counts = {"cas": 1.4, "get": 1.0, "put": 1.0, "commits": 1.42, "syncs": 0.9, "api lease": 0.89}
    runs = {"okuri": {**_run(200, 90), "store_per_task": counts}, "redis": _run(1000, 500)}
    lines = celery_report.render(_result(runs)).splitlines()
    okuri = lines.index(next(line for line in lines if line.startswith("okuri ")))
    assert lines[okuri + 1].split() == [
        "per", "task:", "store", "cas", "1.40,", "get", "1.00,", "put", "1.00;", "manifest",
        "commits", "1.42;", "syncs", "0.90;", "requests", "lease", "0.89",
    ]  # fmt: skip
    assert not lines[okuri + 2].startswith(" ")  # redis's row has none


def test_rounds_take_the_median_of_each_per_task_count() -> None:
    rounds = [{**_run(100, 50), "store_per_task": {"put": 1.0, "cas": c}} for c in (1.2, 1.8, 1.4)]
    out = celery_bench.combined(rounds)
    assert out["store_per_task"] == {"put": 1.0, "cas": 1.4}
    assert "store_per_task" not in celery_bench.combined([_run(100, 50)])


def test_ministack_is_a_broker_of_its_own_beside_moto() -> None:
    args = celery_bench.build_parser().parse_args(["--brokers", "sqs,ministack"])
    assert args.brokers == ["sqs", "ministack"]
    default = celery_bench.build_parser().parse_args([]).brokers
    assert default == [b for b in celery_brokers.BROKERS if b != "okuri-files"]
    assert {"ministack", "moto"} <= set(celery_brokers.BROKERS)


def test_a_ministack_that_cannot_be_installed_is_a_skipped_broker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setattr(ministack, "cache_root", lambda: tmp_path / "a-file" / "peers")
    sqs = celery_brokers.SqsSettings(1, 0.1)
    with (
        pytest.raises(Unavailable, match=r"^ministack: cannot make "),
        celery_brokers.broker("ministack", tmp_path, sqs),
    ):
        pass


def test_rounds_give_each_figure_its_median_and_spread() -> None:
    rounds = [
        {**_run(100, 50), "broker_cpu_ms_per_task": 2.0},
        {**_run(300, 40), "broker_cpu_ms_per_task": None},
        {**_run(200, 60), "broker_cpu_ms_per_task": 4.0, "complete": False},
    ]
    run = celery_bench.combined(rounds)
    assert (run["enqueue_tasks_per_s"], run["end_to_end_tasks_per_s"]) == (200, 50)
    assert run["enqueue_tasks_per_s_spread"] == [100, 300]
    assert run["broker_cpu_ms_per_task"] == 3.0 and not run["complete"]
    row = celery_report._row("okuri", run, None)
    assert "medians of 3 runs; enqueue 100 to 300, end2end 40 to 60, cpu 2.00 to 4.00" in row
    assert celery_bench.build_parser().parse_args(["--rounds", "3"]).rounds == 3


def test_a_scrape_sums_api_requests_over_outcomes_and_subtracts_a_scrape_before() -> None:
    text = "\n".join([
        'okuri_native_requests_total{transport="http",operation="lease",outcome="ok"} 7',
        'okuri_native_requests_total{transport="grpc",operation="lease",outcome="throttled"} 2',
        'okuri_sqs_requests_total{action="SendMessage",outcome="ok"} 3',
        'okuri_store_requests_total{class="put"} 5',
        'okuri_engine_events_total{event="manifest_commits"} 4',
        "okuri_store_syncs_total 11",
    ])  # fmt: skip
    after = metrics.parse(text)
    assert after.api == {"lease": 9.0, "SendMessage": 3.0}
    assert after.store == {"put": 5.0} and after.events == {"manifest_commits": 4.0}
    before = metrics.parse('okuri_native_requests_total{operation="lease",outcome="ok"} 4')
    assert after.minus(before).api == {"lease": 5.0, "SendMessage": 3.0}
    assert after.syncs == 11.0 and after.minus(before).syncs == 11.0 and before.syncs is None
