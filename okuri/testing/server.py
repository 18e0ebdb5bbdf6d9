"""The okuri a test talks to: one started in this process, or one running elsewhere.

`OkuriServer` is what the pytest fixtures and `okuri.testing.serve()` hand out: where it
answers, its keys, and `reset()`, which empties it between tests. An in-process server is
`okuri.embedded.serve_in_thread` in memory, reset through its engines (no request per queue);
an external one (`--okuri-url`, the compose stack) is reset through its API: the native API
when an admin key is known (queues and exchanges), else SQS (queues of its region).

Nothing here is imported before a test asks for a server: boto3, httpx and the server load
inside the functions that need them, so the pytest plugin costs users' runs nothing.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from okuri.client import Client

# okuri's development key pair (README.md, compose.yaml): what an external server accepts
# unless it was given keys of its own. Beside okuri.server.settings's, not imported from it,
# so that naming an external server loads nothing of the server.
DEV_ACCESS_KEY_ID = "okuri"
DEV_SECRET_ACCESS_KEY = "okuri-local-secret"
DEFAULT_REGION = "us-east-1"

# The AWS variables an SDK would otherwise read credentials, endpoints or a profile from.
AWS_CLEARED = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
)
RESET_PAGES_MAX = 100  # pages of names an external reset deletes: 100,000 queues


class UrlInvalid(ValueError):
    """An okuri URL that cannot be used; the message says what to give instead."""


def check_url(url: str) -> str:
    """`url` as an endpoint (no trailing slash), or UrlInvalid saying why not."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018  # raises ValueError for a bad port
    except ValueError as err:
        raise UrlInvalid(f"{url!r} is not a URL ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UrlInvalid(f"{url!r}: expected http://HOST:PORT or https://HOST:PORT")
    if parts.path.strip("/") or parts.query or parts.fragment:
        raise UrlInvalid(f"{url!r}: give the server's root, without a path or query")
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True, slots=True)
class OkuriServer:
    """An okuri a test talks to: its SQS endpoint (the native API under /v1/ of the same
    address, gRPC on the same port), region and keys."""

    endpoint_url: str
    region: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    admin_key: str | None = field(repr=False)  # the native API's; None when not known
    health_url: str | None  # /healthz, /readyz, /metrics; None for an external server
    in_process: bool
    _reset: Callable[[OkuriServer], None] = field(repr=False, compare=False)

    @property
    def native_url(self) -> str:
        """The URL okuri.client.Client takes for the native API over HTTP/JSON."""
        return self.endpoint_url

    @property
    def grpc_url(self) -> str:
        """The URL okuri.client.Client takes for the native API over gRPC."""
        parts = urlsplit(self.endpoint_url)
        return ("grpcs://" if parts.scheme == "https" else "grpc://") + parts.netloc

    def reset(self) -> None:
        """Delete every queue and exchange: the next test starts from an empty server."""
        self._reset(self)

    def aws_environ(self) -> dict[str, str]:
        """The AWS_* variables that point an SDK's default chain at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_ENDPOINT_URL_SQS": self.endpoint_url,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
        }

    def client_kwargs(self) -> dict[str, str]:
        """The keyword arguments of `boto3.client("sqs", **okuri.client_kwargs())`."""
        return {
            "endpoint_url": self.endpoint_url,
            "region_name": self.region,
            "aws_access_key_id": self.access_key_id,
            "aws_secret_access_key": self.secret_access_key,
        }

    def sqs_client(self, **kwargs: Any) -> Any:
        """A boto3 SQS client of this server (boto3 comes with okuri's `clients` extra)."""
        import boto3

        return boto3.client("sqs", **{**self.client_kwargs(), **kwargs})

    def native_client(self, *, grpc: bool = False) -> Client:
        """An okuri.client.Client of the native API, with the admin key; close it after."""
        from okuri.client import Client

        if self.admin_key is None:
            raise LookupError(
                f"no native API admin key is known for the okuri at {self.endpoint_url}: give "
                "the key the server has as OKURI_ADMIN_KEY (--okuri-admin-key or "
                "OKURI_TEST_ADMIN_KEY)"
            )
        return Client(self.grpc_url if grpc else self.native_url, self.admin_key)


@contextlib.contextmanager
def in_process() -> Iterator[OkuriServer]:
    """An okuri serving from memory on this process's threads, on loopback ports the system
    picks (so parallel test processes never clash), with fresh keys."""
    from okuri.embedded import serve_in_thread

    with serve_in_thread(memory=True) as served:
        yield OkuriServer(
            endpoint_url=served.url,
            region=served.region,
            access_key_id=served.access_key_id,
            secret_access_key=served.secret_access_key,
            admin_key=served.admin_key,
            health_url=served.health_url,
            in_process=True,
            _reset=lambda _: served.reset(),
        )


def external(
    url: str,
    *,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    admin_key: str | None = None,
    region: str | None = None,
) -> OkuriServer:
    """An okuri already running at `url` (UrlInvalid for a URL that cannot be one); keys
    default to okuri's development pair. Nothing is sent to it here."""
    return OkuriServer(
        endpoint_url=check_url(url),
        region=region or DEFAULT_REGION,
        access_key_id=access_key_id or DEV_ACCESS_KEY_ID,
        secret_access_key=secret_access_key or DEV_SECRET_ACCESS_KEY,
        admin_key=admin_key or None,
        health_url=None,
        in_process=False,
        _reset=reset_through_api,
    )


def reset_through_api(server: OkuriServer) -> None:
    """Delete every exchange and queue through the native API when the admin key is known,
    else every queue of the server's region through SQS."""
    if server.admin_key is None:
        _reset_through_sqs(server)
        return
    with server.native_client() as client:
        for _ in range(RESET_PAGES_MAX):
            exchanges = client.list_exchanges().exchanges
            for name in exchanges:
                _quietly(functools.partial(client.delete_exchange, name))
            if not exchanges:
                break
        for _ in range(RESET_PAGES_MAX):
            queues = client.list_queues().queues
            for name in queues:
                _quietly(functools.partial(client.delete_queue, name))
            if not queues:
                break


def _quietly(delete: Callable[[], None]) -> None:
    """A delete that found its object gone (another client deleted it meanwhile)."""
    from okuri.client import NotFoundError

    with contextlib.suppress(NotFoundError):
        delete()


def _reset_through_sqs(server: OkuriServer) -> None:
    sqs = server.sqs_client()
    try:
        for _ in range(RESET_PAGES_MAX):
            urls = sqs.list_queues(MaxResults=1000).get("QueueUrls", [])
            for url in urls:
                with contextlib.suppress(sqs.exceptions.QueueDoesNotExist):
                    sqs.delete_queue(QueueUrl=url)
            if not urls:
                break
    finally:
        sqs.close()
