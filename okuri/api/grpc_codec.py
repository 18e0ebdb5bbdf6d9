"""The native API's documents as `okuri.api.v1` protobuf messages and back, driven by the shapes
(okuri/api/shapes.py): one converter, used by the server's gRPC service for its requests and
answers and by the client's gRPC transport for its own, so the two sides cannot read a message
differently.

A document is what the HTTP/JSON wire carries; what protobuf says otherwise is mapped here once:
- a `payload` is bytes: JSON's `body` when it is UTF-8, else `body_base64`;
- a `time` is a `google.protobuf.Timestamp`, JSON's RFC 3339 text (UTC, to the millisecond);
- a request's unset `optional` field, or a plain one holding its zero value ("", 0, false), is
  absent from the document (the server's default); a list is always there, even empty;
- an answer's unset field is null or absent, as its shape says (`Field.absent`); a null within
  a list (a refused item's id) is "";
- a field whose members may be null (an update's attributes) travels with the repeated field
  `reset_<name>`, naming the members that are null;
- an `inline` field's members sit in the enclosing JSON object (a publish's routed queue).

A message or document this cannot convert raises `CodecError`, which each side turns into its
own error (the server's 400, the client's `BadRequestError` or `bad_answer`).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from okuri.api.shapes import SHAPES, Field, Shape
from okuri.api.v1 import queue_service_pb2 as pb

Doc = dict[str, Any]

# google.protobuf.Timestamp's documented range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
_SECONDS_MIN, _SECONDS_MAX = -62_135_596_800, 253_402_300_799
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class CodecError(ValueError):
    """A message or document that cannot be converted: `code` and `message` as the native
    API's error answers have them."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def message_class(name: str) -> type[Message]:
    """The generated message class named `name`."""
    cls = getattr(pb, name)
    assert isinstance(cls, type) and issubclass(cls, Message)
    return cls


# --- protobuf to documents ---------------------------------------------------------------------


def read_request(message: Message) -> Doc:
    """The request document `message` stands for: its fields given (path fields too)."""
    return _read(message, answer=False)


def read_answer(message: Message) -> Doc:
    """The answer document `message` stands for, as the HTTP answer carries it."""
    return _read(message, answer=True)


def rfc3339(ts: Timestamp, name: str) -> str:
    """A Timestamp as RFC 3339 text in UTC, to the millisecond; refused out of its range."""
    if not (_SECONDS_MIN <= ts.seconds <= _SECONDS_MAX and 0 <= ts.nanos <= 999_999_999):
        raise CodecError(f"{name!r} is not a valid google.protobuf.Timestamp.", "wrong_type")
    when = _EPOCH + timedelta(seconds=ts.seconds, milliseconds=ts.nanos // 1_000_000)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def payload_doc(payload: bytes) -> dict[str, str]:
    """A payload as JSON carries it: `body` when it is UTF-8, else `body_base64`."""
    try:
        return {"body": payload.decode()}
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(payload).decode("ascii")}


def _read(message: Message, answer: bool) -> Doc:
    shape = SHAPES[message.DESCRIPTOR.name]
    out: Doc = {}
    for f in shape.fields:
        if f.type == "payload":
            out.update(payload_doc(getattr(message, f.name)))
        elif f.inline:
            out.update(_read(getattr(message, f.name), answer))
        elif f.resets and not answer:
            _read_resets(message, f, out)
        else:
            _read_field(message, f, answer, out)
    return out


def _read_field(message: Message, f: Field, answer: bool, out: Doc) -> None:
    value = getattr(message, f.name)
    if f.repeated:
        if answer and f.absent != "never" and not _there(f, value, out):
            return
        out[f.name] = [_value(v, f, answer) for v in value]
    elif f.type == "headers":
        if value:
            out[f.name] = dict(value)
    elif _has_presence(message, f.name):
        if message.HasField(f.name):
            out[f.name] = _value(value, f, answer)
        elif answer and f.absent != "empty" and f.type not in SHAPES:
            out[f.name] = None
        elif answer and f.absent == "never":
            out[f.name] = _value(value, f, answer)
    elif answer or value != type(value)():
        out[f.name] = value


def _there(f: Field, value: Any, out: Doc) -> bool:
    """Whether an answer's list that may be absent is there."""
    return bool(value) if f.absent == "empty" else f.absent in out


def _value(value: Any, f: Field, answer: bool) -> Any:
    if isinstance(value, Timestamp):
        return rfc3339(value, f.name)
    if isinstance(value, Message):
        return _read(value, answer)
    if f.nullable and f.repeated and value == "":
        return None
    return value


def _read_resets(message: Message, f: Field, out: Doc) -> None:
    """An object whose members may be null: those set, and those named in `reset_<name>`."""
    resets = list(getattr(message, f"reset_{f.name}"))
    if not message.HasField(f.name) and not resets:
        return
    members = _read(getattr(message, f.name), answer=False)
    for name in resets:
        if name in members:
            raise CodecError(
                f"Attribute {name!r} is both set and in 'reset_{f.name}'.", "invalid_argument"
            )
        members[name] = None
    out[f.name] = members


def _has_presence(message: Message, name: str) -> bool:
    return bool(message.DESCRIPTOR.fields_by_name[name].has_presence)


# --- documents to protobuf ---------------------------------------------------------------------


def write(shape_name: str, doc: Mapping[str, Any]) -> Message:
    """The message `shape_name` carrying `doc` (a request's, path fields included, or an
    answer's); a value it cannot carry is a `CodecError` naming the field."""
    message = message_class(shape_name)()
    _write(SHAPES[shape_name], doc, message, shape_name)
    return message


def timestamp(text: str, name: str = "time") -> Timestamp:
    """RFC 3339 text (with its offset) as a Timestamp."""
    out = Timestamp()
    try:
        out.FromDatetime(datetime.fromisoformat(text))
    except (TypeError, ValueError, OverflowError) as exc:
        raise CodecError(f"Cannot be sent over gRPC: {name!r}: {exc}", "wrong_type") from exc
    return out


def payload(doc: Mapping[str, Any]) -> bytes:
    """A document's payload bytes, from `body` (text) or `body_base64`."""
    if "body" in doc:
        return str(doc["body"]).encode()
    try:
        return base64.b64decode(doc.get("body_base64") or "", validate=True)
    except ValueError as exc:
        raise CodecError("'body_base64' is not valid base64.", "wrong_type") from exc


def _write(shape: Shape, doc: Any, message: Message, where: str, whole: bool = True) -> None:
    """`doc` into `message`; `whole`: every field of `doc` must have a place (not so for an
    inline field's members, which share their object with the enclosing one's)."""
    if not isinstance(doc, Mapping):
        raise CodecError(f"Cannot be sent over gRPC: {where} is not an object.", "wrong_type")
    known = {"body", "body_base64"} if any(f.type == "payload" for f in shape.fields) else set()
    for f in shape.fields:
        if f.inline:
            known |= set(SHAPES[f.type].names)
            _write(SHAPES[f.type], doc, getattr(message, f.name), where, whole=False)
        elif f.type == "payload":
            setattr(message, f.name, payload(doc))
        else:
            known.add(f.name)
            if doc.get(f.name) is not None:
                _write_field(f, doc[f.name], message)
    unknown = sorted(set(doc) - known)
    if unknown and whole:
        raise CodecError(
            f"Cannot be sent over gRPC: unknown field {unknown[0]!r}.", "unknown_field"
        )


def _write_field(f: Field, value: Any, message: Message) -> None:
    try:
        if f.resets:
            _write_resets(f, value, message)
        elif f.type == "headers":
            getattr(message, f.name).update(value)
        elif f.repeated and f.type in SHAPES:
            for item in value:
                _write(SHAPES[f.type], item, getattr(message, f.name).add(), f.name)
        elif f.repeated:
            getattr(message, f.name).extend(_scalar(v, f) for v in value)
        elif f.type in SHAPES:
            getattr(message, f.name).SetInParent()  # named, though perhaps empty
            _write(SHAPES[f.type], value, getattr(message, f.name), f.name)
        elif f.type == "time":
            getattr(message, f.name).CopyFrom(timestamp(value, f.name))
        else:
            setattr(message, f.name, value)
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, CodecError):
            raise
        code = "out_of_range" if "range" in str(exc) else "wrong_type"
        raise CodecError(f"Cannot be sent over gRPC: {f.name!r}: {exc}", code) from exc


def _scalar(value: Any, f: Field) -> Any:
    if value is None and f.nullable:
        return ""
    if f.type == "time":
        return timestamp(value, f.name)
    return value


def _write_resets(f: Field, value: Any, message: Message) -> None:
    """Members given as null go in `reset_<name>`; the object is named even when empty."""
    if not isinstance(value, Mapping):
        raise CodecError(f"Cannot be sent over gRPC: {f.name!r} is not an object.", "wrong_type")
    given = {k: v for k, v in value.items() if v is not None}
    getattr(message, f.name).SetInParent()
    _write(SHAPES[f.type], given, getattr(message, f.name), f.name)
    getattr(message, f"reset_{f.name}").extend(k for k, v in value.items() if v is None)
