"""Why a request's signature was refused, in the words AWS itself would answer with.

SDKs pick their exception class from the error code, so the codes and messages here follow what
SQS was recorded answering. `okuri.sqs.errors` renders them for the JSON protocol.

Codes (query-protocol names):

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
- a credential scope naming a region that is not one (okuri.sqs.aws_regions, plus those
  configured): SignatureDoesNotMatch, 403, "Credential should be scoped to a valid region, not
  'queue'. " (the trailing space is SQS's), as SQS answered boto's scope of 'queue'
  (boto/boto#3690, 2017) and fluent-plugin-sqs's of 'sqs' (ixixi/fluent-plugin-sqs#50, 2019);
  aws-sdk-cpp#93 shows the same code and text for a region the endpoint does not serve.
- request time outside `skew_s_max`, or a presigned URL past X-Amz-Expires: EXPIRED_CODE, which is
  SignatureDoesNotMatch, 403, with AWS's "Signature expired: 20130101T000000Z is now earlier than
  20130101T001500Z (20130101T003000Z - 15 min.)" and "Signature not yet current: ..." messages.
  Evidence that SQS itself answers this (not RequestTimeTooSkewed, which is S3's code, nor
  RequestExpired, which the generic Common Errors page lists): raw SQS ErrorResponses with
  <Code>SignatureDoesNotMatch</Code> and status 403 in aws/aws-sdk-php#642 and celery/kombu#1937
  (2024), and the same code from boto3 SendMessage/ReceiveMessage in celery/celery#8015 and
  terricain/aioboto3#326. Change EXPIRED_CODE/EXPIRED_STATUS to switch.

"""

from __future__ import annotations

from typing import Final

from okuri.errors import OkuriError

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
ECHO_CHARS_MAX: Final = 80  # how much of a client's input an error message repeats


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


def incomplete(message: str) -> AuthError:
    return AuthError("IncompleteSignature", 400, message)


def mismatch(message: str = MISMATCH_MESSAGE) -> AuthError:
    return AuthError("SignatureDoesNotMatch", 403, message)


def invalid_region(region: str) -> AuthError:
    """A credential scoped to a region okuri does not serve (SQS's code and text, module doc)."""
    return mismatch(f"Credential should be scoped to a valid region, not '{echo(region)}'. ")


def echo(text: str) -> str:
    """A client's input, clipped, for repeating in an error message."""
    return text if len(text) <= ECHO_CHARS_MAX else text[:ECHO_CHARS_MAX] + "..."
