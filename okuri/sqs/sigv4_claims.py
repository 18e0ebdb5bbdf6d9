"""What a SigV4-signed request claims: who signed it, for which scope, when, and over which
headers, read from an `Authorization: AWS4-HMAC-SHA256 ...` header or from presigned `X-Amz-*`
query parameters, and whether that moment is within the accepted window.

Only shape and time are judged here; whether the signature is right is `okuri.sqs.sigv4`'s job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Final

from okuri.digits import whole_number
from okuri.sqs.sigv4_errors import (
    ECHO_CHARS_MAX,
    EXPIRED_CODE,
    EXPIRED_STATUS,
    MISSING_TOKEN_MESSAGE,
    AuthError,
    echo,
    incomplete,
    mismatch,
)

ALGORITHM: Final = "AWS4-HMAC-SHA256"
TERMINATOR: Final = "aws4_request"

# Bounds: past these a request is refused before any hashing. Generous for every real client.
authorization_chars_max: Final = 8 * 1024
signed_headers_max: Final = 64
scope_part_chars_max: Final = 128  # access key id, region, service in the credential scope
presign_expires_s_max: Final = 7 * 24 * 60 * 60  # the spec's limit for X-Amz-Expires

QUERY_AUTH_KEYS: Final = frozenset({"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Signature"})
QUERY_AUTH_REQUIRED: Final = (
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
)
_ISO_BASIC = "%Y%m%dT%H%M%SZ"
_ISO_BASIC_RE = re.compile(r"[0-9]{8}T[0-9]{6}Z")
_SIGNATURE_RE = re.compile(r"[0-9a-f]{64}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Claim:
    """What a request says about its signer and signature, checked for shape only."""

    access_key: str
    date_stamp: str  # YYYYMMDD, from the credential scope
    region: str
    amz_date: str  # the signed timestamp, ISO 8601 basic
    request_ms: int
    signed_names: tuple[str, ...]
    signature: str  # 64 lowercase hex digits
    expires_s: int  # presigned only; 0 for header auth


def header_claim(headers: Mapping[str, list[str]], service: str) -> Claim:
    values = headers.get("authorization")
    if not values or not values[0].strip():
        raise AuthError("MissingAuthenticationToken", 403, MISSING_TOKEN_MESSAGE)
    if len(values) > 1:
        raise incomplete("The request carries more than one Authorization header.")
    raw = values[0].strip()
    if len(raw) > authorization_chars_max:
        raise incomplete(
            f"The Authorization header is longer than {authorization_chars_max} characters."
        )
    algorithm, _, rest = raw.partition(" ")
    if algorithm != ALGORITHM:
        raise incomplete(f"Unsupported AWS 'algorithm': '{echo(algorithm)}'.")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        part = part.strip()
        if not part:
            continue
        name, eq, value = part.partition("=")
        if not eq:
            raise incomplete(
                f"'{echo(part)}' not a valid key=value pair (missing equal-sign) "
                "in Authorization header."
            )
        name = name.strip()
        if name in fields:
            raise incomplete(f"Authorization header has more than one '{echo(name)}' parameter.")
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
        raise incomplete(" ".join(missing))
    amz_date, request_ms = (
        _parse_amz_date(amz_dates[0]) if amz_dates else _parse_http_date((http_dates or [""])[0])
    )
    return _claim(
        fields["Credential"],
        fields["SignedHeaders"],
        fields["Signature"],
        amz_date,
        request_ms,
        0,
        service,
    )


def query_claim(params: Mapping[str, str], service: str) -> Claim:
    missing = [name for name in QUERY_AUTH_REQUIRED if not params.get(name)]
    if missing:
        raise incomplete(
            "Query-string authentication requires the parameters " + ", ".join(missing) + "."
        )
    if params["X-Amz-Algorithm"] != ALGORITHM:
        raise incomplete(f"Unsupported AWS 'algorithm': '{echo(params['X-Amz-Algorithm'])}'.")
    expires = params["X-Amz-Expires"]
    expires_s = whole_number(expires, digits_max=7)
    if expires_s is None:
        raise incomplete(f"X-Amz-Expires must be a whole number of seconds, not '{echo(expires)}'.")
    if not 1 <= expires_s <= presign_expires_s_max:
        raise incomplete(
            f"X-Amz-Expires must be between 1 and {presign_expires_s_max} seconds, not {expires_s}."
        )
    amz_date, request_ms = _parse_amz_date(params["X-Amz-Date"])
    return _claim(
        params["X-Amz-Credential"],
        params["X-Amz-SignedHeaders"],
        params["X-Amz-Signature"],
        amz_date,
        request_ms,
        expires_s,
        service,
    )


def _claim(
    credential: str,
    signed_headers: str,
    signature: str,
    amz_date: str,
    request_ms: int,
    expires_s: int,
    service: str,
) -> Claim:
    parts = credential.split("/")
    if len(parts) != 5 or not all(parts):
        raise incomplete(
            "Credential must have exactly 5 slash-delimited elements, "
            f"e.g. keyid/date/region/service/term, got '{echo(credential)}'."
        )
    access_key, date_stamp, region, scope_service, terminator = parts
    if max(len(access_key), len(region), len(scope_service)) > scope_part_chars_max:
        raise incomplete(
            f"Credential has an element longer than {scope_part_chars_max} characters."
        )
    if terminator != TERMINATOR:
        raise mismatch(
            f"Credential should be scoped with a valid terminator: '{TERMINATOR}', "
            f"not '{echo(terminator)}'."
        )
    if scope_service != service:
        raise mismatch(f"Credential should be scoped to correct service: '{service}'.")
    if date_stamp != amz_date[:8]:
        raise mismatch(
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from "
            f"HTTP: '{echo(date_stamp)}' != '{amz_date[:8]}', from '{amz_date}'."
        )
    names = signed_headers.split(";")
    if len(names) > signed_headers_max:
        raise incomplete(f"More than {signed_headers_max} SignedHeaders.")
    if not all(names):
        raise incomplete(f"SignedHeaders has an empty name: '{echo(signed_headers)}'.")
    signed_names = tuple(name.lower() for name in names)
    if "host" not in signed_names:
        raise incomplete(
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization."
        )
    if not _SIGNATURE_RE.fullmatch(signature):
        raise mismatch()
    return Claim(
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
        raise incomplete(
            f"Date must be in ISO-8601 'basic format'. Got '{echo(value)}'. "
            "See http://en.wikipedia.org/wiki/ISO_8601"
        ) from None
    return value, _ms(moment)


def _parse_http_date(value: str) -> tuple[str, int]:
    try:
        if len(value) > ECHO_CHARS_MAX:
            raise ValueError(value)
        moment = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        raise incomplete(f"The Date header is not an HTTP date: '{echo(value)}'.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    ms = _ms(moment)
    return _iso(ms), ms


def check_time(auth: Claim, now_ms: int, skew_s_max: int) -> None:
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


# --- moments ----------------------------------------------------------------------------------


def _ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _iso(ms: int) -> str:
    return (_EPOCH + timedelta(milliseconds=ms)).strftime(_ISO_BASIC)
