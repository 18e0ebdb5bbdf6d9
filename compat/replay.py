"""Replay a cassette against a live okuri: re-sign, carry values forward, compare each answer.

Every recorded request is sent again in order, changed only where it must be:

- values the recorded session was given by the server (the host:port, queue URLs, message ids,
  receipt handles, move-task handles) are replaced by the values the live session was given
  at the same place. They are learned by aligning each recorded response with its live one
  (lists of objects paired by their normalised form, as compare.py sees them, then by order)
  and substituted in raw, JSON-escaped and percent-encoded forms, in the path, query and body;
- the signature is made again for the current time with the live server's key pair (SigV4 in
  headers, for a POST body or a GET query), keeping the recorded region, service and headers;
  Content-Length (and X-Amz-Content-Sha256, if the SDK sent it) follow the new body.
  Presigned (query-string signed) requests are refused: no SDK sends SQS calls that way.

Each live response is then compared with the recorded one by compat.compare. The recording
comes from compat.cassette.load, which reads the vcrpy cassette with vcrpy.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlsplit

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from compat.cassette import Recording, Request, Response
from compat.compare import BY_KEY, URL, UUID, difference, json_form, local_name, xml_form

REQUEST_S = 30.0  # a recorded long poll waits at most 20 s
# Headers that belong to the old signature or connection; made again for the live request.
DROPPED = frozenset(
    {
        "authorization",
        "x-amz-date",
        "x-amz-security-token",
        "content-length",
        "host",
        "transfer-encoding",
        "connection",
        "expect",
    }
)
PRESIGNED = "X-Amz-Signature"
CREDENTIAL = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
LEARNED_KEYS = frozenset(BY_KEY) - {"SenderId"}

# The ways a value can appear inside a request: as is, JSON-escaped, percent-encoded.
ENCODINGS: tuple[Callable[[str], str], ...] = (
    lambda s: s,
    lambda s: json.dumps(s)[1:-1],
    lambda s: json.dumps(s)[1:-1].replace("/", "\\/"),
    lambda s: quote(s, safe=""),
    lambda s: quote(s, safe="/"),
    lambda s: quote_plus(s, safe=""),
)


@dataclass
class Substitutions:
    """Recorded value -> live value, applied to every later request in all its encodings."""

    values: dict[str, str] = field(default_factory=dict)
    minted: set[str] = field(default_factory=set)  # every server-minted value recorded so far
    _pattern: re.Pattern[str] | None = None
    _table: dict[str, str] = field(default_factory=dict)

    def add(self, recorded: str, live: str) -> None:
        self.minted.add(recorded)
        if recorded and recorded != live and recorded not in self.values:
            self.values[recorded] = live
            self._pattern = None

    def _compile(self) -> re.Pattern[str] | None:
        if self._pattern is None and self.values:
            table: dict[str, str] = {}
            for recorded, live in self.values.items():
                for encode in ENCODINGS:
                    table.setdefault(encode(recorded), encode(live))
            self._table = table
            # Longest first, so a URL wins over the host:port inside it.
            keys = sorted(table, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(k) for k in keys))
        return self._pattern

    def unmapped_in(self, text: str) -> list[str]:
        """Recorded server-minted values in `text` that have no live counterpart."""
        return [
            v
            for v in self.minted
            if v not in self.values and len(v) > 8 and any(e(v) in text for e in ENCODINGS)
        ]

    def apply(self, text: str) -> str:
        pattern = self._compile()
        if pattern is None:
            return text
        return pattern.sub(lambda m: self._table[m.group(0)], text)


# --- learning values from aligned responses ----------------------------------------------------


def _learnable(key: str | None, value: str) -> bool:
    return key in LEARNED_KEYS or bool(UUID.fullmatch(value)) or bool(URL.fullmatch(value))


def _pairs(
    recorded: list[Any], live: list[Any], form: Callable[[Any], str]
) -> Iterable[tuple[Any, Any]]:
    """Each recorded item with its live counterpart (or None): equal normalised forms first,
    then the rest in order."""
    live_forms = [form(item) for item in live]
    live_left = list(range(len(live)))
    unpaired = []
    for item in recorded:
        f = form(item)
        match = next((j for j in live_left if live_forms[j] == f), None)
        if match is None:
            unpaired.append(item)
        else:
            live_left.remove(match)
            yield item, live[match]
    for i, item in enumerate(unpaired):
        yield item, live[live_left[i]] if i < len(live_left) else None


def _json_canonical(value: Any) -> str:
    return json.dumps(json_form(value), sort_keys=True)


def learn_json(recorded: Any, live: Any, subs: Substitutions, key: str | None = None) -> None:
    if isinstance(recorded, dict):
        for k, v in recorded.items():
            learn_json(v, live.get(k) if isinstance(live, dict) else None, subs, k)
    elif isinstance(recorded, list):
        for r, lv in _pairs(recorded, live if isinstance(live, list) else [], _json_canonical):
            learn_json(r, lv, subs, key)
    elif isinstance(recorded, str) and _learnable(key, recorded):
        if isinstance(live, str):
            subs.add(recorded, live)
        else:
            subs.minted.add(recorded)


def _xml_canonical(element: ET.Element) -> str:
    return json.dumps(xml_form(element, root=False), sort_keys=True)


def learn_xml(recorded: ET.Element, live: ET.Element | None, subs: Substitutions) -> None:
    if not len(recorded):
        r = (recorded.text or "").strip()
        if _learnable(local_name(recorded.tag), r):
            if live is not None and not len(live):
                subs.add(r, (live.text or "").strip())
            else:
                subs.minted.add(r)
        return
    groups: dict[str, tuple[list[ET.Element], list[ET.Element]]] = {}
    for child in recorded:
        groups.setdefault(local_name(child.tag), ([], []))[0].append(child)
    for child in live if live is not None else ():
        groups.setdefault(local_name(child.tag), ([], []))[1].append(child)
    for recorded_children, live_children in groups.values():
        for r, lv in _pairs(recorded_children, live_children, _xml_canonical):
            learn_xml(r, lv, subs)


def learn(recorded: Response, live: Response, subs: Substitutions) -> None:
    """Add what `live` was given where `recorded` was given a server-minted value."""
    r_text, l_text = recorded.body.decode(errors="replace"), live.body.decode(errors="replace")
    if r_text.lstrip().startswith("{"):
        try:
            learn_json(json.loads(r_text), json.loads(l_text), subs)
        except json.JSONDecodeError:
            return
    elif r_text.lstrip().startswith("<"):
        try:
            learn_xml(ET.fromstring(r_text), ET.fromstring(l_text), subs)
        except ET.ParseError:
            return


# --- sending -------------------------------------------------------------------------------------


def _text(body: bytes) -> str:
    return body.decode(errors="replace")


def _scope(request: Request) -> tuple[str, str]:
    """(region, service) of the recorded signature; us-east-1/sqs if it cannot be read."""
    found = CREDENTIAL.search(request.header("authorization") or "")
    return (found.group(1), found.group(2)) if found else ("us-east-1", "sqs")


def prepare(
    request: Request, base_url: str, subs: Substitutions, key: str, secret: str
) -> tuple[str, str, bytes, dict[str, str]]:
    """(method, path?query, body, headers): the recorded request made valid for the live server."""
    if any(k == PRESIGNED for k, _ in parse_qsl(request.query, keep_blank_values=True)):
        raise ValueError("presigned (query-string signed) requests are not replayed")
    path, query = subs.apply(request.path), subs.apply(request.query)
    try:
        body = subs.apply(request.body.decode()).encode()
    except UnicodeDecodeError:
        body = request.body
    headers = {k: v for k, v in request.headers.items() if k.lower() not in DROPPED}
    for name in list(headers):
        if name.lower() == "x-amz-content-sha256":
            headers[name] = hashlib.sha256(body).hexdigest()
    host = urlsplit(base_url).netloc
    headers["Host"] = host
    if body or request.method not in ("GET", "HEAD"):
        headers["Content-Length"] = str(len(body))
    target = path + ("?" + query if query else "")
    signed = AWSRequest(method=request.method, url=base_url + target, data=body, headers=headers)
    region, service = _scope(request)
    SigV4Auth(Credentials(key, secret), service, region).add_auth(signed)
    return request.method, target, body, dict(signed.headers.items())


def send(base_url: str, method: str, target: str, body: bytes, headers: dict[str, str]) -> Response:
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=REQUEST_S)
    try:
        conn.request(method, target, body=body or None, headers=headers)
        answer = conn.getresponse()
        return Response(answer.status, dict(answer.getheaders()), answer.read(), answer.reason)
    finally:
        conn.close()


@dataclass(frozen=True)
class Outcome:
    index: int
    action: str
    live: Response
    diff: str | None  # None when the live answer matches the recording


def replay(recording: Recording, base_url: str, key: str, secret: str) -> list[Outcome]:
    """Send every recorded request to `base_url` in order; one Outcome per exchange."""
    subs = Substitutions()
    live_host = urlsplit(base_url).netloc
    outcomes = []
    for index, exchange in enumerate(recording.exchanges):
        # The host:port the client addressed (in the URI; also its Host header, if recorded).
        for recorded_host in (exchange.request.host, exchange.request.header("host")):
            if recorded_host:
                subs.add(recorded_host, live_host)
        request = exchange.request
        stale = subs.unmapped_in(request.path + "?" + request.query + "\n" + _text(request.body))
        method, target, body, headers = prepare(request, base_url, subs, key, secret)
        live = send(base_url, method, target, body, headers)
        learn(exchange.response, live, subs)
        diff = difference(index, exchange.action, exchange.response, live)
        if stale:
            diff = (
                f"exchange {index} ({exchange.action}) sends values the recorded session was "
                f"given but the live one was not (no live counterpart): {sorted(stale)}"
                + (f"\n{diff}" if diff else "")
            )
        outcomes.append(Outcome(index, exchange.action, live, diff))
    return outcomes


def report(recording: Recording, outcomes: list[Outcome], shown_max: int = 3) -> str | None:
    """None if every exchange matched; else the first `shown_max` diffs and a count."""
    bad = [o for o in outcomes if o.diff is not None]
    if not bad:
        return None
    head = (
        f"{recording.client} {recording.sdk_version} ({recording.scenario}): {len(bad)} of "
        f"{len(outcomes)} exchanges differ from the recording; exchanges "
        f"{', '.join(f'{o.index} {o.action}' for o in bad)}"
    )
    return "\n\n".join([head, *(o.diff or "" for o in bad[:shown_max])])
