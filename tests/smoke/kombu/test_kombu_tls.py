"""okuri_kombu over `okuris://` to an `okuri serve` that speaks TLS, trusting a CA made in the
test through kombu's `ssl` option (`ca_certs`, Celery's `broker_use_ssl`)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from kombu import Connection

from tests.certs import Authority, server_files

if TYPE_CHECKING:
    from tests.servers import Launch

ADMIN_KEY = "tls-admin-key-0123456789"


def test_okuris_with_a_ca_bundle_puts_and_gets_over_tls(launch: Launch, tmp_path: Path) -> None:
    ca = Authority.make(tmp_path, "okuri-test-ca")
    server = launch({**server_files(tmp_path, ca), "OKURI_ADMIN_KEY": ADMIN_KEY})
    server.wait_for("/readyz")
    port = server.url.rsplit(":", 1)[1]
    url = f"okuris://{ADMIN_KEY}@127.0.0.1:{port}"
    trust = {"ca_certs": str(ca.path)}
    with (
        Connection(url, ssl=trust) as conn,
        conn.SimpleQueue(f"tls-kombu-{uuid.uuid4().hex[:8]}") as simple,
    ):
        simple.put({"over": "okuris"})
        message = simple.get(timeout=10)
        assert message.payload == {"over": "okuris"}
        message.ack()
