"""The cost benchmark: deterministic, shaped as documented, and priced by the published rates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import cost


@pytest.fixture
def short(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        cost,
        "SCENARIOS",
        (cost.Scenario(100, 100, 20.0), cost.Scenario(500, 100, 20.0)),
    )


def test_cost_benchmark_gives_the_same_numbers_every_run(short: None) -> None:
    assert cost.measure(3) == cost.measure(3)


def test_cost_json_has_the_documented_shape(
    short: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cost.cli_main(["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    row = result["rows"][0]
    assert row["linger_ms"] == 100 and row["rate_per_s"] == 100
    for side in ("produced", "consumed"):
        assert set(row[side]) == {"plain", "cas", "write", "get", "list"}
        assert row[side]["write"] == pytest.approx(row[side]["plain"] + row[side]["cas"])
    assert row["consumed_messages"] > 0.9 * row["produced_messages"]
    assert row["send_to_receive_ms"]["p50"] <= row["send_to_receive_ms"]["p99"]
    assert 0 < result["idle_usd_per_queue_hour"] < 0.01
    assert result["idle_partitioned_fifo_usd_per_queue_hour"] > result["idle_usd_per_queue_hour"]


def test_cost_table_renders_every_row(short: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert cost.cli_main([]) == 0
    out = capsys.readouterr().out
    assert "linger 100ms" in out and "linger 500ms" in out and "per queue-hour" in out


def test_price_arithmetic_uses_put_and_get_class_rates() -> None:
    produced = cost.per_message({"put": 10, "cas": 0, "get": 10, "list": 0, "delete": 5}, 100)
    consumed = cost.per_message({"put": 0, "cas": 10, "get": 20, "list": 0, "delete": 0}, 100)
    # 0.2 PUT-class requests at $5/M and 0.3 GET-class requests at $0.40/M per message.
    assert cost.usd_per_million(produced, consumed) == pytest.approx(0.2 * 5 + 0.3 * 0.4)


def test_cost_reports_progress_on_stderr_and_keeps_stdout_for_the_result(
    short: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cost.cli_main(["--json"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)  # nothing but the result
    lines = captured.err.splitlines()
    assert len(lines) == 3, captured.err  # two scenarios and the idle run, each as it starts
    assert "1/3: linger 100ms, 20 simulated s" in lines[0]
    assert "2/3: linger 500ms" in lines[1] and "3/3: one idle queue" in lines[2]


def test_native_rows_are_priced_beside_the_sqs_row_of_the_same_linger_and_rate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        cost,
        "SCENARIOS",
        (cost.Scenario(100, 1000, 10.0), cost.Scenario(100, 1000, 10.0, native=True)),
    )
    result = cost.measure(2)
    sqs_row, native_row = result["rows"]
    assert (sqs_row["surface"], sqs_row["produce_batch"], sqs_row["lease_batch"]) == ("sqs", 1, 10)
    assert (native_row["surface"], native_row["produce_batch"], native_row["lease_batch"]) == (
        "native",
        100,
        100,
    )
    assert native_row["produced_messages"] % 100 == 0
    # A lease and a complete of 100 land in one commit each: far fewer per message than 10's.
    assert native_row["consumed"]["cas"] < sqs_row["consumed"]["cas"] / 2
    [pair] = result["native_vs_sqs"]
    assert (pair["native"], pair["sqs"]) == ("native 100ms @1000/s", "linger 100ms @1000/s")
    assert pair["ratio"] == pytest.approx(
        native_row["usd_per_million"] / sqs_row["usd_per_million"], abs=0.01
    )
    for side, row in (("native_by_class", native_row), ("sqs_by_class", sqs_row)):
        total = sum(c["usd_per_million"] for c in pair[side].values())
        assert total == pytest.approx(row["usd_per_million"], abs=0.01)
    text = cost.render(result)
    assert "native 100ms @1000/s" in text and "native/SQS" in text and "CAS commit" in text


def test_the_cost_doc_has_a_row_for_every_scenario_and_the_native_comparison() -> None:
    """docs/cost.md is pasted from `python -m bench cost` (too slow to rerun here): a row added to
    the bench must be in the doc's table too."""
    doc = (Path(__file__).parents[2] / "docs" / "cost.md").read_text()
    table = doc.split("## Results", 1)[1].split("```")[1]
    labels = [line[:24].strip() for line in table.splitlines()[3:] if line[:24].strip()]
    for scenario in cost.SCENARIOS:
        assert scenario.label() in labels, scenario.label()
    assert "native surface (native 100ms @1000/s) against SQS surface" in table
