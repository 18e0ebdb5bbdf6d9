"""The region a queue URL names, so a request signed for one region never reaches another's queue.

SQS keeps each region's queues apart, and a queue URL of another region sent to an endpoint
(signed for a region) that is not the queue's is answered QueueDoesNotExist: AWS's CLI, given a
us-west-2 queue's URL while signing for us-east-2, reports `AWS.SimpleQueueService.NonExistentQueue`
"The specified queue does not exist." (danvk/mapsnap#436, 2026). okuri serves every region on
one listener, the region a request is signed for picking its queues, so it must read the region
a URL names rather than look the last path segment up in the signing region. A URL names one:

- in okuri's form for a region other than the configured one: `<base>/<region>/<account>/<name>`;
- in its host, as SQS's own URLs do: `sqs.<region>.amazonaws.com`, `sqs-fips.<region>...`, the
  legacy `<region>.queue.amazonaws.com` (`.com.cn` in China) and `queue.amazonaws.com`, the old
  us-east-1 endpoint.

A URL that names no region (okuri's URLs of the configured region, a bare `/<account>/<name>` or
name) addresses the signing region's queue, as it always has.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# AWS's form: us-east-1, eu-central-2, us-gov-west-1, eusc-de-east-1.
REGION = re.compile(r"[a-z]{2,4}(?:-[a-z]+)+-[0-9]{1,2}")
_AWS_HOST = re.compile(
    rf"(?:sqs(?:-fips)?\.(?P<sqs>{REGION.pattern})|(?P<legacy>{REGION.pattern})\.queue)"
    r"\.amazonaws\.com(?:\.cn)?"
)
LEGACY_US_EAST_1 = "queue.amazonaws.com"


def regions_named(url: str, public_url: str | None = None) -> frozenset[str]:
    """The regions `url` names (none, usually one). A configured `public_url` prefix is left out
    of the path first, so a base path that happens to look like a region names none."""
    if public_url and url.startswith(public_url) and url[len(public_url) :][:1] in ("", "/"):
        url = url[len(public_url) :]
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unclosed IPv6 bracket: such a URL names no region
        return frozenset()
    named: set[str] = set()
    segments = parts.path.strip("/").split("/")
    if len(segments) >= 3 and REGION.fullmatch(segments[-3]):
        named.add(segments[-3])
    host = (parts.hostname or "").lower()
    found = _AWS_HOST.fullmatch(host)
    if found is not None:
        named.add(found.group("sqs") or found.group("legacy"))
    elif host == LEGACY_US_EAST_1:
        named.add("us-east-1")
    return frozenset(named)
