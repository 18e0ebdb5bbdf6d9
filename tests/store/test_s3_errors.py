"""How the S3 adapter classifies failures, and the start-up probe against stores that cheat.

Three kinds of server: moto (real 404/412 answers), a port nothing listens on, and a bare fake
HTTP server that answers each request exactly as a test says, counting what it receives, so
"exactly one attempt" is checked where it matters: on the wire.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest
from botocore.exceptions import (
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ReadTimeoutError,
)

from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreMisconfigured,
    Transient,
)
from okuri.store.check import verify_conditional_writes
from okuri.store.memory import MemoryStore, md5_etag
from okuri.store.port import Blob
from okuri.store.s3 import S3Store, classify, normalise_prefix

CREDS: dict[str, Any] = {
    "region": "us-east-1",
    "access_key_id": "testing",
    "secret_access_key": "testing",
}


async def _call(store: S3Store, op: str) -> object:
    if op == "get":
        return await store.get("q/k")
    if op == "create":
        return await store.put_if_absent("q/k", b"data")
    if op == "cas":
        return await store.put_if_match("q/k", b"data", md5_etag(b"before"))
    if op == "list":
        return await store.list("q/")
    assert op == "delete"
    await store.delete("q/k")
    return None


# --- against moto ----------------------------------------------------------------------------


async def test_moto_answers_are_classified(s3_store_args: dict[str, Any]) -> None:
    async with S3Store(**s3_store_args) as store:
        with pytest.raises(NotFound) as got:
            await store.get("q/k")
        assert isinstance(got.value.__cause__, ClientError)
        assert got.value.__cause__.response["ResponseMetadata"]["HTTPStatusCode"] == 404
        etag = await store.put_if_absent("q/k", b"v1")
        with pytest.raises(PreconditionFailed) as refused:
            await store.put_if_absent("q/k", b"v2")
        assert isinstance(refused.value.__cause__, ClientError)
        assert refused.value.__cause__.response["ResponseMetadata"]["HTTPStatusCode"] == 412
        with pytest.raises(PreconditionFailed):
            await store.put_if_match("q/k", b"v2", md5_etag(b"stale"))
        # moto answers a CAS on a missing key like AWS: 404 NoSuchKey
        with pytest.raises(NotFound) as missing:
            await store.put_if_match("q/other", b"v2", etag)
        assert isinstance(missing.value.__cause__, ClientError)
        assert missing.value.__cause__.response["Error"]["Code"] == "NoSuchKey"


async def test_a_missing_bucket_is_misconfigured_not_an_empty_queue(
    s3_store_args: dict[str, Any],
) -> None:
    args = {**s3_store_args, "bucket": "okuri-no-such-bucket"}
    async with S3Store(**args) as store:
        for op in ("get", "create", "cas", "list", "delete"):
            with pytest.raises(StoreMisconfigured, match="NoSuchBucket"):
                await _call(store, op)


@pytest.mark.parametrize("prefix", ["jobs", "jobs/", "/jobs/"])
async def test_prefix_is_normalised_and_stripped(
    s3_store_args: dict[str, Any], moto_s3_client: Any, prefix: str
) -> None:
    assert normalise_prefix(prefix) == "jobs/"
    async with S3Store(prefix=prefix, **s3_store_args) as store:
        await store.put_if_absent("q/k", b"x")
        assert await store.list("") == ["q/k"]
        assert await store.list("q/", start_after="q/a") == ["q/k"]
    listed = moto_s3_client.list_objects_v2(Bucket=s3_store_args["bucket"])
    assert [o["Key"] for o in listed["Contents"]] == ["jobs/q/k"]
    async with S3Store(prefix="", **s3_store_args) as root:
        assert await root.list("") == ["jobs/q/k"]
        assert (await root.get("jobs/q/k")).data == b"x"


async def test_list_is_one_request_of_at_most_1000_keys(s3_store_args: dict[str, Any]) -> None:
    sent: list[str] = []
    async with S3Store(**s3_store_args) as store:
        store.client.meta.events.register(
            "before-send.s3.ListObjectsV2", lambda request, **_: sent.append(request.url)
        )
        for i in range(5):
            await store.put_if_absent(f"q/{i}", b"x")
        assert await store.list("q/", limit=2) == ["q/0", "q/1"]
        assert len(sent) == 1 and "max-keys=2" in sent[0]
        assert await store.list("q/", start_after="q/1", limit=5000) == ["q/2", "q/3", "q/4"]
        assert len(sent) == 2 and "max-keys=1000" in sent[1]
        assert await store.list("q/", limit=0) == []
        assert len(sent) == 2


async def test_an_invalid_bucket_name_is_misconfigured(moto_s3_endpoint: str) -> None:
    async with S3Store("Not A Bucket!", endpoint_url=moto_s3_endpoint, **CREDS) as store:
        for op in ("get", "create", "list"):
            with pytest.raises(StoreMisconfigured):
                await _call(store, op)


async def test_lifecycle(s3_store_args: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        S3Store(s3_store_args["bucket"], access_key_id="only-half")
    store = await S3Store.connect(**s3_store_args)
    assert await store.open() is store  # opening twice is harmless
    await store.put_if_absent("k", b"x")
    await store.close()
    await store.close()
    with pytest.raises(RuntimeError):
        await store.get("k")


# --- nothing listening -----------------------------------------------------------------------


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("op", ["get", "create", "cas", "list", "delete"])
async def test_an_unreachable_endpoint_is_transient(op: str) -> None:
    """Refused connections are Transient even for writes: no byte of the request left the host,
    so it cannot have landed and a plain retry is safe (no re-read needed)."""
    url = f"http://127.0.0.1:{_closed_port()}"
    async with S3Store("bkt", endpoint_url=url, connect_timeout_s=2, **CREDS) as store:
        with pytest.raises(Transient) as got:
            await _call(store, op)
    assert isinstance(got.value.__cause__, EndpointConnectionError)


# --- failures no server here produces --------------------------------------------------------


def _reset() -> EndpointConnectionError:
    """What aiobotocore raises when an established connection is reset mid-request."""
    return EndpointConnectionError(
        endpoint_url="http://x", error=aiohttp.ClientOSError(104, "reset")
    )


@pytest.mark.parametrize(
    ("err", "op", "kind"),
    [
        (ConnectTimeoutError(endpoint_url="http://x"), "create", Transient),
        # aiobotocore also wraps a reset of a live connection as EndpointConnectionError:
        # the request may have been sent, so for a write that is Ambiguous.
        (_reset(), "cas", Ambiguous),
        (_reset(), "get", Transient),
        (ReadTimeoutError(endpoint_url="http://x"), "create", Ambiguous),
        (NoCredentialsError(), "get", StoreMisconfigured),
        (ValueError("unexpected"), "get", StoreError),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else getattr(v, "__name__", v),
)
def test_classify_by_whether_the_request_can_have_landed(
    err: BaseException, op: Any, kind: type[StoreError]
) -> None:
    assert type(classify(err, op, "k")) is kind


def test_a_404_on_create_or_list_means_no_bucket() -> None:
    err = ClientError({"Error": {"Code": ""}, "ResponseMetadata": {"HTTPStatusCode": 404}}, "Put")
    assert isinstance(classify(err, "create", "k"), StoreMisconfigured)
    assert isinstance(classify(err, "list", "k"), StoreMisconfigured)
    assert isinstance(classify(err, "get", "k"), NotFound)


# --- a fake server answering on command ------------------------------------------------------


class FakeS3:
    """Answers every request per `behaviour`: ('status', http_status, s3_code), ('close',) to
    drop the connection without a reply, or ('hang',) to never reply."""

    def __init__(self) -> None:
        self.behaviour: tuple[Any, ...] = ("status", 200, "")
        self.requests: list[str] = []
        self.release = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                fake.requests.append(self.command)
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                kind = fake.behaviour[0]
                if kind == "hang":
                    fake.release.wait(10)
                if kind in ("close", "hang"):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                _, status, code = fake.behaviour
                body = (
                    f'<?xml version="1.0" encoding="UTF-8"?>'
                    f"<Error><Code>{code}</Code><Message>fake</Message></Error>"
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture
def fake_s3() -> Iterator[FakeS3]:
    fake = FakeS3()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
async def fake_store(fake_s3: FakeS3) -> AsyncIterator[S3Store]:
    store = S3Store("bkt", endpoint_url=fake_s3.url, read_timeout_s=0.3, **CREDS)
    async with store:
        yield store


ANSWERS = [
    # A 5xx on a write may follow the write landing (even SlowDown, if a proxy says it): Ambiguous.
    ("create", ("status", 500, "InternalError"), Ambiguous),
    ("cas", ("status", 503, "SlowDown"), Ambiguous),
    # The same on a read, list or (idempotent) delete is a plain retry.
    ("get", ("status", 503, "SlowDown"), Transient),
    ("list", ("status", 500, "InternalError"), Transient),
    ("delete", ("status", 503, "SlowDown"), Transient),
    ("get", ("status", 429, "TooManyRequests"), Transient),
    ("create", ("status", 400, "RequestTimeout"), Transient),
    ("create", ("status", 409, "ConditionalRequestConflict"), Conflict),
    ("cas", ("status", 409, "ConditionalRequestConflict"), Conflict),
    ("create", ("status", 412, "PreconditionFailed"), PreconditionFailed),
    ("cas", ("status", 412, "PreconditionFailed"), PreconditionFailed),
    ("cas", ("status", 404, "NoSuchKey"), NotFound),
    ("delete", ("status", 404, "NoSuchKey"), None),  # idempotent: a missing key is success
    ("get", ("status", 404, "NoSuchBucket"), StoreMisconfigured),
    ("get", ("status", 403, "AccessDenied"), StoreMisconfigured),
    ("create", ("status", 501, "NotImplemented"), StoreMisconfigured),
    ("create", ("status", 400, "InvalidArgument"), StoreError),
    # The reply never came: a write may have landed, a read can be repeated.
    ("create", ("close",), Ambiguous),
    ("cas", ("close",), Ambiguous),
    ("delete", ("close",), Transient),
    ("get", ("close",), Transient),
    ("cas", ("hang",), Ambiguous),
    ("get", ("hang",), Transient),
]


@pytest.mark.parametrize(
    ("op", "behaviour", "kind"),
    ANSWERS,
    ids=[f"{a[0]}-{'-'.join(map(str, a[1]))}" for a in ANSWERS],
)
async def test_failures_are_classified_after_exactly_one_attempt(
    fake_s3: FakeS3,
    fake_store: S3Store,
    op: str,
    behaviour: tuple[Any, ...],
    kind: type[StoreError] | None,
) -> None:
    fake_s3.behaviour = behaviour
    if kind is None:
        await _call(fake_store, op)
    else:
        with pytest.raises(kind) as got:
            await _call(fake_store, op)
        assert type(got.value) is kind  # not a more (or less) specific kind than promised
        assert got.value.__cause__ is not None  # translated once, from the original
    # No retry by botocore, and no silent resend by aiohttp of a PUT whose reply was lost:
    # that resend would land as a 412 and read as a lost race although the write succeeded.
    assert len(fake_s3.requests) == 1, fake_s3.requests


# --- the start-up probe against stores that cheat --------------------------------------------


class IgnoresConditions:
    """A bucket that takes every conditional header and overwrites anyway."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}

    async def get(self, key: str) -> Blob:
        if key not in self.objects:
            raise NotFound(key)
        return Blob(self.objects[key], md5_etag(self.objects[key]))

    async def put_if_absent(self, key: str, data: bytes) -> str:
        self.objects[key] = data
        return md5_etag(data)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        self.objects[key] = data
        return md5_etag(data)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        return sorted(k for k in self.objects if k.startswith(prefix) and k > start_after)[:limit]

    async def delete(self, key: str) -> None:
        self.objects.pop(key, None)

    async def close(self) -> None:
        return None


class IgnoresIfMatch(MemoryStore):
    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        current = await self.get(key)
        return await super().put_if_match(key, data, current.etag)


class CasCreatesMissingKeys(MemoryStore):
    """Older MinIO: If-Match on a missing key wrote the object."""

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if key not in self.objects:
            return await self.put_if_absent(key, data)
        return await super().put_if_match(key, data, etag)


class RefusesCurrentEtag(MemoryStore):
    """A store whose etags do not round-trip (say, it compares them unquoted)."""

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        raise PreconditionFailed(key)


class Answers404ToStaleEtags(MemoryStore):
    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if key in self.objects and self.objects[key].etag != etag:
            raise NotFound(key)
        return await super().put_if_match(key, data, etag)


class WritesThenRefuses(MemoryStore):
    """Overwrites on If-None-Match, then answers 412 as if it had not."""

    async def put_if_absent(self, key: str, data: bytes) -> str:
        existed = key in self.objects
        self.objects.pop(key, None)
        self._keys = sorted(self.objects)
        etag = await super().put_if_absent(key, data)
        if existed:
            raise PreconditionFailed(key)
        return etag


class CreatesThenSays404(MemoryStore):
    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if key not in self.objects:
            await self.put_if_absent(key, data)
            raise NotFound(key)
        return await super().put_if_match(key, data, etag)


class CephLike(MemoryStore):
    """Answers a CAS on a missing key with 412, which is fine."""

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        if key not in self.objects:
            raise PreconditionFailed(key)
        return await super().put_if_match(key, data, etag)


@pytest.mark.parametrize(
    ("store", "ignored"),
    [
        (IgnoresConditions(), "If-None-Match"),
        (IgnoresIfMatch(), "If-Match"),
        (CasCreatesMissingKeys(), "missing key"),
        (RefusesCurrentEtag(), "current etag"),
        (Answers404ToStaleEtags(), "404 to If-Match with a stale etag"),
        (WritesThenRefuses(), "changed a key while refusing a create-only"),
        (CreatesThenSays404(), "created a key while refusing"),
    ],
    ids=[
        "ignores-all",
        "ignores-if-match",
        "cas-creates",
        "refuses-current",
        "stale-404",
        "writes-then-refuses",
        "creates-then-404",
    ],
)
async def test_verify_refuses_a_store_that_ignores_conditions(store: Any, ignored: str) -> None:
    with pytest.raises(StoreMisconfigured, match=ignored) as got:
        await verify_conditional_writes(store, probe_id="p1")
    assert "refuses to run" in str(got.value)
    assert await store.list("_okuri/") == []  # probe keys cleaned up even on refusal


async def test_verify_reports_a_412_store() -> None:
    store = CephLike()
    assert await verify_conditional_writes(store, probe_prefix="x/", probe_id="p2") == "412"
    assert store.objects == {}
