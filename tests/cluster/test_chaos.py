"""Real `okuri serve` processes on one store, SIGKILLed under load: nothing acknowledged is lost,
and nothing is delivered again once its delete has answered.

The cluster tier: three nodes, about twenty seconds of faults with a random node SIGKILLed every
four seconds, producers and consumers failing over between nodes, then a drain with every node
up. Once on a local directory, once on S3 over moto's server (the session's moto, a fresh
bucket). The figures (rates, failovers, restarts) are printed, never asserted: the machine is
shared. Only the two safety checks, and that faults really happened, are asserted.
"""

from __future__ import annotations

import json

import pytest

from okuri.bench import cluster

pytestmark = pytest.mark.slow

FAULTS = ["--nodes", "3", "--fault-seconds", "20", "--kill-every-s", "4"]
LOAD = ["--producers", "2", "--consumers", "2", "--messages-max", "50000", "--drain-seconds", "60"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    code = cluster.cli_main([*FAULTS, *LOAD, *argv, "--json"])
    result = json.loads(capsys.readouterr().out)
    print(cluster.render(result))  # shown with -s, or when the test fails
    return code, result


@pytest.mark.parametrize("store", ["local", "s3"])
def test_sigkilled_nodes_lose_no_acknowledged_send_and_deliver_nothing_after_its_delete(
    store: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--store", store]
    if store == "s3":
        argv += ["--s3-endpoint", request.getfixturevalue("moto_s3_endpoint")]
    code, result = run(argv, capsys)
    assert result["kills"] >= 4  # faults really happened
    assert isinstance(result["sends_acknowledged"], int) and result["sends_acknowledged"] > 0
    assert result["checks"]["nodes_restarted"], result["nodes"]
    assert result["checks"]["clients_ran"], result["errors"]
    assert result["lost"] == 0, result["lost_examples"]
    assert result["deliveries_after_delete"] == 0, result["after_delete_examples"]
    assert code == 0
