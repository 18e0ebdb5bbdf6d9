"""SQS actions under keys with roles and namespaces (okuri/sqs/access.py): every action the
surface serves has an operation, and every action x role x in/out of namespace is allowed or
refused with AWS's AccessDenied exactly as the one pure decision says."""

from __future__ import annotations

from typing import Any

import pytest

from okuri.principals.roles import ROLES, Principal, Role, decide
from okuri.sqs.access import OPERATION_OF, authorize, checks, iam_action, narrow
from okuri.sqs.actions import SqsActions
from okuri.sqs.errors import SqsError
from okuri.sqs.shapes import ACTIONS
from tests.sqs_examples import EXAMPLES, SQS, redrive, request, url

NAMESPACE = "team-a-"
INSIDE, OUTSIDE = "team-a-jobs", "team-b-jobs"


def refusal(action: str, p: dict[str, Any], principal: Principal) -> SqsError | None:
    try:
        authorize(SQS, principal, action, p)
    except SqsError as err:
        return err
    return None


def test_every_action_the_surface_serves_has_an_operation_and_an_example() -> None:
    served = set(SqsActions(engine=None)._handlers)  # type: ignore[arg-type]
    assert set(ACTIONS) == served
    assert set(OPERATION_OF) == served, "an SQS action needs an operation in okuri.sqs.access"
    assert set(EXAMPLES) == served, "an SQS action needs an example request in this test"


READS = {
    "GetQueueUrl", "GetQueueAttributes", "ListQueues", "ListQueueTags",
    "ListDeadLetterSourceQueues", "ListMessageMoveTasks",
}  # fmt: skip
# What each role may run over SQS, written out independently of the mapping (as the docs say).
MAY_RUN: dict[Role, set[str]] = {
    "admin": set(ACTIONS),
    "producer": READS | {"SendMessage", "SendMessageBatch"},
    "consumer": READS | {
        "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch",
        "ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
    },
    "readonly": READS,
}  # fmt: skip


@pytest.mark.parametrize("role", ROLES)
def test_what_each_role_may_run_over_sqs(role: Role) -> None:
    principal = Principal("OKAKTESTTESTTEST0003", role, "")
    allowed = {a for a in ACTIONS if refusal(a, request(a, INSIDE), principal) is None}
    assert allowed == MAY_RUN[role]


@pytest.mark.parametrize("side", ["inside", "outside"])
@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_every_action_for_every_role_in_and_out_of_its_namespace(
    action: str, role: Role, side: str
) -> None:
    queue = INSIDE if side == "inside" else OUTSIDE
    p = request(action, queue)
    principal = Principal("OKAKTESTTESTTEST0001", role, NAMESPACE)
    # What the pure decision says of the action's operation on the queue the request names.
    expected = decide(OPERATION_OF[action], role, NAMESPACE, queue)
    err = refusal(action, p, principal)
    if expected == "allow":
        assert err is None, err
    else:
        assert err is not None and (err.code, err.status) == ("AccessDenied", 403)
        assert f"perform: {iam_action(action)} on resource: arn:aws:sqs:" in err.message
    # Without a namespace, only the role decides.
    unlimited = refusal(action, p, Principal("OKAKTESTTESTTEST0002", role, ""))
    assert (unlimited is None) == (decide(OPERATION_OF[action], role, "", queue) == "allow")


def test_a_refusal_reads_as_aws_access_denied_on_both_protocols() -> None:
    consumer = Principal("OKAKCONSUMER00000001", "consumer", NAMESPACE)
    err = refusal("PurgeQueue", request("PurgeQueue", INSIDE), consumer)
    assert err is not None
    assert err.message == (
        "User: arn:aws:iam::123456789012:user/OKAKCONSUMER00000001 is not authorized to "
        "perform: sqs:PurgeQueue on resource: arn:aws:sqs:us-east-1:123456789012:team-a-jobs "
        "because okuri's consumer role does not allow the sqs:PurgeQueue action"
    )
    assert err.query_error == "AccessDenied;Sender"  # botocore's Error.Code over JSON
    assert err.body()["__type"] == "com.amazonaws.sqs#AccessDenied"
    outside = refusal("ReceiveMessage", request("ReceiveMessage", OUTSIDE), consumer)
    assert outside is not None and "outside the key's namespace 'team-a-'" in outside.message


def test_a_batch_is_authorised_as_its_single_action() -> None:
    producer = Principal("OKAKPRODUCER00000001", "producer", "")
    err = refusal("DeleteMessageBatch", request("DeleteMessageBatch", INSIDE), producer)
    assert err is not None and "perform: sqs:DeleteMessage on" in err.message


def test_a_dead_letter_queue_outside_the_namespace_is_refused_on_create_and_set() -> None:
    admin = Principal("OKAKADMIN00000000001", "admin", NAMESPACE)
    for action in ("CreateQueue", "SetQueueAttributes"):
        p = request(action, INSIDE)
        assert refusal(action, p, admin) is None
        p["Attributes"]["RedrivePolicy"] = redrive(OUTSIDE + "-dlq")
        err = refusal(action, p, admin)
        assert err is not None and err.code == "AccessDenied"
        assert f"resource: {SQS.arn(OUTSIDE + '-dlq')}" in err.message
        # A policy that does not parse names no queue: the action refuses it in SQS's words.
        p["Attributes"]["RedrivePolicy"] = "{not json"
        assert refusal(action, p, admin) is None


def test_a_move_task_needs_both_queues_in_the_namespace_and_a_namespaced_key_a_destination() -> (
    None
):
    admin = Principal("OKAKADMIN00000000001", "admin", NAMESPACE)
    p = request("StartMessageMoveTask", INSIDE)
    assert refusal("StartMessageMoveTask", p, admin) is None
    outside_destination = {**p, "DestinationArn": SQS.arn(OUTSIDE)}
    err = refusal("StartMessageMoveTask", outside_destination, admin)
    assert err is not None and f"resource: {SQS.arn(OUTSIDE)} " in err.message
    back_to_sources = {"SourceArn": p["SourceArn"]}
    err = refusal("StartMessageMoveTask", back_to_sources, admin)
    assert err is not None and "must name the DestinationArn" in err.message
    assert refusal("StartMessageMoveTask", back_to_sources, Principal("k", "admin", "")) is None


def test_list_queues_is_narrowed_to_the_namespace() -> None:
    reader = Principal("OKAKREADER0000000001", "readonly", NAMESPACE)
    assert authorize(SQS, reader, "ListQueues", {})["QueueNamePrefix"] == NAMESPACE
    narrowed = authorize(SQS, reader, "ListQueues", {"QueueNamePrefix": "team"})
    assert narrowed["QueueNamePrefix"] == NAMESPACE
    kept = authorize(SQS, reader, "ListQueues", {"QueueNamePrefix": "team-a-jo"})
    assert kept["QueueNamePrefix"] == "team-a-jo"
    err = refusal("ListQueues", {"QueueNamePrefix": "team-b"}, reader)
    assert err is not None and "resource: arn:aws:sqs:us-east-1:123456789012:team-b*" in err.message
    assert authorize(SQS, Principal("k", "readonly", ""), "ListQueues", {}) == {}


def test_dead_letter_sources_outside_the_namespace_are_left_out() -> None:
    result = {"queueUrls": [url("team-a-jobs"), url("team-b-jobs")]}
    reader = Principal("OKAKREADER0000000001", "readonly", NAMESPACE)
    assert narrow(reader, "ListDeadLetterSourceQueues", result) == {
        "queueUrls": [url("team-a-jobs")]
    }
    assert narrow(Principal("k", "readonly", ""), "ListDeadLetterSourceQueues", result) == result
    assert narrow(reader, "ListQueues", {"QueueUrls": [url("x")]}) == {"QueueUrls": [url("x")]}


def test_a_malformed_queue_url_answers_the_actions_own_error_not_access_denied() -> None:
    consumer = Principal("OKAKCONSUMER00000001", "consumer", NAMESPACE)
    with pytest.raises(SqsError) as err:
        checks("PurgeQueue", {"QueueUrl": "http://localhost/123/bad%name"})
    assert err.value.code == "QueueDoesNotExist"
    with pytest.raises(SqsError) as err:
        authorize(SQS, consumer, "ListMessageMoveTasks", {"SourceArn": "not-an-arn"})
    assert err.value.code == "InvalidParameterValue"
