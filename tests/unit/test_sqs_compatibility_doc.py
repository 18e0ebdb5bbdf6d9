"""docs/sqs-compatibility.md's action matrix matches the server's own tables.

tests/surface/test_sqs_compatibility_matrix.py checks the same matrix against a running server.
"""

from __future__ import annotations

import re
from pathlib import Path

from okuri.sqs.actions import SqsActions
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
