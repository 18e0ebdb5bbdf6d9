"""docs/sqs-compatibility.md's action matrix matches the server's own tables.

tests/surface/test_sqs_compatibility_matrix.py checks the same matrix against a running server.
"""

from __future__ import annotations

import re
from pathlib import Path

from okuri.core.fifo import dedup_key
from okuri.core.state import QueueAttrs, QueueState
from okuri.core.transitions import Adopt, Lease, LeaseResult, SetAttributes, apply
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


def _requeued_message_rejoins_behind_later_sends() -> bool:
    """Send A, lease it for 1 s, send B; once A shows again, which does a lease of one take?"""
    st = QueueState("q", "inc", 0, QueueAttrs())
    st = apply(st, 0, [Adopt(0, "a", 1, 0)], "t").state
    st = apply(st, 10, [Lease(1, 1_000)], "t").state
    st = apply(st, 500, [Adopt(1, "b", 1, 500)], "t").state
    res = apply(st, 2_000, [Lease(1, 30_000)], "t").results[0]
    assert isinstance(res, LeaseResult)
    return [g.seq for g in res.granted] == [1]


def _changed_scope_applies() -> bool:
    """Change a FIFO queue from queue to messageGroup scope: does an id still match across
    groups?"""
    attrs = QueueAttrs(fifo=True, extra={"DeduplicationScope": "queue"})
    st = QueueState("q.fifo", "inc", 0, attrs)
    group = QueueAttrs(fifo=True, extra={"DeduplicationScope": "messageGroup"})
    extra = apply(st, 0, [SetAttributes(group)], "t").state.attrs.extra
    return dedup_key(extra, "g1", "d") != dedup_key(extra, "g2", "d")


# What the page must not claim while the server's own code says otherwise: (claim, the code's
# answer to whether it still holds). The CreateQueue row once said "standard queues only" while
# FIFO queues were served.
CLAIMS: list[tuple[re.Pattern[str], bool]] = [
    (
        re.compile(r"standard queues? only|FIFO queues? (?:are )?(?:not supported|unsupported)"),
        not _creates_fifo_queues(),
    ),
    (re.compile(r"no empty `?tags`? on CreateQueue", re.I), not _accepts_empty_create_tags()),
    # The Ordering and DeduplicationScope rows once described okuri's differences from SQS.
    (
        re.compile(r"rejoins (?:at the tail|behind)", re.I),
        _requeued_message_rejoins_behind_later_sends(),
    ),
    (re.compile(r"applies at once, to ids already in the window", re.I), _changed_scope_applies()),
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
