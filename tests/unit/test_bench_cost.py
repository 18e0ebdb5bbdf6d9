"""The cost benchmark: deterministic, shaped as documented, and priced by the published rates."""

from __future__ import annotations

import json

import pytest

from okuri.bench import cost


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
