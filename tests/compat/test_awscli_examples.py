"""AWS's own SQS examples for the AWS CLI, run unmodified against a real `okuri serve`.

The examples are read at collection time from the installed awscli package (see
compat/awscli/README.md): one test per example, and a test that every example file found is one
the runner prepares for, so a new awscli release with a new example is noticed. One okuri on the
local store serves the whole module; the runner empties it before each example.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from compat.awscli import HANDLED, Example, ExampleFile, Runner, compare, discover
from tests.servers import SQS_KEY, SQS_SECRET, start_server

FILES = discover()
EXAMPLES = [example for f in FILES for example in f.examples]

# Where okuri's answer differs from the documented one and from SQS: example id -> (the exact
# mismatches, why). Such an example is an expected failure while it differs in exactly this way,
# and fails once okuri matches (remove the entry then) or differs in any other way.
KNOWN_DIFFERENCES: dict[str, tuple[frozenset[str], str]] = {}


def _cases() -> Iterator[object]:
    for f in FILES:
        if f.error is not None:
            yield pytest.param(f, id=f"{f.name}#unparsed")
        for example in f.examples:
            yield pytest.param(example, id=example.id)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    tmp = tmp_path_factory.mktemp("awscli-examples")
    server = start_server(tmp, {"OKURI_DATA_DIR": str(tmp / "data")})
    try:
        yield Runner(server.url, SQS_KEY, SQS_SECRET, tmp / "work")
    finally:
        server.terminate()


@pytest.mark.parametrize("example", list(_cases()))
def test_example_prints_the_documented_shape(
    runner: Runner, example: Example | ExampleFile
) -> None:
    if isinstance(example, ExampleFile):
        pytest.fail(f"{example.name} is not understood: {example.error}")
    outcome = runner.run(example)
    known = KNOWN_DIFFERENCES.get(example.id)
    if known is None:
        assert outcome.passed, outcome.report()
        return
    expected, why = known
    assert set(outcome.mismatches) == expected, (
        f"{example.id} no longer differs only as KNOWN_DIFFERENCES says; update the entry\n"
        + outcome.report()
    )
    pytest.xfail(f"known okuri difference: {why}")


def test_every_example_file_in_the_installed_awscli_is_handled() -> None:
    found = {f.name for f in FILES}
    commands = sum(len(example.commands) for example in EXAMPLES)
    assert EXAMPLES and commands > 0, "no SQS examples found in the installed awscli"
    assert found == HANDLED, (
        f"new example files (add them to compat.awscli.runner.PREPARE): {sorted(found - HANDLED)}; "
        f"files no longer shipped: {sorted(HANDLED - found)}"
    )
    assert set(KNOWN_DIFFERENCES) <= {example.id for example in EXAMPLES}


# --- the comparison itself: a checker that always agreed would pass every example above -------

DOCUMENTED: dict[str, Any] = {
    "Messages": [
        {
            "Body": "My first message.",
            "ReceiptHandle": "AQEBzbVv...fqNzFw==",
            "MD5OfBody": "1000f835...a35411fa",
            "MessageId": "d6790f8d-d575-4f01-bc51-40122EXAMPLE",
            "Attributes": {"SentTimestamp": "1442428276921"},
        }
    ]
}
REAL: dict[str, Any] = {
    "Messages": [
        {
            "Body": "another body",
            "ReceiptHandle": "okr1abc",
            "MD5OfBody": "0123456789abcdef0123456789abcdef",
            "MessageId": "0f2c5a8e-1d3b-4c6a-9e7f-123456789abc",
            "Attributes": {"SentTimestamp": "1795960425123"},
        }
    ]
}


def test_same_shape_with_other_values_is_a_note_not_a_mismatch() -> None:
    result = compare(DOCUMENTED, REAL)
    assert result.mismatches == ()
    assert result.notes == ('Messages[0].Body: documented "My first message.", got "another body"',)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda m: m.pop("MD5OfBody"), "Messages[0].MD5OfBody: documented, missing"),
        (lambda m: m.update(Extra=1), "Messages[0].Extra: in the real output"),
        (lambda m: m.update(MD5OfBody="abc"), "Messages[0].MD5OfBody: documented an MD5"),
        (lambda m: m.update(MessageId="42"), "Messages[0].MessageId: documented a message id"),
        (
            lambda m: m["Attributes"].update(SentTimestamp="1795960425"),
            "Messages[0].Attributes.SentTimestamp: documented epoch milliseconds",
        ),
        (lambda m: m.update(Body=7), "Messages[0].Body: documented a string"),
    ],
)
def test_a_different_shape_is_a_mismatch(
    change: Callable[[dict[str, Any]], object], expected: str
) -> None:
    real = copy.deepcopy(REAL)
    change(real["Messages"][0])
    result = compare(DOCUMENTED, real)
    assert len(result.mismatches) == 1 and result.mismatches[0].startswith(expected), result


def test_an_empty_list_where_elements_are_documented_is_a_mismatch() -> None:
    assert compare(DOCUMENTED, {"Messages": []}).mismatches
    assert compare({"QueueUrls": ["https://queue.amazonaws.com/1/Q"]}, {}).mismatches


def test_a_json_string_member_is_compared_as_json() -> None:
    doc = {"RedrivePolicy": '{"deadLetterTargetArn":"arn:aws:sqs:r:1:Q","maxReceiveCount":1000}'}
    arn = "arn:aws:sqs:us-east-1:000000000000:Q"
    real = {"RedrivePolicy": f'{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"5"}}'}
    (mismatch,) = compare(doc, real).mismatches
    assert mismatch.startswith("RedrivePolicy<json>.maxReceiveCount: documented an integer")
