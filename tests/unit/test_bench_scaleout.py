"""The scale-out table: shaped as documented at a tiny size (the figures are not checked)."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench import scaleout, scaleout_open
from bench.cpu_meter import CpuMeter
from okuri.errors import PreconditionFailed
from okuri.sim.loop import run_virtual
from okuri.store.memory import MemoryStore

TINY_NODES = (1, 2)
TINY_DURATION_S = 1.0


def test_scaleout_json_has_one_row_per_node_count_with_every_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert scaleout.cli_main(["--nodes", "1,2", "--duration", str(TINY_DURATION_S), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {"workload", "latency_model", "prices_usd_per_million", "rows"}
    assert [row["nodes"] for row in result["rows"]] == list(TINY_NODES)
    for row in result["rows"]:
        assert set(row) == {
            "nodes",
            "messages_sent",
            "messages_deleted",
            "backlog_left",
            "sent_per_s",
            "deleted_per_s",
            "commits_per_node_per_s",
            "conflicts_per_node_per_s",
            "requests_per_message",
            "usd_per_million",
        }
        assert set(row["requests_per_message"]) == {
            "plain",
            "cas",
            "write",
            "get",
            "list",
            "delete",
        }
        assert row["messages_sent"] > 0 and row["usd_per_million"] > 0


def test_scaleout_table_renders_a_line_per_node_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert scaleout.cli_main(["--nodes", "1,2", "--duration", str(TINY_DURATION_S)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("nodes"))
    assert "$/M msgs" in lines[header] and "conflicts/node/s" in lines[header]
    rows = [line.split() for line in lines[header + 1 : header + 1 + len(TINY_NODES)]]
    assert [int(r[0]) for r in rows] == list(TINY_NODES)
    assert {len(r) for r in rows} == {1 + 4 + len(scaleout.COLUMNS) + 1}


def test_scaleout_refuses_unbounded_runs() -> None:
    with pytest.raises(ValueError):
        scaleout.measure((1,), duration_s=scaleout.DURATION_S_MAX + 1)
    with pytest.raises(ValueError):
        scaleout.measure((scaleout.NODE_COUNT_MAX + 1,), duration_s=TINY_DURATION_S)


async def test_cas_tally_counts_commits_and_lost_races() -> None:
    tally = scaleout.CasTally(MemoryStore())
    etag = await tally.put_if_absent("m/q", b"v1")
    await tally.put_if_match("m/q", b"v2", etag)
    with pytest.raises(PreconditionFailed):
        await tally.put_if_match("m/q", b"v3", etag)
    assert (tally.commits, tally.conflicts) == (1, 1)


OPEN_WINDOW_S = "3"
OPEN_STEPS = "3"


def test_open_loop_search_brackets_the_highest_carried_rate_within_its_steps() -> None:
    limit = 730.0
    rates: list[float] = []

    def run(rate: float) -> dict[str, object]:
        rates.append(rate)
        return {"rate_per_s": rate, "carried": rate <= limit}

    best, tried = scaleout_open.search(run, 200.0, scaleout_open.STEPS)
    assert best is not None and rates == [t["rate_per_s"] for t in tried]
    assert len(tried) <= scaleout_open.STEPS
    assert limit * (1 - 2 * scaleout_open.RESOLUTION) <= best["rate_per_s"] <= limit
    assert rates[:3] == [200, 400, 800]  # doubles until refused, then bisects


def test_open_loop_search_halves_and_reports_nothing_when_no_rate_is_carried() -> None:
    best, tried = scaleout_open.search(lambda r: {"rate_per_s": r, "carried": False}, 400.0, 3)
    assert best is None
    assert [t["rate_per_s"] for t in tried] == [400, 200, 100]


def test_open_loop_capacity_is_the_highest_carried_rate_with_cpu_per_node(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--open-loop", "--nodes", "1,2", "--window-s", OPEN_WINDOW_S, "--steps", OPEN_STEPS]
    assert scaleout.cli_main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [row["nodes"] for row in result["rows"]] == list(TINY_NODES)
    for row in result["rows"]:
        carried = [rate for rate, ok in row["tried"] if ok]
        assert 0 < len(row["tried"]) <= int(OPEN_STEPS)
        assert row["capacity_per_s"] == max(carried)
        best = row["best"]
        assert best["messages_deleted"] >= 0.98 * best["messages_offered"] > 0
        assert best["p99_ms"] <= 1000 and best["messages_dropped"] == 0
        assert len(best["cpu_core_per_node"]) == row["nodes"]
        assert all(c > 0 for c in best["cpu_core_per_node"])
        assert row["cpu_core_per_node_max"] == max(best["cpu_core_per_node"])
        assert 0 < best["cpu_attributed_s"] <= best["cpu_process_s"] * 1.5


def test_open_loop_table_renders_capacity_and_cpu_columns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--open-loop", "--nodes", "1,2", "--window-s", OPEN_WINDOW_S, "--steps", OPEN_STEPS]
    assert scaleout.cli_main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("nodes"))
    for column in ("capacity/s", "x one node", "GETs/msg", "$/M msgs", "p99 ms", "cpu/node max"):
        assert column in lines[header]
    rows = [line.split() for line in lines[header + 1 : header + 1 + len(TINY_NODES)]]
    assert [int(r[0]) for r in rows] == list(TINY_NODES)
    assert rows[0][2] == "1.00" and {r[-1] for r in rows} <= {"yes", "no"}
    assert any(line.startswith("cpu: ") and "perf_counter" in line for line in lines)
    assert any(line.startswith("machine: ") for line in lines)


def test_open_loop_refuses_unbounded_searches_and_its_flags_need_it() -> None:
    with pytest.raises(ValueError):
        scaleout_open.measure((1,), window_s=scaleout_open.WINDOW_S_MAX + 1)
    with pytest.raises(ValueError):
        scaleout_open.measure((1,), window_s=1.0, steps=scaleout_open.STEPS_MAX + 1)
    with pytest.raises(SystemExit):
        scaleout.cli_main(["--nodes", "1", "--window-s", "1"])


def test_cpu_meter_charges_each_node_its_own_work_and_a_leader_what_it_does_for_others() -> None:
    meter = CpuMeter()

    def busy(steps: int) -> int:
        return sum(i * i for i in range(steps))

    async def leader_work() -> int:
        await asyncio.sleep(0.001)
        return busy(200_000)

    async def follower_work() -> int:
        await asyncio.sleep(0.001)
        return await meter.on_node("leader", leader_work())

    async def idle() -> None:
        await asyncio.sleep(0.001)

    async def main() -> None:
        meter.install(asyncio.get_running_loop())
        await asyncio.gather(
            asyncio.ensure_future(meter.on_node("follower", follower_work())),
            asyncio.ensure_future(meter.on_node("idle", idle())),
        )

    run_virtual(main())
    assert meter.seconds["leader"] > 10 * meter.seconds.get("follower", 0.0)
    assert meter.seconds["leader"] > 10 * meter.seconds.get("idle", 0.0)
