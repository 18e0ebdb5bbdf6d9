"""The scale-out table: shaped as documented at a tiny size (the figures are not checked)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench import scaleout, scaleout_fifo, scaleout_open, scaleout_processes
from bench.cpu_meter import CpuMeter
from bench.measure import LatencyHistogram
from bench.servers import Node
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
            "cas_per_s_busiest_object",
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
        # every commit lands on the queue's manifest (or a lane's), none fewer than a commit
        assert row["cas_per_s_busiest_object"] * row["nodes"] >= row["commits_per_node_per_s"]


def test_scaleout_table_renders_a_line_per_node_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert scaleout.cli_main(["--nodes", "1,2", "--duration", str(TINY_DURATION_S)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("nodes"))
    assert "$/M msgs" in lines[header] and "conflicts/node/s" in lines[header]
    assert "cas/s/object" in lines[header]
    rows = [line.split() for line in lines[header + 1 : header + 1 + len(TINY_NODES)]]
    assert [int(r[0]) for r in rows] == list(TINY_NODES)
    assert {len(r) for r in rows} == {1 + 5 + len(scaleout.COLUMNS) + 1}


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
    assert tally.by_key == {"m/q": 2}  # landed and refused alike; create-only writes aside
    assert scaleout.busiest_object_per_s([tally, tally], 2.0) == 2.0


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
        carried = [t["rate_per_s"] for t in row["tried"] if t["carried"]]
        assert 0 < len(row["tried"]) <= int(OPEN_STEPS)
        for t in row["tried"]:
            assert t["carried"] == (t["refused_by"] == [])
            assert set(t["refused_by"]) <= set(scaleout_open.BOUNDS)
            assert set(t["ops_ms"]) == set(scaleout_open.OPERATIONS)
            assert all(set(q) == {"p50", "p90", "p99"} for q in t["ops_ms"].values())
        assert row["capacity_per_s"] == max(carried)
        best = row["best"]
        assert best["messages_deleted"] >= 0.98 * best["messages_offered"] > 0
        assert best["p99_ms"] <= 1000 and best["messages_dropped"] == 0
        ops = best["ops_ms"]
        assert 0 < ops["send"]["p50"] <= ops["send"]["p90"] <= ops["send"]["p99"]
        assert ops["ack"]["p50"] > 0
        assert len(best["cpu_core_per_node"]) == row["nodes"]
        assert all(c > 0 for c in best["cpu_core_per_node"])
        assert row["cpu_core_per_node_max"] == max(best["cpu_core_per_node"])
        # Attributed time is wall time per task step, the process's is CPU time: on a machine
        # busy with other work a step's wall time also holds the waits for a core, so only
        # what is clearly no attribution (many times the process's CPU) fails.
        assert 0 < best["cpu_attributed_s"] <= best["cpu_process_s"] * 4
        assert best["cas_per_s_busiest_object"] > 0


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
    tried = lines.index("rates tried, in order (x: refused, and the bounds that refused it):")
    assert [int(line.split()[0]) for line in lines[tried + 1 : tried + 3]] == list(TINY_NODES)
    calls = next(i for i, line in enumerate(lines) if line.startswith("engine calls at capacity"))
    assert lines[calls + 1].split() == ["nodes", "send", "receive", "ack"]
    assert all("/" in cell for cell in lines[calls + 2].split()[1:])


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


@pytest.mark.parametrize(
    ("offered", "deleted", "dropped", "p99_s", "bounds"),
    [
        (1000, 1000, 0, 0.5, []),
        (1000, 980, 0, 1.0, []),  # both bounds are inclusive
        (1000, 979, 0, 0.5, ["deleted"]),
        (1000, 1000, 0, 1.2, ["p99"]),
        (1000, 900, 0, float("inf"), ["deleted", "p99"]),
        (1000, 990, 10, 0.9, ["dropped"]),  # a producer that fell behind is no carried rate
        (1000, 500, 400, float("inf"), ["deleted", "p99", "dropped"]),
    ],
)
def test_a_refused_run_names_every_bound_it_broke(
    offered: int, deleted: int, dropped: int, p99_s: float, bounds: list[str]
) -> None:
    assert scaleout_open.refused_by(offered, deleted, dropped, p99_s) == bounds


def test_the_rates_tried_read_as_carried_or_refused_with_the_bound() -> None:
    tried = [
        {"rate_per_s": 200.0, "carried": True, "refused_by": []},
        {"rate_per_s": 800.0, "carried": False, "refused_by": ["deleted", "p99"]},
    ]
    assert scaleout_open.tried_text(tried) == "200, 800x(deleted+p99)"


def test_start_rate_reaches_the_search_and_needs_the_open_loop(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[object, ...]] = []

    def fake(*args: object) -> dict[str, object]:
        seen.append(args)
        return {"rows": []}

    monkeypatch.setattr(scaleout_open, "measure", fake)
    assert scaleout.cli_main(["--open-loop", "--nodes", "1", "--start-rate", "300", "--json"]) == 0
    assert seen[-1][5:] == (300.0, 0)
    assert scaleout.cli_main(["--open-loop", "--nodes", "1", "--fifo-groups", "100", "--json"]) == 0
    assert seen[-1][5:] == (scaleout_open.START_RATE_PER_NODE, 100)
    capsys.readouterr()


@pytest.mark.parametrize(
    "argv",
    [
        ["--start-rate", "300"],  # open loop only
        ["--fifo-groups", "100"],  # open loop only
        ["--processes", "--fifo-groups", "100"],
        ["--open-loop", "--fifo-groups", "0"],
        ["--open-loop", "--start-rate", "1"],  # under RATE_MIN
        ["--open-loop", "--processes"],
        ["--store", "local"],  # processes only
        ["--rate", "500"],
        ["--open-loop", "--latency-ms", "30"],
        ["--processes", "--steps", "3"],
        ["--processes", "--start-rate", "300"],
        ["--processes", "--rate", "1"],
        ["--processes", "--store", "tape"],
        ["--processes", "--nodes", "1,9"],  # more processes than NODES_MAX
        ["--processes", "--window-s", "0"],
    ],
)
def test_scaleout_flags_out_of_range_or_out_of_their_mode_are_usage_errors(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        scaleout.cli_main(argv)
    assert exit_.value.code == 2
    capsys.readouterr()


def test_processes_default_to_one_and_three_nodes_on_s3_and_both_means_each_store(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[scaleout_processes.Options] = []

    def fake(opts: scaleout_processes.Options) -> dict[str, object]:
        seen.append(opts)
        return {}

    monkeypatch.setattr(scaleout_processes, "measure", fake)
    assert scaleout.cli_main(["--processes", "--json"]) == 0
    assert seen[-1].node_counts == (1, 3) and seen[-1].stores == ("s3",)
    assert seen[-1].rate_per_s == scaleout_processes.RATE_DEFAULT
    assert seen[-1].seconds == scaleout_processes.SECONDS_DEFAULT
    argv = ["--processes", "--store", "both", "--rate", "900", "--window-s", "5", "--json"]
    assert scaleout.cli_main([*argv, "--nodes", "1,2", "--latency-ms", "10"]) == 0
    assert seen[-1].stores == ("local", "s3") and seen[-1].node_counts == (1, 2)
    assert (seen[-1].rate_per_s, seen[-1].seconds, seen[-1].latency_ms) == (900.0, 5.0, 10.0)
    capsys.readouterr()


def test_offer_to_receive_p99_counts_messages_never_deleted_as_slower_than_any() -> None:
    hist = LatencyHistogram()
    for _ in range(99):
        hist.add(0.010)
    hist.add(0.500)
    assert scaleout_processes.offer_p99_s(hist, never=0) == pytest.approx(0.010, rel=0.01)
    assert scaleout_processes.offer_p99_s(hist, never=1) == pytest.approx(0.500, rel=0.01)
    assert scaleout_processes.offer_p99_s(hist, never=2) == float("inf")
    assert scaleout_processes.offer_p99_s(LatencyHistogram(), never=0) == float("inf")


def test_the_lead_is_the_node_whose_address_the_manifest_names() -> None:
    def node(index: int, port: int) -> Node:
        return Node(index, port, port + 1, {}, Path("unused.log"))

    nodes = [node(0, 4000), node(1, 4100)]
    manifest = json.dumps({"v": 3, "lead": ["n-abc", "http://127.0.0.1:4100"]}).encode()
    assert scaleout_processes.lead_of(manifest, nodes) == 1
    assert scaleout_processes.lead_of(json.dumps({"v": 3}).encode(), nodes) is None
    assert scaleout_processes.lead_of(b"not json", nodes) is None
    assert scaleout_processes.lead_of(None, nodes) is None


@pytest.mark.slow  # starts a server: `make test`, not `make check`
def test_one_real_node_on_a_local_directory_reports_every_figure_of_the_run() -> None:
    opts = scaleout_processes.Options(
        node_counts=(1,),
        stores=("local",),
        rate_per_s=200.0,
        seconds=2.0,
        consumers_per_node=2,
        warmup_s=0.5,
        grace_s=1.0,
        simulate=False,
    )
    result = scaleout_processes.measure(opts)
    assert result["machine"]["python_loop_10m_s"] > 0
    [store] = result["stores"]
    assert store["store"] == "local"
    [run] = store["runs"]
    assert run["nodes"] == 1 and run["x_first"] in (1.0, None)
    assert run["messages_offered"] > 0 and run["offered_deleted"] > 0
    assert set(run["ops_ms"]) == {"send", "receive", "ack"}
    assert run["carried"] == (run["refused_by"] == [])
    assert run["lead"] == 0 and run["exit_codes"] == [0]
    [node] = run["per_node"]
    assert node["deleted_per_s"] > 0 and node["cpu_s"] is not None
    text = scaleout_processes.render(result)
    assert "store: a local directory" in text and "machine: " in text


def test_the_fifo_check_counts_a_group_received_out_of_order_and_copies_delivered() -> None:
    check = scaleout_fifo.FifoCheck(groups=2)
    # Messages 0 and 2 share group g0; 2's send began after 0's was answered.
    check.sent([0, 1], began_s=0.0, answered_s=0.2)
    check.sent([2, 3], began_s=0.3, answered_s=0.5)
    for seq in (2, 1, 0, 3):
        check.receive(seq, f"id{seq}", first=True)
    assert check.out_of_order() == 1  # 0 after 2
    check.receive(1, "another id", first=False)  # a copy the window should have caught
    assert check.duplicates_delivered() == 1
    concurrent = scaleout_fifo.FifoCheck(groups=1)
    concurrent.sent([0], began_s=0.0, answered_s=0.5)
    concurrent.sent([1], began_s=0.1, answered_s=0.4)  # in flight together: either order
    for seq in (1, 0):
        concurrent.receive(seq, f"id{seq}", first=True)
    assert concurrent.out_of_order() == 0


def test_a_fifo_run_keeps_order_and_the_window_and_says_so() -> None:
    row = scaleout_open.run_once(2, 400.0, 3.0, 8, 1, fifo_groups=100)
    assert row["out_of_order"] == 0 and row["duplicates_delivered"] == 0
    assert row["messages_deleted"] == row["messages_offered"] > 1000
