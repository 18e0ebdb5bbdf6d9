"""docs/sqs-compatibility.md lists exactly the actions the server implements and refuses."""

from __future__ import annotations

import re
from pathlib import Path

from okuri.sqs.actions import SqsActions
from okuri.sqs.shapes import ACTIONS, UNSUPPORTED

DOC = Path(__file__).resolve().parents[2] / "docs" / "sqs-compatibility.md"


def _listed(section: str) -> set[str]:
    match = re.search(rf"<!-- {section} -->(.*?)<!-- /{section} -->", DOC.read_text(), re.S)
    assert match, section
    return set(re.findall(r"^- (\w+)$", match.group(1), re.M))


def test_doc_lists_every_implemented_action() -> None:
    assert _listed("implemented") == set(ACTIONS)
    actions = SqsActions(engine=None)  # type: ignore[arg-type]  # the table needs no engine
    assert set(actions._handlers) == set(ACTIONS)


def test_doc_lists_every_unsupported_action() -> None:
    assert _listed("unsupported") == set(UNSUPPORTED)
    assert not set(ACTIONS) & set(UNSUPPORTED)
