"""S3 adapter: the port on aiobotocore, for AWS S3 and S3-compatible stores (MinIO, Ceph, moto).

It owns two things a library must not decide for us:
- Exactly one attempt per request. botocore's retries are switched off, and so is aiohttp's silent
  resend of an "idempotent" PUT over a connection that dropped: a resent conditional PUT whose
  first copy landed answers 412 and would be misread as a lost race. The engine owns retries,
  because only it can re-read and compare after an ambiguous write.
- Classifying every failure into `okuri.errors`, by HTTP status and S3 code, and by whether the
  request can have taken effect: a write that may have reached the server is Ambiguous, never
  Transient.
Keys live under a configurable prefix ('jobs' and 'jobs/' mean the same; '' is the bucket root).
"""

from __future__ import annotations

import asyncio
import socket
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Literal

import aiohttp
from aiobotocore.config import AioConfig
from aiobotocore.httpsession import AIOHTTPSession
from aiobotocore.session import AioSession, get_session
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    ParamValidationError,
    PartialCredentialsError,
)

from okuri import limits
from okuri.errors import (
    Ambiguous,
    Conflict,
    NotFound,
    PreconditionFailed,
    StoreError,
    StoreMisconfigured,
    Transient,
)
from okuri.store.port import Blob

Op = Literal["get", "create", "cas", "list", "delete"]
WRITES: frozenset[Op] = frozenset({"create", "cas"})


THROTTLE_CODES = frozenset(
    {
        "SlowDown",
        "Throttling",
        "ThrottlingException",
        "TooManyRequests",
        "RequestLimitExceeded",
        "RequestThrottled",
        "ServiceUnavailable",
    }
)
# Answers that no retry will change: wrong bucket, credentials, region, or an unsupported feature.
MISCONFIGURED_CODES = frozenset(
    {
        "NoSuchBucket",
        "AccessDenied",
        "AllAccessDisabled",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidBucketName",
        "PermanentRedirect",
        "AuthorizationHeaderMalformed",
        "NotImplemented",
    }
)


class _SingleShotHTTPSession(AIOHTTPSession):  # type: ignore[misc]  # aiobotocore is untyped
    """aiobotocore's HTTP session with aiohttp's one silent resend of PUT/DELETE switched off.

    aiohttp offers no public switch; tests/store/test_s3_errors.py counts requests at a fake
    server, so a future aiohttp that renames the attribute fails a test instead of a queue.
    """

    async def _get_session(self, proxy_url: str | None) -> aiohttp.ClientSession:
        session: aiohttp.ClientSession = await super()._get_session(proxy_url)
        session._retry_connection = False
        return session


_loader: Any = None


def _session() -> AioSession:
    """A fresh session sharing one botocore data loader: parsing the S3 model costs ~0.1 s, the
    loader's cache is plain data, and anything loop-bound (credential refresh locks) stays
    per session."""
    global _loader
    session = get_session()
    if _loader is None:
        _loader = session.get_component("data_loader")
    else:
        session.register_component("data_loader", _loader)
    return session


def normalise_prefix(prefix: str) -> str:
    stripped = prefix.strip("/")
    return stripped + "/" if stripped else ""


def _not_sent(err: BaseException) -> bool:
    """True when the request provably never left this machine (no connection was established)."""
    if isinstance(err, ConnectTimeoutError):
        return True
    if isinstance(err, EndpointConnectionError):
        cause = getattr(err, "kwargs", {}).get("error")
        return isinstance(cause, aiohttp.ClientConnectorError | socket.gaierror)
    return False


def classify(err: BaseException, op: Op, key: str) -> StoreError:
    """Map one failed request to an okuri kind; `op` says whether it could have changed anything."""
    write = op in WRITES
    where = f"S3 {op} {key!r}"
    if isinstance(err, ClientError):
        response: dict[str, Any] = err.response or {}
        status = int(response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        code = str(response.get("Error", {}).get("Code") or "")
        said = f"{where}: {status} {code}"
        if code in MISCONFIGURED_CODES or status in (401, 403, 501):
            return StoreMisconfigured(said)
        if status == 404 or code in ("NoSuchKey", "NotFound"):
            if op in ("get", "cas", "delete"):
                return NotFound(key)
            return StoreMisconfigured(f"{said} (a create or list cannot miss a key: no bucket?)")
        if write and (status == 412 or code == "PreconditionFailed"):
            return PreconditionFailed(key)
        if status == 409 or code in ("ConditionalRequestConflict", "OperationAborted"):
            return Conflict(said) if write else Transient(said)
        if status >= 500:
            # Even a 503 SlowDown may come from a proxy after the store applied the write.
            return Ambiguous(said) if write else Transient(said)
        if status == 429 or code in THROTTLE_CODES or code == "RequestTimeout":
            # A 4xx refusal, or the store timing out while the body was still arriving: no effect.
            return Transient(said)
        return StoreError(f"{said} (unexpected answer)")
    if isinstance(err, NoCredentialsError | PartialCredentialsError | ParamValidationError):
        return StoreMisconfigured(f"{where}: {err}")  # refused before sending (e.g. bucket name)
    if _not_sent(err):
        return Transient(f"{where}: {err}")
    if isinstance(err, BotoCoreError | aiohttp.ClientError | asyncio.TimeoutError | OSError):
        # Read timeout, connection closed or reset: the request may have reached the store.
        return Ambiguous(f"{where}: {err}") if write else Transient(f"{where}: {err}")
    return StoreError(f"{where}: {err!r}")


_FAILURES = (BotoCoreError, ClientError, aiohttp.ClientError, asyncio.TimeoutError, OSError)


class S3Store:
    """Open with `await S3Store.connect(...)` or `async with S3Store(...)`; then `close()`."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        *,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float = 30.0,
        max_pool_connections: int = 64,
    ) -> None:
        if (access_key_id is None) != (secret_access_key is None):
            raise ValueError("give both access_key_id and secret_access_key, or neither")
        self.bucket = bucket
        self.prefix = normalise_prefix(prefix)
        self.endpoint_url = endpoint_url
        self.region = region
        self._credentials = (access_key_id, secret_access_key)
        self._config = AioConfig(
            region_name=region,
            connect_timeout=connect_timeout_s,
            read_timeout=read_timeout_s,
            max_pool_connections=max_pool_connections,
            retries={"total_max_attempts": 1, "mode": "standard"},
            http_session_cls=_SingleShotHTTPSession,
            # Path-style and no default CRC headers: what MinIO, Ceph and moto reliably accept.
            **(
                {
                    "s3": {"addressing_style": "path"},
                    "request_checksum_calculation": "when_required",
                }
                if endpoint_url
                else {}
            ),
        )
        self._stack: AsyncExitStack | None = None
        self._client: Any = None

    @classmethod
    async def connect(cls, *args: Any, **kwargs: Any) -> S3Store:
        """Construct (same arguments as the class) and open in one step."""
        return await cls(*args, **kwargs).open()

    async def open(self) -> S3Store:
        if self._client is not None:
            return self
        stack = AsyncExitStack()
        access_key_id, secret_access_key = self._credentials
        self._client = await stack.enter_async_context(
            _session().create_client(
                "s3",
                region_name=self.region,
                endpoint_url=self.endpoint_url,
                aws_access_key_id=access_key_id,
                aws_secret_access_key=secret_access_key,
                config=self._config,
            )
        )
        self._stack = stack
        return self

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def __aenter__(self) -> S3Store:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def client(self) -> Any:
        """The aiobotocore client, for tests and diagnostics; the port never needs it."""
        if self._client is None:
            raise RuntimeError("S3Store used before open() or after close()")
        return self._client

    # --- the port ----------------------------------------------------------------------------

    async def get(self, key: str) -> Blob:
        try:
            response = await self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
            async with response["Body"] as body:
                data: bytes = await body.read()
        except _FAILURES as err:
            raise classify(err, "get", key) from err
        return Blob(data, str(response["ETag"]))

    async def _put(self, key: str, data: bytes, op: Op, condition: dict[str, str]) -> str:
        try:
            response = await self.client.put_object(
                Bucket=self.bucket, Key=self.prefix + key, Body=bytes(data), **condition
            )
        except _FAILURES as err:
            raise classify(err, op, key) from err
        etag = response.get("ETag")
        if not etag:
            raise StoreMisconfigured(f"S3 {op} {key!r}: the store returned no ETag")
        return str(etag)

    async def put_if_absent(self, key: str, data: bytes) -> str:
        return await self._put(key, data, "create", {"IfNoneMatch": "*"})

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        return await self._put(key, data, "cas", {"IfMatch": etag})

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        """One ListObjectsV2 request, at most 1000 keys: callers page on with `start_after`."""
        if limit <= 0:
            return []
        params: dict[str, Any] = {
            "Bucket": self.bucket,
            "Prefix": self.prefix + prefix,
            "MaxKeys": min(limit, limits.list_keys_max),
        }
        if start_after:
            params["StartAfter"] = self.prefix + start_after
        try:
            response = await self.client.list_objects_v2(**params)
        except _FAILURES as err:
            raise classify(err, "list", prefix) from err
        cut = len(self.prefix)
        return [str(item["Key"])[cut:] for item in response.get("Contents", [])]

    async def delete(self, key: str) -> None:
        """Idempotent: S3 answers 204 for a missing key; a store answering 404 means the same."""
        try:
            await self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)
        except _FAILURES as err:
            kind = classify(err, "delete", key)
            if not isinstance(kind, NotFound):
                raise kind from err
