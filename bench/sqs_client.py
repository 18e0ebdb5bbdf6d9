"""A light SQS JSON 1.0 client for the benchmarks: SigV4-signed, keep-alive, little CPU per call.

Why not aiobotocore: it spends about 1.4 ms of client CPU per call (endpoint resolution, models,
validation, hooks), as much as the server spends answering, so a load generator built on it on
the same machine measures the client. This client does only what the wire needs: one JSON body,
`X-Amz-Target: AmazonSQS.<Action>`, `Content-Type: application/x-amz-json-1.0`, and a SigV4
`Authorization` header. The signing key is derived once per day and region; a request costs two
SHA-256 hashes (body, canonical request) and one HMAC. The signing follows AWS's public
Signature Version 4 description (as any SDK does, nothing of okuri's verifier): the host header
is signed, the scope date is the request date, and the body hash is left for the server to
recompute, so no x-amz-content-sha256 header is sent.

Two faces over one signer: `LightSqs` (asyncio, aiohttp) for `python -m bench sqs`, and
`BlockingSqs` (http.client, one connection per thread and node) for the threads of `python -m bench
cluster`. Both return the decoded JSON answer, the same dicts botocore returns for these
actions, and raise `SqsCallError` for an SQS error answer. Connection failures surface as the
transport's own exceptions (aiohttp.ClientError, OSError, http.client.HTTPException), so a
caller can tell "the node answered no" from "the node did not answer".
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import time
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

ALGORITHM: Final = "AWS4-HMAC-SHA256"
TERMINATOR: Final = "aws4_request"
SERVICE: Final = "sqs"
CONTENT_TYPE: Final = "application/x-amz-json-1.0"
TARGET_PREFIX: Final = "AmazonSQS."
SIGNED_HEADERS: Final = "content-type;host;x-amz-date;x-amz-target"

CONNECT_TIMEOUT_S = 5.0
REPLY_TIMEOUT_S = 30.0  # on top of a receive's long-poll wait
ERROR_MESSAGE_CHARS_MAX = 300


class SqsCallError(Exception):
    """The endpoint answered with an SQS error (`code` as AWS names it, HTTP `status`)."""

    def __init__(self, action: str, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.action = action
        self.status = status
        self.code = code
        self.message = message

    @property
    def server_fault(self) -> bool:
        """5xx: the node failed, not the request; another node may answer."""
        return self.status >= 500


def signing_key(secret: str, day: str, region: str, service: str) -> bytes:
    """SigV4's derived key: HMAC chained over the day (YYYYMMDD), region, service and
    terminator, starting from "AWS4" + the secret."""
    key = ("AWS4" + secret).encode()
    for part in (day, region, service, TERMINATOR):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


class Signer:
    """SigV4 for POST / with a JSON 1.0 body; the signing key is derived once per day."""

    def __init__(self, access_key_id: str, secret_access_key: str, region: str) -> None:
        self.access_key_id = access_key_id
        self.region = region
        self._secret = secret_access_key
        self._day = ""
        self._key = b""
        self._scope = ""
        self._second = -1
        self._amz_date = ""

    def _signing_key(self, day: str) -> bytes:
        if day != self._day:
            self._day, self._key = day, signing_key(self._secret, day, self.region, SERVICE)
            self._scope = f"{day}/{self.region}/{SERVICE}/{TERMINATOR}"
        return self._key

    def _now(self) -> str:
        second = int(time.time())
        if second != self._second:
            self._second = second
            self._amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(second))
        return self._amz_date

    def headers(self, host: str, target: str, body: bytes) -> dict[str, str]:
        """The headers that sign `body` for `host` (as sent in the Host header) and `target`."""
        amz_date = self._now()
        key = self._signing_key(amz_date[:8])
        canonical = (
            f"POST\n/\n\ncontent-type:{CONTENT_TYPE}\nhost:{host}\nx-amz-date:{amz_date}\n"
            f"x-amz-target:{target}\n\n{SIGNED_HEADERS}\n{hashlib.sha256(body).hexdigest()}"
        )
        to_sign = (
            f"{ALGORITHM}\n{amz_date}\n{self._scope}\n"
            f"{hashlib.sha256(canonical.encode()).hexdigest()}"
        )
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return {
            "Host": host,
            "Content-Type": CONTENT_TYPE,
            "X-Amz-Date": amz_date,
            "X-Amz-Target": target,
            "Authorization": f"{ALGORITHM} Credential={self.access_key_id}/{self._scope}, "
            f"SignedHeaders={SIGNED_HEADERS}, Signature={signature}",
        }


def _error(action: str, status: int, body: bytes) -> SqsCallError:
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        text = body.decode(errors="replace")[:ERROR_MESSAGE_CHARS_MAX]
        return SqsCallError(action, status, "Unknown", text)
    code = str(doc.get("__type", "Unknown")).rsplit("#", 1)[-1]
    message = str(doc.get("message") or doc.get("Message") or "")[:ERROR_MESSAGE_CHARS_MAX]
    return SqsCallError(action, status, code, message)


def _decode(action: str, status: int, body: bytes) -> dict[str, Any]:
    if status != 200:
        raise _error(action, status, body)
    if not body:
        return {}
    doc = orjson.loads(body)
    if not isinstance(doc, dict):
        raise SqsCallError(action, status, "Unknown", "the answer is not a JSON object")
    return doc


class LightSqs:
    """An asyncio SQS client of one endpoint; use `async with`, or call `close()`."""

    def __init__(
        self,
        endpoint: str,
        access_key_id: str,
        secret_access_key: str,
        region: str,
        connections_max: int,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
    ) -> None:
        import aiohttp

        self.endpoint = endpoint.rstrip("/")
        self.host = urlsplit(self.endpoint).netloc
        self.signer = Signer(access_key_id, secret_access_key, region)
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=connections_max, keepalive_timeout=30),
            timeout=aiohttp.ClientTimeout(total=reply_timeout_s, sock_connect=CONNECT_TIMEOUT_S),
            skip_auto_headers=("User-Agent", "Content-Type"),
        )

    async def __aenter__(self) -> LightSqs:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._session.close()

    async def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        body = orjson.dumps(params)
        headers = self.signer.headers(self.host, TARGET_PREFIX + action, body)
        async with self._session.post(self.endpoint + "/", data=body, headers=headers) as reply:
            data = await reply.read()
            return _decode(action, reply.status, data)

    # The calls the load uses, spelled as botocore spells them, so either client drives a run.

    async def create_queue(self, **params: Any) -> dict[str, Any]:
        return await self.call("CreateQueue", params)

    async def delete_queue(self, **params: Any) -> dict[str, Any]:
        return await self.call("DeleteQueue", params)

    async def send_message_batch(self, **params: Any) -> dict[str, Any]:
        return await self.call("SendMessageBatch", params)

    async def receive_message(self, **params: Any) -> dict[str, Any]:
        return await self.call("ReceiveMessage", params)

    async def delete_message_batch(self, **params: Any) -> dict[str, Any]:
        return await self.call("DeleteMessageBatch", params)


class _Connection(http.client.HTTPConnection):
    """http.client's connection with a connect timeout of its own, as botocore's
    connect_timeout and read_timeout: `timeout` bounds each read, `connect_timeout_s` the
    connect."""

    def __init__(self, host: str, port: int, timeout: float, connect_timeout_s: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._connect_timeout_s = connect_timeout_s

    def connect(self) -> None:
        read_timeout = self.timeout
        self.timeout = self._connect_timeout_s
        try:
            super().connect()
        finally:
            self.timeout = read_timeout
        assert self.sock is not None
        self.sock.settimeout(read_timeout)


class BlockingSqs:
    """A blocking SQS client of one endpoint over one keep-alive connection: one per thread.

    After any transport failure the connection is dropped and the next call opens a new one.
    `timeout_s` bounds every read of the answer (botocore's read_timeout); `connect_timeout_s`
    the connect (botocore's connect_timeout), the same as `timeout_s` unless given.
    """

    def __init__(
        self,
        endpoint: str,
        signer: Signer,
        timeout_s: float = REPLY_TIMEOUT_S,
        connect_timeout_s: float | None = None,
    ) -> None:
        parts = urlsplit(endpoint)
        self.host = parts.netloc
        self.signer = signer
        self._address = (parts.hostname or "", parts.port or 80)
        self._timeout_s = timeout_s
        self._connect_timeout_s = timeout_s if connect_timeout_s is None else connect_timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def call(self, action: str, params: dict[str, Any]) -> dict[str, Any]:
        body = orjson.dumps(params)
        headers = self.signer.headers(self.host, TARGET_PREFIX + action, body)
        if self._conn is None:
            self._conn = _Connection(*self._address, self._timeout_s, self._connect_timeout_s)
        try:
            self._conn.request("POST", "/", body=body, headers=headers)
            reply = self._conn.getresponse()
            data = reply.read()
        except BaseException:
            self.close()
            raise
        if reply.will_close:
            self.close()
        return _decode(action, reply.status, data)
