"""Raw bytes to and from a real `okuri serve`: requests no HTTP library would send (bare LFs,
control characters, bodies cut short, HTTP/2 frames after the gRPC preface), and SigV4-signed
requests rendered as bytes so that what follows the signature can be anything.

Every connection is to loopback, bounded by `TIMEOUT_S`, and closed by the caller's `with`.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.servers import SQS_REGION, ServerProcess

TIMEOUT_S = 5.0
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
AWS_JSON = "application/x-amz-json-1.0"


def address(server: ServerProcess) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def exchange(
    server: ServerProcess, data: bytes, *, hang_up: bool = False, timeout_s: float = TIMEOUT_S
) -> bytes:
    """Send `data` on a new connection and read until the server closes it (or `timeout_s`);
    `hang_up`: close right after sending, as a client that gives up mid-request, and read
    nothing."""
    with socket.create_connection(address(server), timeout=timeout_s) as sock:
        with contextlib.suppress(OSError):  # refused before it read it all: its answer counts
            sock.sendall(data)
        if hang_up:
            time.sleep(0.05)  # let the bytes reach the server before the close
            return b""
        return read_until_closed(sock, timeout_s)


def read_until_closed(sock: socket.socket, timeout_s: float = TIMEOUT_S) -> bytes:
    out = b""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        out += chunk
    return out


def request(
    method: str,
    target: str,
    headers: Iterable[tuple[str, str]] = (),
    body: bytes = b"",
    *,
    length: int | None = None,
    host: str = "127.0.0.1",
) -> bytes:
    """One HTTP/1.1 request as bytes, closing its connection; `length`: the Content-Length to
    claim when not the body's own; `host`: the Host header (a signed request's must be the one
    it was signed for)."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body or length is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body) if length is None else length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + body


def status(answer: bytes) -> int:
    """The status code of a raw answer (0 when there was none)."""
    parts = answer.split(b" ", 2)
    return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0


def signed(
    server: ServerProcess,
    key: str,
    secret: str,
    *,
    target: str | None = None,
    body: bytes = b"",
    path: str = "/",
    content_type: str = AWS_JSON,
) -> tuple[bytes, str]:
    """A SigV4-signed POST (AWS JSON with `target`, else whatever `content_type` says) as
    bytes, and the signature it carries."""
    headers = {"Content-Type": content_type}
    if target is not None:
        headers["X-Amz-Target"] = target
    aws = AWSRequest("POST", server.url + path, data=body, headers=headers)
    SigV4Auth(Credentials(key, secret), "sqs", SQS_REGION).add_auth(aws)
    authorization = str(aws.headers["Authorization"])
    signature = authorization.rsplit("Signature=", 1)[1]
    sent = [(k, str(v)) for k, v in aws.headers.items()]
    return request("POST", path, sent, body, host=urlsplit(server.url).netloc), signature


def presigned(server: ServerProcess, key: str, secret: str, query: str) -> tuple[bytes, str]:
    """A presigned GET of `/?<query>` as bytes, and the X-Amz-Signature in its URL."""
    aws = AWSRequest("GET", f"{server.url}/?{query}")
    SigV4QueryAuth(Credentials(key, secret), "sqs", SQS_REGION, expires=300).add_auth(aws)
    parts = urlsplit(aws.url)
    signature = parts.query.rsplit("X-Amz-Signature=", 1)[1].split("&", 1)[0]
    return request("GET", f"{parts.path}?{parts.query}", host=parts.netloc), signature
