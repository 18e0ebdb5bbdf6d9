"""okuri_kombu's unit tests: kombu connections whose transport talks to the fake okuri of
tests/unit/kombu/fake_okuri.py (an in-memory native API behind httpx.MockTransport), and whose
lease keeper runs only when a test turns it (`keeper.run_once()`), in the fake's time.

okuri_kombu is not installed into the environment: integrations/kombu goes on sys.path here, as
tests/smoke/celery puts integrations/celery there.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
INTEGRATION = HERE.parents[2] / "integrations" / "kombu"
for path in (HERE, INTEGRATION):  # fake_okuri, and the okuri_kombu package
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

from fake_okuri import URL, FakeOkuri, fake_transport  # noqa: E402
from kombu import Connection  # noqa: E402


@pytest.fixture
def fake() -> FakeOkuri:
    return FakeOkuri()


@pytest.fixture
def connect(fake: FakeOkuri) -> Iterator[Any]:
    """`connect(**transport_options)`: a kombu Connection to the fake, closed at teardown."""
    opened: list[Connection] = []

    def connect(**options: Any) -> Connection:
        conn = Connection(URL, transport=fake_transport(fake), transport_options=options)
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()
