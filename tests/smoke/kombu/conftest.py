"""okuri_kombu against a real `okuri serve`: one server for the module (on a local directory),
an admin key and role keys, and kombu connections to it through `okuri://`.

okuri_kombu is not installed into the environment: integrations/kombu goes on sys.path here, as
tests/smoke/celery puts integrations/celery there.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
INTEGRATION = HERE.parents[2] / "integrations" / "kombu"
for path in (HERE, INTEGRATION):  # kombu_smoke, and the okuri_kombu package
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import okuri_kombu  # noqa: E402,F401  (registers okuri://)
from kombu import Connection  # noqa: E402
from kombu_smoke import ADMIN, NS, Okuri  # noqa: E402

from okuri.principals.keyfile import create_key  # noqa: E402
from tests.servers import start_server  # noqa: E402


@pytest.fixture(scope="module")
def okuri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Okuri]:
    tmp = tmp_path_factory.mktemp("kombu")
    keys_file = tmp / "keys.json"
    keys = {role: create_key(str(keys_file), role, NS)[0] for role in ("producer", "consumer")}
    server = start_server(
        tmp,
        {
            "OKURI_DATA_DIR": str(tmp / "data"),
            "OKURI_ADMIN_KEY": ADMIN,
            "OKURI_API_KEYS_FILE": str(keys_file),
        },
    )
    yield Okuri(server, keys)
    server.terminate()


@pytest.fixture
def queue_name() -> str:
    """A queue of this test's own, with a dot in it as kombu names often have."""
    return f"{NS}q.{uuid.uuid4().hex[:10]}"


@pytest.fixture
def connect(okuri: Okuri) -> Iterator[Any]:
    """`connect(role="admin", **transport_options)`: an okuri:// kombu Connection, closed at
    teardown."""
    opened: list[Connection] = []

    def connect(role: str = "admin", **options: Any) -> Connection:
        conn = Connection(okuri.url(role), transport_options=options)
        opened.append(conn)
        return conn

    yield connect
    for conn in opened:
        conn.close()
