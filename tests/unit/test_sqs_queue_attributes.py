"""SQS queue attributes, names and tags: parsing into QueueAttrs, rendering GetQueueAttributes,
and what counts as "the same attributes" for an idempotent CreateQueue.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from okuri import limits
from okuri.core.state import QueueAttrs
from okuri.sqs import queue_attributes as qa
from okuri.sqs.queue_attributes import SqsInputError

DLQ_ARN = "arn:aws:sqs:eu-west-1:123456789012:my-dlq"


def arn_of(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:000000000000:{name}"


def render(attrs: QueueAttrs, names: list[str] | None = None) -> dict[str, str]:
    return qa.render_queue_attributes(
        attrs,
        ["All"] if names is None else names,
        arn=arn_of("q"),
        dlq_arn=arn_of,
        counts=(3, 2, 1),
        created_s=1_700_000_000,
        modified_s=1_700_000_100,
    )


def parse(
    attributes: Any, existing: QueueAttrs | None = None, for_create: bool = True
) -> QueueAttrs:
    return qa.parse_queue_attributes(attributes, existing, for_create)


def refused(attributes: Any, code: str, *, for_create: bool = True) -> str:
    with pytest.raises(SqsInputError) as err:
        parse(attributes, None, for_create)
    assert err.value.code == code
    return err.value.message


# --- integer attributes -------------------------------------------------------------------------

INTEGER_BOUNDS = [
    ("VisibilityTimeout", "visibility_timeout_s", 0, 43200),
    ("DelaySeconds", "delay_s", 0, 900),
    ("MaximumMessageSize", "max_message_bytes", 1024, 1048576),
    ("MessageRetentionPeriod", "retention_s", 60, 1209600),
    ("ReceiveMessageWaitTimeSeconds", "receive_wait_s", 0, 20),
]


@pytest.mark.parametrize(("name", "field", "lowest", "highest"), INTEGER_BOUNDS)
def test_integer_attributes_accept_both_bounds_and_render_back(
    name: str, field: str, lowest: int, highest: int
) -> None:
    for value in (lowest, highest):
        attrs = parse({name: str(value)})
        assert getattr(attrs, field) == value
        assert render(attrs, [name]) == {name: str(value)}


@pytest.mark.parametrize(("name", "field", "lowest", "highest"), INTEGER_BOUNDS)
@pytest.mark.parametrize("for_create", [True, False])
def test_integer_attributes_refuse_out_of_range_and_non_integers(
    name: str, field: str, lowest: int, highest: int, for_create: bool
) -> None:
    for raw in (str(lowest - 1), str(highest + 1), "abc", "1.5", "", " 1", "1 ", "1e3", "+1", "٣"):
        message = refused({name: raw}, "InvalidAttributeValue", for_create=for_create)
        assert message == f"Invalid value for the parameter {name}."


def test_integer_bounds_are_okuris_limits() -> None:
    assert limits.visibility_s_max == 43200
    assert limits.delay_s_max == 900
    assert limits.message_bytes_max == 1048576
    assert (limits.retention_s_min, limits.retention_s_max) == (60, 1209600)
    assert limits.wait_s_max == 20


@pytest.mark.parametrize("value", [30, 1.5, None, True, ["1"]])
def test_values_must_be_strings(value: Any) -> None:
    refused({"VisibilityTimeout": value}, "InvalidAttributeValue")


def test_set_applies_only_what_is_given_on_top_of_the_existing_queue() -> None:
    existing = QueueAttrs(visibility_timeout_s=45, delay_s=5, extra={"Policy": "{}", "tag:x": "y"})
    attrs = parse({"DelaySeconds": "7"}, existing, for_create=False)
    assert attrs == QueueAttrs(
        visibility_timeout_s=45, delay_s=7, extra={"Policy": "{}", "tag:x": "y"}
    )
    assert existing.delay_s == 5 and attrs.extra is not existing.extra


@pytest.mark.parametrize("attributes", [None, {}])
def test_no_attributes_leaves_defaults(attributes: Any) -> None:
    assert parse(attributes) == QueueAttrs()


def test_a_non_map_is_refused() -> None:
    refused(["VisibilityTimeout"], "InvalidParameterValue")


# --- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "Foo",
        "visibilitytimeout",
        "All",
        "QueueArn",
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
        "CreatedTimestamp",
        "LastModifiedTimestamp",
        "ContentBasedDeduplication",
    ],
)
@pytest.mark.parametrize("for_create", [True, False])
def test_unknown_and_read_only_names_are_unknown_attributes(name: str, for_create: bool) -> None:
    message = refused({name: "1"}, "InvalidAttributeName", for_create=for_create)
    assert message == f"Unknown Attribute {name}."


@pytest.mark.parametrize("name", ["DeduplicationScope", "FifoThroughputLimit"])
def test_fifo_throughput_attributes_answer_as_on_a_standard_queue(name: str) -> None:
    message = refused({name: "queue"}, "InvalidAttributeName")
    assert message == f"You can specify the {name} only when FifoQueue is set to true."


@pytest.mark.parametrize("value", ["true", "True", "TRUE"])
def test_fifo_queue_true_on_create_makes_a_fifo_queue(value: str) -> None:
    attrs = parse({"FifoQueue": value, "ContentBasedDeduplication": "true"})
    assert attrs.fifo
    assert qa.fifo_setting(attrs.extra, "ContentBasedDeduplication") == "true"
    assert qa.fifo_setting(attrs.extra, "DeduplicationScope") == "queue"


def test_fifo_name_and_attribute_go_together() -> None:
    assert qa.check_fifo_name("jobs.fifo", {"FifoQueue": "true"})
    assert not qa.check_fifo_name("jobs", {"FifoQueue": "false"})
    for name, attrs in (("jobs.fifo", {}), ("jobs", {"FifoQueue": "true"})):
        with pytest.raises(SqsInputError) as err:
            qa.check_fifo_name(name, attrs)
        assert err.value.code == "InvalidParameterValue"


def test_fifo_queue_false_on_create_is_an_unknown_attribute_as_sqs_answers_it() -> None:
    assert refused({"FifoQueue": "false"}, "InvalidAttributeName") == (
        "Unknown Attribute FifoQueue."
    )


def test_a_fifo_queues_type_stays_fixed_on_set() -> None:
    fifo = QueueAttrs(fifo=True)
    assert qa.parse_queue_attributes({"FifoQueue": "true"}, fifo, for_create=False) == fifo
    with pytest.raises(SqsInputError) as err:
        qa.parse_queue_attributes({"FifoQueue": "false"}, fifo, for_create=False)
    assert (err.value.code, err.value.message) == (
        "InvalidAttributeValue",
        "Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not "
        "supported.",
    )
    with pytest.raises(SqsInputError) as err:
        qa.parse_queue_attributes({"FifoQueue": "true"}, QueueAttrs(), for_create=False)
    assert err.value.code == "InvalidAttributeName"


def test_fifo_queue_with_another_value_on_create_is_an_invalid_value() -> None:
    assert refused({"FifoQueue": "maybe"}, "InvalidAttributeValue") == (
        "Invalid value for the parameter FifoQueue."
    )


@pytest.mark.parametrize("value", ["true", "false"])
def test_fifo_queue_on_set_is_unknown_as_on_an_sqs_standard_queue(value: str) -> None:
    message = refused({"FifoQueue": value}, "InvalidAttributeName", for_create=False)
    assert message == "Unknown Attribute FifoQueue."


def test_names_are_checked_before_values() -> None:
    refused({"VisibilityTimeout": "nope", "Bogus": "1"}, "InvalidAttributeName")


# --- RedrivePolicy ------------------------------------------------------------------------------


def redrive(count: Any, arn: Any = DLQ_ARN) -> str:
    return json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": count})


@pytest.mark.parametrize("count", [5, "5", 1, "1", 1000, "1000"])
def test_redrive_policy_takes_integer_or_string_counts(count: Any) -> None:
    attrs = parse({"RedrivePolicy": redrive(count)})
    assert attrs.dead_letter_queue == "my-dlq"
    assert attrs.max_receive_count == int(count)


def test_redrive_policy_parses_every_arn_component() -> None:
    policy = qa.parse_redrive_policy(redrive(3, "arn:aws-cn:sqs:cn-north-1:210987654321:d_l-q"))
    assert policy == qa.RedrivePolicy(
        "arn:aws-cn:sqs:cn-north-1:210987654321:d_l-q",
        "aws-cn",
        "cn-north-1",
        "210987654321",
        "d_l-q",
        3,
    )
    assert qa.parse_redrive_policy("") is None


def test_redrive_policy_renders_as_sqs_does_with_an_integer_count() -> None:
    attrs = parse({"RedrivePolicy": redrive("7")})
    rendered = render(attrs, ["RedrivePolicy"])["RedrivePolicy"]
    assert (
        rendered
        == '{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:my-dlq","maxReceiveCount":7}'
    )
    assert json.loads(rendered) == {"deadLetterTargetArn": arn_of("my-dlq"), "maxReceiveCount": 7}


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (
            redrive(0),
            "Invalid value for maxReceiveCount: 0, valid values are from 1 to 1000 both inclusive.",
        ),
        (redrive(1001), "Invalid value for maxReceiveCount: 1001"),
        (redrive("abc"), "Invalid value for maxReceiveCount: abc"),
        (redrive("1.5"), "Invalid value for maxReceiveCount: 1.5"),
        (redrive(2.0), "Invalid value for maxReceiveCount: 2.0"),
        (redrive(True), "Invalid value for maxReceiveCount: True"),
        (redrive(-1), "Invalid value for maxReceiveCount: -1"),
        (redrive(""), "Invalid value for maxReceiveCount"),
        (redrive(3, "dummy"), "Invalid value for deadLetterTargetArn."),
        (
            redrive(3, "arn:aws:sns:eu-west-1:123456789012:t"),
            "Invalid value for deadLetterTargetArn.",
        ),
        (
            redrive(3, "arn:aws:sqs:eu-west-1:12345678901:q"),
            "Invalid value for deadLetterTargetArn.",
        ),
        (
            redrive(3, "arn:aws:sqs:eu-west-1:123456789012:q.fifo"),
            "Dead-letter target must be of same type as the source.",
        ),
        (
            redrive(3, "arn:aws:sqs:eu-west-1:123456789012:" + "q" * 81),
            "Invalid value for deadLetterTargetArn.",
        ),
        (redrive(3, 42), "Invalid value for deadLetterTargetArn."),
        (
            json.dumps({"deadLetterTargetArn": DLQ_ARN}),
            "does not contain mandatory attribute: maxReceiveCount.",
        ),
        (
            json.dumps({"maxReceiveCount": 3}),
            "does not contain mandatory attribute: deadLetterTargetArn.",
        ),
        ("{not json", "Redrive policy is not a valid JSON map."),
        ("[1, 2]", "Redrive policy is not a valid JSON map."),
        ("null", "Redrive policy is not a valid JSON map."),
    ],
)
def test_bad_redrive_policies_are_invalid_parameter_values(raw: str, reason: str) -> None:
    message = refused({"RedrivePolicy": raw}, "InvalidParameterValue")
    assert message.startswith(f"Value {raw} for parameter RedrivePolicy is invalid. Reason: ")
    assert reason in message


def test_an_empty_redrive_policy_removes_it() -> None:
    existing = parse({"RedrivePolicy": redrive(4)})
    attrs = parse({"RedrivePolicy": ""}, existing, for_create=False)
    assert (attrs.dead_letter_queue, attrs.max_receive_count) == (None, None)
    assert "RedrivePolicy" not in render(attrs)


# --- the stored extras --------------------------------------------------------------------------

POLICY = json.dumps({"Version": "2012-10-17", "Statement": []})


def test_policy_is_stored_verbatim_and_removed_by_an_empty_string() -> None:
    attrs = parse({"Policy": POLICY})
    assert attrs.extra["Policy"] == POLICY
    assert render(attrs, ["Policy"]) == {"Policy": POLICY}
    cleared = parse({"Policy": ""}, attrs, for_create=False)
    assert "Policy" not in cleared.extra and render(cleared, ["Policy"]) == {}


@pytest.mark.parametrize("raw", ["{", "[]", "1", '"x"', "null"])
def test_a_policy_must_be_a_json_object(raw: str) -> None:
    assert (
        refused({"Policy": raw}, "InvalidAttributeValue")
        == "Invalid value for the parameter Policy."
    )


@pytest.mark.parametrize(
    "policy",
    [
        {"redrivePermission": "allowAll"},
        {"redrivePermission": "denyAll"},
        {"redrivePermission": "byQueue", "sourceQueueArns": [DLQ_ARN]},
        {"redrivePermission": "byQueue", "sourceQueueArns": [DLQ_ARN] * 10},
    ],
)
def test_redrive_allow_policies_accepted(policy: dict[str, Any]) -> None:
    raw = json.dumps(policy)
    attrs = parse({"RedriveAllowPolicy": raw})
    assert render(attrs, ["RedriveAllowPolicy"]) == {"RedriveAllowPolicy": raw}


@pytest.mark.parametrize(
    "policy",
    [
        {},
        {"redrivePermission": "allowSome"},
        {"redrivePermission": "byQueue"},
        {"redrivePermission": "byQueue", "sourceQueueArns": []},
        {"redrivePermission": "byQueue", "sourceQueueArns": [DLQ_ARN] * 11},
        {"redrivePermission": "byQueue", "sourceQueueArns": [1]},
        {"redrivePermission": "allowAll", "sourceQueueArns": [DLQ_ARN]},
        [],
    ],
)
def test_redrive_allow_policies_refused(policy: Any) -> None:
    message = refused({"RedriveAllowPolicy": json.dumps(policy)}, "InvalidParameterValue")
    assert "for parameter RedriveAllowPolicy is invalid" in message


def test_an_empty_redrive_allow_policy_removes_it() -> None:
    attrs = parse({"RedriveAllowPolicy": json.dumps({"redrivePermission": "denyAll"})})
    assert (
        "RedriveAllowPolicy" not in parse({"RedriveAllowPolicy": ""}, attrs, for_create=False).extra
    )


def test_sse_sqs_is_on_by_default_and_sse_kms_turns_it_off() -> None:
    assert render(QueueAttrs(), ["SqsManagedSseEnabled"]) == {"SqsManagedSseEnabled": "true"}
    kms = parse({"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "6000"})
    assert render(
        kms, ["KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"]
    ) == {
        "KmsMasterKeyId": "alias/aws/sqs",
        "KmsDataKeyReusePeriodSeconds": "6000",
        "SqsManagedSseEnabled": "false",
    }
    # Back to the defaults: both KMS attributes disappear; SSE-SQS stays off (recorded from SQS).
    cleared = parse(
        {"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"}, kms, for_create=False
    )
    assert render(
        cleared, ["KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"]
    ) == {"SqsManagedSseEnabled": "false"}


@pytest.mark.parametrize(
    ("raw", "stored"), [("true", "true"), ("false", "false"), ("TRUE", "true")]
)
def test_sqs_managed_sse_accepts_booleans(raw: str, stored: str) -> None:
    assert parse({"SqsManagedSseEnabled": raw}).extra["SqsManagedSseEnabled"] == stored


@pytest.mark.parametrize("raw", ["yes", "1", "", "t"])
def test_sqs_managed_sse_refuses_anything_else(raw: str) -> None:
    refused({"SqsManagedSseEnabled": raw}, "InvalidAttributeValue")


def test_sse_kms_and_sse_sqs_are_mutually_exclusive() -> None:
    message = refused(
        {"KmsMasterKeyId": "k", "SqsManagedSseEnabled": "true"}, "InvalidAttributeName"
    )
    assert message.startswith("You can use one type of server-side encryption (SSE) at one time.")
    kms = parse({"KmsMasterKeyId": "k"})
    with pytest.raises(SqsInputError):
        parse({"SqsManagedSseEnabled": "true"}, kms, for_create=False)
    assert (
        parse({"KmsMasterKeyId": "k", "SqsManagedSseEnabled": "false"}).extra[
            "SqsManagedSseEnabled"
        ]
        == "false"
    )


@pytest.mark.parametrize(
    ("raw", "ok"), [("60", True), ("86400", True), ("59", False), ("86401", False), ("x", False)]
)
def test_kms_data_key_reuse_period_bounds(raw: str, ok: bool) -> None:
    if ok:
        assert (
            parse({"KmsDataKeyReusePeriodSeconds": raw}).extra["KmsDataKeyReusePeriodSeconds"]
            == raw
        )
    else:
        refused({"KmsDataKeyReusePeriodSeconds": raw}, "InvalidAttributeValue")


# --- rendering ----------------------------------------------------------------------------------

DEFAULT_ALL = {
    # Exactly the keys SQS answers "All" with for a new standard queue (recorded), with its
    # defaults for the settable ones.
    "ApproximateNumberOfMessages": "3",
    "ApproximateNumberOfMessagesNotVisible": "2",
    "ApproximateNumberOfMessagesDelayed": "1",
    "CreatedTimestamp": "1700000000",
    "LastModifiedTimestamp": "1700000100",
    "QueueArn": arn_of("q"),
    "VisibilityTimeout": "30",
    "DelaySeconds": "0",
    "MaximumMessageSize": "1048576",
    "MessageRetentionPeriod": "345600",
    "ReceiveMessageWaitTimeSeconds": "0",
    "SqsManagedSseEnabled": "true",
}


def test_all_on_a_new_queue_answers_what_sqs_answers() -> None:
    assert render(QueueAttrs()) == DEFAULT_ALL


def documented_standard_queue_names() -> set[str]:
    botocore_session = pytest.importorskip("botocore.session")
    model = botocore_session.get_session().get_service_model("sqs")
    fifo_only = {
        "FifoQueue",
        "ContentBasedDeduplication",
        "DeduplicationScope",
        "FifoThroughputLimit",
    }
    return set(model.shape_for("QueueAttributeName").enum) - {"All"} - fifo_only


def test_all_includes_every_documented_standard_queue_attribute_once_set() -> None:
    attrs = parse(
        {
            "RedrivePolicy": redrive(3),
            "RedriveAllowPolicy": json.dumps({"redrivePermission": "allowAll"}),
            "Policy": POLICY,
            "KmsMasterKeyId": "k",
            "KmsDataKeyReusePeriodSeconds": "600",
        }
    )
    assert set(render(attrs)) == documented_standard_queue_names()


def test_known_names_list_is_the_api_models() -> None:
    botocore_session = pytest.importorskip("botocore.session")
    model = botocore_session.get_session().get_service_model("sqs")
    assert set(qa.QUEUE_ATTRIBUTE_NAMES) == set(model.shape_for("QueueAttributeName").enum) - {
        "All"
    }


def test_each_name_renders_alone_and_all_equals_the_union() -> None:
    attrs = parse({"RedrivePolicy": redrive(3), "Policy": POLICY, "VisibilityTimeout": "99"})
    everything = render(attrs)
    union: dict[str, str] = {}
    for name in qa.QUEUE_ATTRIBUTE_NAMES:
        one = render(attrs, [name])
        assert set(one) <= {name}
        union.update(one)
    assert union == everything
    assert render(attrs, ["VisibilityTimeout", "All"]) == everything


def test_no_names_answer_nothing() -> None:
    assert render(QueueAttrs(), []) == {}
    assert (
        qa.render_queue_attributes(
            QueueAttrs(), None, arn="a", dlq_arn=arn_of, counts=(0, 0, 0), created_s=0, modified_s=0
        )
        == {}
    )


@pytest.mark.parametrize("names", [["Foobar"], ["VisibilityTimeout", "visibilitytimeout"], ["all"]])
def test_unknown_names_are_refused_on_get(names: list[str]) -> None:
    with pytest.raises(SqsInputError) as err:
        render(QueueAttrs(), names)
    assert err.value.code == "InvalidAttributeName"
    assert err.value.message == f"Unknown Attribute {names[-1]}."


def test_defined_names_the_queue_lacks_are_omitted() -> None:
    assert render(QueueAttrs(), ["FifoQueue", "Policy", "RedrivePolicy", "KmsMasterKeyId"]) == {}


def test_extras_okuri_does_not_own_never_render() -> None:
    attrs = QueueAttrs(extra={"tag:team": "x", "Unrelated": "y"})
    assert render(attrs) == DEFAULT_ALL


def test_counts_and_timestamps_land_in_their_attributes() -> None:
    rendered = qa.render_queue_attributes(
        QueueAttrs(),
        ["All"],
        arn="A",
        dlq_arn=arn_of,
        counts=(10, 20, 30),
        created_s=5,
        modified_s=6,
    )
    assert (
        rendered["ApproximateNumberOfMessages"],
        rendered["ApproximateNumberOfMessagesNotVisible"],
        rendered["ApproximateNumberOfMessagesDelayed"],
        rendered["CreatedTimestamp"],
        rendered["LastModifiedTimestamp"],
        rendered["QueueArn"],
    ) == ("10", "20", "30", "5", "6", "A")


def test_parse_then_render_round_trips_every_settable_attribute() -> None:
    given = {
        "VisibilityTimeout": "120",
        "DelaySeconds": "15",
        "MaximumMessageSize": "2048",
        "MessageRetentionPeriod": "86400",
        "ReceiveMessageWaitTimeSeconds": "20",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": arn_of("dlq"), "maxReceiveCount": 9}),
        "RedriveAllowPolicy": json.dumps({"redrivePermission": "denyAll"}),
        "Policy": POLICY,
        "KmsMasterKeyId": "alias/x",
        "KmsDataKeyReusePeriodSeconds": "900",
        "SqsManagedSseEnabled": "false",
    }
    rendered = render(parse(given))
    for name, value in given.items():
        if name == "RedrivePolicy":
            assert json.loads(rendered[name]) == json.loads(value)
        else:
            assert rendered[name] == value


# --- queue names and tags -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "A", "0", "-", "_", "my-queue_01", "q" * 80])
def test_queue_names_accepted(name: str) -> None:
    assert qa.validate_queue_name(name) == name


@pytest.mark.parametrize(
    "name", ["", "q" * 81, "a.b", "a b", "é", "a/b", ".fifo", "q" * 81 + ".fifo", None, 5]
)
def test_queue_names_refused(name: Any) -> None:
    with pytest.raises(SqsInputError) as err:
        qa.validate_queue_name(name)
    assert err.value.code == "InvalidParameterValue"


@pytest.mark.parametrize("name", ["orders.fifo", "q" * 75 + ".fifo"])
def test_fifo_queue_names_are_accepted(name: str) -> None:
    assert qa.validate_queue_name(name) == name


def test_a_fifo_name_past_80_characters_is_refused() -> None:
    with pytest.raises(SqsInputError):
        qa.validate_queue_name("q" * 76 + ".fifo")


def test_fifty_tags_pass_and_fifty_one_are_refused() -> None:
    fifty = {f"k{i}": "v" for i in range(50)}
    assert qa.validate_tags(fifty) == fifty
    with pytest.raises(SqsInputError) as err:
        qa.validate_tags({**fifty, "k50": "v"}, None, "jobs")
    assert err.value.message == "Too many tags added for queue jobs."


def test_tag_bound_counts_the_tags_the_queue_already_has() -> None:
    existing = {f"k{i}": "v" for i in range(49)}
    assert qa.validate_tags({"k0": "overwritten", "new": "v"}, existing) == {
        "k0": "overwritten",
        "new": "v",
    }
    with pytest.raises(SqsInputError):
        qa.validate_tags({"new": "v", "newer": "v"}, existing)


@pytest.mark.parametrize(
    ("tags", "ok"),
    [
        ({"k" * 128: "v"}, True),
        ({"k" * 129: "v"}, False),
        ({"": "v"}, False),
        ({"k": "v" * 256}, True),
        ({"k": "v" * 257}, False),
        ({"k": ""}, True),
        ({"k": 5}, False),
        ({"k": None}, False),
        (["k"], False),
        (None, True),
        ({}, True),
    ],
)
def test_tag_key_and_value_bounds(tags: Any, ok: bool) -> None:
    if ok:
        assert qa.validate_tags(tags) == (tags or {})
    else:
        with pytest.raises(SqsInputError) as err:
            qa.validate_tags(tags)
        assert err.value.code == "InvalidParameterValue"


# --- CreateQueue idempotence --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "existing", "conflict"),
    [
        ({}, QueueAttrs(), None),
        (None, QueueAttrs(visibility_timeout_s=69), None),  # recorded: no attributes, custom queue
        ({"VisibilityTimeout": "69"}, QueueAttrs(visibility_timeout_s=69), None),
        ({"VisibilityTimeout": "30"}, QueueAttrs(visibility_timeout_s=69), "VisibilityTimeout"),
        (
            {"VisibilityTimeout": "69", "DelaySeconds": "1"},
            QueueAttrs(visibility_timeout_s=69),
            "DelaySeconds",
        ),
        ({"DelaySeconds": "0"}, QueueAttrs(), None),  # a default spelled out matches the default
        ({"SqsManagedSseEnabled": "true"}, QueueAttrs(), None),
        ({"SqsManagedSseEnabled": "false"}, QueueAttrs(), "SqsManagedSseEnabled"),
        ({"KmsDataKeyReusePeriodSeconds": "300"}, QueueAttrs(), None),
        ({"KmsMasterKeyId": ""}, QueueAttrs(), None),
        ({"KmsMasterKeyId": "k"}, QueueAttrs(), "KmsMasterKeyId"),
        (
            {"Policy": POLICY},
            QueueAttrs(extra={"Policy": json.dumps(json.loads(POLICY), indent=2)}),
            None,
        ),
        ({"Policy": POLICY}, QueueAttrs(), "Policy"),
        ({"RedrivePolicy": ""}, QueueAttrs(), None),
        (
            {"RedrivePolicy": redrive("3")},
            QueueAttrs(dead_letter_queue="my-dlq", max_receive_count=3),
            None,
        ),
        (
            {"RedrivePolicy": redrive(4)},
            QueueAttrs(dead_letter_queue="my-dlq", max_receive_count=3),
            "RedrivePolicy",
        ),
        ({"RedrivePolicy": redrive(3)}, QueueAttrs(), "RedrivePolicy"),
    ],
)
def test_create_compares_only_the_attributes_the_request_names(
    requested: Any, existing: QueueAttrs, conflict: str | None
) -> None:
    assert qa.create_conflict(requested, existing) == conflict
    assert qa.attrs_equal_for_create(requested, existing) is (conflict is None)


def test_create_of_an_existing_queue_still_validates_the_request() -> None:
    with pytest.raises(SqsInputError):
        qa.attrs_equal_for_create({"VisibilityTimeout": "x"}, QueueAttrs())
    with pytest.raises(SqsInputError):
        qa.attrs_equal_for_create({"FifoQueue": "maybe"}, QueueAttrs())
    assert qa.create_conflict({"FifoQueue": "true"}, QueueAttrs()) == "FifoQueue"
