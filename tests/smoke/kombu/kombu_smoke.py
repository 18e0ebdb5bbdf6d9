"""What the okuri:// smoke tests share: the server under test, its keys, and its queue names."""

from __future__ import annotations

import base64
import json
from typing import NamedTuple

from okuri.client import Client, LeasedItem
from tests.servers import ServerProcess

ADMIN = "kombu-smoke-admin-key-0123456789"
NS = "kombu-"  # every queue of these tests, and the role keys' namespace


class Okuri(NamedTuple):
    server: ServerProcess
    keys: dict[str, str]  # role -> bearer key

    def url(self, role: str = "admin") -> str:
        key = ADMIN if role == "admin" else self.keys[role]
        return f"okuri://{key}@{self.server.url.removeprefix('http://')}"

    def client(self) -> Client:
        return Client(self.server.url, ADMIN)


def okuri_name(queue: str) -> str:
    """The okuri queue of kombu queue `queue` (these tests' names: dots only)."""
    return queue.replace(".", "-")


def kombu_body(item: LeasedItem) -> bytes:
    """What kombu sent in the item: its message's body (base64 in kombu's envelope)."""
    return base64.b64decode(json.loads(item.body)["body"])
