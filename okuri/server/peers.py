"""Commits forwarded between okuri nodes, over the main listener (okuri/engine/peering.py).

A follower POSTs its commit window's operations to the queue's leader at
`/_okuri/peer/commit`; the leader answers their results and the manifest it wrote. Requests are
signed with a key derived from the SQS secret all nodes of a deployment share, and dated, so
that no SQS client (nor a replay) can commit for a node. Anything short of a complete answer is
the follower's cue to commit by itself.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import socket
import ssl
import time
from collections.abc import Callable

import aiohttp
from aiohttp import web

from okuri import limits
from okuri.engine import Engine, PeerRequestInvalid, PeerUnreachable
from okuri.errors import QueueDoesNotExist, Unavailable
from okuri.server.settings import Address

log = logging.getLogger("okuri.server")

PATH = "/_okuri/peer/commit"
SIGNATURE = "X-Okuri-Peer-Signature"
SCOPE = "X-Okuri-Peer-Scope"


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
    ) -> None:
        """`tls`: the context a forward to an https:// leader uses now (okuri.server.tls's
        peer context, swapped on reload), or None for the system's defaults."""
        self._key = hmac.new(secret.encode(), b"okuri peer commits", hashlib.sha256).digest()
        self._engine_for = engine_for
        self._tls = tls
        self._session: aiohttp.ClientSession | None = None

    def _sign(self, stamp: str, scope: str, body: bytes) -> str:
        msg = b"\n".join([stamp.encode(), scope.encode(), body])
        return hmac.new(self._key, msg, hashlib.sha256).hexdigest()

    # --- sending -----------------------------------------------------------------------------

    async def commit(self, url: str, scope: str, body: bytes) -> bytes:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(
                    total=limits.peer_timeout_s, sock_connect=limits.peer_timeout_s / 5
                )
            )
        stamp = str(int(time.time()))
        headers = {
            SIGNATURE: f"{stamp}:{self._sign(stamp, scope, body)}",
            SCOPE: scope,
            "Content-Type": "application/octet-stream",
        }
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
        if request.content_length is not None and request.content_length > (
            limits.peer_body_bytes_max
        ):
            return web.Response(status=413, text="forwarded commit too large")
        body = await request.read()
        scope = request.headers.get(SCOPE, "")
        stamp, _, signature = request.headers.get(SIGNATURE, "").partition(":")
        if not stamp.isdigit() or abs(time.time() - int(stamp)) > limits.peer_clock_skew_s:
            return web.Response(status=403, text="forwarded commit unsigned or out of date")
        if not hmac.compare_digest(signature, self._sign(stamp, scope, body)):
            return web.Response(status=403, text="forwarded commit signature does not match")
        try:
            reply = await self._engine_for(scope).commit_for_peer(body)
        except PeerRequestInvalid as err:
            return web.Response(status=400, text=str(err))
        except QueueDoesNotExist as err:
            return web.Response(status=404, text=str(err))
        except Unavailable as err:
            return web.Response(status=503, text=str(err))
        return web.Response(body=reply, content_type="application/octet-stream")
