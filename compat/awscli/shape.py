"""Does a real CLI output have the shape of the documented one?

Shape means: the same keys at every level (none missing, none added), the same JSON types, and,
for lists, every real element shaped like one of the documented elements (a non-empty documented
list also needs a non-empty real one). Values that change on every run or every account (ids,
receipt and task handles, MD5s, timestamps, queue URLs and ARNs) are compared by form: a
documented `"1000f835...a35411fa"` asks for 32 hex digits, a 13-digit `SentTimestamp` for epoch
milliseconds, a queue URL for an http(s) URL ending in a queue name. A string holding a JSON
object (a RedrivePolicy) is compared as that object.

Other values are not part of the shape: where the real value differs from the documented one
(a count, a default the example predates) it is returned as a note, never a mismatch. Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Comparison", "compare"]

QUEUE_NAME = r"[A-Za-z0-9_-]{1,80}(?:\.fifo)?"


@dataclass(frozen=True)
class Comparison:
    mismatches: tuple[str, ...]  # shape differences: the example fails
    notes: tuple[str, ...]  # values that differ within the same shape: reported only


@dataclass(frozen=True)
class _Form:
    name: str  # as shown in a diff, e.g. "an MD5 (32 hex digits)"
    accepts: Callable[[Any], bool]
    volatile: bool  # True: never compare the value itself


def _matches(pattern: str) -> Callable[[Any], bool]:
    compiled = re.compile(pattern)
    return lambda v: isinstance(v, str) and compiled.fullmatch(v) is not None


def _int_digits(digits: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and len(str(v)) == digits


_MD5 = _Form("an MD5 (32 hex digits)", _matches(r"[0-9a-f]{32}"), True)
_HANDLE = _Form("an opaque handle (a non-empty token)", _matches(r"\S+"), True)
_MESSAGE_ID = _Form(
    "a message id (a UUID)",
    _matches(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    True,
)
_OPAQUE_ID = _Form("an id (a non-empty token)", _matches(r"\S+"), True)
_QUEUE_URL = _Form(
    "a queue URL (http(s)://host/account/queue)",
    _matches(rf"https?://[^/\s]+(?:/[^/\s]+)*/{QUEUE_NAME}"),
    True,
)
_QUEUE_ARN = _Form(
    "a queue ARN (arn:aws:sqs:region:account:queue)",
    _matches(rf"arn:aws[a-z-]*:sqs:[a-z0-9-]+:[0-9]{{12}}:{QUEUE_NAME}"),
    True,
)
_STRING = _Form("a string", lambda v: isinstance(v, str), False)
_INT_STRING = _Form("a string of digits", _matches(r"-?[0-9]+"), False)
_INTEGER = _Form("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool), False)
_NUMBER = _Form(
    "a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), False
)
_BOOLEAN = _Form("a boolean", lambda v: isinstance(v, bool), False)
_NULL = _Form("null", lambda v: v is None, False)

_DOC_MD5 = re.compile(r"[0-9a-f]{8}\.\.\.[0-9a-f]{8}|[0-9a-f]{32}")
_DOC_HANDLE = re.compile(r"AQEB\S*\.\.\.\S*")
_DOC_MESSAGE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-zA-Z]{12}")
_DOC_URL = re.compile(rf"https?://\S+/{QUEUE_NAME}")
_DOC_ARN = re.compile(rf"arn:aws[a-z-]*:sqs:[a-z0-9-]+:[^:\s]+:{QUEUE_NAME}")
_DOC_DIGITS = re.compile(r"-?[0-9]+")


def _epoch(value: int | str) -> _Form | None:
    """Epoch seconds (10 digits) or milliseconds (13 digits), as the documented value is."""
    digits = len(str(value).lstrip("-"))
    unit = {10: "seconds", 13: "milliseconds"}.get(digits)
    if unit is None:
        return None
    if isinstance(value, int):
        return _Form(f"epoch {unit} (a {digits}-digit integer)", _int_digits(digits), True)
    return _Form(f"epoch {unit} (a {digits}-digit string)", _matches(rf"[0-9]{{{digits}}}"), True)


def form_of(value: Any, key: str) -> _Form:
    """The form a documented scalar asks of the real one; `key` is its member name."""
    if isinstance(value, bool):
        return _BOOLEAN
    if value is None:
        return _NULL
    if isinstance(value, int):
        return (key.endswith("Timestamp") and _epoch(value)) or _INTEGER
    if isinstance(value, float):
        return _NUMBER
    if not isinstance(value, str):
        raise TypeError(f"not a JSON scalar: {value!r}")
    if key.startswith("MD5Of") or _DOC_MD5.fullmatch(value):
        return _MD5
    if key.endswith("Handle") or _DOC_HANDLE.fullmatch(value):
        return _HANDLE
    if key == "MessageId" or _DOC_MESSAGE_ID.fullmatch(value):
        return _MESSAGE_ID
    if _DOC_URL.fullmatch(value):
        return _QUEUE_URL
    if _DOC_ARN.fullmatch(value):
        return _QUEUE_ARN
    if _DOC_DIGITS.fullmatch(value):
        return (key.endswith("Timestamp") and _epoch(value)) or _INT_STRING
    if "EXAMPLE" in value:
        return _OPAQUE_ID
    return _STRING


def _json_object(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, str) or not value.lstrip().startswith("{"):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {json.dumps(value)[:80]}"


def _queue_name(value: str) -> str:
    return re.split(r"[/:]", value)[-1]


class _Walk:
    def __init__(self) -> None:
        self.mismatches: list[str] = []
        self.notes: list[str] = []

    def value(self, doc: Any, real: Any, path: str, key: str) -> None:
        if isinstance(doc, dict):
            self.object(doc, real, path)
        elif isinstance(doc, list):
            self.list(doc, real, path)
        elif (embedded := _json_object(doc)) is not None:
            real_embedded = _json_object(real)
            if real_embedded is None:
                self.mismatches.append(
                    f"{path}: documented a string holding a JSON object, got {_kind(real)}"
                )
            else:
                self.object(embedded, real_embedded, f"{path}<json>")
        else:
            self.scalar(doc, real, path, key)

    def object(self, doc: dict[str, Any], real: Any, path: str) -> None:
        if not isinstance(real, dict):
            self.mismatches.append(f"{path or '(top)'}: documented an object, got {_kind(real)}")
            return
        prefix = f"{path}." if path else ""
        for key in doc.keys() - real.keys():
            self.mismatches.append(f"{prefix}{key}: documented, missing from the real output")
        for key in real.keys() - doc.keys():
            self.mismatches.append(
                f"{prefix}{key}: in the real output ({_kind(real[key])}), not documented"
            )
        for key in doc.keys() & real.keys():
            self.value(doc[key], real[key], f"{prefix}{key}", key)

    def list(self, doc: list[Any], real: Any, path: str) -> None:
        if not isinstance(real, list):
            self.mismatches.append(f"{path}: documented a list, got {_kind(real)}")
            return
        if doc and not real:
            self.mismatches.append(f"{path}: documented {len(doc)} element(s), got an empty list")
            return
        if not doc and real:
            self.mismatches.append(f"{path}: documented an empty list, got {len(real)} element(s)")
            return
        if len(doc) != len(real):
            self.notes.append(f"{path}: documented {len(doc)} element(s), got {len(real)}")
        key = path.rsplit(".", 1)[-1]
        for i, element in enumerate(real):
            # The documented element this one is closest to; its differences are the diff.
            best: _Walk | None = None
            for candidate in doc:
                walk = _Walk()
                walk.value(candidate, element, f"{path}[{i}]", key)
                if best is None or (len(walk.mismatches), len(walk.notes)) < (
                    len(best.mismatches),
                    len(best.notes),
                ):
                    best = walk
            assert best is not None
            self.mismatches += best.mismatches
            self.notes += best.notes

    def scalar(self, doc: Any, real: Any, path: str, key: str) -> None:
        form = form_of(doc, key)
        if not form.accepts(real):
            self.mismatches.append(
                f"{path}: documented {form.name} like {json.dumps(doc)}, got {_kind(real)}"
            )
        elif form in (_QUEUE_URL, _QUEUE_ARN) and _queue_name(doc) != _queue_name(real):
            self.notes.append(f"{path}: documented queue {_queue_name(doc)}, got {real}")
        elif not form.volatile and doc != real:
            self.notes.append(f"{path}: documented {json.dumps(doc)}, got {json.dumps(real)}")


def compare(documented: Any, real: Any) -> Comparison:
    """How `real` (a parsed CLI output) differs from `documented`, in shape and in value."""
    walk = _Walk()
    walk.value(documented, real, "", "")
    return Comparison(tuple(sorted(walk.mismatches)), tuple(sorted(walk.notes)))
