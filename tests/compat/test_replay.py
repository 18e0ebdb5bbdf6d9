"""Every recorded SDK session replays against a fresh okuri with the same answers, by form.

One test per vcrpy cassette in compat/recordings/ (written by `make record` from the real SDKs),
read with vcrpy (compat.cassette.load). Each recorded request is re-signed for now with this
server's key pair, carries forward the values the live session was given (queue URLs, message
ids, receipt handles, task handles), and each live response must match the recorded one as
compat/compare.py normalises them: status, error type, the headers SDKs read, body structure
and field types, volatile values by form. With no cassettes at all the suite fails: replay
must never pass by having nothing to replay.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compat.cassette import CASSETTES, cassette_files, load
from compat.replay import replay, report
from tests.servers import SQS_KEY, SQS_SECRET, Launch

FILES = cassette_files()


@pytest.mark.parametrize(
    "path",
    FILES or [pytest.param(None, id="no-cassettes")],
    ids=[p.stem for p in FILES] or None,
)
def test_recorded_session_replays_with_the_same_answers(path: Path | None, launch: Launch) -> None:
    if path is None:
        pytest.fail(f"no cassettes in {CASSETTES}; run `make record`")
    recording = load(path)
    assert recording.exchanges, f"{path.name} holds no exchanges"
    server = launch(
        {
            "OKURI_ACCESS_KEY_ID": SQS_KEY,
            "OKURI_SECRET_ACCESS_KEY": SQS_SECRET,
            "OKURI_REGION": "us-east-1",
        }
    )
    server.wait_for("/readyz")
    outcomes = replay(recording, server.url, SQS_KEY, SQS_SECRET)
    assert len(outcomes) == len(recording.exchanges)
    problem = report(recording, outcomes)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
