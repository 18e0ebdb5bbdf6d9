"""Commits forwarded between okuri nodes, over the main listener (okuri/engine/peering.py).

A follower POSTs its commit window's operations to the queue's leader at
`/_okuri/peer/commit`; the leader answers their results and the manifest it wrote. Anything
short of a complete answer is the follower's cue to commit by itself.

Requests are signed with a key derived from the SQS secret all nodes of a deployment share, so
that no SQS client can commit for a node. The signature covers a date, a nonce, the scope and
the body's SHA-256, all sent as headers: the leader checks it before it reads a byte of the
body (which may be 4 MiB), so a caller without the secret holds nothing but its headers. A
signed request is refused a second time: its nonce is remembered for as long as its date is
accepted (`limits.peer_clock_skew_s` either way), so a captured forward cannot lease again nor
read the manifest it answers with.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import logging
import re
import socket
import ssl
import time
from collections.abc import Callable, Mapping

import aiohttp
from aiohttp import web

from okuri import limits
from okuri.clock import Clock, SystemClock, new_secret
from okuri.engine import BodyReader, Engine, PeerRequestInvalid, PeerUnreachable
from okuri.errors import BodyUnread, QueueDoesNotExist, Unavailable
from okuri.server.settings import Address

log = logging.getLogger("okuri.server")

PATH = "/_okuri/peer/commit"
SIGNATURE = "X-Okuri-Peer-Signature"  # "<unix seconds>:<nonce>:<hex HMAC-SHA256>"
SCOPE = "X-Okuri-Peer-Scope"
DIGEST = "X-Okuri-Peer-Digest"  # the body's SHA-256, hex
_SIGNATURE = re.compile(r"([0-9]{1,12}):([A-Za-z0-9_-]{16,64}):([0-9a-f]{64})")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_SCOPE_CHARS_MAX = 64


def advertised_url(configured: str | None, listen: Address, bound: list[str]) -> str:
    """Where other nodes reach this one: the configured URL ('off': nowhere), else the bound
    address when the listener names a host, else this host's address on its network."""
    if configured is not None:
        return "" if configured == "off" else configured.rstrip("/")
    if not bound:
        return ""
    if listen.host not in (None, "0.0.0.0", "::"):
        return bound[0]
    port = bound[0].rsplit(":", 1)[1]
    try:
        address = socket.gethostbyname(socket.gethostname())
    except OSError:
        return ""
    scheme = bound[0].split("://", 1)[0]  # https on a TLS listener
    return f"{scheme}://{address}:{port}"


class Peers:
    """Both sides of forwarding for one node: the client its engines send with, and the
    handler that commits what other nodes send."""

    def __init__(
        self,
        secret: str,
        engine_for: Callable[[str], Engine],
        tls: Callable[[], ssl.SSLContext | None] = lambda: None,
        clock: Clock | None = None,
        read_timeout_s: float = limits.read_timeout_s_default,
    ) -> None:
        """`tls`: the context a forward to an https:// leader uses now (okuri.server.tls's
        peer context, swapped on reload), or None for the system's defaults. `clock` times a
        forward's body read, which may pause for `read_timeout_s` at most."""
        self._key = hmac.new(secret.encode(), b"okuri peer commits", hashlib.sha256).digest()
        self._engine_for = engine_for
        self._tls = tls
        self._session: aiohttp.ClientSession | None = None
        self._seen = Nonces(limits.peer_nonces_max)
        self._bodies = BodyReader(clock or SystemClock(), read_timeout_s)

    def _sign(self, stamp: str, nonce: str, scope: str, digest: str) -> str:
        msg = "\n".join([stamp, nonce, scope, digest]).encode()
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()

    def headers(self, scope: str, body: bytes) -> dict[str, str]:
        """A forward's signed headers for `body`, dated now, with a nonce of its own."""
        stamp, nonce = str(int(time.time())), new_secret(16)
        digest = hashlib.sha256(body).hexdigest()
        return {
            SIGNATURE: f"{stamp}:{nonce}:{self._sign(stamp, nonce, scope, digest)}",
            SCOPE: scope,
            DIGEST: digest,
        }

    # --- sending -----------------------------------------------------------------------------

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=limits.peer_timeout_s, sock_connect=limits.peer_timeout_s / 5
                )
            )
        headers = {**self.headers(scope, body), "Content-Type": "application/octet-stream"}
        context = self._tls() if url.startswith("https:") else None
        try:
            async with self._session.post(
                url + PATH, data=body, headers=headers, ssl=True if context is None else context
            ) as reply:
                data = await reply.read()
                if reply.status != 200:
                    text = data[:200].decode("utf-8", "replace")
                    raise PeerUnreachable(f"answered {reply.status}: {text}")
                return data
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as err:
            raise PeerUnreachable(f"{type(err).__name__}: {err}") from err

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    # --- receiving ---------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.Response:
        refused = self._refusal(request.headers)
        if refused is not None:
            return web.Response(status=403, text=refused)
        try:
            body = await self._bodies.read(
                request.content, request.content_length, limits.peer_body_bytes_max
            )
        except BodyUnread as err:
            status = {"too_large": 413, "timed_out": 408}.get(err.reason, 400)
            response = web.Response(status=status, text=str(err))
            if status != 413:
                response.force_close()
            return response
        if not hmac.compare_digest(hashlib.sha256(body).hexdigest(), request.headers[DIGEST]):
            return web.Response(status=403, text="forwarded commit body does not match its digest")
        try:
            reply = await self._engine_for(request.headers.get(SCOPE, "")).commit_for_peer(body)
        except PeerRequestInvalid as err:
            return web.Response(status=400, text=str(err))
        except QueueDoesNotExist as err:
            return web.Response(status=404, text=str(err))
        except Unavailable as err:
            return web.Response(status=503, text=str(err))
        return web.Response(body=reply, content_type="application/octet-stream")

    def _refusal(self, headers: Mapping[str, str]) -> str | None:
        """Why a forward's headers are refused before its body is read (None: they are signed
        by this deployment, dated now, and seen for the first time, which they now are)."""
        signed = _SIGNATURE.fullmatch(headers.get(SIGNATURE, ""))
        scope, digest = headers.get(SCOPE, ""), headers.get(DIGEST, "")
        if signed is None or not _DIGEST.fullmatch(digest) or len(scope) > _SCOPE_CHARS_MAX:
            return "forwarded commit unsigned"
        stamp, nonce, signature = signed.groups()
        now_s = time.time()
        if abs(now_s - int(stamp)) > limits.peer_clock_skew_s:
            return "forwarded commit out of date"
        if not hmac.compare_digest(signature, self._sign(stamp, nonce, scope, digest)):
            return "forwarded commit signature does not match"
        if not self._seen.add(nonce, int(stamp) + limits.peer_clock_skew_s, now_s):
            return "forwarded commit already seen (a replay), or too many to remember"
        return None


class Nonces:
    """Nonces of signed forwards, each kept until its date is no longer accepted, at most
    `entries_max` (past that a forward is refused, and its sender commits by itself)."""

    def __init__(self, entries_max: int) -> None:
        self.entries_max = entries_max
        self._until_s: dict[str, float] = {}  # by arrival, which is nearly by expiry

    def add(self, nonce: str, until_s: float, now_s: float) -> bool:
        """Remember `nonce` until `until_s`; False if it is remembered already, or if no room."""
        seen = self._until_s
        for old in list(itertools.islice(seen, 8)):  # the oldest few, each call: amortised
            if seen[old] < now_s:
                del seen[old]
        if nonce in seen:
            return False
        if len(seen) >= self.entries_max:
            for old in [n for n, t in seen.items() if t < now_s]:
                del seen[old]
            if len(seen) >= self.entries_max:
                return False
        seen[nonce] = until_s
        return True
