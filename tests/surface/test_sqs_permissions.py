"""AddPermission and RemovePermission against a real `okuri serve` on each store.

The Policy documents and error texts are the ones SQS was recorded writing and answering for the
same calls; that the grants are not enforced is a documented divergence.
"""

from __future__ import annotations

import json
import urllib.parse
import uuid
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri.sqs.query import XMLNS
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, http

ACCOUNT = "000000000000"  # okuri's account id
OTHER = "668614515564"
NS = {"s": XMLNS}


@pytest.fixture
def sqs(sqs_server: ServerProcess) -> Any:
    return sqs_server.sqs_client(retries={"max_attempts": 1})


@pytest.fixture
def queue(sqs: Any) -> str:
    return str(sqs.create_queue(QueueName=f"perm-{uuid.uuid4().hex[:10]}")["QueueUrl"])


def _arn(sqs: Any, queue: str) -> str:
    return str(
        sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
    )


def _policy(sqs: Any, queue: str) -> Any:
    found = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["Policy"]).get("Attributes")
    return None if found is None else json.loads(found["Policy"])


def _error(err: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return err.value.response["Error"]["Code"], err.value.response["Error"]["Message"]


def _statement(label: str, arn: str, principal: Any, action: Any) -> dict[str, Any]:
    return {
        "Sid": label,
        "Effect": "Allow",
        "Principal": {"AWS": principal},
        "Action": action,
        "Resource": arn,
    }


def test_the_permission_lifecycle_writes_the_policy_sqs_writes(sqs: Any, queue: str) -> None:
    arn = _arn(sqs, queue)
    root = lambda account: f"arn:aws:iam::{account}:root"  # noqa: E731
    sqs.add_permission(
        QueueUrl=queue,
        AWSAccountIds=[ACCOUNT, OTHER],
        Actions=["ReceiveMessage"],
        Label="crossaccountpermission",
    )
    assert _policy(sqs, queue) == {
        "Version": "2008-10-17",
        "Id": f"{arn}/SQSDefaultPolicy",
        "Statement": [
            _statement(
                "crossaccountpermission", arn, [root(ACCOUNT), root(OTHER)], "SQS:ReceiveMessage"
            )
        ],
    }
    sqs.remove_permission(QueueUrl=queue, Label="crossaccountpermission")
    assert _policy(sqs, queue) is None  # the last statement takes the attribute with it

    sqs.add_permission(
        QueueUrl=queue, AWSAccountIds=[ACCOUNT], Actions=["ReceiveMessage"], Label="first"
    )
    with pytest.raises(ClientError) as err:
        sqs.add_permission(
            QueueUrl=queue, AWSAccountIds=[OTHER], Actions=["ReceiveMessage"], Label="first"
        )
    assert _error(err) == (
        "InvalidParameterValue",
        "Value first for parameter Label is invalid. Reason: Already exists.",
    )
    assert err.value.response["Error"]["QueryErrorCode"] == "InvalidParameterValueException"
    sqs.add_permission(
        QueueUrl=queue,
        AWSAccountIds=[ACCOUNT],
        Actions=["SendMessage", "DeleteMessage"],
        Label="second",
    )
    second = _statement("second", arn, root(ACCOUNT), ["SQS:SendMessage", "SQS:DeleteMessage"])
    assert _policy(sqs, queue)["Statement"] == [
        _statement("first", arn, root(ACCOUNT), "SQS:ReceiveMessage"),
        second,
    ]
    sqs.remove_permission(QueueUrl=queue, Label="first")
    assert _policy(sqs, queue)["Statement"] == [second]
    sqs.remove_permission(QueueUrl=queue, Label="second")
    assert _policy(sqs, queue) is None
    with pytest.raises(ClientError) as err:
        sqs.remove_permission(QueueUrl=queue, Label="second")
    assert _error(err) == (
        "InvalidParameterValue",
        "Value second for parameter Label is invalid. Reason: can't find label.",
    )


def test_permissions_join_a_policy_set_by_set_queue_attributes(sqs: Any, queue: str) -> None:
    own = {"Version": "2012-10-17", "Statement": {"Sid": "mine", "Effect": "Deny"}}
    sqs.set_queue_attributes(QueueUrl=queue, Attributes={"Policy": json.dumps(own)})
    sqs.add_permission(QueueUrl=queue, AWSAccountIds=[OTHER], Actions=["*"], Label="all")
    policy = _policy(sqs, queue)
    assert policy["Version"] == "2012-10-17"
    assert [s["Sid"] for s in policy["Statement"]] == ["mine", "all"]
    assert policy["Statement"][1]["Action"] == "SQS:*"
    sqs.remove_permission(QueueUrl=queue, Label="mine")
    assert [s["Sid"] for s in _policy(sqs, queue)["Statement"]] == ["all"]


@pytest.mark.parametrize(
    ("accounts", "actions", "label", "code", "message"),
    [
        (
            [OTHER],
            ["DeleteQueue"],
            "l",
            "InvalidParameterValue",
            "Value SQS:DeleteQueue for parameter ActionName is invalid. "
            "Reason: Only the queue owner is allowed to invoke this action.",
        ),
        (
            [OTHER],
            ["Frobnicate"],
            "l",
            "InvalidParameterValue",
            "Value SQS:Frobnicate for parameter ActionName is invalid. "
            "Reason: Please refer to the appropriate WSDL for a list of valid actions.",
        ),
        (
            [OTHER],
            ["SendMessage"] * 8,
            "l",
            "OverLimit",
            "8 Actions were found, maximum allowed is 7.",
        ),
        (
            [],
            ["SendMessage"],
            "l",
            "InvalidParameterValue",
            "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.",
        ),
        (
            ["12345"],
            ["SendMessage"],
            "l",
            "InvalidParameterValue",
            "Value 12345 for parameter PrincipalId is invalid. Reason: Unable to verify.",
        ),
        (
            [OTHER],
            [],
            "l",
            "MissingParameter",
            "The request must contain the parameter Actions.",
        ),
        ([OTHER], ["SendMessage"], "bad label", "InvalidParameterValue", None),
        ([OTHER], ["SendMessage"], "x" * 81, "InvalidParameterValue", None),
    ],
)
def test_a_bad_permission_is_refused_and_changes_nothing(
    sqs: Any,
    queue: str,
    accounts: list[str],
    actions: list[str],
    label: str,
    code: str,
    message: str | None,
) -> None:
    with pytest.raises(ClientError) as err:
        sqs.add_permission(QueueUrl=queue, AWSAccountIds=accounts, Actions=actions, Label=label)
    got_code, got_message = _error(err)
    assert got_code == code
    assert (
        got_message == message if message is not None else got_message.startswith(f"Value {label}")
    )
    assert _policy(sqs, queue) is None


def test_the_policy_bounds_hold(sqs: Any, queue: str) -> None:
    accounts = [f"{n:012d}" for n in range(1, 26)]
    sqs.add_permission(QueueUrl=queue, AWSAccountIds=accounts, Actions=["SendMessage"], Label="a")
    sqs.add_permission(QueueUrl=queue, AWSAccountIds=accounts, Actions=["SendMessage"], Label="b")
    with pytest.raises(ClientError) as err:  # principal 51
        sqs.add_permission(QueueUrl=queue, AWSAccountIds=[OTHER], Actions=["*"], Label="c")
    assert _error(err)[0] == "OverLimit"
    assert [s["Sid"] for s in _policy(sqs, queue)["Statement"]] == ["a", "b"]
    sqs.remove_permission(QueueUrl=queue, Label="b")
    for n in range(19):
        sqs.add_permission(QueueUrl=queue, AWSAccountIds=[OTHER], Actions=["*"], Label=f"s{n}")
    with pytest.raises(ClientError) as err:  # statement 21
        sqs.add_permission(QueueUrl=queue, AWSAccountIds=[OTHER], Actions=["*"], Label="s19")
    assert _error(err)[0] == "OverLimit"


def test_a_permission_on_a_missing_queue_is_a_missing_queue(sqs: Any, queue: str) -> None:
    gone = queue + "-gone"
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.add_permission(QueueUrl=gone, AWSAccountIds=[OTHER], Actions=["*"], Label="l")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.remove_permission(QueueUrl=gone, Label="l")


def test_permissions_over_the_query_protocol(
    sqs_server: ServerProcess, sqs: Any, queue: str
) -> None:
    def call(params: dict[str, str]) -> tuple[int, ET.Element]:
        body = urllib.parse.urlencode({"Version": "2012-11-05", "QueueUrl": queue, **params})
        request = AWSRequest(
            "POST",
            sqs_server.url + "/",
            data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", "us-east-1").add_auth(request)
        answer = http("POST", request.url, body.encode(), dict(request.headers.items()))
        return answer.status, ET.fromstring(answer.body)

    status, root = call(
        {
            "Action": "AddPermission",
            "Label": "q",
            "AWSAccountId.1": OTHER,
            "AWSAccountId.2": ACCOUNT,
            "ActionName.1": "SendMessage",
            "ActionName.2": "ReceiveMessage",
        }
    )
    assert status == 200
    assert root.tag == f"{{{XMLNS}}}AddPermissionResponse"
    assert root.find("s:AddPermissionResult", NS) is None  # SQS sends no result element
    [statement] = _policy(sqs, queue)["Statement"]
    assert statement["Principal"]["AWS"] == [
        f"arn:aws:iam::{OTHER}:root",
        f"arn:aws:iam::{ACCOUNT}:root",
    ]
    assert statement["Action"] == ["SQS:SendMessage", "SQS:ReceiveMessage"]
    status, root = call({"Action": "RemovePermission", "Label": "nope"})
    assert status == 400
    assert root.findtext("s:Error/s:Message", namespaces=NS) == (
        "Value nope for parameter Label is invalid. Reason: can't find label."
    )
    assert call({"Action": "RemovePermission", "Label": "q"})[0] == 200
    assert _policy(sqs, queue) is None
