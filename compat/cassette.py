"""Recorded SDK sessions as vcrpy cassettes: read and written with vcrpy's own persister.

A cassette is vcrpy's YAML file (`version: 1`, `interactions`, each a `request` with `method`,
`uri`, `body`, `headers` and a `response` with `status` {`code`, `message`}, `headers`,
`body` {`string`}), so any vcrpy user can play it back in their own tests. What our old header
held (client, SDK version, scenario, protocols seen, recorded date, okuri version) sits in the
cassette's top-level `metadata`, which vcrpy (9.3 and later) loads and saves beside the
interactions and older versions ignore.

Nothing here parses YAML by hand: `load` and `save` go through vcrpy's FilesystemPersister and
YAML serializer, and convert between vcrpy's request objects and response dicts and the small
frozen values the replay and the comparison work on.
"""

from __future__ import annotations

import http
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from vcr.persisters.filesystem import FilesystemPersister
from vcr.request import Request as VcrRequest
from vcr.serializers import yamlserializer

CASSETTES = Path(__file__).resolve().parent / "recordings"
SUFFIX = ".yaml"
JSON_TARGET_PREFIX = "AmazonSQS."
METADATA_KEYS = ("client", "sdk_version", "scenario", "protocols", "recorded", "okuri_version")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    name = name.lower()
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


@dataclass(frozen=True)
class Request:
    method: str
    uri: str  # absolute, as sent: scheme, the host:port the client addressed, raw path and query
    headers: dict[str, str]  # names as the client spelled them
    body: bytes

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)

    @property
    def host(self) -> str:
        return urlsplit(self.uri).netloc

    @property
    def path(self) -> str:
        return urlsplit(self.uri).path or "/"

    @property
    def query(self) -> str:
        """The raw query string, still percent-encoded."""
        return urlsplit(self.uri).query


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes
    reason: str = ""  # the status line's text; the standard phrase when empty

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)


@dataclass(frozen=True)
class Exchange:
    request: Request
    response: Response

    @property
    def protocol(self) -> str:
        return protocol_of(self.request)

    @property
    def action(self) -> str:
        return action_of(self.request)


@dataclass
class Recording:
    client: str
    sdk_version: str
    scenario: str
    recorded: str  # ISO date
    okuri_version: str  # the version of the okuri that answered
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def protocols(self) -> list[str]:
        return sorted({e.protocol for e in self.exchanges})

    def metadata(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "sdk_version": self.sdk_version,
            "scenario": self.scenario,
            "protocols": self.protocols,
            "recorded": self.recorded,
            "okuri_version": self.okuri_version,
        }


def query_params(request: Request) -> list[tuple[str, str]]:
    """The query protocol's parameters: the URL's, then a form body's."""
    pairs = parse_qsl(request.query, keep_blank_values=True)
    content_type = (request.header("content-type") or "").split(";")[0].strip().lower()
    if content_type == "application/x-www-form-urlencoded":
        pairs += parse_qsl(request.body.decode(errors="replace"), keep_blank_values=True)
    return pairs


def protocol_of(request: Request) -> str:
    """ "json" (AWS JSON 1.0, X-Amz-Target), "query" (Action=...), or "unknown"."""
    if request.header("x-amz-target"):
        return "json"
    if any(k == "Action" for k, _ in query_params(request)):
        return "query"
    return "unknown"


def action_of(request: Request) -> str:
    target = request.header("x-amz-target")
    if target:
        return target.removeprefix(JSON_TARGET_PREFIX)
    for key, value in query_params(request):
        if key == "Action":
            return value
    return "Unknown"


# --- to and from vcrpy's objects ----------------------------------------------------------------


def _bytes(value: Any) -> bytes:
    if value is None:
        return b""
    return value.encode() if isinstance(value, str) else bytes(value)


def _text(value: Any) -> str:
    """A header name or value as text: botocore hands vcrpy some as bytes."""
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _single(headers: Mapping[Any, Any]) -> dict[str, str]:
    """vcrpy's `{name: [values]}` (or a plain value) as one string per name, repeats joined."""
    return {
        _text(k): ", ".join(map(_text, v)) if isinstance(v, list | tuple) else _text(v)
        for k, v in headers.items()
    }


def from_vcr(request: VcrRequest, response: Mapping[str, Any]) -> Exchange:
    """One interaction as vcrpy loaded it: its Request and its response dict."""
    status = response["status"]
    body = response.get("body") or {}
    return Exchange(
        Request(
            str(request.method),
            str(request.uri),
            _single(dict(request.headers.items())),
            _bytes(request.body),
        ),
        Response(
            int(status["code"]),
            _single(response.get("headers") or {}),
            _bytes(body.get("string")),
            str(status.get("message") or ""),
        ),
    )


def to_vcr(exchange: Exchange) -> tuple[VcrRequest, dict[str, Any]]:
    """One exchange as the Request and response dict vcrpy records."""
    request, response = exchange.request, exchange.response
    reason = response.reason or _phrase(response.status)
    return (
        VcrRequest(
            request.method,
            request.uri,
            request.body,
            {str(k): v for k, v in request.headers.items()},
        ),
        {
            "status": {"code": response.status, "message": reason},
            "headers": {str(k): [str(v)] for k, v in response.headers.items()},
            "body": {"string": response.body},
        },
    )


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""


def _load(path: Path) -> tuple[list[Exchange], Mapping[str, Any]]:
    requests, responses, *rest = FilesystemPersister.load_cassette(path, yamlserializer)
    exchanges = [from_vcr(q, r) for q, r in zip(requests, responses, strict=True)]
    return exchanges, rest[0] if rest else {}


def load_exchanges(path: Path) -> list[Exchange]:
    """The interactions of any vcrpy cassette, metadata or not (vcrpy's own recordings)."""
    return _load(path)[0]


def load(path: Path) -> Recording:
    """A cassette as a Recording; its metadata must name the session (see METADATA_KEYS)."""
    exchanges, metadata = _load(path)
    missing = [k for k in METADATA_KEYS if k not in metadata]
    if missing:
        raise ValueError(f"{path}: the cassette's metadata lacks {', '.join(missing)}")
    return Recording(
        client=str(metadata["client"]),
        sdk_version=str(metadata["sdk_version"]),
        scenario=str(metadata["scenario"]),
        recorded=str(metadata["recorded"]),
        okuri_version=str(metadata["okuri_version"]),
        exchanges=exchanges,
    )


def save(recording: Recording, path: Path) -> None:
    """Write `recording` as a vcrpy cassette (through a temporary file, then renamed)."""
    interactions = [to_vcr(e) for e in recording.exchanges]
    tmp = path.with_name(path.name + ".tmp")
    FilesystemPersister.save_cassette(
        tmp,
        {
            "requests": [q for q, _ in interactions],
            "responses": [r for _, r in interactions],
            "metadata": recording.metadata(),
        },
        serializer=yamlserializer,
    )
    tmp.replace(path)


def cassette_files(directory: Path = CASSETTES) -> list[Path]:
    return sorted(directory.glob(f"*{SUFFIX}")) if directory.is_dir() else []
