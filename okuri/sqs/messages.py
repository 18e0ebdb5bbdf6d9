"""SQS's rules for one message: body characters, ids, the checksums of body and attributes,
and the system attributes a received message carries and which of them a ReceiveMessage asked
to see. The attribute maps a sender attaches are checked in `okuri.sqs.message_attributes`.

Everything here is pure (no I/O, clock or randomness) and fails with one error type,
`SqsInputError`, carrying the short AWS error code the surface answers with. The rules follow
SQS's published API model (botocore's `sqs/2012-11-05/service-2.json`) and, where the model is
silent, the answers SQS itself was recorded giving; choices made without such evidence are
marked "unverified" where they are made.

Checksums. `md5_of_message_attributes` is the digest SQS returns as MD5OfMessageAttributes and
that the SDKs recompute to verify it: for each attribute in name order, the UTF-8 name and then
the UTF-8 data type, each behind a 4-byte big-endian length; one transport byte (1 for a string
value, 2 for a binary one); then the value behind its 4-byte length. On receive, SQS digests
only the attributes it returns, so callers digest the output of `select_message_attributes` (in
`message_attributes`), and omit the member entirely when that selection is empty.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from okuri.engine import is_fifo_id
from okuri.sqs.errors import SqsError


class SqsInputError(SqsError):
    """A request input SQS would refuse (HTTP 400, the sender's fault); `code` is the AWS error
    code's short name. An SqsError, so it leaves the surface as any other does."""


def invalid_input(message: str) -> SqsInputError:
    """An InvalidParameterValue refusal (the code most input checks answer)."""
    return SqsInputError("InvalidParameterValue", message)


ALLOWED_CHARACTERS = "#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]"
_FORBIDDEN_CHARACTER = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

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


# --- body ---------------------------------------------------------------------------------------


def md5_of_body(body: str) -> str:
    """MD5OfMessageBody: hex MD5 of the body's UTF-8 bytes."""
    return hashlib.md5(body.encode("utf-8"), usedforsecurity=False).hexdigest()


def first_forbidden(text: str) -> int | None:
    """The code point of `text`'s first character outside ALLOWED_CHARACTERS, if any."""
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
    bad = first_forbidden(body)
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


# --- ids ----------------------------------------------------------------------------------------


def validate_message_group_id(group_id: str | None) -> None:
    """A MessageGroupId, when given: SQS checks its form on standard queues too (recorded: "",
    129 characters and "group 123" are refused; "test" is accepted and returned)."""
    if group_id is not None:
        check_printable_id("MessageGroupId", group_id)


def check_printable_id(name: str, value: Any) -> str:
    """One of SQS's ids made of 1-128 ASCII letters, digits and punctuation (`name` says which;
    the rule is the engine's, shared with the native surface; the text is SQS's, recorded)."""
    if not isinstance(value, str) or not is_fifo_id(value):
        raise invalid_input(
            f"Value {str(value)[:200]} for parameter {name} is invalid. Reason: "
            f"{name} can only include alphanumeric and punctuation characters. "
            "1 to 128 in length."
        )
    return value


# --- system attributes --------------------------------------------------------------------------


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
        raise invalid_input(
            "Value for parameter AttributeNames is invalid. Reason: not a list of names."
        )
    out: list[str] = []
    for name in names:
        if not isinstance(name, str):
            raise invalid_input(
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
