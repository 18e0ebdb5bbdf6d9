"""The recording format: one SDK session as readable, diff-friendly JSON.

A recording is a short header (client, SDK version, scenario, protocols seen, date, okuri
version) and the ordered HTTP exchanges, each the request exactly as the SDK sent it (method,
path, raw query, headers, body as text) and okuri's response (status, headers, body). Each
exchange also names its action and protocol, derived from the request, for whoever reads it.

Bodies are text; a body that is not UTF-8 is kept as `body_base64` instead. Files are written
with sorted keys inside each part, two-space indents and a trailing newline, so that a
re-recording diffs line by line.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

FORMAT = 1
RECORDINGS = Path(__file__).resolve().parent / "recordings"
JSON_TARGET_PREFIX = "AmazonSQS."


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: str  # raw, as sent (still percent-encoded)
    headers: dict[str, str]  # names as the client spelled them
    body: bytes

    def header(self, name: str) -> str | None:
        return _header(self.headers, name)


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

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
    version: str
    scenario: str
    recorded: str  # ISO date
    okuri: str  # the version of the okuri that answered
    exchanges: list[Exchange] = field(default_factory=list)

    @property
    def protocols(self) -> list[str]:
        return sorted({e.protocol for e in self.exchanges})


def _header(headers: Mapping[str, str], name: str) -> str | None:
    name = name.lower()
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


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


# --- to and from JSON ---------------------------------------------------------------------------


def _body_out(body: bytes) -> dict[str, str]:
    try:
        return {"body": body.decode()}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(body).decode()}


def _body_in(data: Mapping[str, Any]) -> bytes:
    if "body_base64" in data:
        return base64.b64decode(data["body_base64"])
    return str(data.get("body", "")).encode()


def to_json(recording: Recording) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "client": recording.client,
        "version": recording.version,
        "scenario": recording.scenario,
        "protocols": recording.protocols,
        "recorded": recording.recorded,
        "okuri": recording.okuri,
        "exchanges": [
            {
                "index": i,
                "action": e.action,
                "protocol": e.protocol,
                "request": {
                    "method": e.request.method,
                    "path": e.request.path,
                    "query": e.request.query,
                    "headers": e.request.headers,
                    **_body_out(e.request.body),
                },
                "response": {
                    "status": e.response.status,
                    "headers": e.response.headers,
                    **_body_out(e.response.body),
                },
            }
            for i, e in enumerate(recording.exchanges)
        ],
    }


def dumps(recording: Recording) -> str:
    return json.dumps(to_json(recording), indent=2, ensure_ascii=False) + "\n"


def from_json(data: Mapping[str, Any]) -> Recording:
    if data.get("format") != FORMAT:
        raise ValueError(f"unknown recording format {data.get('format')!r} (expected {FORMAT})")
    exchanges = []
    for raw in data["exchanges"]:
        q, r = raw["request"], raw["response"]
        exchanges.append(
            Exchange(
                Request(
                    q["method"], q["path"], q.get("query", ""), dict(q["headers"]), _body_in(q)
                ),
                Response(int(r["status"]), dict(r["headers"]), _body_in(r)),
            )
        )
    return Recording(
        client=data["client"],
        version=data["version"],
        scenario=data["scenario"],
        recorded=data["recorded"],
        okuri=data["okuri"],
        exchanges=exchanges,
    )


def load(path: Path) -> Recording:
    return from_json(json.loads(path.read_text()))


def save(recording: Recording, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(dumps(recording))
    tmp.replace(path)


def recording_files(directory: Path = RECORDINGS) -> list[Path]:
    return sorted(directory.glob("*.json")) if directory.is_dir() else []
