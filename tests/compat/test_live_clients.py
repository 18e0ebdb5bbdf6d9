"""Real SDKs other than the project's boto3 run the whole sqs-core and sqs-fifo scenarios, live.

aws-sdk-js v3 (JSON protocol), aws-sdk-go v1 and v2 and the older boto3 of `boto3-query` (query
protocol) each run their scenario program from compat/clients/ (the step lists are
compat/clients/README.md), once per scenario, against `okuri serve` on the local store and on
S3, so a change that breaks one of these clients fails here even where a recording would not
show it. The programs
are installed and built by `make clients`, which `make test` runs first; a program that is not
there fails its test rather than skipping, so the suite can never pass without them.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from compat.clients import CLIENTS, ROOT, SCENARIOS
from tests.servers import ServerProcess, client_environ, explain, text

LIVE_CLIENTS = ("aws-sdk-js-v3", "aws-sdk-go-v1", "aws-sdk-go-v2", "boto3-query")
RUN_S = 120.0  # the scenario takes a few seconds; its longest wait is a 5 s long poll
JS_PACKAGE = ROOT / "compat/clients/js/node_modules/@aws-sdk/client-sqs/package.json"


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("name", LIVE_CLIENTS)
def test_sdk_runs_the_whole_scenario_against_okuri(
    name: str, scenario: str, sqs_server: ServerProcess, tmp_path: Path
) -> None:
    client = CLIENTS[name]
    assert scenario in client.scenarios
    missing = client.missing()
    if missing is not None:
        pytest.fail(f"{name} cannot run: {missing}; run `make clients`", pytrace=False)
    try:
        done = subprocess.run(
            client.argv(),
            cwd=ROOT,
            env=client_environ(sqs_server, client, scenario, tmp_path),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=RUN_S,
        )
    except subprocess.TimeoutExpired as exc:  # subprocess.run has killed the program by its pid
        pytest.fail(
            explain(
                f"{name} {scenario} did not finish in {RUN_S} s",
                text(exc.stdout),
                text(exc.stderr),
                sqs_server,
            ),
            pytrace=False,
        )
    if done.returncode != 0:
        pytest.fail(
            explain(
                f"{name} {scenario} exited {done.returncode}", done.stdout, done.stderr, sqs_server
            ),
            pytrace=False,
        )
    lines = done.stdout.strip().splitlines()
    last = lines[-1] if lines else ""
    if not last.startswith("SCENARIO "):
        pytest.fail(
            explain(
                f"{name}'s last line is not SCENARIO {{...}}", done.stdout, done.stderr, sqs_server
            ),
            pytrace=False,
        )
    marker = json.loads(last.removeprefix("SCENARIO "))
    assert marker["client"] == name
    assert marker["scenario"] == scenario
    assert marker["version"], marker
    if name == "aws-sdk-js-v3":
        assert marker["version"] == json.loads(JS_PACKAGE.read_text())["version"]
