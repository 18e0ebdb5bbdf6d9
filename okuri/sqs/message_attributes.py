"""The attribute maps a sender attaches to a message: MessageAttributes (user attributes) and
MessageSystemAttributes, which share one value shape; the size user attributes add to a message;
which of them a ReceiveMessage asked to see; and their JSON encoding.

Shapes. `validate_message_attributes` takes the JSON-decoded `MessageAttributes` map (binary
values arrive base64-encoded, as boto3 sends them over JSON 1.0) and returns a normalised map,
`{name: {"DataType": ..., "StringValue": str}}` or `{name: {"DataType": ..., "BinaryValue": b""}}`.
The size and selection functions here, and the checksums in `okuri.sqs.messages`, take that
normalised form; `encode_message_attributes` turns it back into JSON-ready values.

Built on `okuri.sqs.messages` (its error type, character rule and system attribute names), whose
conventions it follows; `messages` does not import this module.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from okuri.sqs.messages import (
    ALLOWED_CHARACTERS,
    TRACE_HEADER,
    SqsInputError,
    first_forbidden,
    invalid_input,
)

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

_ATTRIBUTE_NAME_ASCII = frozenset(string.ascii_letters + string.digits + "_.-")
_RESERVED_PREFIXES = ("aws.", "amazon.")
_BASE_TYPES = ("String", "Number", "Binary")
_TYPE_LABEL = re.compile(r"[A-Za-z0-9_.\-]+")
_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")

_ALL_MESSAGE_ATTRIBUTES = frozenset({"All", ".*", "*"})


# --- user attributes ----------------------------------------------------------------------------


def _check_attribute_name(name: Any) -> str:
    if not isinstance(name, str) or name == "":
        raise invalid_input("The request must contain non-empty message attribute name.")
    if len(name) > attribute_name_chars_max:
        raise invalid_input(
            f"Message (user) attribute name '{name[:64]}...' is longer than "
            f"{attribute_name_chars_max} characters."
        )
    # Letters of any script count: SQS accepts "attr.1øßä" and refuses "§" (recorded).
    if not all(c in _ATTRIBUTE_NAME_ASCII or c.isalpha() for c in name):
        raise invalid_input(
            f"Message (user) attribute name '{name}' is invalid: it can only contain letters, "
            "digits, periods, hyphens and underscores."
        )
    if name.lower().startswith(_RESERVED_PREFIXES):
        raise invalid_input(
            f"Message (user) attribute name '{name}' is invalid: names beginning with 'AWS.' "
            "or 'Amazon.' are reserved for use by Amazon Web Services."
        )
    if name.startswith(".") or name.endswith("."):
        raise invalid_input(
            f"Message (user) attribute name '{name}' is invalid: it cannot start or end with '.'."
        )
    if ".." in name:
        raise invalid_input(
            f"Message (user) attribute name '{name}' is invalid: it cannot contain successive "
            "'.' characters."
        )
    return name


def _check_data_type(name: str, data_type: Any) -> str:
    """The base type, after checking `Base` or `Base.label` and its length."""
    if data_type is None or data_type == "":
        raise invalid_input(
            f"Message (user) attribute '{name}' must contain a non-empty message attribute type."
        )
    if not isinstance(data_type, str):
        raise invalid_input(
            f"Message (user) attribute '{name}' has a data type that is not a string."
        )
    base, dot, label = data_type.partition(".")
    if base not in _BASE_TYPES or (dot and not _TYPE_LABEL.fullmatch(label)):
        raise invalid_input(
            f"The type of message (user) attribute '{name}' is invalid. You must use only the "
            "following supported type prefixes: Binary, Number, String."
        )
    if len(data_type) > attribute_type_chars_max:
        raise invalid_input(
            f"Message (user) attribute '{name}' has a data type longer than "
            f"{attribute_type_chars_max} characters."
        )
    return base


def _check_number(name: str, text: str) -> None:
    """SQS Numbers: decimal, at most 38 significant digits, within [-10^128, 10^126].

    The cast message is SQS's own (a recorded boto3 SendMessage against SQS). The range and
    precision message is okuri's wording: no recording of SQS refusing either was found.
    """
    cannot_cast = invalid_input(
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
        raise invalid_input(
            f"Value {text} of message (user) attribute '{name}' is out of range: a Number holds at "
            f"most {number_digits_max} significant digits, from -10^128 to 10^126."
        )


def _decode_binary(name: str, value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if not isinstance(value, str):
        raise invalid_input(
            f"Message (user) attribute '{name}' has a BinaryValue that is not base64 text."
        )
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise invalid_input(
            f"Value for parameter MessageAttributes.{name}.BinaryValue is invalid. "
            "Reason: not valid base64."
        ) from None


def _check_attribute_value(
    name: str, value: Any, operation: str, *, kind: str = "user"
) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise invalid_input(f"Message ({kind}) attribute '{name}' must be an object.")
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
            raise invalid_input(
                f"Message ({kind}) attribute '{name}' of type 'Binary' "
                "must not carry a StringValue."
            )
        decoded = b"" if binary_value is None else _decode_binary(name, binary_value)
        if not decoded:
            raise invalid_input(
                f"Message ({kind}) attribute '{name}' "
                "must contain a non-empty value of type 'Binary'."
            )
        return {"DataType": data_type, "BinaryValue": decoded}
    if binary_value is not None:
        raise invalid_input(
            f"Message ({kind}) attribute '{name}' of type '{base}' must not carry a BinaryValue."
        )
    if string_value is not None and not isinstance(string_value, str):
        raise invalid_input(
            f"Message ({kind}) attribute '{name}' has a StringValue that is not a string."
        )
    if not string_value:
        # SQS's own text (recorded in LocalStack's AWS-validated snapshots, 2023).
        raise invalid_input(
            f"Message ({kind}) attribute '{name}' must contain a non-empty value of type '{base}'."
        )
    bad = first_forbidden(string_value)
    if bad is not None:
        # SQS answers InvalidParameterValue here, not InvalidMessageContents; text unverified.
        raise invalid_input(
            f"Invalid binary character '#x{bad:X}' was found in the value of message ({kind}) "
            f"attribute '{name}', the set of allowed characters is {ALLOWED_CHARACTERS}."
        )
    if base == "Number":
        _check_number(name, string_value)
    return {"DataType": data_type, "StringValue": string_value}


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
        raise invalid_input(
            f"Value for parameter {field} is invalid. Reason: not a map of attributes."
        )
    if len(attrs) > attributes_per_message_max:
        # SQS's own text.
        raise invalid_input(
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
        raise invalid_input(
            "Value for parameter MessageSystemAttributes is invalid. "
            "Reason: not a map of attributes."
        )
    out: dict[str, dict[str, Any]] = {}
    for name, value in attrs.items():
        if name != TRACE_HEADER:
            raise invalid_input(
                f"Message system attribute name '{name}' is invalid. "
                f"The only supported message system attribute is {TRACE_HEADER}."
            )
        if isinstance(value, Mapping) and value.get("DataType") != "String":
            raise invalid_input(
                f"Message system attribute '{TRACE_HEADER}' must be of type 'String'."
            )
        out[name] = _check_attribute_value(name, value, operation, kind="system")
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
