"""A user's tests play any cassette back with vcrpy alone, no server (compat/recordings/README.md).

The README's example runs exactly as written there, and its matcher names the action of every
request in every cassette here. With its VCR settings the boto3 scenario
program itself (every step and check of compat/clients/README.md) passes against boto3's
cassettes with nothing listening, and uses every recorded interaction; a cassette with one
answer changed makes the program fail at that step, so what it checks came from the cassette.
"""

from __future__ import annotations

import dataclasses
import re
import runpy
from pathlib import Path
from typing import Any

import pytest

from bench.launch import free_port
from compat.cassette import CASSETTES, Exchange, cassette_files, load, save
from compat.clients import ROOT

README = CASSETTES / "README.md"
HEADING = "## Replaying a cassette in your own tests"
SCENARIO_PROGRAM = ROOT / "compat/clients/boto3/scenario.py"


def readme_example() -> dict[str, Any]:
    """The README's first Python block under HEADING, executed: its names."""
    text = README.read_text()
    assert HEADING in text, f"{README} lost its section {HEADING!r}"
    block = re.search(r"```python\n(.*?)```", text[text.index(HEADING) :], re.DOTALL)
    assert block is not None, f"no Python example under {HEADING!r}"
    names: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(block.group(1), str(README), "exec"), names)
    return names


def test_the_readme_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the example names the cassette from the repository root
    example = readme_example()
    tests = [f for name, f in example.items() if name.startswith("test_") and callable(f)]
    assert len(tests) == 1, f"expected one test function in the example, found {len(tests)}"
    tests[0]()


@pytest.mark.parametrize("path", cassette_files(), ids=lambda p: p.stem)
def test_the_readme_matcher_names_the_action_of_every_recorded_request(path: Path) -> None:
    """Both protocols (a JSON target; a query Action in a form body), as vcrpy loads the
    requests: what lets the example's VCR play any cassette here."""
    example = readme_example()
    with example["okuri_vcr"].use_cassette(str(path)) as cassette:
        actions = [example["sqs_action"](request) for request in cassette.requests]
    assert actions == [e.action for e in load(path).exchanges]
    assert None not in actions


def run_scenario(
    cassette: Path, scenario: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, bool]:
    """The boto3 scenario program, in this process, against `cassette` played by the README's
    VCR with nothing listening at its endpoint: (its exit status, whether every recorded
    interaction was played)."""
    for name, value in {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",  # a closed port
        "AWS_ACCESS_KEY_ID": "AKIDPLAYBACK",
        "AWS_SECRET_ACCESS_KEY": "playback-secret",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(tmp_path / "aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "aws-credentials"),
        "OKURI_SCENARIO_PREFIX": "boto3-",
        "OKURI_SCENARIO": scenario,
    }.items():
        monkeypatch.setenv(name, value)
    program = runpy.run_path(str(SCENARIO_PROGRAM))
    with readme_example()["okuri_vcr"].use_cassette(str(cassette)) as played:
        status = program["main"]()
    return status, bool(played.all_played)


@pytest.mark.parametrize(
    ("name", "scenario"), [("boto3", "sqs-core"), ("boto3.sqs-fifo", "sqs-fifo")]
)
def test_the_boto3_scenario_passes_against_its_cassette_alone(
    name: str,
    scenario: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, all_played = run_scenario(CASSETTES / f"{name}.yaml", scenario, tmp_path, monkeypatch)
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.splitlines()[-1].startswith('SCENARIO {"client": "boto3"'), out[-500:]
    assert f'"scenario": "{scenario}"' in out.splitlines()[-1]
    assert all_played, "the program left recorded interactions unused"


def test_a_changed_answer_in_the_cassette_fails_the_program(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = load(CASSETTES / "boto3.yaml")
    index = next(i for i, e in enumerate(recording.exchanges) if e.action == "SendMessage")
    old = recording.exchanges[index]
    body = re.sub(
        rb'"MD5OfMessageBody":"[0-9a-f]{32}"',
        b'"MD5OfMessageBody":"' + b"0" * 32 + b'"',
        old.response.body,
    )
    assert body != old.response.body
    exchanges = list(recording.exchanges)
    exchanges[index] = Exchange(old.request, dataclasses.replace(old.response, body=body))
    changed = tmp_path / "changed.yaml"
    save(dataclasses.replace(recording, exchanges=exchanges), changed)

    status, _ = run_scenario(changed, "sqs-core", tmp_path, monkeypatch)
    _, err = capsys.readouterr()
    assert status == 1
    assert "step 13 send-message failed" in err and "0" * 32 in err
