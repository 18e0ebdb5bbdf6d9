"""Compare a live response with a recorded one, as an SDK would see the difference.

Both responses are reduced to a normalised form and the forms must be equal. The form keeps
what an SDK depends on and drops what legitimately changes from run to run:

- status: the HTTP status, exactly.
- error: the error type, exactly: JSON `__type` (after `#`) and the code in
  `x-amzn-query-error`; XML `Error/Code` and `Error/Type`.
- headers: only those SDKs read. `content-type` exactly (lower case, spaces dropped),
  `x-amzn-query-error` exactly, `x-amzn-requestid` by form, `content-length` by presence.
  Names are case-insensitive; every other header is ignored.
- body, JSON: the same keys at every level, the same JSON type for every value, lists of
  objects compared as multisets (sorted by their normalised form), other lists in order.
- body, XML (query protocol): the same element names and nesting, repeated elements as lists
  (compared as multisets), the root's namespace exactly; text by the string rules below.
- strings: compared exactly, except volatile values, which are compared by form:
  a UUID -> `<uuid>`; 32 hex digits -> `<md5>`; 13 digits -> `<epoch-ms>`; 10 digits ->
  `<epoch-s>`; an http(s) URL -> its path with the host replaced by `<host>`; the values of
  ReceiptHandle, TaskHandle, NextToken, RequestId, SenderId -> `<receipt-handle>`, `<task-handle>`,
  `<next-token>`, `<uuid>` or `<request-id>`, `<sender-id>` (empty stays empty); values of
  `ApproximateNumberOf*` -> `<count>`; a FIFO `SequenceNumber` of decimal digits ->
  `<sequence-number>` (server-minted; that it grows is the scenario programs' check); error
  texts (`message` / `Message`) -> `<text>`.
- numbers (JSON): compared exactly, except 13- and 10-digit integers -> `<number:epoch-ms>` /
  `<number:epoch-s>` and values of `ApproximateNumberOf*` -> `<number:count>`; booleans and
  null exactly.

A mismatch is reported as a unified diff of the two normalised forms, with the exchange's index
and action in the header. The rules are the replay's, whatever stores the recorded answer (a
vcrpy cassette, read by compat/cassette.py): the cassette keeps answers whole, this decides.
"""

from __future__ import annotations

import difflib
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

from compat.cassette import Response

UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MD5 = re.compile(r"[0-9a-f]{32}")
EPOCH_MS = re.compile(r"\d{13}")
EPOCH_S = re.compile(r"\d{10}")
URL = re.compile(r"(https?)://([^/\s]+)(/\S*)?")
# Members whose values are minted by the server, compared by form whatever they look like.
BY_KEY = {
    "ReceiptHandle": "<receipt-handle>",
    "TaskHandle": "<task-handle>",
    "NextToken": "<next-token>",
    "SenderId": "<sender-id>",
}
TEXT_KEYS = frozenset({"message", "Message"})
COUNT_PREFIX = "ApproximateNumberOf"
SEQUENCE_KEY = "SequenceNumber"
# The response headers SDKs read; how each is compared.
HEADERS = {
    "content-type": "exact",
    "x-amzn-query-error": "exact",
    "x-amzn-requestid": "form",
    "content-length": "presence",
}


def string_form(value: str, key: str | None = None) -> str:
    """A string as the comparison sees it: itself, or the name of its form if it is volatile."""
    if key in BY_KEY:
        return BY_KEY[key] if value else ""
    if key in TEXT_KEYS:
        return "<text>"
    if key is not None and key.startswith(COUNT_PREFIX) and value.isdigit():
        return "<count>"
    if key == SEQUENCE_KEY and value.isascii() and value.isdigit():
        return "<sequence-number>"
    if key in ("RequestId", "x-amzn-requestid"):
        return "<uuid>" if UUID.fullmatch(value) else "<request-id>" if value else ""
    if UUID.fullmatch(value):
        return "<uuid>"
    if MD5.fullmatch(value):
        return "<md5>"
    if EPOCH_MS.fullmatch(value):
        return "<epoch-ms>"
    if EPOCH_S.fullmatch(value):
        return "<epoch-s>"
    url = URL.fullmatch(value)
    if url:
        return f"{url.group(1)}://<host>{url.group(3) or ''}"
    return value


def _number_form(value: int | float, key: str | None = None) -> Any:
    if key is not None and key.startswith(COUNT_PREFIX):
        return "<number:count>"
    if isinstance(value, int) and EPOCH_MS.fullmatch(str(value)):
        return "<number:epoch-ms>"
    if isinstance(value, int) and EPOCH_S.fullmatch(str(value)):
        return "<number:epoch-s>"
    return value


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _sorted_if_objects(items: list[Any]) -> list[Any]:
    """Lists of objects are compared as multisets (SDKs do not depend on their order)."""
    if items and all(isinstance(i, dict) for i in items):
        return sorted(items, key=_canonical)
    return items


def json_form(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: json_form(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return _sorted_if_objects([json_form(v, key) for v in value])
    if isinstance(value, str):
        return string_form(value, key)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return _number_form(value, key)
    return f"<unexpected {type(value).__name__}>"


def local_name(tag: str) -> str:
    """An XML tag without its `{namespace}`."""
    return tag.rsplit("}", 1)[-1]


def xml_form(element: ET.Element, root: bool = True) -> dict[str, Any]:
    """{name: text form or {child: form or [forms]}}; the root also names its namespace."""
    element_name = local_name(element.tag)
    children = list(element)
    if not children:
        return {element_name: string_form((element.text or "").strip(), element_name)}
    pair = _name_value(children)
    if pair is not None:  # <Attribute><Name>n</Name><Value>v</Value>: v's form depends on n
        name_key, name, value = pair
        return {element_name: {name_key: name, "Value": string_form(value, name)}}
    grouped: dict[str, list[Any]] = {}
    for child in children:
        child_name = local_name(child.tag)
        grouped.setdefault(child_name, []).append(xml_form(child, False)[child_name])
    content: dict[str, Any] = {
        k: v[0] if len(v) == 1 else _sorted_if_objects(v) for k, v in grouped.items()
    }
    if root and element.tag.startswith("{"):
        content["@xmlns"] = element.tag[1:].split("}", 1)[0]
    return {element_name: content}


def _name_value(children: list[ET.Element]) -> tuple[str, str, str] | None:
    """(key element, its text, the value's text) for a leaf Name/Value or Key/Value pair."""
    if len(children) != 2 or any(len(c) for c in children):
        return None
    texts = {local_name(c.tag): (c.text or "").strip() for c in children}
    for key in ("Name", "Key"):
        if set(texts) == {key, "Value"}:
            return key, texts[key], texts["Value"]
    return None


def body_form(response: Response) -> Any:
    """The body's normalised form: parsed JSON or XML, or a description of what it is."""
    text = response.body.decode(errors="replace")
    if not text.strip():
        return "<empty>"
    content_type = (response.header("content-type") or "").lower()
    if "json" in content_type or text.lstrip().startswith(("{", "[")):
        try:
            return json_form(json.loads(text))
        except json.JSONDecodeError:
            return f"<invalid JSON: {text[:200]}>"
    if "xml" in content_type or text.lstrip().startswith("<"):
        try:
            return xml_form(ET.fromstring(text))
        except ET.ParseError as err:
            return f"<invalid XML ({err}): {text[:200]}>"
    return f"<{content_type or 'untyped'} body>"


def _xml_error(body: Any) -> str | None:
    if not isinstance(body, dict) or "ErrorResponse" not in body:
        return None
    error = (
        body["ErrorResponse"].get("Error", {}) if isinstance(body["ErrorResponse"], dict) else {}
    )
    return f"{error.get('Code')} ({error.get('Type')})"


def error_form(response: Response, body: Any) -> str | None:
    """The error type an SDK would raise, or None for a success."""
    found = []
    if isinstance(body, dict) and "__type" in body:
        found.append(str(body["__type"]).rsplit("#", 1)[-1])
    query_error = response.header("x-amzn-query-error")
    if query_error:
        found.append(query_error.split(";", 1)[0])
    xml = _xml_error(body)
    if xml:
        found.append(xml)
    if found:
        return " / ".join(found)
    return "<no error type>" if response.status >= 400 else None


def headers_form(headers: Mapping[str, str]) -> dict[str, str]:
    lower = {k.lower(): v for k, v in headers.items()}
    out = {}
    for name, how in HEADERS.items():
        if name not in lower:
            continue
        value = lower[name]
        if how == "exact":
            out[name] = value.replace(" ", "").lower() if name == "content-type" else value
        elif how == "form":
            out[name] = string_form(value, name)
        else:
            out[name] = "<present>"
    return out


def response_form(response: Response) -> dict[str, Any]:
    body = body_form(response)
    return {
        "status": response.status,
        "error": error_form(response, body),
        "headers": headers_form(response.headers),
        "body": body,
    }


def render(form: Mapping[str, Any]) -> list[str]:
    return json.dumps(form, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def difference(index: int, action: str, recorded: Response, live: Response) -> str | None:
    """None if `live` matches `recorded`; otherwise a readable unified diff of the two forms."""
    want, got = response_form(recorded), response_form(live)
    if want == got:
        return None
    diff = difflib.unified_diff(
        render(want),
        render(got),
        f"recorded exchange {index} ({action})",
        f"live exchange {index} ({action})",
        lineterm="",
    )
    return "\n".join(diff)
