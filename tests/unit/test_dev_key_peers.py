"""The published development key: in force only on a server with no native key configured, and
there only for requests from this machine. Addresses off loopback are never sent here: each
surface is handed a request whose peer is one (aiohttp's mocked request with its transport's
peer name, a gRPC context with grpcio's peer name), and the address predicate is checked on
its own."""

from __future__ import annotations

import json
import logging
from typing import Any
from unittest import mock

import grpc
import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from okuri.api.v1 import queue_service_pb2 as pb
from okuri.clock import SystemClock
from okuri.console.history import History, Reading
from okuri.console.routes import Console
from okuri.engine import Engine
from okuri.native import bearer
from okuri.native.errors import NativeError
from okuri.native.grpc_service import ERROR_CODE_KEY, QueueService, peer_address
from okuri.native.http import NativeHttp
from okuri.principals.keys import KeyTable, StoredKey
from okuri.principals.local import DEV_ADMIN_KEY, is_local, is_local_host, is_loopback
from okuri.server.app import Server
from okuri.server.settings import Settings
from okuri.store.memory import MemoryStore

LOOPBACK = ["127.0.0.1", "127.0.0.2", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1",
            "::ffff:127.9.9.9", " 127.0.0.1 "]  # fmt: skip
ELSEWHERE = ["10.0.0.1", "192.0.2.7", "0.0.0.0", "::", "fe80::1%eth0", "::ffff:10.0.0.1",
             "2001:db8::1", "128.0.0.1", "localhost", "127.0.0.1.example", "", None]  # fmt: skip


@pytest.mark.parametrize("address", LOOPBACK)
def test_loopback_addresses_of_both_families_are_local(address: str) -> None:
    assert is_loopback(address) and is_local(address, ["authorization", "content-type"])


@pytest.mark.parametrize("address", ELSEWHERE)
def test_any_other_address_or_name_is_not_loopback(address: str | None) -> None:
    assert not is_loopback(address) and not is_local(address, [])


@pytest.mark.parametrize("header", ["Forwarded", "X-Forwarded-For", "x-real-ip"])
def test_a_loopback_peer_forwarding_for_someone_is_not_local(header: str) -> None:
    """A proxy on this machine connects from loopback for every client it serves."""
    assert not is_local("127.0.0.1", ["Authorization", header])


def test_a_url_host_is_this_machine_when_it_is_localhost_or_loopback() -> None:
    assert all(map(is_local_host, ["localhost", "LOCALHOST", "localhost.", "127.0.0.1", "::1"]))
    assert not any(map(is_local_host, ["example.com", "10.1.1.1", "localhost.example", None]))


# --- the key table and the one reading of a bearer key ---------------------------------------

DEV = KeyTable(None, [], dev_key=True)
DEV_HEADER = f"Bearer {DEV_ADMIN_KEY}"


def refusal(table: KeyTable, header: str | None, local: bool) -> tuple[int, str, str]:
    with pytest.raises(NativeError) as caught:
        bearer.principal(lambda: table, header, lambda: local)
    return caught.value.status, caught.value.code, caught.value.message


def test_the_dev_key_is_an_admin_of_every_queue_from_this_machine() -> None:
    found = bearer.principal(lambda: DEV, DEV_HEADER, lambda: True)
    assert (found.key_id, found.role, found.namespace) == ("dev-key", "admin", "")
    assert DEV.accepts_dev_key and DEV.empty


def test_the_dev_key_from_elsewhere_is_refused_saying_how_to_configure_a_key() -> None:
    status, code, message = refusal(DEV, DEV_HEADER, local=False)
    assert (status, code) == (401, "dev_key_not_local")
    assert "loopback" in message and "OKURI_ADMIN_KEY" in message
    assert "OKURI_API_KEYS_FILE" in message and DEV_ADMIN_KEY not in message


def test_where_the_request_comes_from_is_asked_only_of_the_dev_key() -> None:
    def never() -> bool:
        raise AssertionError("asked where a request without the development key came from")

    assert refusal(DEV, "Bearer another-key-0123456789", local=False)[1] == "bad_key"
    with pytest.raises(NativeError):
        bearer.principal(lambda: DEV, "Bearer another-key-0123456789", never)
    assert refusal(DEV, None, local=True)[1] == "missing_key"


@pytest.mark.parametrize(
    "table",
    [
        KeyTable("configured-admin-key-0123", [], dev_key=True),
        KeyTable(None, [], dev_key=True).with_stored([StoredKey("0" * 64, "readonly", "")]),
    ],
    ids=["admin key", "keys file"],
)
def test_once_any_bearer_key_is_configured_the_dev_key_is_never_accepted(
    table: KeyTable,
) -> None:
    assert not table.accepts_dev_key
    assert refusal(table, DEV_HEADER, local=True)[:2] == (401, "bad_key")
    assert all(row["id"] != "dev-key" for row in table.listed())


def test_a_server_with_no_key_and_no_dev_key_stays_closed() -> None:
    """A keys file holding no bearer key: the operator configured keys, none of them native."""
    assert refusal(KeyTable(None, []), DEV_HEADER, local=True)[1] == "no_keys_configured"


def test_the_key_listing_shows_the_dev_key_without_its_value() -> None:
    [row] = DEV.listed()
    assert row == {
        "id": "dev-key",
        "kind": "bearer (development, loopback only)",
        "role": "admin",
        "namespace": "",
    }


# --- each surface: the peer its request came from ---------------------------------------------


def from_peer(path: str, address: str, headers: dict[str, str] | None = None) -> web.Request:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (address, 40000) if name == "peername" else default
    )
    return make_mocked_request(
        "GET", path, headers={"Authorization": DEV_HEADER, **(headers or {})}, transport=transport
    )


def answer(response: web.StreamResponse) -> tuple[int, Any]:
    assert isinstance(response, web.Response) and response.body is not None
    assert isinstance(response.body, bytes)
    return response.status, json.loads(response.body)


@pytest.fixture
def native() -> NativeHttp:
    return NativeHttp(Engine(MemoryStore(), SystemClock()), SystemClock(), lambda: DEV)


@pytest.mark.parametrize(
    ("address", "headers", "status"),
    [
        ("127.0.0.1", {}, 200),
        ("::1", {}, 200),
        ("::ffff:127.0.0.1", {}, 200),
        ("192.0.2.7", {}, 401),
        ("::ffff:192.0.2.7", {}, 401),
        ("127.0.0.1", {"X-Forwarded-For": "192.0.2.7"}, 401),
    ],
)
async def test_native_http_takes_the_dev_key_from_loopback_peers_only(
    native: NativeHttp, address: str, headers: dict[str, str], status: int
) -> None:
    got_status, doc = answer(await native.handle(from_peer("/v1/queues", address, headers)))
    assert got_status == status, doc
    if status == 401:
        assert doc["error"]["code"] == "dev_key_not_local"


async def test_the_console_takes_the_dev_key_from_loopback_peers_only() -> None:
    console = Console(lambda: DEV, History(lambda: Reading({}, {}, {})), SystemClock())
    status, doc = answer(await console.handle(from_peer("/console/api/keys", "127.0.0.1")))
    assert status == 200 and [k["id"] for k in doc["keys"]] == ["dev-key"]
    status, doc = answer(await console.handle(from_peer("/console/api/keys", "198.51.100.4")))
    assert (status, doc["error"]["code"]) == (401, "dev_key_not_local")


class Aborted(Exception):
    pass


class Context:
    """What QueueService reads of grpcio's servicer context."""

    def __init__(self, peer: str, metadata: tuple[tuple[str, str], ...] = ()) -> None:
        self._peer = peer
        self._metadata = (("authorization", DEV_HEADER), *metadata)
        self.aborted: tuple[grpc.StatusCode, str, dict[str, str]] | None = None

    def peer(self) -> str:
        return self._peer

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return self._metadata

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    async def abort(self, code: grpc.StatusCode, details: str, trailing_metadata: Any) -> None:
        self.aborted = (code, details, dict(trailing_metadata))
        raise Aborted


async def list_queues(service: QueueService, context: Context) -> Any:
    details = mock.Mock(method="/okuri.api.v1.QueueService/ListQueues")
    handler = service.handler().service(details)
    assert handler is not None and handler.unary_unary is not None
    try:
        return await handler.unary_unary(pb.ListQueuesRequest(), context)
    except Aborted:
        return None


@pytest.mark.parametrize(
    ("peer", "metadata", "served"),
    [
        ("ipv4:127.0.0.1:5000", (), True),
        ("ipv6:%5B::1%5D:5000", (), True),
        ("ipv4:192.0.2.7:5000", (), False),
        ("ipv6:%5B2001:db8::1%5D:5000", (), False),
        ("ipv4:127.0.0.1:5000", (("x-forwarded-for", "192.0.2.7"),), False),
        ("unix:", (), False),  # a process that reached a unix socket itself: unknown
    ],
)
async def test_grpc_takes_the_dev_key_from_loopback_peers_only(
    peer: str, metadata: tuple[tuple[str, str], ...], served: bool
) -> None:
    service = QueueService(Engine(MemoryStore(), SystemClock()), SystemClock(), lambda: DEV)
    context = Context(peer, metadata)
    answered = await list_queues(service, context)
    if served:
        assert answered is not None and context.aborted is None
        return
    assert context.aborted is not None
    code, _, trailers = context.aborted
    assert (code, trailers[ERROR_CODE_KEY]) == (
        grpc.StatusCode.UNAUTHENTICATED,
        "dev_key_not_local",
    )


async def test_grpc_behind_the_splice_asks_the_splice_who_the_client_is() -> None:
    clients = {
        "unix-abstract:okuri-grpc-x-c1": "127.0.0.1",
        "unix-abstract:okuri-grpc-x-c2": "192.0.2.7",
    }
    engine = Engine(MemoryStore(), SystemClock())
    service = QueueService(engine, SystemClock(), lambda: DEV, remote=clients.get)
    assert await list_queues(service, Context("unix-abstract:okuri-grpc-x-c1")) is not None
    refused = Context("unix-abstract:okuri-grpc-x-c2")
    assert await list_queues(service, refused) is None and refused.aborted is not None


def test_grpc_peer_names_give_their_address() -> None:
    assert peer_address("ipv4:127.0.0.1:5000") == "127.0.0.1"
    assert peer_address("ipv6:%5B::1%5D:5000") == "::1"
    assert peer_address("ipv6:[::ffff:127.0.0.1]:1") == "::ffff:127.0.0.1"
    assert peer_address("unix:/tmp/x.sock") is None and peer_address("unix-abstract:x") is None


# --- the server: when the key is in force, and what it says ----------------------------------


def settings(**env: str) -> Settings:
    return Settings.load(
        {"OKURI_LISTEN": "127.0.0.1:0", "OKURI_HEALTH_LISTEN": "127.0.0.1:0", **env}
    )


@pytest.mark.parametrize(
    ("env", "in_force"),
    [
        ({}, True),
        ({"OKURI_ADMIN_KEY": "configured-admin-key-0123"}, False),
        ({"OKURI_API_KEYS_FILE": "/nonexistent/keys.json"}, False),
        ({"OKURI_AUTH": "off"}, False),
    ],
    ids=["nothing configured", "admin key", "keys file", "auth off"],
)
def test_the_dev_key_is_in_force_only_when_no_native_key_is_configured(
    env: dict[str, str], in_force: bool
) -> None:
    assert settings(**env).uses_dev_admin_key is in_force
    assert Server(settings(**env)).key_table.accepts_dev_key is in_force


def test_a_server_open_to_other_hosts_says_they_need_a_key_of_their_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not started: what it would say, for a listener this test may not bind."""
    with caplog.at_level(logging.WARNING, "okuri.server"):
        Server(settings(OKURI_LISTEN="0.0.0.0:8080"))._announce_dev_key()
        Server(settings())._announce_dev_key()
    first, other_hosts, only_loopback = [r.getMessage() for r in caplog.records]
    assert DEV_ADMIN_KEY in first and "no secret" in first and "loopback" in first
    assert "0.0.0.0:8080" in other_hosts and "dev_key_not_local" in other_hosts
    assert "0.0.0.0" not in only_loopback
