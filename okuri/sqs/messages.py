"""SQS's rules for one message: body characters, user and system attributes, their checksums,
and which attributes a ReceiveMessage asked to see.

Everything here is pure (no I/O, clock or randomness) and fails with one error type,
`SqsInputError`, carrying the short AWS error code the surface answers with. The rules follow
SQS's published API model (botocore's `sqs/2012-11-05/service-2.json`) and, where the model is
silent, the answers SQS itself was recorded giving; choices made without such evidence are
marked "unverified" where they are made.

Shapes. `validate_message_attributes` takes the JSON-decoded `MessageAttributes` map (binary
values arrive base64-encoded, as boto3 sends them over JSON 1.0) and returns a normalised map,
`{name: {"DataType": ..., "StringValue": str}}` or `{name: {"DataType": ..., "BinaryValue": b""}}`.
The checksum, size and selection functions take that normalised form; `encode_message_attributes`
turns it back into JSON-ready values.

Checksums. `md5_of_message_attributes` is the digest SQS returns as MD5OfMessageAttributes and
that the SDKs recompute to verify it: for each attribute in name order, the UTF-8 name and then
the UTF-8 data type, each behind a 4-byte big-endian length; one transport byte (1 for a string
value, 2 for a binary one); then the value behind its 4-byte length. On receive, SQS digests
only the attributes it returns, so callers digest the output of `select_message_attributes`,
and omit the member entirely when that selection is empty.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import string
import struct
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from okuri.engine import is_fifo_id
from okuri.sqs.errors import SqsError


class SqsInputError(SqsError):
    """A request input SQS would refuse (HTTP 400, the sender's fault); `code` is the AWS error
    code's short name. An SqsError, so it leaves the surface as any other does."""


# --- bounds (SQS's, from its developer guide) ---------------------------------------------------

attributes_per_message_max = 10
attribute_name_chars_max = 256
attribute_type_chars_max = 256
number_digits_max = 38
number_value_min = Decimal("-1E128")
number_value_max = Decimal("1E126")
# A longer exponent than this cannot keep a value inside the bounds above; refusing it before
# Decimal parses it bounds the work a hostile "1e99999999999" can cause.
_number_exponent_digits_max = 6

ALLOWED_CHARACTERS = "#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]"
_FORBIDDEN_CHARACTER = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

_ATTRIBUTE_NAME_ASCII = frozenset(string.ascii_letters + string.digits + "_.-")
_RESERVED_PREFIXES = ("aws.", "amazon.")
_BASE_TYPES = ("String", "Number", "Binary")
_TYPE_LABEL = re.compile(r"[A-Za-z0-9_.\-]+")
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")

_STRING_TRANSPORT = 1
_BINARY_TRANSPORT = 2

TRACE_HEADER = "AWSTraceHeader"

# MessageSystemAttributeName in the API model, "All" aside, in the order SQS lists them.
SYSTEM_ATTRIBUTE_NAMES: tuple[str, ...] = (
    "SenderId",
    "SentTimestamp",
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SequenceNumber",
    "MessageDeduplicationId",
    "MessageGroupId",
    "AWSTraceHeader",
    "DeadLetterQueueSourceArn",
)
_ALL_MESSAGE_ATTRIBUTES = frozenset({"All", ".*", "*"})


# --- body ---------------------------------------------------------------------------------------


def md5_of_body(body: str) -> str:
    """MD5OfMessageBody: hex MD5 of the body's UTF-8 bytes."""
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def _first_forbidden(text: str) -> int | None:
    found = _FORBIDDEN_CHARACTER.search(text)
    return None if found is None else ord(found.group())


def validate_body(body: Any) -> None:
    """Refuse a body SQS would refuse.

    An absent body and an empty one both answer MissingParameter: SQS was recorded answering
    `SendMessage(MessageBody="")` with MissingParameter "The request must contain the parameter
    MessageBody." (LocalStack's AWS-validated snapshot `test_send_empty_message`, 2025). A
    character outside the XML character set answers InvalidMessageContents, worded as SQS words
    it. The size bound depends on the queue and is checked by the caller.
    """
    if body is None or body == "":
        raise SqsInputError(
            "MissingParameter", "The request must contain the parameter MessageBody."
        )
    if not isinstance(body, str):
        raise SqsInputError(
            "InvalidParameterValue",
            "Value for parameter MessageBody is invalid. Reason: not a string.",
        )
    bad = _first_forbidden(body)
    if bad is not None:
        raise SqsInputError(
            "InvalidMessageContents",
            f"Invalid binary character '#x{bad:X}' was found in the message body, "
            f"the set of allowed characters is {ALLOWED_CHARACTERS}.",
        )


# --- checksums ----------------------------------------------------------------------------------


def _with_length(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def md5_of_message_attributes(attrs: Mapping[str, Mapping[str, Any]]) -> str:
    """MD5OfMessageAttributes over normalised attributes (binary values as bytes).

    The transport byte follows the value present, which for validated attributes is the one
    their data type calls for: StringValue (String, Number and their custom forms) or
    BinaryValue (Binary and its custom forms).
    """
    digest = hashlib.md5(usedforsecurity=False)
    for name in sorted(attrs):
        attr = attrs[name]
        digest.update(_with_length(name.encode("utf-8")))
        digest.update(_with_length(str(attr["DataType"]).encode("utf-8")))
        string_value = attr.get("StringValue")
        if string_value is not None:
            digest.update(bytes([_STRING_TRANSPORT]))
            digest.update(_with_length(str(string_value).encode("utf-8")))
        else:
            digest.update(bytes([_BINARY_TRANSPORT]))
            digest.update(_with_length(bytes(attr["BinaryValue"])))
    return digest.hexdigest()


def md5_of_system_attributes(attrs: Mapping[str, Mapping[str, Any]]) -> str:
    """MD5OfMessageSystemAttributes: the same digest over the (validated) system attributes."""
    return md5_of_message_attributes(attrs)


# --- user attributes ----------------------------------------------------------------------------


def _invalid(message: str) -> SqsInputError:
    return SqsInputError("InvalidParameterValue", message)


def _check_attribute_name(name: Any) -> str:
    if not isinstance(name, str) or name == "":
        raise _invalid("The request must contain non-empty message attribute name.")
    if len(name) > attribute_name_chars_max:
        raise _invalid(
            f"Message (user) attribute name '{name[:64]}...' is longer than "
            f"{attribute_name_chars_max} characters."
        )
    # Letters of any script count: SQS accepts "attr.1øßä" and refuses "§" (recorded).
    if not all(c in _ATTRIBUTE_NAME_ASCII or c.isalpha() for c in name):
        raise _invalid(
            f"Message (user) attribute name '{name}' is invalid: it can only contain letters, "
            "digits, periods, hyphens and underscores."
        )
    if name.lower().startswith(_RESERVED_PREFIXES):
        raise _invalid(
            f"Message (user) attribute name '{name}' is invalid: names beginning with 'AWS.' "
            "or 'Amazon.' are reserved for use by Amazon Web Services."
        )
    if name.startswith(".") or name.endswith("."):
        raise _invalid(
            f"Message (user) attribute name '{name}' is invalid: it cannot start or end with '.'."
        )
    if ".." in name:
        raise _invalid(
            f"Message (user) attribute name '{name}' is invalid: it cannot contain successive "
            "'.' characters."
        )
    return name


def _check_data_type(name: str, data_type: Any) -> str:
    """The base type, after checking `Base` or `Base.label` and its length."""
    if data_type is None or data_type == "":
        raise _invalid(
            f"Message (user) attribute '{name}' must contain a non-empty message attribute type."
        )
    if not isinstance(data_type, str):
        raise _invalid(f"Message (user) attribute '{name}' has a data type that is not a string.")
    base, dot, label = data_type.partition(".")
    if base not in _BASE_TYPES or (dot and not _TYPE_LABEL.fullmatch(label)):
        raise _invalid(
            f"The type of message (user) attribute '{name}' is invalid. You must use only the "
            "following supported type prefixes: Binary, Number, String."
        )
    if len(data_type) > attribute_type_chars_max:
        raise _invalid(
            f"Message (user) attribute '{name}' has a data type longer than "
            f"{attribute_type_chars_max} characters."
        )
    return base


def _check_number(name: str, text: str) -> None:
    """SQS Numbers: decimal, at most 38 significant digits, within [-10^128, 10^126].

    The cast message is SQS's own (a recorded boto3 SendMessage against SQS). The range and
    precision message is okuri's wording: no recording of SQS refusing either was found.
    """
    cannot_cast = _invalid(
        f"Can't cast the value of message (user) attribute '{name}' to a number."
    )
    parts = _NUMBER.fullmatch(text)
    if parts is None:
        raise cannot_cast
    _sign, whole, fraction, exponent = parts.groups()
    fraction = fraction or ""
    if not whole and not fraction:
        raise cannot_cast
    if exponent is not None and len(exponent.lstrip("+-")) > _number_exponent_digits_max:
        raise cannot_cast
    significant = (whole + fraction).strip("0")
    try:
        value = Decimal(text)
    except InvalidOperation:  # pragma: no cover - the pattern admits only what Decimal parses
        raise cannot_cast from None
    if len(significant) > number_digits_max or not number_value_min <= value <= number_value_max:
        raise _invalid(
            f"Value {text} of message (user) attribute '{name}' is out of range: a Number holds at "
            f"most {number_digits_max} significant digits, from -10^128 to 10^126."
        )


def _decode_binary(name: str, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if not isinstance(value, str):
        raise _invalid(
            f"Message (user) attribute '{name}' has a BinaryValue that is not base64 text."
        )
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise _invalid(
            f"Value for parameter MessageAttributes.{name}.BinaryValue is invalid. "
            "Reason: not valid base64."
        ) from None


def _check_attribute_value(
    name: str, value: Any, operation: str, *, kind: str = "user"
) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise _invalid(f"Message ({kind}) attribute '{name}' must be an object.")
    for list_member in ("StringListValues", "BinaryListValues"):
        if value.get(list_member) is not None:
            # SQS reserves these members and refuses them, even empty, with this code and text
            # (recorded from SQS by shoryuken's users, aws-sdk-sqs 1.70, 2024).
            raise SqsInputError(
                "UnsupportedOperation",
                f"Message attribute list values in {operation} operation are not supported.",
            )
    data_type = value.get("DataType")
    base = _check_data_type(name, data_type)
    string_value = value.get("StringValue")
    binary_value = value.get("BinaryValue")
    if base == "Binary":
        if string_value is not None:
            raise _invalid(
                f"Message ({kind}) attribute '{name}' of type 'Binary' "
                "must not carry a StringValue."
            )
        decoded = b"" if binary_value is None else _decode_binary(name, binary_value)
        if not decoded:
            raise _invalid(
                f"Message ({kind}) attribute '{name}' "
                "must contain a non-empty value of type 'Binary'."
            )
        return {"DataType": data_type, "BinaryValue": decoded}
    if binary_value is not None:
        raise _invalid(
            f"Message ({kind}) attribute '{name}' of type '{base}' must not carry a BinaryValue."
        )
    if string_value is not None and not isinstance(string_value, str):
        raise _invalid(
            f"Message ({kind}) attribute '{name}' has a StringValue that is not a string."
        )
    if not string_value:
        # SQS's own text (recorded in LocalStack's AWS-validated snapshots, 2023).
        raise _invalid(
            f"Message ({kind}) attribute '{name}' must contain a non-empty value of type '{base}'."
        )
    bad = _first_forbidden(string_value)
    if bad is not None:
        # SQS answers InvalidParameterValue here, not InvalidMessageContents; text unverified.
        raise _invalid(
            f"Invalid binary character '#x{bad:X}' was found in the value of message ({kind}) "
            f"attribute '{name}', the set of allowed characters is {ALLOWED_CHARACTERS}."
        )
    if base == "Number":
        _check_number(name, string_value)
    return {"DataType": data_type, "StringValue": string_value}


def validate_message_group_id(group_id: str | None) -> None:
    """A MessageGroupId, when given: SQS checks its form on standard queues too (recorded: "",
    129 characters and "group 123" are refused; "test" is accepted and returned)."""
    if group_id is not None:
        check_printable_id("MessageGroupId", group_id)


def check_printable_id(name: str, value: Any) -> str:
    """One of SQS's ids made of 1-128 ASCII letters, digits and punctuation (`name` says which;
    the rule is the engine's, shared with the native surface; the text is SQS's, recorded)."""
    if not isinstance(value, str) or not is_fifo_id(value):
        raise _invalid(
            f"Value {str(value)[:200]} for parameter {name} is invalid. Reason: "
            f"{name} can only include alphanumeric and punctuation characters. "
            "1 to 128 in length."
        )
    return value


def validate_message_attributes(
    attrs: Any, field: str = "MessageAttributes", *, operation: str = "SendMessage"
) -> dict[str, dict[str, Any]]:
    """Check a JSON-decoded MessageAttributes map as SQS does; return it normalised.

    `field` names the request member in messages; `operation` is quoted by SQS's refusal of
    list values ("... in SendMessageBatch operation are not supported.").
    """
    if attrs is None:
        return {}
    if not isinstance(attrs, Mapping):
        raise _invalid(f"Value for parameter {field} is invalid. Reason: not a map of attributes.")
    if len(attrs) > attributes_per_message_max:
        # SQS's own text.
        raise _invalid(
            f"Number of message attributes [{len(attrs)}] exceeds the allowed maximum "
            f"[{attributes_per_message_max}]."
        )
    out: dict[str, dict[str, Any]] = {}
    for name, value in attrs.items():
        checked = _check_attribute_name(name)
        out[checked] = _check_attribute_value(checked, value, operation)
    return out


def message_attributes_bytes(attrs: Mapping[str, Mapping[str, Any]]) -> int:
    """What normalised attributes add to a message's size: name, data type and value bytes.

    SQS counts these with the body against the queue's MaximumMessageSize. System attributes
    do not count (the API model says so of MessageSystemAttributes).
    """
    total = 0
    for name, attr in attrs.items():
        total += len(name.encode("utf-8")) + len(str(attr["DataType"]).encode("utf-8"))
        string_value = attr.get("StringValue")
        if string_value is not None:
            total += len(str(string_value).encode("utf-8"))
        else:
            total += len(bytes(attr["BinaryValue"]))
    return total


# --- system attributes --------------------------------------------------------------------------


def validate_system_attributes(
    attrs: Any, *, operation: str = "SendMessage"
) -> dict[str, dict[str, Any]]:
    """Check MessageSystemAttributes: only AWSTraceHeader, of type String, is accepted.

    The model's key enum (MessageSystemAttributeNameForSends) holds AWSTraceHeader alone and its
    documentation says its type must be String. The refusal texts are okuri's: no recording of
    SQS refusing another name was found. The X-Ray header's inner format is not checked.
    """
    if attrs is None:
        return {}
    if not isinstance(attrs, Mapping):
        raise _invalid(
            "Value for parameter MessageSystemAttributes is invalid. "
            "Reason: not a map of attributes."
        )
    out: dict[str, dict[str, Any]] = {}
    for name, value in attrs.items():
        if name != TRACE_HEADER:
            raise _invalid(
                f"Message system attribute name '{name}' is invalid. "
                f"The only supported message system attribute is {TRACE_HEADER}."
            )
        if isinstance(value, Mapping) and value.get("DataType") != "String":
            raise _invalid(f"Message system attribute '{TRACE_HEADER}' must be of type 'String'.")
        out[name] = _check_attribute_value(name, value, operation, kind="system")
    return out


def check_system_attribute_names(names: Any) -> list[str]:
    """Check ReceiveMessage's AttributeNames / MessageSystemAttributeNames; return them as a list.

    Only the shape is refused (a non-list, or a non-string entry). Names SQS does not define are
    ignored, not refused: the API model types AttributeNames as QueueAttributeName, so every SDK
    lets callers send queue attribute names (e.g. "Policy") there, and SQS's own documentation
    lists SqsManagedSseEnabled as a valid value. Refusing either would fail calls SQS accepts.
    No recording of SQS refusing an unknown name here was found (unverified either way).
    """
    if names is None:
        return []
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise _invalid(
            "Value for parameter AttributeNames is invalid. Reason: not a list of names."
        )
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise _invalid(
                "Value for parameter AttributeNames is invalid. Reason: not a list of names."
            )
        out.append(name)
    return out


def build_system_attributes(
    *,
    sender_id: str,
    sent_ms: int,
    receive_count: int,
    first_receive_ms: int,
    trace_header: str | None = None,
    group_id: str | None = None,
    dedup_id: str | None = None,
    sequence_number: str | None = None,
    dead_letter_source_arn: str | None = None,
) -> dict[str, str]:
    """A received message's system attributes as SQS renders them (timestamps in epoch ms).

    The optional ones are present only when they apply: MessageGroupId on fair standard queues,
    DeadLetterQueueSourceArn on messages a redrive moved, the FIFO ones never in okuri today.
    """
    out = {
        "SenderId": sender_id,
        "SentTimestamp": str(sent_ms),
        "ApproximateReceiveCount": str(receive_count),
        "ApproximateFirstReceiveTimestamp": str(first_receive_ms),
    }
    optional = {
        "SequenceNumber": sequence_number,
        "MessageDeduplicationId": dedup_id,
        "MessageGroupId": group_id,
        "AWSTraceHeader": trace_header,
        "DeadLetterQueueSourceArn": dead_letter_source_arn,
    }
    out.update({k: v for k, v in optional.items() if v is not None})
    return out


def select_system_attributes(
    available: Mapping[str, str], requested: Iterable[str] | None
) -> dict[str, str]:
    """The system attributes a ReceiveMessage asked for, in SQS's order.

    Pass the union of AttributeNames and MessageSystemAttributeNames: SQS answers the union when
    both are given (recorded: MessageSystemAttributeNames=[All] with AttributeNames=[SenderId]
    returns all). "All" selects every attribute present; a name the message lacks (e.g.
    SequenceNumber on a standard queue) or that SQS does not define is silently skipped.
    """
    wanted = set(requested or ())
    if not wanted:
        return {}
    take_all = "All" in wanted
    out = {
        name: available[name]
        for name in SYSTEM_ATTRIBUTE_NAMES
        if name in available and (take_all or name in wanted)
    }
    return out


# --- selection and encoding ---------------------------------------------------------------------


def select_message_attributes(
    attrs: Mapping[str, Mapping[str, Any]], requested: Iterable[str] | None
) -> dict[str, dict[str, Any]]:
    """The user attributes a ReceiveMessage's MessageAttributeNames asked for.

    "All", ".*" and "*" select every attribute; "prefix.*" selects names starting with
    "prefix" (SQS was recorded returning both "Hello" and "Help.Me" for "Hel.*"); any other
    entry is an exact name. Names that match nothing, or could never be valid, select nothing
    and are not refused (recorded: "AWS." and "..foo" return the message without attributes).
    """
    wanted = list(requested or ())
    if not wanted:
        return {}
    if _ALL_MESSAGE_ATTRIBUTES.intersection(wanted):
        return {name: dict(attr) for name, attr in attrs.items()}
    exact = {w for w in wanted if not w.endswith(".*")}
    prefixes = tuple(w[:-2] for w in wanted if w.endswith(".*"))
    return {
        name: dict(attr)
        for name, attr in attrs.items()
        if name in exact or (prefixes and name.startswith(prefixes))
    }


def encode_message_attributes(attrs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Normalised attributes as JSON 1.0 answers them: BinaryValue bytes become base64 text."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in attrs.items():
        value = dict(attr)
        binary = value.get("BinaryValue")
        if isinstance(binary, bytes | bytearray | memoryview):
            value["BinaryValue"] = base64.b64encode(bytes(binary)).decode("ascii")
        out[name] = value
    return out


def decode_message_attributes(attrs: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The inverse of `encode_message_attributes`, for attributes okuri encoded and stored."""
    out: dict[str, dict[str, Any]] = {}
    for name, attr in attrs.items():
        value = dict(attr)
        binary = value.get("BinaryValue")
        if isinstance(binary, str):
            value["BinaryValue"] = base64.b64decode(binary)
        out[name] = value
    return out
