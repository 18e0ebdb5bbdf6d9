"""The scale-out table: shaped as documented at a tiny size (the figures are not checked)."""

from __future__ import annotations

import json

import pytest

from bench import scaleout
from okuri.errors import PreconditionFailed
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
