"""SigV4 verification against requests signed by botocore, the reference client.

Every request here is signed by botocore (SigV4Auth, SigV4QueryAuth, or a real boto3 client whose
send is intercepted), with botocore's clock pinned, then handed to `verify` the way the HTTP layer
receives it: raw path, raw query, a case-insensitive multi-valued header map with Host added as
the HTTP client would, and the body bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

import boto3
import botocore.auth
import pytest
from botocore.auth import SigV4Auth, SigV4QueryAuth
from botocore.awsrequest import AWSRequest, AWSResponse
from botocore.config import Config
from botocore.credentials import Credentials
from multidict import CIMultiDict

from okuri.sqs import sigv4, sigv4_claims
from okuri.sqs.sigv4 import SignedRequest, verify
from okuri.sqs.sigv4_errors import (
    EXPIRED_CODE,
    EXPIRED_STATUS,
    INVALID_TOKEN_MESSAGE,
    MISMATCH_MESSAGE,
    AuthError,
)

SIGNED_AT = datetime(2026, 1, 1, 12, 0, 0)  # naive UTC, as botocore's clock hands it out
NOW_MS = int(SIGNED_AT.replace(tzinfo=UTC).timestamp() * 1000)
MINUTE_MS = 60_000
KEY_ID = "AKIDEXAMPLE"
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SECRETS = {KEY_ID: SECRET, "AKIDOTHER": "another-secret"}
ENDPOINT = "https://sqs.us-east-1.amazonaws.com"
QUEUE_URL = f"{ENDPOINT}/000000000000/jobs"
JSON_HEADERS = {
    "Content-Type": "application/x-amz-json-1.0",
    "X-Amz-Target": "AmazonSQS.SendMessage",
}
JSON_BODY = json.dumps({"QueueUrl": QUEUE_URL, "MessageBody": "hello"}).encode()
FORM_HEADERS = {"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"}
FORM_BODY = b"Action=SendMessage&MessageBody=hello%20world&Version=2012-11-05"


@pytest.fixture(autouse=True)
def botocore_signs_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Pin botocore's signing clock to SIGNED_AT (tests move it with `sign_at`)."""
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: SIGNED_AT)
    yield


def sign_at(monkeypatch: pytest.MonkeyPatch, moment: datetime) -> None:
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: moment)


def received(request: AWSRequest) -> SignedRequest:
    """What the server sees of a botocore request: Host is added by the HTTP client."""
    prepared = request.prepare()
    parts = urlsplit(prepared.url)
    # The AWSRequest's own headers, not the prepared ones: only those keep a repeated header.
    headers: CIMultiDict[str] = CIMultiDict(request.headers.items())
    if "host" not in headers:
        headers["Host"] = parts.netloc
    body = prepared.body or b""
    return SignedRequest(
        method=prepared.method,
        path=parts.path or "/",
        query=parts.query,
        headers=headers,
        body=body.encode() if isinstance(body, str) else body,
    )


def sign(
    method: str = "POST",
    url: str = f"{ENDPOINT}/",
    *,
    headers: dict[str, str] | None = None,
    data: bytes = b"",
    params: dict[str, str] | None = None,
    service: str = "sqs",
    region: str = "us-east-1",
    key_id: str = KEY_ID,
    secret: str = SECRET,
) -> SignedRequest:
    request = AWSRequest(
        method=method, url=url, headers=dict(headers or {}), data=data, params=params or {}
    )
    SigV4Auth(Credentials(key_id, secret), service, region).add_auth(request)
    return received(request)


def presign(
    url: str = f"{QUEUE_URL}?Action=ReceiveMessage&Version=2012-11-05",
    *,
    expires_s: int = 300,
    region: str = "us-east-1",
) -> SignedRequest:
    request = AWSRequest(method="GET", url=url)
    SigV4QueryAuth(Credentials(KEY_ID, SECRET), "sqs", region, expires=expires_s).add_auth(request)
    return received(request)


def json_post(**kwargs: Any) -> SignedRequest:
    return sign(headers=JSON_HEADERS, data=JSON_BODY, **kwargs)


def with_headers(request: SignedRequest, **changes: str | None) -> SignedRequest:
    """A copy with headers replaced (value) or removed (None); names as in HTTP, `_` for `-`."""
    headers: CIMultiDict[str] = CIMultiDict(request.headers)
    for name, value in changes.items():
        header = name.replace("_", "-")
        headers.popall(header, None)
        if value is not None:
            headers[header] = value
    return dataclasses.replace(request, headers=headers)


def accepted(request: SignedRequest, now_ms: int = NOW_MS, **kwargs: Any) -> str:
    return verify(request, SECRETS.get, now_ms, **kwargs)


def rejected(request: SignedRequest, code: str, now_ms: int = NOW_MS, **kwargs: Any) -> AuthError:
    with pytest.raises(AuthError) as info:
        verify(request, SECRETS.get, now_ms, **kwargs)
    assert info.value.code == code, info.value.message
    return info.value


# --- requests real clients send are accepted -------------------------------------------------


def test_json_post_signed_by_botocore_is_accepted() -> None:
    request = json_post()
    assert request.headers["X-Amz-Date"] == "20260101T120000Z"
    assert accepted(request) == KEY_ID


def test_form_post_signed_by_botocore_is_accepted() -> None:
    request = sign(url=QUEUE_URL, headers=FORM_HEADERS, data=FORM_BODY)
    assert accepted(request) == KEY_ID


def test_presigned_get_is_accepted_until_it_expires() -> None:
    request = presign(expires_s=300)
    assert "X-Amz-Signature=" in request.query
    assert "Authorization" not in request.headers
    assert accepted(request) == KEY_ID
    assert accepted(request, NOW_MS + 300_000) == KEY_ID
    err = rejected(request, EXPIRED_CODE, NOW_MS + 301_000)
    assert err.status == EXPIRED_STATUS
    assert err.message.startswith("Signature expired: 20260101T120500Z is now earlier than")


def test_presigned_form_post_moves_into_the_query_and_is_accepted() -> None:
    form = {"Action": "SendMessage", "MessageBody": "hello world", "Version": "2012-11-05"}
    request = AWSRequest(method="POST", url=QUEUE_URL, headers=FORM_HEADERS, data=form)
    SigV4QueryAuth(Credentials(KEY_ID, SECRET), "sqs", "us-east-1", expires=60).add_auth(request)
    signed = received(request)
    assert signed.body == b""
    assert "MessageBody=hello%20world" in signed.query
    assert accepted(signed) == KEY_ID


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._body


def test_boto3_client_in_any_region_is_accepted() -> None:
    """The full SDK path: boto3 builds and signs the request; it is caught before it is sent."""
    sent: list[SignedRequest] = []

    def capture(request: Any, **_: Any) -> AWSResponse:
        parts = urlsplit(request.url)
        headers: CIMultiDict[str] = CIMultiDict(
            (name, value.decode() if isinstance(value, bytes) else value)
            for name, value in request.headers.items()
        )
        headers["Host"] = parts.netloc
        body = request.body or b""
        sent.append(SignedRequest(request.method, parts.path or "/", parts.query, headers, body))
        reply = json.dumps({"QueueUrl": "http://localhost:9324/000000000000/jobs"}).encode()
        return AWSResponse(request.url, 200, {"x-amzn-RequestId": "r"}, _Raw(reply))

    client = boto3.client(
        "sqs",
        region_name="ap-southeast-2",
        endpoint_url="http://localhost:9324",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=SECRET,
        config=Config(retries={"max_attempts": 1}),
    )
    client.meta.events.register("before-send.sqs", capture)
    client.get_queue_url(QueueName="jobs")
    client.send_message(QueueUrl="http://localhost:9324/000000000000/jobs", MessageBody="x ✓")

    assert len(sent) == 2
    for request in sent:
        assert "/ap-southeast-2/sqs/aws4_request" in request.headers["Authorization"]
        assert accepted(request) == KEY_ID
        rejected(dataclasses.replace(request, body=request.body + b" "), "SignatureDoesNotMatch")


def test_date_header_instead_of_x_amz_date_is_accepted() -> None:
    request = sign(headers={**JSON_HEADERS, "Date": "placeholder"}, data=JSON_BODY)
    assert "X-Amz-Date" not in request.headers
    assert request.headers["Date"] == "Thu, 01 Jan 2026 12:00:00 -0000"
    assert accepted(request) == KEY_ID
    rejected(with_headers(request, Date="Thu, 01 Jan 2026 12:00:01 -0000"), "SignatureDoesNotMatch")


def test_unsigned_extra_header_is_ignored() -> None:
    request = with_headers(json_post(), X_Forwarded_For="10.0.0.1", User_Agent="other/1.0")
    assert accepted(request) == KEY_ID


def test_header_names_are_case_insensitive_and_values_trimmed() -> None:
    request = sign(headers={**JSON_HEADERS, "X-Custom": "  a    b  "}, data=JSON_BODY)
    shouted: CIMultiDict[str] = CIMultiDict(
        (name.upper(), value.strip()) for name, value in request.headers.items()
    )
    assert accepted(dataclasses.replace(request, headers=shouted)) == KEY_ID
    assert accepted(dataclasses.replace(request, headers=dict(shouted))) == KEY_ID


def test_repeated_signed_header_is_joined_with_commas() -> None:
    raw = AWSRequest(method="POST", url=f"{ENDPOINT}/", headers=JSON_HEADERS, data=JSON_BODY)
    raw.headers["X-Repeat"] = "one"
    raw.headers["X-Repeat"] = "two"  # HTTPHeaders appends: the header is sent twice
    SigV4Auth(Credentials(KEY_ID, SECRET), "sqs", "us-east-1").add_auth(raw)
    request = received(raw)
    assert list(request.headers.getall("X-Repeat")) == ["one", "two"]  # type: ignore[attr-defined]
    assert accepted(request) == KEY_ID
    rejected(with_headers(request, X_Repeat="one,two,three"), "SignatureDoesNotMatch")


def test_verify_honours_the_service_argument() -> None:
    request = json_post(service="sns")
    assert accepted(request, service="sns") == KEY_ID
    err = rejected(request, "SignatureDoesNotMatch")
    assert "correct service: 'sqs'" in err.message


# --- paths and queries that need encoding ----------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "",
        "/",
        "/000000000000/my-queue",
        "/000000000000/my%20queue",
        "/000000000000/%E3%82%AD%E3%83%A5%E3%83%BC",  # キュー
        "/000000000000/a!$'()*+,;=:@b~c",
        "/000000000000/pct%25literal",
        "/a/./b//c/../d/",
        "/../x/..",
    ],
)
def test_path_needing_encoding_is_accepted_and_cannot_be_changed(path: str) -> None:
    request = json_post(url=f"{ENDPOINT}{path}")
    assert accepted(request) == KEY_ID
    rejected(dataclasses.replace(request, path=request.path + "x"), "SignatureDoesNotMatch")


def test_path_is_encoded_twice_so_a_decoded_path_does_not_verify() -> None:
    request = json_post(url=f"{ENDPOINT}/000000000000/my%20queue")
    decoded = dataclasses.replace(request, path="/000000000000/my queue")
    rejected(decoded, "SignatureDoesNotMatch")


SPECIAL_PARAMS = {
    "Action": "SendMessage",
    "MessageBody": "a b+c&d=e/f?g#h%i~j*k'(l)!m",
    "Unicode": "キュー ✓",
    "Empty": "",
    "x~y.z_w-v": "1",
    "Attribute.1.Name": "Name",
}


def test_query_with_special_characters_is_accepted() -> None:
    request = sign("GET", QUEUE_URL, params=SPECIAL_PARAMS)
    assert "+" in request.query  # botocore sends spaces as "+" while signing "%20"
    assert accepted(request) == KEY_ID


def test_equivalent_query_encodings_verify_and_a_changed_value_does_not() -> None:
    request = sign("GET", QUEUE_URL, params=SPECIAL_PARAMS)
    assert "%2B" in request.query
    lowercase_hex = request.query.replace("%2B", "%2b").replace("%2F", "%2f")
    spelled_out = request.query.replace("+", "%20").replace("x~y", "x%7Ey")
    reordered = "&".join(reversed(request.query.split("&")))
    for query in (lowercase_hex, spelled_out, reordered):
        assert accepted(dataclasses.replace(request, query=query)) == KEY_ID
    changed = request.query.replace("Action=SendMessage", "Action=DeleteQueue")
    rejected(dataclasses.replace(request, query=changed), "SignatureDoesNotMatch")
    plus_is_not_space = request.query.replace("+", "%2B")
    rejected(dataclasses.replace(request, query=plus_is_not_space), "SignatureDoesNotMatch")


def test_presigned_query_with_special_characters_is_accepted_and_cannot_be_changed() -> None:
    url = f"{QUEUE_URL}?Action=SendMessage&MessageBody=" + quote("a b+c&d=é", safe="")
    request = presign(url)
    assert accepted(request) == KEY_ID
    changed = request.query.replace("SendMessage", "SendMessagf")
    rejected(dataclasses.replace(request, query=changed), "SignatureDoesNotMatch")


# --- tampering -------------------------------------------------------------------------------


def test_tampered_body_is_rejected() -> None:
    request = json_post()
    err = rejected(
        dataclasses.replace(request, body=JSON_BODY.replace(b"hello", b"hellO")),
        "SignatureDoesNotMatch",
    )
    assert err.status == 403
    assert err.message == MISMATCH_MESSAGE


def test_tampered_signed_header_is_rejected() -> None:
    request = with_headers(json_post(), X_Amz_Target="AmazonSQS.DeleteQueue")
    rejected(request, "SignatureDoesNotMatch")


def test_tampered_method_is_rejected() -> None:
    rejected(dataclasses.replace(json_post(), method="PUT"), "SignatureDoesNotMatch")


def test_wrong_secret_is_rejected() -> None:
    rejected(json_post(secret="not-the-secret"), "SignatureDoesNotMatch")


def test_rotated_secret_takes_effect_at_once() -> None:
    request = json_post()
    assert accepted(request) == KEY_ID
    with pytest.raises(AuthError) as info:
        verify(request, {KEY_ID: "rotated"}.get, NOW_MS)
    assert info.value.code == "SignatureDoesNotMatch"


def test_another_key_with_its_own_secret_is_accepted() -> None:
    assert accepted(json_post(key_id="AKIDOTHER", secret="another-secret")) == "AKIDOTHER"
    rejected(json_post(key_id="AKIDOTHER", secret=SECRET), "SignatureDoesNotMatch")


def test_unknown_key_is_an_invalid_client_token() -> None:
    err = rejected(json_post(key_id="AKIDUNKNOWN"), "InvalidClientTokenId")
    assert err.status == 403
    assert err.message == INVALID_TOKEN_MESSAGE


def test_missing_signed_header_is_rejected_and_named() -> None:
    err = rejected(with_headers(json_post(), X_Amz_Target=None), "SignatureDoesNotMatch")
    assert "'x-amz-target' is not in the request" in err.message


def test_payload_hash_header_must_match_the_body() -> None:
    digest = hashlib.sha256(JSON_BODY).hexdigest()
    good = sign(headers={**JSON_HEADERS, "X-Amz-Content-SHA256": digest}, data=JSON_BODY)
    assert accepted(good) == KEY_ID
    lying = sign(headers={**JSON_HEADERS, "X-Amz-Content-SHA256": "0" * 64}, data=JSON_BODY)
    err = rejected(lying, "SignatureDoesNotMatch")
    assert "x-amz-content-sha256" in err.message
    rejected(dataclasses.replace(good, body=b"{}"), "SignatureDoesNotMatch")


def test_unsigned_payload_is_accepted_only_without_a_body() -> None:
    headers = {**JSON_HEADERS, "X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD"}
    assert accepted(sign(headers=headers)) == KEY_ID
    err = rejected(sign(headers=headers, data=JSON_BODY), "SignatureDoesNotMatch")
    assert "UNSIGNED-PAYLOAD" in err.message


def test_streaming_payload_is_not_supported() -> None:
    headers = {**JSON_HEADERS, "X-Amz-Content-SHA256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}
    rejected(sign(headers=headers, data=JSON_BODY), "SignatureDoesNotMatch")


def test_presigned_url_cannot_carry_an_unsigned_body() -> None:
    request = presign()
    rejected(
        dataclasses.replace(request, method="GET", body=b"Action=DeleteQueue"),
        "SignatureDoesNotMatch",
    )


def test_presigned_url_with_a_changed_or_missing_signature_is_rejected() -> None:
    request = presign()
    signature = request.query.rsplit("X-Amz-Signature=", 1)[1]
    flipped = ("1" if signature[0] == "0" else "0") + signature[1:]
    rejected(
        dataclasses.replace(request, query=request.query.replace(signature, flipped)),
        "SignatureDoesNotMatch",
    )
    unsigned = request.query.replace(f"&X-Amz-Signature={signature}", "")
    err = rejected(dataclasses.replace(request, query=unsigned), "IncompleteSignature")
    assert "X-Amz-Signature" in err.message


# --- malformed or missing authentication -----------------------------------------------------


def test_no_authentication_at_all_is_a_missing_token() -> None:
    err = rejected(with_headers(json_post(), Authorization=None), "MissingAuthenticationToken")
    assert err.status == 403
    rejected(with_headers(json_post(), Authorization="  "), "MissingAuthenticationToken")


def test_missing_date_is_an_incomplete_signature() -> None:
    err = rejected(with_headers(json_post(), X_Amz_Date=None), "IncompleteSignature")
    assert err.status == 400
    assert "'X-Amz-Date' or a 'Date' header" in err.message


@pytest.mark.parametrize("value", ["2026-01-01T12:00:00Z", "20260101T120000", "20261301T120000Z"])
def test_malformed_x_amz_date_is_an_incomplete_signature(value: str) -> None:
    err = rejected(with_headers(json_post(), X_Amz_Date=value), "IncompleteSignature")
    assert "ISO-8601" in err.message


def test_every_truncation_of_the_authorization_header_is_rejected() -> None:
    request = json_post()
    authorization = request.headers["Authorization"]
    codes = set()
    for end in range(len(authorization)):
        cut = with_headers(request, Authorization=authorization[:end])
        with pytest.raises(AuthError) as info:
            accepted(cut)
        codes.add(info.value.code)
    assert codes == {"MissingAuthenticationToken", "IncompleteSignature", "SignatureDoesNotMatch"}


@pytest.mark.parametrize(
    ("cut_after", "named"),
    [
        ("AWS4-HMAC-SHA256 ", ["'Credential'", "'SignedHeaders'", "'Signature'"]),
        ("/aws4_request, ", ["'SignedHeaders'", "'Signature'"]),
        ("x-amz-target, ", ["'Signature'"]),
    ],
)
def test_truncated_authorization_names_what_is_missing(cut_after: str, named: list[str]) -> None:
    request = json_post()
    authorization = request.headers["Authorization"]
    truncated = authorization[: authorization.index(cut_after) + len(cut_after)]
    err = rejected(with_headers(request, Authorization=truncated), "IncompleteSignature")
    for name in named:
        assert name in err.message
    for name in {"'Credential'", "'SignedHeaders'", "'Signature'"} - set(named):
        assert f"requires {name}" not in err.message


def test_wrong_algorithm_is_an_incomplete_signature() -> None:
    request = json_post()
    authorization = request.headers["Authorization"].replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA512")
    err = rejected(with_headers(request, Authorization=authorization), "IncompleteSignature")
    assert "AWS4-HMAC-SHA512" in err.message
    rejected(
        with_headers(request, Authorization="AWS AKIDEXAMPLE:c2lnbmF0dXJl"), "IncompleteSignature"
    )


def test_component_without_equals_sign_is_an_incomplete_signature() -> None:
    request = json_post()
    authorization = request.headers["Authorization"].replace("Signature=", "Signature ")
    err = rejected(with_headers(request, Authorization=authorization), "IncompleteSignature")
    assert "missing equal-sign" in err.message


@pytest.mark.parametrize(
    "credential",
    [
        "AKIDEXAMPLE/20260101/us-east-1/sqs",
        "AKIDEXAMPLE/20260101/us-east-1/sqs/aws4_request/extra",
        "AKIDEXAMPLE//us-east-1/sqs/aws4_request",
        "AKIDEXAMPLE",
    ],
)
def test_credential_of_the_wrong_shape_is_an_incomplete_signature(credential: str) -> None:
    request = json_post()
    authorization = request.headers["Authorization"]
    original = authorization.split("Credential=", 1)[1].split(",", 1)[0]
    changed = authorization.replace(original, credential)
    err = rejected(with_headers(request, Authorization=changed), "IncompleteSignature")
    assert "5 slash-delimited elements" in err.message


def test_wrong_service_in_scope_is_rejected() -> None:
    err = rejected(json_post(service="sns"), "SignatureDoesNotMatch")
    assert err.status == 403
    assert err.message == "Credential should be scoped to correct service: 'sqs'."


def test_wrong_terminator_in_scope_is_rejected() -> None:
    request = json_post()
    authorization = request.headers["Authorization"].replace("/aws4_request", "/aws5_request")
    err = rejected(with_headers(request, Authorization=authorization), "SignatureDoesNotMatch")
    assert "terminator" in err.message


def test_any_region_in_scope_is_accepted_but_cannot_be_swapped() -> None:
    for region in ("us-east-1", "eu-central-2", "local", "elasticmq"):
        assert accepted(json_post(region=region)) == KEY_ID
    request = json_post(region="eu-west-1")
    authorization = request.headers["Authorization"].replace("/eu-west-1/", "/eu-west-2/")
    rejected(with_headers(request, Authorization=authorization), "SignatureDoesNotMatch")


def test_scope_date_must_be_the_request_date(monkeypatch: pytest.MonkeyPatch) -> None:
    sign_at(monkeypatch, datetime(2026, 1, 1, 23, 59, 0))
    request = json_post()
    next_day_ms = int(datetime(2026, 1, 2, 0, 1, 0, tzinfo=UTC).timestamp() * 1000)
    moved = with_headers(request, X_Amz_Date="20260102T000100Z")
    err = rejected(moved, "SignatureDoesNotMatch", next_day_ms)
    assert "Date in Credential scope does not match" in err.message
    assert "'20260101' != '20260102'" in err.message


def test_host_must_be_signed() -> None:
    request = json_post()
    authorization = request.headers["Authorization"].replace("host;", "")
    assert "host" not in authorization.split("SignedHeaders=", 1)[1].split(",", 1)[0]
    err = rejected(with_headers(request, Authorization=authorization), "IncompleteSignature")
    assert "'Host'" in err.message


def test_both_auth_mechanisms_at_once_are_rejected() -> None:
    request = presign()
    both = with_headers(request, Authorization=json_post().headers["Authorization"])
    err = rejected(both, "IncompleteSignature")
    assert "Only one auth mechanism" in err.message


def test_presigned_expiry_beyond_seven_days_is_rejected() -> None:
    rejected(presign(expires_s=7 * 24 * 3600 + 1), "IncompleteSignature")
    assert accepted(presign(expires_s=7 * 24 * 3600), NOW_MS + 7 * 24 * 3600 * 1000) == KEY_ID


# --- time ------------------------------------------------------------------------------------


def test_signature_sixteen_minutes_old_is_expired_as_sqs_says_it() -> None:
    err = rejected(json_post(), EXPIRED_CODE, NOW_MS + 16 * MINUTE_MS)
    # What SQS itself answers (see okuri.sqs.sigv4), not S3's RequestTimeTooSkewed.
    assert err.code == "SignatureDoesNotMatch"
    assert err.status == EXPIRED_STATUS == 403
    assert err.message == (
        "Signature expired: 20260101T120000Z is now earlier than 20260101T120100Z "
        "(20260101T121600Z - 15 min.)"
    )


def test_signature_sixteen_minutes_ahead_is_not_yet_current() -> None:
    err = rejected(json_post(), EXPIRED_CODE, NOW_MS - 16 * MINUTE_MS)
    assert err.status == EXPIRED_STATUS
    assert err.message == (
        "Signature not yet current: 20260101T120000Z is still later than 20260101T115900Z "
        "(20260101T114400Z + 15 min.)"
    )


def test_fifteen_minutes_either_way_is_still_accepted() -> None:
    request = json_post()
    assert accepted(request, NOW_MS + 15 * MINUTE_MS) == KEY_ID
    assert accepted(request, NOW_MS - 15 * MINUTE_MS) == KEY_ID
    rejected(request, EXPIRED_CODE, NOW_MS + 15 * MINUTE_MS + 1)
    rejected(request, EXPIRED_CODE, NOW_MS - 15 * MINUTE_MS - 1)


def test_skew_window_is_a_parameter() -> None:
    request = json_post()
    assert accepted(request, NOW_MS + 60_000, skew_s_max=60) == KEY_ID
    err = rejected(request, EXPIRED_CODE, NOW_MS + 61_000, skew_s_max=60)
    assert "- 1 min.)" in err.message


def test_presigned_url_dated_in_the_future_is_not_yet_current() -> None:
    err = rejected(presign(), EXPIRED_CODE, NOW_MS - 16 * MINUTE_MS)
    assert err.message.startswith("Signature not yet current")


def test_expired_request_is_refused_before_the_key_is_looked_up() -> None:
    looked_up: list[str] = []

    def secrets(key_id: str) -> str | None:
        looked_up.append(key_id)
        return SECRET

    with pytest.raises(AuthError):
        verify(json_post(), secrets, NOW_MS + 20 * MINUTE_MS)
    assert looked_up == []
    assert verify(json_post(), secrets, NOW_MS) == KEY_ID
    assert looked_up == [KEY_ID]


# --- bounds ----------------------------------------------------------------------------------


def test_absurdly_long_authorization_is_refused() -> None:
    request = json_post()
    padded = (
        request.headers["Authorization"] + ", Padding=" + "x" * sigv4_claims.authorization_chars_max
    )
    err = rejected(with_headers(request, Authorization=padded), "IncompleteSignature")
    assert "longer than" in err.message


def test_absurdly_long_signed_header_is_refused() -> None:
    big = "x" * (sigv4.header_value_chars_max + 1)
    err = rejected(
        sign(headers={**JSON_HEADERS, "X-Big": big}, data=JSON_BODY), "IncompleteSignature"
    )
    assert "x-big" in err.message


def test_too_many_signed_headers_are_refused() -> None:
    many = {f"X-H{i}": "v" for i in range(sigv4_claims.signed_headers_max)}
    rejected(sign(headers={**JSON_HEADERS, **many}, data=JSON_BODY), "IncompleteSignature")


def test_absurd_paths_and_queries_are_refused() -> None:
    request = json_post()
    long_path = "/" + "a" * sigv4.path_chars_max
    rejected(dataclasses.replace(request, path=long_path), "IncompleteSignature")
    many_params = "&".join(f"p{i}=1" for i in range(sigv4.query_params_max + 1))
    rejected(dataclasses.replace(request, query=many_params), "IncompleteSignature")
    long_query = "p=" + "a" * sigv4.query_chars_max
    rejected(dataclasses.replace(request, query=long_query), "IncompleteSignature")


def test_signing_key_cache_stays_bounded() -> None:
    sigv4.signing_key.cache_clear()
    for i in range(sigv4.signing_keys_max + 20):
        assert accepted(json_post(region=f"region-{i}")) == KEY_ID
    info = sigv4.signing_key.cache_info()
    assert info.maxsize == sigv4.signing_keys_max
    assert info.currsize == sigv4.signing_keys_max
    assert accepted(json_post(region="region-0")) == KEY_ID  # evicted, recomputed, still right


# --- property: random bodies, paths, queries, regions and times ------------------------------

PATH_ALPHABET = "abcXYZ019-_.~ !$&'()*+,;=:@%?#/éキ🙂"
QUERY_ALPHABET = "abcXYZ019-_.~ !$&'()*+,;=:@%?#/=é🙂\t"
SUB_DELIMS = "!$&'()*+,;=:@"


def random_text(rng: random.Random, alphabet: str, chars_max: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, chars_max)))


def random_path(rng: random.Random) -> str:
    segments = []
    for _ in range(rng.randint(0, 5)):
        roll = rng.random()
        if roll < 0.1:
            segments.append(rng.choice(["", ".", ".."]))
        else:
            safe = "".join(c for c in SUB_DELIMS if rng.random() < 0.5)
            segments.append(quote(random_text(rng, PATH_ALPHABET, 12), safe=safe))
    return "/" + "/".join(segments)


@pytest.mark.parametrize("seed", range(4))
def test_random_requests_verify_and_any_change_is_caught(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    for _ in range(60):
        moment = datetime(2020, 1, 1) + timedelta(seconds=rng.randrange(10 * 365 * 86400))
        sign_at(monkeypatch, moment)
        moment_ms = int(moment.replace(tzinfo=UTC).timestamp() * 1000)
        now_ms = moment_ms + rng.randint(-900_000, 900_000)
        region = "".join(rng.choice("abcdefghij0123456789-") for _ in range(rng.randint(1, 20)))
        url = f"http://localhost:9324{random_path(rng)}"
        params = {
            random_text(rng, QUERY_ALPHABET, 6) or "k": random_text(rng, QUERY_ALPHABET, 10)
            for _ in range(rng.randint(0, 4))
        }
        if rng.random() < 0.3:
            request = presign(
                url + ("?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in params.items())),
                expires_s=rng.randint(900, 3600),
                region=region,
            )
            assert request.body == b""
        else:
            body = rng.randbytes(rng.randint(0, 512))
            request = sign(
                rng.choice(["POST", "GET"]), url, data=body, params=params, region=region
            )
            assert request.body == body
        assert accepted(request, now_ms) == KEY_ID, (seed, url, params)

        if request.body:
            at = rng.randrange(len(request.body))
            flipped = bytearray(request.body)
            flipped[at] ^= 1 << rng.randrange(8)
            changed = dataclasses.replace(request, body=bytes(flipped))
        elif rng.random() < 0.5:
            changed = dataclasses.replace(request, path=request.path + "z")
        else:
            changed = dataclasses.replace(request, query=request.query + "&extra=1")
        rejected(changed, "SignatureDoesNotMatch", now_ms)


def test_undecodable_bytes_in_headers_path_and_query_are_refused_not_crashed() -> None:
    """aiohttp hands undecodable header bytes over as surrogates; they must fail cleanly."""
    request = json_post()
    authorization = request.headers["Authorization"].replace("/us-east-1/", "/us-\udcff/")
    rejected(with_headers(request, Authorization=authorization), "SignatureDoesNotMatch")
    rejected(dataclasses.replace(request, path="/q\udcff"), "SignatureDoesNotMatch")
    rejected(dataclasses.replace(request, query="a=\udcff"), "SignatureDoesNotMatch")
    rejected(with_headers(request, X_Amz_Target="Amazon\udcffSQS"), "SignatureDoesNotMatch")
