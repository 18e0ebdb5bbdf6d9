"""docs/sqs-compatibility.md's action matrix matches the server's own tables.

tests/surface/test_sqs_compatibility_matrix.py checks the same matrix against a running server.
"""

from __future__ import annotations

import re
from pathlib import Path

from okuri.sqs import queue_attributes as qa
from okuri.sqs import tags
from okuri.sqs.actions import SqsActions
from okuri.sqs.errors import SqsError
from okuri.sqs.shapes import ACTIONS, UNSUPPORTED

DOC = Path(__file__).resolve().parents[2] / "docs" / "sqs-compatibility.md"


def _rows() -> dict[str, str]:
    match = re.search(r"<!-- actions -->(.*?)<!-- /actions -->", DOC.read_text(), re.S)
    assert match, "no <!-- actions --> matrix"
    return dict(re.findall(r"^\| (\w+) \| (supported|unsupported) \|", match.group(1), re.M))


def test_doc_marks_every_implemented_action_supported() -> None:
    assert {a for a, s in _rows().items() if s == "supported"} == set(ACTIONS)
    actions = SqsActions(engine=None)  # type: ignore[arg-type]  # the table needs no engine
    assert set(actions._handlers) == set(ACTIONS)


def test_doc_marks_every_refused_action_unsupported() -> None:
    assert {a for a, s in _rows().items() if s == "unsupported"} == set(UNSUPPORTED)
    assert not set(ACTIONS) & set(UNSUPPORTED)


def _notes() -> dict[str, str]:
    match = re.search(r"<!-- actions -->(.*?)<!-- /actions -->", DOC.read_text(), re.S)
    assert match, "no <!-- actions --> matrix"
    return dict(
        re.findall(r"^\| (\w+) \| (?:supported|unsupported) \|(.*)\|$", match.group(1), re.M)
    )


def _creates_fifo_queues() -> bool:
    attrs = qa.parse_queue_attributes({"FifoQueue": "true"}, None, for_create=True)
    return attrs.fifo and qa.check_fifo_name("jobs.fifo", {"FifoQueue": "true"})


def _accepts_empty_create_tags() -> bool:
    try:
        return tags.check_create_tags({}, "jobs") == {}
    except SqsError:
        return False


# What the page must not claim while the server's own code says otherwise: (claim, the code's
# answer to whether it still holds). The CreateQueue row once said "standard queues only" while
# FIFO queues were served.
CLAIMS: list[tuple[re.Pattern[str], bool]] = [
    (
        re.compile(r"standard queues? only|FIFO queues? (?:are )?(?:not supported|unsupported)"),
        not _creates_fifo_queues(),
    ),
    (re.compile(r"no empty `?tags`? on CreateQueue", re.I), not _accepts_empty_create_tags()),
]


def test_doc_makes_no_claim_the_code_contradicts() -> None:
    text = DOC.read_text()
    stale = [p.pattern for p, holds in CLAIMS if not holds and p.search(text)]
    assert not stale, f"docs/sqs-compatibility.md claims what the code contradicts: {stale}"


def test_action_notes_give_the_servers_own_bounds() -> None:
    notes = _notes()
    assert set(notes) == set(ACTIONS) | set(UNSUPPORTED)
    found = re.search(r"(\d+) tags per queue", notes["TagQueue"])
    assert found and int(found.group(1)) == qa.tags_per_queue_max
