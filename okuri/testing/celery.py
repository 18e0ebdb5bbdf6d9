"""Celery configurations pointed at a test's okuri, for `celery.contrib.pytest`'s
`celery_config` fixture or `app.conf.update`.

Two transports: `sqs://`, kombu's own SQS transport (it needs `celery[sqs]`), and `okuri://`,
okuri's kombu transport (the `okuri_kombu` package of integrations/kombu, installed
separately). Short polls and waits: a test's worker picks a task up within a fraction of a
second. Nothing of Celery is imported here; these are plain dicts.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from okuri.testing.server import OkuriServer

TRANSPORTS = ("sqs", "okuri")


def celery_config(server: OkuriServer, transport: str = "sqs") -> dict[str, Any]:
    """`broker_url` and `broker_transport_options` for `transport` ("sqs" or "okuri")."""
    parts = urlsplit(server.endpoint_url)
    secure = parts.scheme == "https"
    if transport == "sqs":
        user = f"{quote(server.access_key_id, safe='')}:{quote(server.secret_access_key, safe='')}"
        return {
            "broker_url": f"sqs://{user}@{parts.netloc}",
            "broker_transport_options": {
                "region": server.region,
                "is_secure": secure,
                "wait_time_seconds": 1,  # long poll: a worker that stops waits at most this
                "polling_interval": 0.1,  # after an empty poll
            },
            "broker_connection_retry_on_startup": False,
        }
    if transport == "okuri":
        if server.admin_key is None:
            raise LookupError(
                f"okuri:// speaks the native API, and no admin key is known for the okuri at "
                f"{server.endpoint_url}: give --okuri-admin-key or OKURI_TEST_ADMIN_KEY"
            )
        scheme = "okuris" if secure else "okuri"
        return {
            "broker_url": f"{scheme}://{quote(server.admin_key, safe='')}@{parts.netloc}",
            "broker_transport_options": {"wait_time_s": 1},
            "broker_connection_retry_on_startup": False,
        }
    raise ValueError(f"transport {transport!r}: expected one of {', '.join(TRANSPORTS)}")
