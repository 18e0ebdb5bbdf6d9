"""The boto3 example programs in compat/boto3_examples run unmodified against a real okuri.

Each script runs in its own process with only the standard AWS environment variables pointing
at the server, once on the local store and once on S3 (the `sqs_server` fixture); a script
exits non-zero when anything it shows did not happen, and its output is the failure message.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

from compat.boto3_examples import run
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess

EXAMPLES = run.discover_examples()
EXAMPLE_TIMEOUT_S = 30.0


def test_there_are_example_programs_to_run() -> None:
    names = {path.stem for path in EXAMPLES}
    assert names >= {
        "queues_client",
        "resource_api",
        "long_polling",
        "dead_letter_queue",
        "visibility_timeout",
        "message_attributes",
        "delay",
    }, names


def test_every_example_is_listed_in_the_readme() -> None:
    readme = (run.EXAMPLES_DIR / "README.md").read_text()
    assert [p.name for p in EXAMPLES if f"`{p.name}`" not in readme] == []


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda path: path.stem)
def test_example_program_runs_unmodified_against_okuri(
    sqs_server: ServerProcess, script: Path
) -> None:
    target = run.Target(sqs_server.url, SQS_KEY, SQS_SECRET)
    outcome = run.run_example(script, target, timeout_s=EXAMPLE_TIMEOUT_S)
    assert outcome.passed, f"{script.name} failed:\n{outcome.detail}"
    assert "ok: " in outcome.detail, f"{script.name} claimed nothing:\n{outcome.detail}"


# --- the runner itself -----------------------------------------------------------------------

NOWHERE = run.Target("http://127.0.0.1:9", "AKIDNOWHERE", "nowhere-secret")


def test_runner_counts_a_failing_or_hanging_program_as_failed(tmp_path: Path) -> None:
    failing = tmp_path / "failing.py"
    failing.write_text('import sys\nprint("ok: a first claim")\nsys.exit("FAILED: a second")\n')
    hanging = tmp_path / "hanging.py"
    hanging.write_text("import threading\nthreading.Event().wait(60)\n")

    outcome = run.run_example(failing, NOWHERE)
    assert (outcome.status, outcome.detail.splitlines()[-1]) == ("failed", "FAILED: a second")
    outcome = run.run_example(hanging, NOWHERE, timeout_s=0.5)
    assert outcome.status == "failed" and "killed after" in outcome.detail
    assert outcome.seconds < 10


def test_programs_see_only_the_aws_settings_the_runner_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_PROFILE", "someone-elses")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SQS", "http://elsewhere.invalid")
    script = tmp_path / "env.py"
    script.write_text(
        "import json, os\n"
        "print(json.dumps({k: v for k, v in os.environ.items() if k.startswith('AWS_')}))\n"
    )
    outcome = run.run_example(script, NOWHERE)
    assert outcome.passed
    seen = json.loads(outcome.detail)
    assert seen["AWS_ENDPOINT_URL"] == NOWHERE.endpoint_url
    assert seen["AWS_ACCESS_KEY_ID"] == NOWHERE.access_key_id
    assert "AWS_PROFILE" not in seen and "AWS_ENDPOINT_URL_SQS" not in seen


def test_runner_starts_and_stops_an_okuri_of_its_own() -> None:
    with run.okuri_server() as target:
        outcome = run.run_example(run.EXAMPLES_DIR / "queues_client.py", target)
        assert outcome.passed, outcome.detail
    with pytest.raises(OSError):
        urllib.request.urlopen(target.endpoint_url, timeout=1)


def _fake_collection(root: Path) -> Path:
    """A stand-in with the shape the runner relies on in AWS's SDK example collection: a shared
    stubber base class that can pass calls through, a conftest that puts it on sys.path
    relative to the working directory, tests, and programs with and without a main guard."""
    python = root / "python"
    (python / "test_tools").mkdir(parents=True)
    (python / "test_tools" / "__init__.py").write_text("")
    (python / "test_tools" / "example_stubber.py").write_text(
        "from botocore.stub import Stubber\n"
        "class ExampleStubber(Stubber):\n"
        "    def __init__(self, client, use_stubs=True):\n"
        "        self.use_stubs = use_stubs\n"
        "        if use_stubs:\n"
        "            super().__init__(client)\n"
        "        else:\n"
        "            self.client = client\n"
    )
    sqs = python / "example_code" / "sqs"
    (sqs / "test").mkdir(parents=True)
    (sqs / "test" / "conftest.py").write_text(
        "import sys\n"
        "import boto3, pytest\n"
        "sys.path.append('../..')\n"
        "from test_tools.example_stubber import ExampleStubber\n"
        "@pytest.fixture\n"
        "def stubber(request):\n"
        "    made = ExampleStubber(boto3.client('sqs'))\n"
        "    made.activate()\n"
        "    request.addfinalizer(made.deactivate)\n"
        "    return made\n"
    )
    (sqs / "test" / "test_fake.py").write_text(
        "import os\n"
        "def test_passes_through(stubber):\n"
        "    assert not stubber.use_stubs\n"
        "    assert os.environ['AWS_ENDPOINT_URL'] == 'http://127.0.0.1:9'\n"
        "def test_fails(stubber):\n"
        "    assert 1 == 2, 'fails on purpose'\n"
    )
    (sqs / "asks.py").write_text(
        'if __name__ == "__main__":\n    print("answer:", input("continue? "))\n'
    )
    (sqs / "quiet.py").write_text('if __name__ == "__main__":\n    print("no questions")\n')
    (sqs / "helper.py").write_text("VALUE = 1\n")
    return root


def test_runner_runs_a_collection_unmodified_with_its_tests_in_real_aws_mode(
    tmp_path: Path,
) -> None:
    checkout = _fake_collection(tmp_path / "checkout")
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))

    programs = run.aws_programs(checkout)
    assert [p.name for p in programs] == ["asks.py", "quiet.py"]
    asks, quiet = (run.run_aws_program(p, NOWHERE, sys.executable) for p in programs)
    assert asks.passed and "answer: y" in asks.detail, asks.detail
    assert quiet.passed, quiet.detail

    tests = {
        o.name.rsplit("::", 1)[-1]: o for o in run.run_aws_tests(checkout, NOWHERE, sys.executable)
    }
    assert sorted(tests) == ["test_fails", "test_passes_through"], tests
    assert tests["test_passes_through"].passed, tests["test_passes_through"].detail
    assert tests["test_fails"].status == "failed"
    assert "fails on purpose" in tests["test_fails"].detail

    assert sorted(p.relative_to(checkout) for p in checkout.rglob("*")) == before
