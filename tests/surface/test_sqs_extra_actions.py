"""Tags, dead-letter sources and message move tasks through boto3, against a real `okuri serve`.

Run on both stores (`sqs_server`). Each test names its queues uniquely, since one server serves
the whole module. Move tasks run for real here, so their waits are bounded polls of what a
client sees (ListMessageMoveTasks, the queues' messages); rates are tested on a virtual clock in
tests/unit/test_engine_move_tasks.py, not by wall time here.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from okuri.sqs.move_tasks import encode_handle
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, create_with_dead_letter_queue

WAIT_S = 20.0
ACCOUNT = "000000000000"


@pytest.fixture
def sqs(sqs_server: ServerProcess) -> Any:
    return sqs_server.sqs_client(retries={"max_attempts": 1})


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def _arn(name: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{name}"


def _error(err: pytest.ExceptionInfo[ClientError]) -> tuple[int, str, str]:
    response = err.value.response
    return (
        response["ResponseMetadata"]["HTTPStatusCode"],
        response["Error"]["Code"],
        response["Error"]["Message"],
    )


def _eventually(check: Callable[[], Any], what: str, within_s: float = WAIT_S) -> Any:
    deadline = time.monotonic() + within_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {within_s} s")
        time.sleep(0.05)


def _dlq_pair(sqs: Any) -> tuple[str, str, str]:
    """(source URL, dead-letter queue URL, dead-letter queue name), maxReceiveCount 1."""
    source, dlq, _ = create_with_dead_letter_queue(sqs, _name("src"), 1)
    return source, dlq, dlq.rsplit("/", 1)[1]


def _visible(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attrs["Attributes"]["ApproximateNumberOfMessages"])


def _receive_all(sqs: Any, url: str, want: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []

    def more() -> bool:
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for m in batch.get("Messages", []):
            got.append(m)
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return len(got) >= want

    _eventually(more, f"{want} messages in {url}")
    return got


def _dead_letter(sqs: Any, source: str, dlq: str, bodies: list[str]) -> None:
    """Send `bodies` to `source` and receive each past maxReceiveCount 1 into `dlq`."""
    for body in bodies:
        sqs.send_message(QueueUrl=source, MessageBody=body)

    def all_dead() -> bool:
        sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=10, VisibilityTimeout=0)
        return _visible(sqs, dlq) >= len(bodies)

    _eventually(all_dead, "dead-lettering")


def _settled(sqs: Any, dlq_name: str) -> dict[str, Any]:
    def over() -> dict[str, Any] | None:
        (task,) = sqs.list_message_move_tasks(SourceArn=_arn(dlq_name))["Results"]
        return task if task["Status"] not in ("RUNNING", "CANCELLING") else None

    result: dict[str, Any] = _eventually(over, "the move task to finish")
    return result


# --- tags ---------------------------------------------------------------------------------------


def test_tags_are_added_overwritten_listed_and_removed(sqs: Any) -> None:
    url = sqs.create_queue(QueueName=_name("tags"), tags={"team": "a", "cost": "1"})["QueueUrl"]
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "a", "cost": "1"}
    sqs.tag_queue(QueueUrl=url, Tags={"team": "b", "env": ""})
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "b", "cost": "1", "env": ""}
    sqs.untag_queue(QueueUrl=url, TagKeys=["cost", "never-set"])
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"team": "b", "env": ""}
    sqs.untag_queue(QueueUrl=url, TagKeys=["team", "env"])
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)
    attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert not any(k.startswith("tag") for k in attrs)


def test_tagging_does_not_change_last_modified_but_attributes_keep_the_tags(sqs: Any) -> None:
    url = sqs.create_queue(QueueName=_name("tagmod"), tags={"keep": "me"})["QueueUrl"]
    sqs.tag_queue(QueueUrl=url, Tags={"more": "x"})
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "45"})
    assert sqs.list_queue_tags(QueueUrl=url)["Tags"] == {"keep": "me", "more": "x"}


def test_a_queue_holds_at_most_fifty_tags(sqs: Any) -> None:
    url = sqs.create_queue(QueueName=_name("tag50"))["QueueUrl"]
    sqs.tag_queue(QueueUrl=url, Tags={f"k{i}": "v" for i in range(48)})
    with pytest.raises(ClientError) as err:
        sqs.tag_queue(QueueUrl=url, Tags={"x1": "v", "x2": "v", "x3": "v"})
    assert _error(err)[:2] == (400, "InvalidParameterValue")
    sqs.tag_queue(QueueUrl=url, Tags={"k0": "overwritten", "x1": "v", "x2": "v"})  # 50 exactly
    assert len(sqs.list_queue_tags(QueueUrl=url)["Tags"]) == 50


@pytest.mark.parametrize(
    "tags",
    [{"aws:created-by": "me"}, {"AWS:x": "y"}, {"k" * 129: "v"}, {"": "v"}, {"k": "v" * 257}],
    ids=["aws-prefix", "aws-prefix-upper-case", "key-129", "key-empty", "value-257"],
)
def test_bad_tags_are_refused_by_tag_queue_and_create_queue(sqs: Any, tags: Any) -> None:
    url = sqs.create_queue(QueueName=_name("badtag"))["QueueUrl"]
    with pytest.raises(ClientError) as err:
        sqs.tag_queue(QueueUrl=url, Tags=tags)
    assert _error(err)[:2] == (400, "InvalidParameterValue")
    with pytest.raises(ClientError) as err:
        sqs.create_queue(QueueName=_name("badtag"), tags=tags)
    assert _error(err)[:2] == (400, "InvalidParameterValue")
    assert "Tags" not in sqs.list_queue_tags(QueueUrl=url)


def test_tag_actions_on_a_missing_queue(sqs: Any, sqs_server: ServerProcess) -> None:
    url = f"{sqs_server.url}/{ACCOUNT}/{_name('gone')}"
    for call in (
        lambda: sqs.tag_queue(QueueUrl=url, Tags={"a": "b"}),
        lambda: sqs.untag_queue(QueueUrl=url, TagKeys=["a"]),
        lambda: sqs.list_queue_tags(QueueUrl=url),
    ):
        with pytest.raises(sqs.exceptions.QueueDoesNotExist):
            call()


# --- dead-letter sources ------------------------------------------------------------------------


def test_dead_letter_sources_are_the_queues_whose_policy_names_it(sqs: Any) -> None:
    dlq_name = _name("dlq")
    dlq = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
    policy = json.dumps({"deadLetterTargetArn": _arn(dlq_name), "maxReceiveCount": 3})
    prefix = _name("lsrc")
    sources = sorted(
        sqs.create_queue(QueueName=f"{prefix}-{i}", Attributes={"RedrivePolicy": policy})[
            "QueueUrl"
        ]
        for i in range(3)
    )
    sqs.create_queue(QueueName=f"{prefix}-unrelated")
    assert sorted(sqs.list_dead_letter_source_queues(QueueUrl=dlq)["queueUrls"]) == sources

    first = sqs.list_dead_letter_source_queues(QueueUrl=dlq, MaxResults=2)
    assert first["queueUrls"] == sources[:2] and first["NextToken"]
    second = sqs.list_dead_letter_source_queues(
        QueueUrl=dlq, MaxResults=2, NextToken=first["NextToken"]
    )
    assert second["queueUrls"] == sources[2:] and "NextToken" not in second
    paginated = sqs.get_paginator("list_dead_letter_source_queues").paginate(
        QueueUrl=dlq, PaginationConfig={"PageSize": 1}
    )
    assert [u for page in paginated for u in page["queueUrls"]] == sources

    lonely = sqs.create_queue(QueueName=_name("lonely"))["QueueUrl"]
    assert sqs.list_dead_letter_source_queues(QueueUrl=lonely)["queueUrls"] == []


def test_dead_letter_sources_refuse_bad_input(sqs: Any, sqs_server: ServerProcess) -> None:
    url = sqs.create_queue(QueueName=_name("lsbad"))["QueueUrl"]
    for bad in (0, 1001):
        with pytest.raises(ClientError) as err:
            sqs.list_dead_letter_source_queues(QueueUrl=url, MaxResults=bad)
        assert _error(err)[:2] == (400, "InvalidParameterValue")
    with pytest.raises(ClientError) as err:
        sqs.list_dead_letter_source_queues(QueueUrl=url, MaxResults=5, NextToken="!!")
    assert _error(err)[:2] == (400, "InvalidParameterValue")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.list_dead_letter_source_queues(QueueUrl=f"{sqs_server.url}/{ACCOUNT}/{_name('no')}")


# --- message move tasks -------------------------------------------------------------------------


def test_a_move_task_returns_dead_letters_to_their_source(sqs: Any) -> None:
    source, dlq, dlq_name = _dlq_pair(sqs)
    bodies = [f"m{i}" for i in range(4)]
    _dead_letter(sqs, source, dlq, bodies)
    dead = sqs.receive_message(
        QueueUrl=dlq,
        MaxNumberOfMessages=1,
        VisibilityTimeout=0,
        MessageSystemAttributeNames=["All"],
    )["Messages"][0]
    assert dead["Attributes"]["DeadLetterQueueSourceArn"].endswith(source.rsplit("/", 1)[1])

    before_ms = int(time.time() * 1000)
    handle = sqs.start_message_move_task(SourceArn=_arn(dlq_name))["TaskHandle"]
    assert handle
    task = _settled(sqs, dlq_name)
    assert task["Status"] == "COMPLETED"
    assert task["ApproximateNumberOfMessagesMoved"] == 4
    assert task["ApproximateNumberOfMessagesToMove"] == 4
    assert task["SourceArn"] == _arn(dlq_name)
    assert before_ms - 5_000 <= task["StartedTimestamp"] <= int(time.time() * 1000)
    for absent in ("TaskHandle", "DestinationArn", "MaxNumberOfMessagesPerSecond", "FailureReason"):
        assert absent not in task
    back = _receive_all(sqs, source, 4)
    assert sorted(m["Body"] for m in back) == bodies
    assert _visible(sqs, dlq) == 0


def test_a_move_task_to_a_destination_can_be_cancelled(sqs: Any) -> None:
    _, dlq, dlq_name = _dlq_pair(sqs)
    dest_name = _name("dest")
    dest = sqs.create_queue(QueueName=dest_name)["QueueUrl"]
    sqs.send_message_batch(
        QueueUrl=dlq, Entries=[{"Id": str(i), "MessageBody": f"b{i}"} for i in range(10)]
    )
    _eventually(lambda: _visible(sqs, dlq) == 10, "ten messages in the dead-letter queue")
    handle = sqs.start_message_move_task(
        SourceArn=_arn(dlq_name), DestinationArn=_arn(dest_name), MaxNumberOfMessagesPerSecond=1
    )["TaskHandle"]
    (running,) = sqs.list_message_move_tasks(SourceArn=_arn(dlq_name), MaxResults=10)["Results"]
    assert running["TaskHandle"] == handle
    assert running["Status"] == "RUNNING"
    assert running["DestinationArn"] == _arn(dest_name)
    assert running["MaxNumberOfMessagesPerSecond"] == 1

    moved = sqs.cancel_message_move_task(TaskHandle=handle)["ApproximateNumberOfMessagesMoved"]
    assert 0 <= moved < 10
    task = _settled(sqs, dlq_name)
    assert task["Status"] == "CANCELLED" and "TaskHandle" not in task
    with pytest.raises(sqs.exceptions.ResourceNotFoundException) as err:
        sqs.cancel_message_move_task(TaskHandle=handle)
    assert _error(err)[0] == 404
    in_dest = _receive_all(sqs, dest, task["ApproximateNumberOfMessagesMoved"])
    assert len(in_dest) == task["ApproximateNumberOfMessagesMoved"]
    assert _visible(sqs, dlq) == 10 - len(in_dest)


def test_only_one_move_task_at_a_time_per_queue(sqs: Any) -> None:
    _, dlq, dlq_name = _dlq_pair(sqs)
    sqs.send_message_batch(
        QueueUrl=dlq, Entries=[{"Id": str(i), "MessageBody": "x"} for i in range(5)]
    )
    dest_name = _name("dest")
    sqs.create_queue(QueueName=dest_name)
    handle = sqs.start_message_move_task(
        SourceArn=_arn(dlq_name), DestinationArn=_arn(dest_name), MaxNumberOfMessagesPerSecond=1
    )["TaskHandle"]
    with pytest.raises(ClientError) as err:
        sqs.start_message_move_task(SourceArn=_arn(dlq_name))
    assert _error(err) == (
        400,
        "InvalidParameterValue",
        "There is already a task running. Only one active task is allowed for a source queue "
        "arn at a given time.",
    )
    sqs.cancel_message_move_task(TaskHandle=handle)


def test_a_message_sent_straight_to_a_dead_letter_queue_goes_to_its_only_source(
    sqs: Any,
) -> None:
    source, dlq, dlq_name = _dlq_pair(sqs)
    sqs.send_message(QueueUrl=dlq, MessageBody="orphan")
    _eventually(lambda: _visible(sqs, dlq) == 1, "the message in the dead-letter queue")
    sqs.start_message_move_task(SourceArn=_arn(dlq_name))
    assert _settled(sqs, dlq_name)["Status"] == "COMPLETED"
    assert [m["Body"] for m in _receive_all(sqs, source, 1)] == ["orphan"]

    # With a second source, where it came from is anyone's guess: the task fails instead.
    policy = {"deadLetterTargetArn": _arn(dlq_name), "maxReceiveCount": 1}
    sqs.create_queue(QueueName=_name("src2"), Attributes={"RedrivePolicy": json.dumps(policy)})
    sqs.send_message(QueueUrl=dlq, MessageBody="orphan")
    _eventually(lambda: _visible(sqs, dlq) == 1, "the message in the dead-letter queue")
    sqs.start_message_move_task(SourceArn=_arn(dlq_name))
    task = _settled(sqs, dlq_name)
    assert task["Status"] == "FAILED"
    assert "source" in task["FailureReason"]
    assert _visible(sqs, dlq) == 1


def test_move_task_refusals_as_sqs_answers_them(sqs: Any) -> None:
    _, _, dlq_name = _dlq_pair(sqs)
    plain = _name("plain")
    sqs.create_queue(QueueName=plain)
    missing = _name("missing")
    cases: list[tuple[dict[str, Any], tuple[int, str, str]]] = [
        (
            {"SourceArn": _arn(plain)},
            (
                400,
                "InvalidParameterValue",
                "Source queue must be configured as a Dead Letter Queue.",
            ),
        ),
        (
            {"SourceArn": _arn(missing)},
            (
                404,
                "ResourceNotFoundException",
                "The resource that you specified for the SourceArn parameter doesn't exist.",
            ),
        ),
        (
            {"SourceArn": _arn(dlq_name), "DestinationArn": _arn(missing)},
            (
                404,
                "ResourceNotFoundException",
                "The resource that you specified for the DestinationArn parameter doesn't exist.",
            ),
        ),
        (
            {"SourceArn": "not-an-arn"},
            (
                400,
                "InvalidParameterValue",
                "You must use this format to specify the SourceArn: "
                "arn:<partition>:<service>:<region>:<account-id>:<resource-id>",
            ),
        ),
        (
            {"SourceArn": _arn(dlq_name), "DestinationArn": _arn(dlq_name)},
            (
                400,
                "InvalidParameterValue",
                "Source queue arn and destination queue arn cannot be the same.",
            ),
        ),
    ]
    for kwargs, expected in cases:
        with pytest.raises(ClientError) as err:
            sqs.start_message_move_task(**kwargs)
        assert _error(err) == expected, kwargs
    for rate in (0, 501):
        with pytest.raises(ClientError) as err:
            sqs.start_message_move_task(SourceArn=_arn(dlq_name), MaxNumberOfMessagesPerSecond=rate)
        assert _error(err)[:2] == (400, "InvalidParameterValue")
    with pytest.raises(sqs.exceptions.ResourceNotFoundException):
        sqs.start_message_move_task(SourceArn=f"arn:aws:sns:us-east-1:{ACCOUNT}:{dlq_name}")


def test_list_and_cancel_refusals_as_sqs_answers_them(sqs: Any) -> None:
    _, _, dlq_name = _dlq_pair(sqs)
    assert sqs.list_message_move_tasks(SourceArn=_arn(dlq_name))["Results"] == []
    for bad in (0, 11):
        with pytest.raises(ClientError) as err:
            sqs.list_message_move_tasks(SourceArn=_arn(dlq_name), MaxResults=bad)
        assert _error(err)[:2] == (400, "InvalidParameterValue")
    with pytest.raises(sqs.exceptions.ResourceNotFoundException):
        sqs.list_message_move_tasks(SourceArn=_arn(_name("missing")))

    with pytest.raises(ClientError) as err:
        sqs.cancel_message_move_task(TaskHandle="foobared")
    assert _error(err) == (
        400,
        "InvalidParameterValue",
        "Value for parameter TaskHandle is invalid.",
    )
    with pytest.raises(ClientError) as err:
        sqs.cancel_message_move_task(TaskHandle=encode_handle("some-task", _arn(dlq_name)))
    assert _error(err) == (404, "ResourceNotFoundException", "Task does not exist.")
    with pytest.raises(ClientError) as err:
        sqs.cancel_message_move_task(TaskHandle=encode_handle("t", _arn(_name("missing"))))
    assert _error(err) == (
        404,
        "ResourceNotFoundException",
        "The resource that you specified for the SourceArn parameter doesn't exist.",
    )


# --- shutdown -----------------------------------------------------------------------------------


def test_sigterm_stops_a_running_task_and_the_next_server_reports_it(launch: Any) -> None:
    env = {"OKURI_ACCESS_KEY_ID": SQS_KEY, "OKURI_SECRET_ACCESS_KEY": SQS_SECRET}
    first = launch(env)
    first.wait_for("/readyz")
    sqs = first.sqs_client(retries={"max_attempts": 1})
    _, dlq, dlq_name = _dlq_pair(sqs)
    dest_name = _name("dest")
    sqs.create_queue(QueueName=dest_name)
    sqs.send_message_batch(
        QueueUrl=dlq, Entries=[{"Id": str(i), "MessageBody": "x"} for i in range(10)]
    )
    sqs.start_message_move_task(
        SourceArn=_arn(dlq_name), DestinationArn=_arn(dest_name), MaxNumberOfMessagesPerSecond=1
    )
    assert first.terminate() == 0
    assert "Traceback" not in first.log

    second = launch(env)
    second.wait_for("/readyz")
    later = second.sqs_client(retries={"max_attempts": 1})
    (task,) = later.list_message_move_tasks(SourceArn=_arn(dlq_name))["Results"]
    assert task["Status"] == "FAILED"
    assert "shut down" in task["FailureReason"]
    assert task["ApproximateNumberOfMessagesMoved"] < 10
