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

Error codes (query-protocol names; `okuri.sqs.errors` renders them for the JSON protocol):

- nothing to authenticate with: MissingAuthenticationToken, 403.
- Authorization header or X-Amz-* parameters malformed, incomplete or absurdly large:
  IncompleteSignature, 400. SQS's Common Errors page lists 400, and SES, behind the same
  front end, answers 400 with "Authorization header requires 'Signature' parameter." messages.
- unknown access key: InvalidClientTokenId, 403 (SQS's wording, seen in ex-aws/ex_aws#220).
- wrong signature, wrong service or terminator in the scope, scope date not the request's date,
  x-amz-content-sha256 not the body's hash: SignatureDoesNotMatch, 403. AWS's own "Credential
  should be scoped to correct service" is SignatureDoesNotMatch on query-protocol services
  (CloudFormation, timkay/aws#111; SQS for a bad region, boto/boto#3690). S3 answers a bad
  content hash with XAmzContentSHA256Mismatch, but S3 is the only service that trusts that
  header; elsewhere AWS hashes the body itself, so a lying header just fails the signature.
- request time outside `skew_s_max`, or a presigned URL past X-Amz-Expires: EXPIRED_CODE, which is
  SignatureDoesNotMatch, 403, with AWS's "Signature expired: 20130101T000000Z is now earlier than
  20130101T001500Z (20130101T003000Z - 15 min.)" and "Signature not yet current: ..." messages.
  Evidence that SQS itself answers this (not RequestTimeTooSkewed, which is S3's code, nor
  RequestExpired, which the generic Common Errors page lists): raw SQS ErrorResponses with
  <Code>SignatureDoesNotMatch</Code> and status 403 in aws/aws-sdk-php#642 and celery/kombu#1937
  (2024), and the same code from boto3 SendMessage/ReceiveMessage in celery/celery#8015 and
  terricain/aioboto3#326. Change EXPIRED_CODE/EXPIRED_STATUS to switch.

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
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Final
from urllib.parse import quote, quote_from_bytes, unquote_to_bytes

from okuri.errors import OkuriError

ALGORITHM: Final = "AWS4-HMAC-SHA256"
TERMINATOR: Final = "aws4_request"
UNSIGNED_PAYLOAD: Final = "UNSIGNED-PAYLOAD"

# The one place to change what an expired or not-yet-valid signature answers (see module doc).
EXPIRED_CODE: Final = "SignatureDoesNotMatch"
EXPIRED_STATUS: Final = 403

MISMATCH_MESSAGE: Final = (
    "The request signature we calculated does not match the signature you provided. "
    "Check your AWS Secret Access Key and signing method. "
    "Consult the service documentation for details."
)
INVALID_TOKEN_MESSAGE: Final = "The security token included in the request is invalid."
MISSING_TOKEN_MESSAGE: Final = (
    "The request must contain either a valid (registered) AWS access key ID or X.509 certificate."
)

# Bounds: past these a request is refused before any hashing. Generous for every real client.
authorization_chars_max: Final = 8 * 1024
signed_headers_max: Final = 64
header_value_chars_max: Final = 16 * 1024
scope_part_chars_max: Final = 128  # access key id, region, service in the credential scope
path_chars_max: Final = 8 * 1024
query_chars_max: Final = 4 * 1024 * 1024  # a legacy GET may carry a 1 MiB body, percent-encoded
query_params_max: Final = 2048
presign_expires_s_max: Final = 7 * 24 * 60 * 60  # the spec's limit for X-Amz-Expires
signing_keys_max: Final = 256  # cached (secret, date, region, service) -> signing key

_ISO_BASIC = "%Y%m%dT%H%M%SZ"
_ISO_BASIC_RE = re.compile(r"\d{8}T\d{6}Z")
_SIGNATURE_RE = re.compile(r"[0-9a-f]{64}")
_SHA256_HEX_RE = re.compile(r"[0-9a-fA-F]{64}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_QUERY_AUTH_KEYS = frozenset({"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"})
_QUERY_AUTH_REQUIRED = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
_ECHO_CHARS_MAX = 80  # how much of a client's input an error message repeats


@dataclass(frozen=True)
class SignedRequest:
    """A request as received, before any decoding."""

    method: str  # "POST" / "GET"
    path: str  # raw path, without the query: "/" or "/000000000000/jobs"
    query: str  # raw (still percent-encoded) query string, without "?"
    headers: Mapping[str, str]  # as received; names are case-insensitive, repeats allowed
    body: bytes


class AuthError(OkuriError):
    """The request is not correctly signed; `code` and `status` are what AWS would answer."""

    code: str
    status: int
    message: str

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.status = status
        self.message = message


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
        raise _incomplete(f"The request path is longer than {path_chars_max} characters.")
    if len(request.query) > query_chars_max:
        raise _incomplete(f"The query string is longer than {query_chars_max} characters.")
    headers = _group_headers(request.headers.items())
    pairs, auth_params = _parse_query(request.query)
    presigned = not _QUERY_AUTH_KEYS.isdisjoint(auth_params)
    if presigned:
        if "authorization" in headers:
            raise _incomplete(
                "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter "
                "or the Authorization header should be specified."
            )
        auth = _query_auth(auth_params, service)
    else:
        auth = _header_auth(headers, service)

    _check_time(auth, now_ms, skew_s_max)

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
    raise _mismatch()


# --- what the client claims --------------------------------------------------------------------


@dataclass(frozen=True)
class _Auth:
    access_key: str
    date_stamp: str  # YYYYMMDD, from the credential scope
    region: str
    amz_date: str  # the signed timestamp, ISO 8601 basic
    request_ms: int
    signed_names: tuple[str, ...]
    signature: str  # 64 lowercase hex digits
    expires_s: int  # presigned only; 0 for header auth


def _header_auth(headers: Mapping[str, list[str]], service: str) -> _Auth:
    values = headers.get("authorization")
    if not values or not values[0].strip():
        raise AuthError("MissingAuthenticationToken", 403, MISSING_TOKEN_MESSAGE)
    if len(values) > 1:
        raise _incomplete("The request carries more than one Authorization header.")
    raw = values[0].strip()
    if len(raw) > authorization_chars_max:
        raise _incomplete(
            f"The Authorization header is longer than {authorization_chars_max} characters."
        )
    algorithm, _, rest = raw.partition(" ")
    if algorithm != ALGORITHM:
        raise _incomplete(f"Unsupported AWS 'algorithm': '{_echo(algorithm)}'.")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        if not eq:
            raise _incomplete(
                f"'{_echo(part)}' not a valid key=value pair (missing equal-sign) "
                "in Authorization header."
            )
        name = name.strip()
        if name in fields:
            raise _incomplete(f"Authorization header has more than one '{_echo(name)}' parameter.")
        fields[name] = value.strip()
    missing = [
        f"Authorization header requires '{name}' parameter."
        for name in ("Credential", "Signature", "SignedHeaders")
        if not fields.get(name)
    ]
    amz_dates = headers.get("x-amz-date")
    http_dates = headers.get("date")
    if not amz_dates and not http_dates:
        missing.append(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
        )
    if missing:
        raise _incomplete(" ".join(missing))
    amz_date, request_ms = (
        _parse_amz_date(amz_dates[0]) if amz_dates else _parse_http_date((http_dates or [""])[0])
    )
    return _build_auth(
        fields["Credential"],
        fields["SignedHeaders"],
        fields["Signature"],
        amz_date,
        request_ms,
        0,
        service,
    )


def _query_auth(params: Mapping[str, str], service: str) -> _Auth:
    missing = [name for name in _QUERY_AUTH_REQUIRED if not params.get(name)]
    if missing:
        raise _incomplete(
            "Query-string authentication requires the parameters " + ", ".join(missing) + "."
        )
    if params["X-Amz-Algorithm"] != ALGORITHM:
        raise _incomplete(f"Unsupported AWS 'algorithm': '{_echo(params['X-Amz-Algorithm'])}'.")
    expires = params["X-Amz-Expires"]
    if not (expires.isascii() and expires.isdigit() and len(expires) <= 7):
        raise _incomplete(
            f"X-Amz-Expires must be a whole number of seconds, not '{_echo(expires)}'."
        )
    expires_s = int(expires)
    if not 1 <= expires_s <= presign_expires_s_max:
        raise _incomplete(
            f"X-Amz-Expires must be between 1 and {presign_expires_s_max} seconds, not {expires_s}."
        )
    amz_date, request_ms = _parse_amz_date(params["X-Amz-Date"])
    return _build_auth(
        params["X-Amz-Credential"],
        params["X-Amz-SignedHeaders"],
        params["X-Amz-Signature"],
        amz_date,
        request_ms,
        expires_s,
        service,
    )


def _build_auth(
    credential: str,
    signed_headers: str,
    signature: str,
    amz_date: str,
    request_ms: int,
    expires_s: int,
    service: str,
) -> _Auth:
    parts = credential.split("/")
    if len(parts) != 5 or not all(parts):
        raise _incomplete(
            "Credential must have exactly 5 slash-delimited elements, "
            f"e.g. keyid/date/region/service/term, got '{_echo(credential)}'."
        )
    access_key, date_stamp, region, scope_service, terminator = parts
    if max(len(access_key), len(region), len(scope_service)) > scope_part_chars_max:
        raise _incomplete(
            f"Credential has an element longer than {scope_part_chars_max} characters."
        )
    if terminator != TERMINATOR:
        raise _mismatch(
            f"Credential should be scoped with a valid terminator: '{TERMINATOR}', "
            f"not '{_echo(terminator)}'."
        )
    if scope_service != service:
        raise _mismatch(f"Credential should be scoped to correct service: '{service}'.")
    if date_stamp != amz_date[:8]:
        raise _mismatch(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from "
            f"HTTP: '{_echo(date_stamp)}' != '{amz_date[:8]}', from '{amz_date}'."
        )
    names = signed_headers.split(";")
    if len(names) > signed_headers_max:
        raise _incomplete(f"More than {signed_headers_max} SignedHeaders.")
    if not all(names):
        raise _incomplete(f"SignedHeaders has an empty name: '{_echo(signed_headers)}'.")
    signed_names = tuple(name.lower() for name in names)
    if "host" not in signed_names:
        raise _incomplete(
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."
        )
    if not _SIGNATURE_RE.fullmatch(signature):
        raise _mismatch()
    return _Auth(
        access_key=access_key,
        date_stamp=date_stamp,
        region=region,
        amz_date=amz_date,
        request_ms=request_ms,
        signed_names=signed_names,
        signature=signature,
        expires_s=expires_s,
    )


@lru_cache(maxsize=64)  # a client signs with one date per second: parse each once
def _parse_amz_date(value: str) -> tuple[str, int]:
    value = value.strip()
    try:
        if not _ISO_BASIC_RE.fullmatch(value):
            raise ValueError(value)
        moment = datetime.strptime(value, _ISO_BASIC).replace(tzinfo=UTC)
    except ValueError:
        raise _incomplete(
            f"Date must be in ISO-8601 'basic format'. Got '{_echo(value)}'. "
            "See http://en.wikipedia.org/wiki/ISO_8601"
        ) from None
    return value, _ms(moment)


def _parse_http_date(value: str) -> tuple[str, int]:
    try:
        if len(value) > _ECHO_CHARS_MAX:
            raise ValueError(value)
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        raise _incomplete(f"The Date header is not an HTTP date: '{_echo(value)}'.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = _ms(moment)
    return _iso(ms), ms


def _check_time(auth: _Auth, now_ms: int, skew_s_max: int) -> None:
    skew_ms = skew_s_max * 1000
    window = f"{skew_s_max // 60} min." if skew_s_max % 60 == 0 else f"{skew_s_max} sec."
    if auth.request_ms > now_ms + skew_ms:
        raise AuthError(
            EXPIRED_CODE,
            EXPIRED_STATUS,
            f"Signature not yet current: {auth.amz_date} is still later than "
            f"{_iso(now_ms + skew_ms)} ({_iso(now_ms)} + {window})",
        )
    if auth.expires_s:
        expiry_ms = auth.request_ms + auth.expires_s * 1000
        if now_ms > expiry_ms:
            raise AuthError(
                EXPIRED_CODE,
                EXPIRED_STATUS,
                f"Signature expired: {_iso(expiry_ms)} is now earlier than {_iso(now_ms)} "
                f"({auth.amz_date} + X-Amz-Expires {auth.expires_s} sec.)",
            )
    elif auth.request_ms < now_ms - skew_ms:
        raise AuthError(
            EXPIRED_CODE,
            EXPIRED_STATUS,
            f"Signature expired: {auth.amz_date} is now earlier than "
            f"{_iso(now_ms - skew_ms)} ({_iso(now_ms)} - {window})",
        )


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
            raise _incomplete(f"The query string has more than {query_params_max} parameters.")
        raw_key, _, raw_value = piece.replace(b"+", b" ").partition(b"=")
        key = unquote_to_bytes(raw_key)
        value = unquote_to_bytes(raw_value)
        pairs.append((key, value))
        if key.startswith(b"X-Amz-"):
            name = key.decode("utf-8", "replace")
            if name in auth_params and name in _QUERY_AUTH_REQUIRED:
                raise _incomplete(f"The query string has more than one {_echo(name)} parameter.")
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
            raise _mismatch(f"The signed header '{_echo(name)}' is not in the request.")
        if sum(len(value) for value in values) > header_value_chars_max:
            raise _incomplete(
                f"The signed header '{_echo(name)}' is longer than "
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
            raise _mismatch("UNSIGNED-PAYLOAD is only accepted for a request without a body.")
        return (claimed,)
    if not _SHA256_HEX_RE.fullmatch(claimed):
        raise _mismatch(f"x-amz-content-sha256 '{_echo(claimed)}' is not supported.")
    if claimed.lower() != hashlib.sha256(body).hexdigest():
        raise _mismatch(
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


# --- small helpers ------------------------------------------------------------------------------


def _incomplete(message: str) -> AuthError:
    return AuthError("IncompleteSignature", 400, message)


def _mismatch(message: str = MISMATCH_MESSAGE) -> AuthError:
    return AuthError("SignatureDoesNotMatch", 403, message)


def _echo(text: str) -> str:
    """A client's input, clipped, for repeating in an error message."""
    return text if len(text) <= _ECHO_CHARS_MAX else text[:_ECHO_CHARS_MAX] + "..."


def _ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _iso(ms: int) -> str:
    return (_EPOCH + timedelta(milliseconds=ms)).strftime(_ISO_BASIC)
