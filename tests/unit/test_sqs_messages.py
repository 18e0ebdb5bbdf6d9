"""SQS message rules: body characters, attribute validation, checksums, receive-side selection.

Checksums are held to three authorities: digests SQS itself returned (the AWS documentation's
vector and digests recorded from SQS in LocalStack's AWS-validated snapshots), a reference
implementation written here from the algorithm's description, and moto's independent one.
"""

from __future__ import annotations

import base64
import hashlib
import random
from typing import Any

import pytest

from okuri.sqs import message_attributes as ma
from okuri.sqs import messages as m
from okuri.sqs.messages import SqsInputError

# --- an independent reference for the attribute digest, from the algorithm's description ------


def reference_md5(attrs: dict[str, tuple[str, str | bytes]]) -> str:
    """name -> (DataType, value): str values travel as strings (byte 1), bytes as binary (2)."""
    stream = bytearray()

    def field(data: bytes) -> None:
        stream.extend(len(data).to_bytes(4, "big"))
        stream.extend(data)

    for name in sorted(attrs):
        data_type, value = attrs[name]
        field(name.encode("utf-8"))
        field(data_type.encode("utf-8"))
        if isinstance(value, str):
            stream.append(1)
            field(value.encode("utf-8"))
        else:
            stream.append(2)
            field(value)
    return hashlib.md5(bytes(stream)).hexdigest()


def as_wire(attrs: dict[str, tuple[str, str | bytes]]) -> dict[str, dict[str, Any]]:
    """The same attributes as boto3 sends them over JSON 1.0 (binary as base64 text)."""
    out: dict[str, dict[str, Any]] = {}
    for name, (data_type, value) in attrs.items():
        if isinstance(value, str):
            out[name] = {"DataType": data_type, "StringValue": value}
        else:
            out[name] = {"DataType": data_type, "BinaryValue": base64.b64encode(value).decode()}
    return out


TRACEPARENT = b"traceparent\x1e00-774062d6c37081a5a0b9b5b88e30627c-2d2482211f6489da-01"

# Digests SQS returned for these attributes. The first is the AWS documentation's published
# vector; the others were recorded from SQS (LocalStack's AWS-validated test_sqs snapshots).
PUBLISHED_VECTORS: list[tuple[str, dict[str, tuple[str, str | bytes]], str]] = [
    (
        "aws-docs",
        {"attribName1": ("String", "attribValue 1")},
        "19e27d4e946b072f3f58da80d94fd778",
    ),
    (
        "three-strings",
        {
            "Help.Me": ("String", "Me"),
            "Hello": ("String", "There"),
            "General": ("String", "Kenobi"),
        },
        "4c360f3fdafd970e05fae2f149d997f5",
    ),
    (
        "two-strings",
        {"General": ("String", "Kenobi"), "Hello": ("String", "There")},
        "fca026605781cb4126a1e9044df24232",
    ),
    ("one-string", {"Hello": ("String", "There")}, "a311262e065454b75da111d535b8dacd"),
    (
        "dotted-name",
        {"Hello": ("String", "There"), "Help.Me": ("String", "Me")},
        "83fee93c1bcd8b9a5a923ffacdc636c7",
    ),
    ("foo-bar", {"Foo": ("String", "Bar")}, "ae7155c6026991b6d54b11589678bf9c"),
    ("single-char", {"k": ("String", "x")}, "a45daa70926828a2f0a1db3418e6feb4"),
    (
        "my-attribute",
        {"MyAttribute": ("String", "foobar")},
        "adb59cd4678ea5a855436b949cd07ab6",
    ),
    (
        "number",
        {"timestamp": ("Number", "1493147359900")},
        "235c5c510d26fb653d073faed50ae77c",
    ),
    ("binary", {"attr1": ("Binary", TRACEPARENT)}, "8cbe4db156db8a94db8b801b7addb984"),
]


@pytest.mark.parametrize(
    ("attrs", "expected"),
    [pytest.param(a, e, id=i) for i, a, e in PUBLISHED_VECTORS],
)
def test_attribute_digest_matches_what_sqs_returned(
    attrs: dict[str, tuple[str, str | bytes]], expected: str
) -> None:
    normalised = ma.validate_message_attributes(as_wire(attrs))
    assert m.md5_of_message_attributes(normalised) == expected
    assert reference_md5(attrs) == expected  # the reference itself is right


def random_attributes(rng: random.Random) -> dict[str, tuple[str, str | bytes]]:
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
    text_pool = "aZ09 \t\n\r~é€漢\U0001f600\ud7ff\ue000\ufffd\U0010ffff"
    out: dict[str, tuple[str, str | bytes]] = {}
    for _ in range(rng.randint(1, ma.attributes_per_message_max)):
        name = "".join(rng.choice(letters) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.3:
            name += "." + "".join(rng.choice(letters) for _ in range(rng.randint(1, 5)))
        if name.lower().startswith(("aws", "amazon")):
            name = "x" + name
        kind = rng.choice(["String", "Number", "Binary"])
        data_type = kind + (rng.choice(["", ".custom", ".a-b_c.d"]))
        value: str | bytes
        if kind == "String":
            value = "".join(rng.choice(text_pool) for _ in range(rng.randint(1, 40)))
        elif kind == "Number":
            value = rng.choice(
                [str(rng.randint(-(10**20), 10**20)), f"{rng.uniform(-1e6, 1e6):.6f}", "1e5"]
            )
        else:
            value = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
        out[name] = (data_type, value)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_attribute_digest_agrees_with_independent_implementations(seed: int) -> None:
    attrs = random_attributes(random.Random(seed))
    normalised = ma.validate_message_attributes(as_wire(attrs))
    ours = m.md5_of_message_attributes(normalised)
    assert ours == reference_md5(attrs)
    moto_models = pytest.importorskip("moto.sqs.models")
    moto_message = moto_models.Message("id", "body")
    moto_message.message_attributes = normalised
    assert ours == moto_message.attribute_md5


def test_attribute_digest_ignores_input_order_and_changes_with_any_byte() -> None:
    a = {
        "b": {"DataType": "String", "StringValue": "1"},
        "a": {"DataType": "Number", "StringValue": "2"},
    }
    b = dict(reversed(list(a.items())))
    assert m.md5_of_message_attributes(a) == m.md5_of_message_attributes(b)
    c = {**a, "a": {"DataType": "Number.x", "StringValue": "2"}}
    assert m.md5_of_message_attributes(a) != m.md5_of_message_attributes(c)


def test_binary_and_string_of_the_same_bytes_digest_differently() -> None:
    as_string = {"a": {"DataType": "String", "StringValue": "xy"}}
    as_binary = {"a": {"DataType": "String", "BinaryValue": b"xy"}}
    assert m.md5_of_message_attributes(as_string) != m.md5_of_message_attributes(as_binary)


def test_system_attribute_digest_uses_the_same_algorithm() -> None:
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
    system = ma.validate_system_attributes(
        {"AWSTraceHeader": {"DataType": "String", "StringValue": header}}
    )
    assert m.md5_of_system_attributes(system) == reference_md5(
        {"AWSTraceHeader": ("String", header)}
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("message", "78e731027d8fd50ed642340b7c9a63b3"),  # recorded from SQS
        ("msg", "6e2baaf3b97dbeef01c0043275f9a0e7"),  # recorded from SQS
        ("test", "098f6bcd4621d373cade4e832627b4f6"),  # recorded from SQS
        ("é€漢\U0001f600", hashlib.md5("é€漢\U0001f600".encode()).hexdigest()),
    ],
)
def test_body_digest_is_md5_of_utf8(body: str, expected: str) -> None:
    assert m.md5_of_body(body) == expected


# --- body ---------------------------------------------------------------------------------------

ALLOWED_EDGES = ["\t", "\n", "\r", " ", "\ud7ff", "\ue000", "\ufffd", "\U00010000", "\U0010ffff"]
FORBIDDEN_EDGES = [
    ("\x00", "#x0"),
    ("\x08", "#x8"),
    ("\x0b", "#xB"),
    ("\x1f", "#x1F"),
    ("\ud800", "#xD800"),
    ("\udfff", "#xDFFF"),
    ("\ufffe", "#xFFFE"),
    ("\uffff", "#xFFFF"),
]


@pytest.mark.parametrize("char", ALLOWED_EDGES)
def test_body_accepts_every_edge_of_the_allowed_set(char: str) -> None:
    m.validate_body(f"a{char}b")


@pytest.mark.parametrize(("char", "shown"), FORBIDDEN_EDGES)
def test_body_refuses_characters_outside_the_allowed_set(char: str, shown: str) -> None:
    with pytest.raises(SqsInputError) as err:
        m.validate_body(f"ok{char}")
    assert err.value.code == "InvalidMessageContents"
    assert f"'{shown}'" in err.value.message


@pytest.mark.parametrize("body", ["", None])
def test_empty_or_absent_body_is_a_missing_parameter(body: str | None) -> None:
    with pytest.raises(SqsInputError) as err:
        m.validate_body(body)
    assert err.value.code == "MissingParameter"
    assert err.value.message == "The request must contain the parameter MessageBody."


def test_non_string_body_is_an_invalid_value() -> None:
    with pytest.raises(SqsInputError) as err:
        m.validate_body(12)
    assert err.value.code == "InvalidParameterValue"


# --- user attributes ----------------------------------------------------------------------------


def s(value: str, data_type: str = "String") -> dict[str, Any]:
    return {"DataType": data_type, "StringValue": value}


def refused(attrs: Any, code: str = "InvalidParameterValue") -> str:
    with pytest.raises(SqsInputError) as err:
        ma.validate_message_attributes(attrs)
    assert err.value.code == code
    return err.value.message


def test_ten_attributes_pass_and_eleven_are_refused_with_sqs_text() -> None:
    ten = {f"a{i}": s("v") for i in range(10)}
    assert len(ma.validate_message_attributes(ten)) == 10
    message = refused({**ten, "a10": s("v")})
    assert message == "Number of message attributes [11] exceeds the allowed maximum [10]."


@pytest.mark.parametrize(
    "name",
    [
        *("a", "A-b_c.d", "x" * 256, "aws", "awsx", "Amazon", "amazonx", "my.aws.thing"),
        *("0", "-", "_", "é", "attr.1øßä", "Ärger", "名前"),
    ],
)
def test_attribute_names_accepted(name: str) -> None:
    assert list(ma.validate_message_attributes({name: s("v")})) == [name]


@pytest.mark.parametrize(
    "name",
    [
        "",
        "x" * 257,
        "a b",
        "a/b",
        "a:b",
        "Invalid-§-attr",
        "a²",
        "a€",
        "AWS.x",
        "aws.x",
        "Aws.x",
        "Amazon.x",
        "AMAZON.x",
        "amazon.x",
        ".a",
        "a.",
        "a..b",
        ".",
    ],
)
def test_attribute_names_refused(name: str) -> None:
    refused({name: s("v")})


@pytest.mark.parametrize(
    "data_type",
    ["String", "Number", "Binary", "String.custom", "Number.int", "Binary.gif", "String.a.b-c_D9"],
)
def test_data_types_accepted(data_type: str) -> None:
    value: dict[str, Any] = (
        {"DataType": data_type, "BinaryValue": "AQ=="}
        if data_type.startswith("Binary")
        else s("1", data_type)
    )
    assert ma.validate_message_attributes({"a": value})["a"]["DataType"] == data_type


def test_data_type_length_bound_is_256() -> None:
    at_bound = "String." + "x" * (ma.attribute_type_chars_max - len("String."))
    ma.validate_message_attributes({"a": s("v", at_bound)})
    refused({"a": s("v", at_bound + "x")})


@pytest.mark.parametrize(
    "data_type", ["string", "Str", "StringX", "String.", "String.bad label", "Binary.é", "Text"]
)
def test_data_types_refused_with_sqs_text(data_type: str) -> None:
    message = refused({"a": s("v", data_type)})
    assert message == (
        "The type of message (user) attribute 'a' is invalid. You must use only the following "
        "supported type prefixes: Binary, Number, String."
    )


@pytest.mark.parametrize("value", [{"StringValue": "v"}, {"DataType": "", "StringValue": "v"}])
def test_missing_data_type_is_refused(value: dict[str, Any]) -> None:
    refused({"a": value})


@pytest.mark.parametrize(
    "value",
    [
        {"DataType": "String"},
        {"DataType": "String", "StringValue": ""},
        {"DataType": "String", "StringValue": None},
        {"DataType": "Number.x"},
        {"DataType": "Binary"},
        {"DataType": "Binary", "BinaryValue": ""},
        {"DataType": "Binary.x", "BinaryValue": None},
    ],
)
def test_empty_or_missing_values_are_refused(value: dict[str, Any]) -> None:
    message = refused({"a": value})
    base = value["DataType"].partition(".")[0]
    assert (
        message == f"Message (user) attribute 'a' must contain a non-empty value of type '{base}'."
    )


@pytest.mark.parametrize(
    "value",
    [
        {"DataType": "String", "StringValue": "v", "BinaryValue": "AQ=="},
        {"DataType": "Binary", "StringValue": "v", "BinaryValue": "AQ=="},
        {"DataType": "Binary", "StringValue": "v"},
        {"DataType": "Number", "BinaryValue": "AQ=="},
        {"DataType": "String", "StringValue": 5},
        "just a string",
    ],
)
def test_values_that_do_not_fit_their_type_are_refused(value: Any) -> None:
    refused({"a": value})


@pytest.mark.parametrize("member", ["StringListValues", "BinaryListValues"])
@pytest.mark.parametrize("listed", [[], ["x"]])
def test_list_values_are_refused_as_sqs_refuses_them(member: str, listed: list[str]) -> None:
    with pytest.raises(SqsInputError) as err:
        ma.validate_message_attributes(
            {"a": {**s("v"), member: listed}}, operation="SendMessageBatch"
        )
    assert err.value.code == "UnsupportedOperation"
    assert err.value.message == (
        "Message attribute list values in SendMessageBatch operation are not supported."
    )


def test_list_members_given_as_null_are_ignored() -> None:
    out = ma.validate_message_attributes(
        {"a": {**s("v"), "StringListValues": None, "BinaryListValues": None}}
    )
    assert out == {"a": s("v")}


def test_binary_values_are_decoded_from_base64_and_bytes_pass_through() -> None:
    out = ma.validate_message_attributes(
        {
            "b64": {"DataType": "Binary", "BinaryValue": base64.b64encode(b"\x00\xff").decode()},
            "raw": {"DataType": "Binary.raw", "BinaryValue": b"\x01"},
        }
    )
    assert out == {
        "b64": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
        "raw": {"DataType": "Binary.raw", "BinaryValue": b"\x01"},
    }


@pytest.mark.parametrize("text", ["not base64!", "AQ=", "A", "AQ==\n", "####"])
def test_invalid_base64_is_refused(text: str) -> None:
    refused({"a": {"DataType": "Binary", "BinaryValue": text}})


@pytest.mark.parametrize("char", ["\x00", "\x1f", "\ud800", "\uffff"])
def test_string_values_outside_the_allowed_set_are_invalid_parameters(char: str) -> None:
    message = refused({"a": s(f"x{char}")})
    assert "attribute 'a'" in message


NUMBERS_ACCEPTED = [
    "0",
    "-1",
    "+1",
    "1.5",
    ".5",
    "5.",
    "-0.000001",
    "1e5",
    "1E-5",
    "00012",
    "9" * 38,
    "1" + "0" * 126,  # 10^126 written out: one significant digit
    "1e126",
    "-1e128",
    "1" + "0" * 60 + "." + "0" * 60,
    "1" * 19 + "." + "1" * 19,
]
NUMBERS_NOT_NUMBERS = [
    "abc",
    " 1",
    "1 ",
    "0x10",
    "1_000",
    "NaN",
    "Infinity",
    "1e",
    ".",
    "-",
    "1e+",
    "1,5",
]
NUMBERS_OUT_OF_RANGE = [
    "9" * 39,
    "1." + "0" * 37 + "1",  # 39 significant digits
    "1.1e126",
    "1e127",
    "-1.1e128",
    "-1e129",
    "1e999999",
]


@pytest.mark.parametrize("text", NUMBERS_ACCEPTED)
def test_numbers_accepted(text: str) -> None:
    assert ma.validate_message_attributes({"n": s(text, "Number")}) == {"n": s(text, "Number")}


@pytest.mark.parametrize("text", NUMBERS_NOT_NUMBERS)
def test_non_numbers_refused_with_sqs_text(text: str) -> None:
    message = refused({"n": s(text, "Number.custom")})
    assert message == "Can't cast the value of message (user) attribute 'n' to a number."


@pytest.mark.parametrize("text", [*NUMBERS_OUT_OF_RANGE, "1e1234567"])
def test_numbers_beyond_precision_or_range_refused(text: str) -> None:
    refused({"n": s(text, "Number")})


@pytest.mark.parametrize("attrs", [None, {}])
def test_no_attributes_is_an_empty_map(attrs: Any) -> None:
    assert ma.validate_message_attributes(attrs) == {}


def test_a_non_map_is_refused_naming_the_field() -> None:
    with pytest.raises(SqsInputError) as err:
        ma.validate_message_attributes(["a"], field="Entries.1.MessageAttributes")
    assert "Entries.1.MessageAttributes" in err.value.message


def test_attribute_bytes_count_name_type_and_value() -> None:
    attrs = ma.validate_message_attributes(
        {"nämé"[:1] + "x": s("€uro"), "bin": {"DataType": "Binary.x", "BinaryValue": "AAEC"}}
    )
    expected = (len("nx") + len("String") + len("€uro".encode())) + (
        len("bin") + len("Binary.x") + 3
    )
    assert ma.message_attributes_bytes(attrs) == expected
    assert ma.message_attributes_bytes({}) == 0


# --- system attributes --------------------------------------------------------------------------


def test_trace_header_is_the_one_accepted_system_attribute() -> None:
    header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    out = ma.validate_system_attributes({"AWSTraceHeader": s(header)})
    assert out == {"AWSTraceHeader": s(header)}
    assert ma.validate_system_attributes(None) == {}
    assert ma.validate_system_attributes({}) == {}


@pytest.mark.parametrize(
    "attrs",
    [
        {"SenderId": s("x")},
        {"null": s("x")},
        {"AWSTraceHeader": s("x", "String.custom")},
        {"AWSTraceHeader": s("1", "Number")},
        {"AWSTraceHeader": {"DataType": "Binary", "BinaryValue": "AQ=="}},
        {"AWSTraceHeader": s("")},
        {"AWSTraceHeader": "Root=1"},
        ["AWSTraceHeader"],
    ],
)
def test_other_system_attributes_are_refused(attrs: Any) -> None:
    with pytest.raises(SqsInputError) as err:
        ma.validate_system_attributes(attrs)
    assert err.value.code == "InvalidParameterValue"


# --- receive-side selection ---------------------------------------------------------------------

STORED = {
    "Help.Me": s("Me"),
    "Hello": s("There"),
    "General": s("Kenobi"),
    "Blob": {"DataType": "Binary", "BinaryValue": b"\x01"},
}


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (None, set()),
        ([], set()),
        (["All"], set(STORED)),
        ([".*"], set(STORED)),
        (["*"], set(STORED)),
        (["Foo", "Help"], set()),
        (["Hello", "General"], {"Hello", "General"}),
        (["Foo", "Hello"], {"Hello"}),
        (["Hel.*"], {"Hello", "Help.Me"}),
        (["Help.*"], {"Help.Me"}),
        (["Help.Me.*"], {"Help.Me"}),  # a prefix match, as "Hel.*" is
        (["G.*", "Blob"], {"General", "Blob"}),
        (["AWS."], set()),
        (["..foo"], set()),
        (["hello"], set()),  # names are case-sensitive
    ],
)
def test_message_attribute_selection(requested: list[str] | None, expected: set[str]) -> None:
    chosen = ma.select_message_attributes(STORED, requested)
    assert set(chosen) == expected
    assert all(chosen[n] == STORED[n] for n in chosen)


def test_selection_digest_covers_only_what_is_returned() -> None:
    wire = {"General": s("Kenobi"), "Hello": s("There"), "Help.Me": s("Me")}
    chosen = ma.select_message_attributes(wire, ["Hello"])
    assert m.md5_of_message_attributes(chosen) == "a311262e065454b75da111d535b8dacd"


SYSTEM = m.build_system_attributes(
    sender_id="AIDAEXAMPLE",
    sent_ms=1_700_000_000_000,
    receive_count=2,
    first_receive_ms=1_700_000_000_500,
    trace_header="Root=1-abc",
    group_id="tenant-1",
    dead_letter_source_arn="arn:aws:sqs:us-east-1:123456789012:src",
)


def test_build_system_attributes_renders_strings_and_omits_what_does_not_apply() -> None:
    assert SYSTEM == {
        "SenderId": "AIDAEXAMPLE",
        "SentTimestamp": "1700000000000",
        "ApproximateReceiveCount": "2",
        "ApproximateFirstReceiveTimestamp": "1700000000500",
        "MessageGroupId": "tenant-1",
        "AWSTraceHeader": "Root=1-abc",
        "DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:123456789012:src",
    }
    plain = m.build_system_attributes(sender_id="x", sent_ms=1, receive_count=1, first_receive_ms=2)
    assert set(plain) == {
        "SenderId",
        "SentTimestamp",
        "ApproximateReceiveCount",
        "ApproximateFirstReceiveTimestamp",
    }


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (None, []),
        ([], []),
        (["All"], list(SYSTEM)),
        (["SenderId"], ["SenderId"]),
        (["SenderId", "SequenceNumber"], ["SenderId"]),  # recorded: absent names are skipped
        (["All", "SenderId"], list(SYSTEM)),  # the union of both request members
        (["NotAName", "Policy", "SqsManagedSseEnabled"], []),
        (["AWSTraceHeader", "MessageGroupId"], ["MessageGroupId", "AWSTraceHeader"]),
    ],
)
def test_system_attribute_selection(requested: list[str] | None, expected: list[str]) -> None:
    assert list(m.select_system_attributes(SYSTEM, requested)) == expected


def test_system_attribute_names_are_the_api_models() -> None:
    botocore_session = pytest.importorskip("botocore.session")
    model = botocore_session.get_session().get_service_model("sqs")
    enum = model.shape_for("MessageSystemAttributeName").enum
    assert set(m.SYSTEM_ATTRIBUTE_NAMES) == set(enum) - {"All"}
    assert model.shape_for("MessageSystemAttributeNameForSends").enum == [m.TRACE_HEADER]


@pytest.mark.parametrize(
    ("names", "expected"),
    [(None, []), ([], []), (["All", "Unknown", "Policy"], ["All", "Unknown", "Policy"])],
)
def test_system_attribute_names_check_only_the_shape(names: Any, expected: list[str]) -> None:
    assert m.check_system_attribute_names(names) == expected


@pytest.mark.parametrize("names", ["All", ["All", 3], {"All": 1}, 7])
def test_system_attribute_names_of_the_wrong_shape_are_refused(names: Any) -> None:
    with pytest.raises(SqsInputError) as err:
        m.check_system_attribute_names(names)
    assert err.value.code == "InvalidParameterValue"


# --- encoding -----------------------------------------------------------------------------------


def test_encode_turns_binary_into_base64_and_decode_reverses_it() -> None:
    normalised = ma.validate_message_attributes(
        {"s": s("v"), "b": {"DataType": "Binary.x", "BinaryValue": "AP8="}}
    )
    wire = ma.encode_message_attributes(normalised)
    assert wire == {"s": s("v"), "b": {"DataType": "Binary.x", "BinaryValue": "AP8="}}
    assert ma.decode_message_attributes(wire) == normalised
    assert normalised["b"]["BinaryValue"] == b"\x00\xff"  # the input was not mutated


@pytest.mark.parametrize("group_id", ["test", "a" * 128, "!~#{}", "g-1_2.3"])
def test_message_group_ids_accepted(group_id: str) -> None:
    m.validate_message_group_id(group_id)


@pytest.mark.parametrize("group_id", ["", "a" * 129, "group 123", "grøup", "a\tb"])
def test_message_group_ids_refused(group_id: str) -> None:
    with pytest.raises(m.SqsInputError) as err:
        m.validate_message_group_id(group_id)
    assert err.value.code == "InvalidParameterValue"
    assert err.value.message == (
        f"Value {group_id} for parameter MessageGroupId is invalid. Reason: MessageGroupId can "
        "only include alphanumeric and punctuation characters. 1 to 128 in length."
    )
