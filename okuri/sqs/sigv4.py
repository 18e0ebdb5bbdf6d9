"""AWS Signature Version 4 verification for requests arriving at the SQS surface.

Owns: rebuilding the SigV4 canonical request from what was received (method, raw path, raw query,
headers, body), recomputing the signature with the caller's secret, and, when a request is refused,
choosing the error code AWS itself would send, because SDKs pick their exception class from it.
Both header auth (`Authorization: AWS4-HMAC-SHA256 ...`) and presigned query auth (`X-Amz-*`
parameters, used by the legacy query protocol's GETs) are accepted.

Pure and synchronous: no I/O, and the current time is the `now_ms` argument, so tests and the
simulator decide what "now" is. The only state is a bounded cache of derived signing keys, a pure
function of its arguments.

Canonicalisation follows the SigV4 spec for non-S3 services, which is what every SDK does for sqs:
the path has dot segments and empty segments removed, then is URI-encoded once more (so a received
`%20` is signed as `%2520`); query keys and values are percent-decoded, re-encoded with the
unreserved set and sorted. A `+` in the query is a space, as in form decoding: that is how the
action layer reads query parameters, so what was signed is what gets executed (and botocore
itself sends `+` for a space in `params` while signing `%20`).

What a request claims (its Authorization header or X-Amz-* parameters, and its time) is read
in `okuri.sqs.sigv4_claims`; the error codes a refusal answers, and the evidence for them, are
in `okuri.sqs.sigv4_errors`.

Deliberate choices: any region is accepted (clients sign with whatever region they are set to);
the payload may be `UNSIGNED-PAYLOAD` only when the body is empty, so a message body is never
accepted unauthenticated; presigned URLs are honoured until X-Amz-Date + X-Amz-Expires (at most
seven days), as the spec describes; X-Amz-Security-Token is signed like any other input but not
checked, since okuri has no session credentials.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Final
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes

from okuri.sqs.sigv4_claims import (
    ALGORITHM,
    QUERY_AUTH_KEYS,
    QUERY_AUTH_REQUIRED,
    TERMINATOR,
    check_time,
    header_claim,
    query_claim,
)
from okuri.sqs.sigv4_errors import INVALID_TOKEN_MESSAGE, AuthError, echo, incomplete, mismatch

UNSIGNED_PAYLOAD: Final = "UNSIGNED-PAYLOAD"

# Bounds: past these a request is refused before any hashing. Generous for every real client.
header_value_chars_max: Final = 16 * 1024
path_chars_max: Final = 8 * 1024
query_chars_max: Final = 4 * 1024 * 1024  # a legacy GET may carry a 1 MiB body, percent-encoded
query_params_max: Final = 2048
signing_keys_max: Final = 256  # cached (secret, date, region, service) -> signing key

_SHA256_HEX_RE = re.compile(r"[0-9a-fA-F]{64}")


@dataclass(frozen=True)
class SignedRequest:
    """A request as received, before any decoding."""

    method: str  # "POST" / "GET"
    path: str  # raw path, without the query: "/" or "/000000000000/jobs"
    query: str  # raw (still percent-encoded) query string, without "?"
    headers: Mapping[str, str]  # as received; names are case-insensitive, repeats allowed
    body: bytes


def verify(
    request: SignedRequest,
    secrets: Callable[[str], str | None],
    now_ms: int,
    service: str = "sqs",
    skew_s_max: int = 900,
) -> str:
    """Return the access key id if the request is correctly signed; raise AuthError otherwise.

    `secrets` maps an access key id to its secret (None: unknown key). Header-signed requests are
    valid within `skew_s_max` of `now_ms` either way; presigned ones from `skew_s_max` before
    X-Amz-Date until X-Amz-Expires after it.
    """
    if len(request.path) > path_chars_max:
        raise incomplete(f"The request path is longer than {path_chars_max} characters.")
    if len(request.query) > query_chars_max:
        raise incomplete(f"The query string is longer than {query_chars_max} characters.")
    headers = _group_headers(request.headers.items())
    pairs, auth_params = _parse_query(request.query)
    presigned = not QUERY_AUTH_KEYS.isdisjoint(auth_params)
    if presigned:
        if "authorization" in headers:
            raise incomplete(
                "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter "
                "or the Authorization header should be specified."
            )
        auth = query_claim(auth_params, service)
    else:
        auth = header_claim(headers, service)

    check_time(auth, now_ms, skew_s_max)

    secret = secrets(auth.access_key)
    if secret is None:
        raise AuthError("InvalidClientTokenId", 403, INVALID_TOKEN_MESSAGE)

    canonical_head = "\n".join(
        (
            request.method.upper(),
            _canonical_path(request.path),
            _canonical_query(pairs, drop_signature=presigned),
            _canonical_headers(auth.signed_names, headers),
            ";".join(auth.signed_names),
            "",
        )
    )
    scope = f"{auth.date_stamp}/{auth.region}/{service}/{TERMINATOR}"
    key = signing_key(secret, auth.date_stamp, auth.region, service)
    given = auth.signature.encode("ascii")
    for payload_hash in _payload_hashes(headers, auth_params, request.body, presigned):
        canonical = (canonical_head + payload_hash).encode("utf-8", "surrogateescape")
        string_to_sign = (
            f"{ALGORITHM}\n{auth.amz_date}\n{scope}\n{hashlib.sha256(canonical).hexdigest()}"
        )
        expected = hmac.new(
            key, string_to_sign.encode("utf-8", "surrogateescape"), hashlib.sha256
        ).hexdigest()
        if hmac.compare_digest(expected.encode("ascii"), given):
            return auth.access_key
    raise mismatch()


# --- the canonical request ----------------------------------------------------------------------


def _group_headers(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, value in items:
        grouped.setdefault(name.lower(), []).append(value)
    return grouped


def _parse_query(query: str) -> tuple[list[tuple[bytes, bytes]], dict[str, str]]:
    """Form-decode the query into (key, value) pairs, and pick out the X-Amz-* parameters."""
    pairs: list[tuple[bytes, bytes]] = []
    auth_params: dict[str, str] = {}
    if not query:
        return pairs, auth_params
    for piece in query.encode("utf-8", "surrogateescape").split(b"&"):
        if not piece:
            continue
        if len(pairs) >= query_params_max:
            raise incomplete(f"The query string has more than {query_params_max} parameters.")
        raw_key, _, raw_value = piece.replace(b"+", b" ").partition(b"=")
        key = unquote_to_bytes(raw_key)
        value = unquote_to_bytes(raw_value)
        pairs.append((key, value))
        if key.startswith(b"X-Amz-"):
            name = key.decode("utf-8", "replace")
            if name in auth_params and name in QUERY_AUTH_REQUIRED:
                raise incomplete(f"The query string has more than one {echo(name)} parameter.")
            auth_params.setdefault(name, value.decode("utf-8", "replace"))
    return pairs, auth_params


def _canonical_path(path: str) -> str:
    """Remove empty, "." and ".." segments, then URI-encode the result once more (non-S3 rule)."""
    kept: list[str] = []
    for segment in path.split("/"):
        if not segment or segment == ".":
            continue
        if segment == "..":
            if kept:
                kept.pop()
        else:
            kept.append(segment)
    normalised = "/".join(kept)
    if path.startswith("/"):
        normalised = "/" + normalised
    if kept and path.endswith("/"):
        normalised += "/"
    return quote(normalised or "/", safe="/~", encoding="utf-8", errors="surrogateescape")


def _canonical_query(pairs: list[tuple[bytes, bytes]], drop_signature: bool) -> str:
    encoded = sorted(
        (quote_from_bytes(key, safe="-_.~"), quote_from_bytes(value, safe="-_.~"))
        for key, value in pairs
        if not (drop_signature and key == b"X-Amz-Signature")
    )
    return "&".join(f"{key}={value}" for key, value in encoded)


def _canonical_headers(names: tuple[str, ...], headers: Mapping[str, list[str]]) -> str:
    lines: list[str] = []
    for name in names:
        values = headers.get(name)
        if values is None:
            raise mismatch(f"The signed header '{echo(name)}' is not in the request.")
        if sum(len(value) for value in values) > header_value_chars_max:
            raise incomplete(
                f"The signed header '{echo(name)}' is longer than "
                f"{header_value_chars_max} characters."
            )
        lines.append(f"{name}:{','.join(' '.join(value.split()) for value in values)}\n")
    return "".join(lines)


def _payload_hashes(
    headers: Mapping[str, list[str]],
    auth_params: Mapping[str, str],
    body: bytes,
    presigned: bool,
) -> tuple[str, ...]:
    """The payload hashes the client may have signed with; at most two, tried in order."""
    claimed_values = headers.get("x-amz-content-sha256")
    claimed = claimed_values[0].strip() if claimed_values else None
    if claimed is None and presigned:
        claimed = auth_params.get("X-Amz-Content-Sha256") or None
    if claimed is None:
        body_hash = hashlib.sha256(body).hexdigest()
        # A presigning client cannot know the body, so it signs UNSIGNED-PAYLOAD (botocore),
        # unless it hashed the (empty) body as the spec's non-S3 examples do.
        return (UNSIGNED_PAYLOAD, body_hash) if presigned and not body else (body_hash,)
    if claimed == UNSIGNED_PAYLOAD:
        if body:
            raise mismatch("UNSIGNED-PAYLOAD is only accepted for a request without a body.")
        return (claimed,)
    if not _SHA256_HEX_RE.fullmatch(claimed):
        raise mismatch(f"x-amz-content-sha256 '{echo(claimed)}' is not supported.")
    if claimed.lower() != hashlib.sha256(body).hexdigest():
        raise mismatch(
            "The provided 'x-amz-content-sha256' header does not match what was computed."
        )
    return (claimed,)


@lru_cache(maxsize=signing_keys_max)
def signing_key(secret: str, date_stamp: str, region: str, service: str) -> bytes:
    """SigV4's derived key for a day, region and service (cached: one derivation a day)."""
    key = hmac.new(f"AWS4{secret}".encode(), date_stamp.encode(), hashlib.sha256).digest()
    for part in (region, service, TERMINATOR):
        key = hmac.new(key, part.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()
    return key
