"""The sqs-core and sqs-fifo scenarios through boto3: every step of compat/clients/README.md.

Run by `python -m compat.record` behind its recording proxy (and usable by hand against any
okuri): the endpoint, keys and region come from the environment, queue names from
OKURI_SCENARIO_PREFIX, the scenario from OKURI_SCENARIO (sqs-core when unset). One request per
step, no retries, no polling loops, so the recording holds exactly the step list and a replay
of it is deterministic. Exits 0 only if every check
passed; the last stdout line is `SCENARIO {json}` naming the client and its version.

Two rows of compat/clients/__init__.py run this same file: `boto3` with the project's boto3,
whose SQS model speaks AWS JSON 1.0, and `boto3-query` with the older boto3 pinned in
compat/clients/boto3-query/requirements.txt, whose SQS model still speaks the query protocol.
The client name it reports follows from the protocol of the SQS model it loaded. Both read the
endpoint from AWS_ENDPOINT_URL and the region from AWS_DEFAULT_REGION (the older botocore does
not read AWS_REGION); keep to what both versions accept.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError

# For each protocol an SQS model of boto3 may speak: the client's name in CLIENTS, and its
# queue-name prefix there (the default when OKURI_SCENARIO_PREFIX is unset).
CLIENT_BY_PROTOCOL = {"json": ("boto3", "boto3-"), "query": ("boto3-query", "boto3q-")}
# OKURI_SCENARIO picks the step list; unset, the program runs sqs-core.
DEFAULT_SCENARIO = "sqs-core"
BODY1 = "sqs-core message one"
BLOB = b"\x00\x01\x02okuri\xff"
ATTRS1 = {
    "kind": {"DataType": "String", "StringValue": "greeting"},
    "count": {"DataType": "Number", "StringValue": "42"},
    "blob": {"DataType": "Binary", "BinaryValue": BLOB},
}
BAD_HANDLE = "not-a-receipt-handle"
ACCOUNT = "000000000000"
# sqs-fifo's constants.
ATTEMPT = "sqs-fifo-attempt-1"
FIFO_NAMES = ["FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"]

Step = Callable[[], None]


class StepFailed(Exception):
    pass


def check(ok: bool, what: str) -> None:
    if not ok:
        raise StepFailed(what)


def md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def is_md5(value: Any) -> bool:
    return (
        isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdef" for c in value)
    )


def arn(queue: str) -> str:
    return f"arn:aws:sqs:us-east-1:{ACCOUNT}:{queue}"


def fifo_body(name: str) -> str:
    return "sqs-fifo " + name


def is_sequence(value: Any) -> bool:
    """A FIFO SequenceNumber: a string of decimal digits (SQS's are 20 long)."""
    return isinstance(value, str) and value.isdigit()


def fifo_attributes(dead_queue: str) -> dict[str, str]:
    """sqs-fifo's MAIN queue: every FIFO setting away from its default, and a FIFO DLQ."""
    policy = {"deadLetterTargetArn": arn(dead_queue), "maxReceiveCount": "3"}
    return {
        "FifoQueue": "true",
        "ContentBasedDeduplication": "true",
        "DeduplicationScope": "messageGroup",
        "FifoThroughputLimit": "perMessageGroupId",
        "VisibilityTimeout": "30",
        "RedrivePolicy": json.dumps(policy, separators=(",", ":")),
    }


def expect_error(call: Callable[[], Any], *codes: str) -> ClientError:
    """Run `call`, which must fail with one of `codes` (shape name or legacy query code)."""
    try:
        call()
    except ClientError as err:
        error = err.response.get("Error", {})
        seen = {error.get("Code"), error.get("QueryErrorCode")}
        check(bool(seen & set(codes)), f"expected error {' or '.join(codes)}, got {error}")
        return err
    raise StepFailed(f"expected error {' or '.join(codes)}, the call succeeded")


def ids(entries: list[dict[str, Any]] | None) -> set[str]:
    return {e["Id"] for e in entries or []}


def sqs_core(sqs: Any, prefix: str) -> list[Step]:
    """The sqs-core step list (compat/clients/README.md), as functions run in order."""
    main_q, dead_q, retry_q = prefix + "main", prefix + "dead", prefix + "retry"
    missing_q = prefix + "missing"
    attributes = {"VisibilityTimeout": "30", "MessageRetentionPeriod": "86400"}
    kept: dict[str, Any] = {}

    def create_queue() -> None:
        url = sqs.create_queue(
            QueueName=main_q, Attributes=attributes, tags={"team": "compat", "tier": "test"}
        )["QueueUrl"]
        check(url.endswith(f"/{ACCOUNT}/{main_q}"), f"queue URL {url}")
        kept["url"] = url

    def create_queue_idempotent() -> None:
        url = sqs.create_queue(QueueName=main_q, Attributes=attributes)["QueueUrl"]
        check(url == kept["url"], f"second create answered {url}")

    def create_queue_conflict() -> None:
        expect_error(
            lambda: sqs.create_queue(
                QueueName=main_q,
                Attributes={**attributes, "VisibilityTimeout": "45"},
            ),
            "QueueNameExists",
            "QueueAlreadyExists",
        )

    def get_queue_url() -> None:
        url = sqs.get_queue_url(QueueName=main_q)["QueueUrl"]
        check(url == kept["url"], f"GetQueueUrl answered {url}")

    def get_queue_url_missing() -> None:
        expect_error(
            lambda: sqs.get_queue_url(QueueName=missing_q),
            "QueueDoesNotExist",
            "AWS.SimpleQueueService.NonExistentQueue",
        )

    def list_queues() -> None:
        urls = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
        check(urls == [kept["url"]], f"ListQueues answered {urls}")

    def set_queue_attributes() -> None:
        sqs.set_queue_attributes(QueueUrl=kept["url"], Attributes={"VisibilityTimeout": "20"})

    def get_queue_attributes() -> None:
        got = sqs.get_queue_attributes(QueueUrl=kept["url"], AttributeNames=["All"])["Attributes"]
        want = {
            "VisibilityTimeout": "20",
            "MessageRetentionPeriod": "86400",
            "DelaySeconds": "0",
            "QueueArn": arn(main_q),
            "ApproximateNumberOfMessages": "0",
        }
        wrong = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
        check(not wrong, f"attributes differ: {wrong}")

    def tag_queue() -> None:
        sqs.tag_queue(QueueUrl=kept["url"], Tags={"stage": "replay"})

    def list_queue_tags() -> None:
        tags = sqs.list_queue_tags(QueueUrl=kept["url"]).get("Tags", {})
        want = {"team": "compat", "tier": "test", "stage": "replay"}
        check(tags == want, f"tags {tags}")

    def untag_queue() -> None:
        sqs.untag_queue(QueueUrl=kept["url"], TagKeys=["tier"])

    def list_queue_tags_after_untag() -> None:
        tags = sqs.list_queue_tags(QueueUrl=kept["url"]).get("Tags", {})
        check(tags == {"team": "compat", "stage": "replay"}, f"tags {tags}")

    def send_message() -> None:
        r = sqs.send_message(
            QueueUrl=kept["url"], MessageBody=BODY1, MessageAttributes=ATTRS1, DelaySeconds=0
        )
        check(bool(r.get("MessageId")), "no MessageId")
        check(r.get("MD5OfMessageBody") == md5(BODY1), f"MD5OfMessageBody {r}")
        check(is_md5(r.get("MD5OfMessageAttributes")), f"MD5OfMessageAttributes {r}")
        kept["id1"], kept["md5_attrs1"] = r["MessageId"], r["MD5OfMessageAttributes"]

    def send_message_delayed() -> None:
        r = sqs.send_message(QueueUrl=kept["url"], MessageBody="sqs-core delayed", DelaySeconds=900)
        check(bool(r.get("MessageId")), "no MessageId")

    def send_message_batch() -> None:
        r = sqs.send_message_batch(
            QueueUrl=kept["url"],
            Entries=[
                {"Id": "b1", "MessageBody": "sqs-core batch one"},
                {
                    "Id": "b2",
                    "MessageBody": "sqs-core batch two",
                    "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "batch"}},
                },
            ],
        )
        check(ids(r.get("Successful")) == {"b1", "b2"}, f"Successful {r.get('Successful')}")
        check(not r.get("Failed"), f"Failed {r.get('Failed')}")
        bodies = {"b1": "sqs-core batch one", "b2": "sqs-core batch two"}
        for entry in r["Successful"]:
            check(entry["MD5OfMessageBody"] == md5(bodies[entry["Id"]]), f"MD5 of {entry}")

    def send_message_batch_duplicate_ids() -> None:
        expect_error(
            lambda: sqs.send_message_batch(
                QueueUrl=kept["url"],
                Entries=[{"Id": "dup", "MessageBody": "x"}, {"Id": "dup", "MessageBody": "x"}],
            ),
            "BatchEntryIdsNotDistinct",
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        )

    def send_message_batch_empty() -> None:
        expect_error(
            lambda: sqs.send_message_batch(QueueUrl=kept["url"], Entries=[]),
            "EmptyBatchRequest",
            "AWS.SimpleQueueService.EmptyBatchRequest",
        )

    def send_message_batch_too_many() -> None:
        expect_error(
            lambda: sqs.send_message_batch(
                QueueUrl=kept["url"],
                Entries=[{"Id": f"e{i}", "MessageBody": "x"} for i in range(11)],
            ),
            "TooManyEntriesInBatchRequest",
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        )

    def receive_message() -> None:
        messages = sqs.receive_message(
            QueueUrl=kept["url"],
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
            MaxNumberOfMessages=10,
            WaitTimeSeconds=5,
        ).get("Messages", [])
        by_body = {m["Body"]: m for m in messages}
        want = {BODY1, "sqs-core batch one", "sqs-core batch two"}
        check(len(messages) == 3 and set(by_body) == want, f"received {sorted(by_body)}")
        m1 = by_body[BODY1]
        check(m1["MessageId"] == kept["id1"], f"MessageId {m1['MessageId']} != {kept['id1']}")
        check(
            m1.get("MessageAttributes") == ATTRS1,
            f"MessageAttributes {m1.get('MessageAttributes')}",
        )
        check(m1.get("MD5OfBody") == md5(BODY1), f"MD5OfBody {m1.get('MD5OfBody')}")
        check(
            m1.get("MD5OfMessageAttributes") == kept["md5_attrs1"],
            f"MD5OfMessageAttributes {m1.get('MD5OfMessageAttributes')}",
        )
        system = m1.get("Attributes", {})
        check(system.get("ApproximateReceiveCount") == "1", f"Attributes {system}")
        check(system.get("SentTimestamp", "").isdigit(), f"SentTimestamp in {system}")
        kept["h1"] = m1["ReceiptHandle"]
        kept["hb1"] = by_body["sqs-core batch one"]["ReceiptHandle"]
        kept["hb2"] = by_body["sqs-core batch two"]["ReceiptHandle"]

    def change_message_visibility() -> None:
        sqs.change_message_visibility(
            QueueUrl=kept["url"], ReceiptHandle=kept["h1"], VisibilityTimeout=60
        )

    def change_message_visibility_batch() -> None:
        r = sqs.change_message_visibility_batch(
            QueueUrl=kept["url"],
            Entries=[
                {"Id": "c1", "ReceiptHandle": kept["hb1"], "VisibilityTimeout": 60},
                {"Id": "c2", "ReceiptHandle": kept["hb2"], "VisibilityTimeout": 60},
            ],
        )
        check(ids(r.get("Successful")) == {"c1", "c2"}, f"Successful {r.get('Successful')}")
        check(not r.get("Failed"), f"Failed {r.get('Failed')}")

    def delete_message() -> None:
        sqs.delete_message(QueueUrl=kept["url"], ReceiptHandle=kept["h1"])

    def delete_message_invalid_handle() -> None:
        expect_error(
            lambda: sqs.delete_message(QueueUrl=kept["url"], ReceiptHandle=BAD_HANDLE),
            "ReceiptHandleIsInvalid",
        )

    def delete_message_batch_partial() -> None:
        r = sqs.delete_message_batch(
            QueueUrl=kept["url"],
            Entries=[
                {"Id": "d1", "ReceiptHandle": kept["hb1"]},
                {"Id": "d2", "ReceiptHandle": BAD_HANDLE},
            ],
        )
        check(ids(r.get("Successful")) == {"d1"}, f"Successful {r.get('Successful')}")
        failed = r.get("Failed", [])
        check(
            len(failed) == 1
            and failed[0]["Id"] == "d2"
            and failed[0]["Code"] == "ReceiptHandleIsInvalid"
            and failed[0]["SenderFault"] is True,
            f"Failed {failed}",
        )

    def get_queue_attributes_counts() -> None:
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        got = sqs.get_queue_attributes(QueueUrl=kept["url"], AttributeNames=names)["Attributes"]
        check([got.get(n) for n in names] == ["0", "1", "1"], f"counts {got}")

    def purge_queue() -> None:
        sqs.purge_queue(QueueUrl=kept["url"])

    def receive_after_purge() -> None:
        r = sqs.receive_message(QueueUrl=kept["url"], MaxNumberOfMessages=10, WaitTimeSeconds=0)
        check(not r.get("Messages"), f"received {r.get('Messages')}")

    def create_dead_letter_queue() -> None:
        kept["dead_url"] = sqs.create_queue(QueueName=dead_q)["QueueUrl"]

    def create_redrive_queue() -> None:
        policy = json.dumps(
            {"deadLetterTargetArn": arn(dead_q), "maxReceiveCount": "1"}, separators=(",", ":")
        )
        kept["retry_url"] = sqs.create_queue(
            QueueName=retry_q, Attributes={"RedrivePolicy": policy}
        )["QueueUrl"]

    def send_poison() -> None:
        r = sqs.send_message(QueueUrl=kept["retry_url"], MessageBody="sqs-core poison")
        check(bool(r.get("MessageId")), "no MessageId")
        kept["idp"] = r["MessageId"]

    def receive_poison() -> None:
        messages = sqs.receive_message(
            QueueUrl=kept["retry_url"],
            AttributeNames=["ApproximateReceiveCount"],
            VisibilityTimeout=0,
            WaitTimeSeconds=5,
        ).get("Messages", [])
        check(len(messages) == 1, f"received {len(messages)} messages")
        check(messages[0]["MessageId"] == kept["idp"], f"MessageId {messages[0]['MessageId']}")
        count = messages[0].get("Attributes", {}).get("ApproximateReceiveCount")
        check(count == "1", f"ApproximateReceiveCount {count}")

    def receive_poison_again() -> None:
        r = sqs.receive_message(QueueUrl=kept["retry_url"], WaitTimeSeconds=0)
        check(not r.get("Messages"), f"received {r.get('Messages')}")

    def receive_dead_letter() -> None:
        messages = sqs.receive_message(
            QueueUrl=kept["dead_url"],
            AttributeNames=["All"],
            VisibilityTimeout=0,
            WaitTimeSeconds=5,
        ).get("Messages", [])
        check(len(messages) == 1, f"received {len(messages)} messages")
        check(messages[0]["MessageId"] == kept["idp"], f"MessageId {messages[0]['MessageId']}")
        check(messages[0]["Body"] == "sqs-core poison", f"Body {messages[0]['Body']}")

    def list_dead_letter_source_queues() -> None:
        urls = sqs.list_dead_letter_source_queues(QueueUrl=kept["dead_url"]).get("queueUrls", [])
        check(urls == [kept["retry_url"]], f"queueUrls {urls}")

    def send_dead_letter_direct() -> None:
        r = sqs.send_message(QueueUrl=kept["dead_url"], MessageBody="sqs-core poison")
        check(bool(r.get("MessageId")), "no MessageId")

    def start_message_move_task() -> None:
        r = sqs.start_message_move_task(
            SourceArn=arn(dead_q), DestinationArn=arn(retry_q), MaxNumberOfMessagesPerSecond=1
        )
        check(bool(r.get("TaskHandle")), f"no TaskHandle in {r}")
        kept["task"] = r["TaskHandle"]

    def list_message_move_tasks() -> None:
        results = sqs.list_message_move_tasks(SourceArn=arn(dead_q), MaxResults=10).get(
            "Results", []
        )
        check(len(results) == 1, f"Results {results}")
        task = results[0]
        want = {
            "Status": "RUNNING",
            "SourceArn": arn(dead_q),
            "DestinationArn": arn(retry_q),
            "ApproximateNumberOfMessagesToMove": 2,
            "TaskHandle": kept["task"],
        }
        wrong = {k: task.get(k) for k, v in want.items() if task.get(k) != v}
        check(not wrong, f"task differs: {wrong}")

    def cancel_message_move_task() -> None:
        sqs.cancel_message_move_task(TaskHandle=kept["task"])  # moved 0 or 1: not checked

    def receive_moved() -> None:
        messages = sqs.receive_message(
            QueueUrl=kept["retry_url"], MaxNumberOfMessages=10, WaitTimeSeconds=5
        ).get("Messages", [])
        check(len(messages) == 1, f"received {len(messages)} messages")
        check(messages[0]["Body"] == "sqs-core poison", f"Body {messages[0]['Body']}")

    def receive_not_moved() -> None:
        messages = sqs.receive_message(
            QueueUrl=kept["dead_url"], MaxNumberOfMessages=10, WaitTimeSeconds=5
        ).get("Messages", [])
        check(len(messages) == 1, f"received {len(messages)} messages")
        check(messages[0]["Body"] == "sqs-core poison", f"Body {messages[0]['Body']}")

    def delete_queues() -> None:
        for url in (kept["url"], kept["retry_url"], kept["dead_url"]):
            sqs.delete_queue(QueueUrl=url)

    def get_queue_url_deleted() -> None:
        expect_error(
            lambda: sqs.get_queue_url(QueueName=main_q),
            "QueueDoesNotExist",
            "AWS.SimpleQueueService.NonExistentQueue",
        )

    def list_queues_empty() -> None:
        urls = sqs.list_queues(QueueNamePrefix=prefix).get("QueueUrls", [])
        check(urls == [], f"ListQueues answered {urls}")

    return [
        create_queue,
        create_queue_idempotent,
        create_queue_conflict,
        get_queue_url,
        get_queue_url_missing,
        list_queues,
        set_queue_attributes,
        get_queue_attributes,
        tag_queue,
        list_queue_tags,
        untag_queue,
        list_queue_tags_after_untag,
        send_message,
        send_message_delayed,
        send_message_batch,
        send_message_batch_duplicate_ids,
        send_message_batch_empty,
        send_message_batch_too_many,
        receive_message,
        change_message_visibility,
        change_message_visibility_batch,
        delete_message,
        delete_message_invalid_handle,
        delete_message_batch_partial,
        get_queue_attributes_counts,
        purge_queue,
        receive_after_purge,
        create_dead_letter_queue,
        create_redrive_queue,
        send_poison,
        receive_poison,
        receive_poison_again,
        receive_dead_letter,
        list_dead_letter_source_queues,
        send_dead_letter_direct,
        start_message_move_task,
        list_message_move_tasks,
        cancel_message_move_task,
        receive_moved,
        receive_not_moved,
        delete_queues,
        get_queue_url_deleted,
        list_queues_empty,
    ]


def sqs_fifo(sqs: Any, prefix: str) -> list[Step]:
    """The sqs-fifo step list (compat/clients/README.md), as functions run in order."""
    main_q, dead_q = prefix + "fifo-main.fifo", prefix + "fifo-dead.fifo"
    # The query-protocol boto3 predates MessageSystemAttributeNames; AttributeNames still asks
    # for the same system attributes there.
    receive_members = sqs.meta.service_model.operation_model("ReceiveMessage").input_shape.members
    system_names = (
        "MessageSystemAttributeNames"
        if "MessageSystemAttributeNames" in receive_members
        else "AttributeNames"
    )
    kept: dict[str, Any] = {}

    def send(url: str, body: str, group: str | None, dedup: str | None, **more: Any) -> Any:
        params: dict[str, Any] = {"QueueUrl": url, "MessageBody": body, **more}
        if group is not None:
            params["MessageGroupId"] = group
        if dedup is not None:
            params["MessageDeduplicationId"] = dedup
        return sqs.send_message(**params)

    def sent(r: Any, body: str, after: str | None) -> tuple[str, str]:
        """(MessageId, SequenceNumber) of a send's answer, checked; its number after `after`."""
        check(bool(r.get("MessageId")), f"no MessageId in {r}")
        check(r.get("MD5OfMessageBody") == md5(body), f"MD5OfMessageBody {r}")
        number = r.get("SequenceNumber", "")
        check(is_sequence(number), f"SequenceNumber {number!r}")
        if after is not None:
            check(int(number) > int(after), f"SequenceNumber {number} not after {after}")
        return r["MessageId"], number

    def receive(**params: Any) -> list[dict[str, Any]]:
        answer = sqs.receive_message(QueueUrl=kept["url"], **params)
        return list(answer.get("Messages", []))

    def create_dead_letter_queue() -> None:
        url = sqs.create_queue(QueueName=dead_q, Attributes={"FifoQueue": "true"})["QueueUrl"]
        check(url.endswith(f"/{ACCOUNT}/{dead_q}"), f"queue URL {url}")
        kept["dead_url"] = url

    def create_queue() -> None:
        url = sqs.create_queue(QueueName=main_q, Attributes=fifo_attributes(dead_q))["QueueUrl"]
        check(url.endswith(f"/{ACCOUNT}/{main_q}"), f"queue URL {url}")
        kept["url"] = url

    def get_queue_attributes() -> None:
        got = sqs.get_queue_attributes(QueueUrl=kept["url"], AttributeNames=["All"])["Attributes"]
        want = {
            "FifoQueue": "true",
            "ContentBasedDeduplication": "true",
            "DeduplicationScope": "messageGroup",
            "FifoThroughputLimit": "perMessageGroupId",
            "VisibilityTimeout": "30",
            "QueueArn": arn(main_q),
        }
        wrong = {k: got.get(k) for k, v in want.items() if got.get(k) != v}
        check(not wrong, f"attributes differ: {wrong}")
        policy = json.loads(got.get("RedrivePolicy", "{}"))
        check(
            policy.get("deadLetterTargetArn") == arn(dead_q)
            and str(policy.get("maxReceiveCount")) == "3",
            f"RedrivePolicy {got.get('RedrivePolicy')}",
        )

    def get_dead_letter_queue_attributes() -> None:
        got = sqs.get_queue_attributes(QueueUrl=kept["dead_url"], AttributeNames=FIFO_NAMES)
        want = dict(zip(FIFO_NAMES, ("true", "false", "queue", "perQueue"), strict=True))
        check(got.get("Attributes") == want, f"attributes {got.get('Attributes')}")

    def send_message_a1() -> None:
        r = send(kept["url"], fifo_body("a1"), "a", "a1")
        kept["id_a1"], kept["seq_a1"] = sent(r, fifo_body("a1"), None)

    def send_message_b1() -> None:
        r = send(kept["url"], fifo_body("b1"), "b", "b1")
        kept["seq_b1"] = sent(r, fifo_body("b1"), kept["seq_a1"])[1]

    def send_message_a2() -> None:
        r = send(kept["url"], fifo_body("a2"), "a", "a2")
        kept["seq_a2"] = sent(r, fifo_body("a2"), kept["seq_b1"])[1]

    def send_message_duplicate() -> None:
        r = send(kept["url"], fifo_body("a1"), "a", "a1")
        check(r.get("MessageId") == kept["id_a1"], f"MessageId {r.get('MessageId')}")

    def send_message_content_based() -> None:
        r = send(kept["url"], fifo_body("b2"), "b", None)
        kept["id_b2"], kept["seq_b2"] = sent(r, fifo_body("b2"), kept["seq_a2"])

    def send_message_content_duplicate() -> None:
        r = send(kept["url"], fifo_body("b2"), "b", None)
        check(r.get("MessageId") == kept["id_b2"], f"MessageId {r.get('MessageId')}")

    def send_message_batch() -> None:
        r = sqs.send_message_batch(
            QueueUrl=kept["url"],
            Entries=[
                {
                    "Id": x,
                    "MessageBody": fifo_body(x),
                    "MessageGroupId": x[0],
                    "MessageDeduplicationId": x,
                }
                for x in ("a3", "b3")
            ],
        )
        check(ids(r.get("Successful")) == {"a3", "b3"}, f"Successful {r.get('Successful')}")
        check(not r.get("Failed"), f"Failed {r.get('Failed')}")
        by_id = {e["Id"]: e for e in r["Successful"]}
        kept["seq_a3"] = sent(by_id["a3"], fifo_body("a3"), kept["seq_b2"])[1]
        kept["seq_b3"] = sent(by_id["b3"], fifo_body("b3"), kept["seq_a3"])[1]

    def receive_first() -> None:
        messages = receive(**{system_names: ["All"]}, MaxNumberOfMessages=1, WaitTimeSeconds=5)
        check(len(messages) == 1, f"received {len(messages)} messages")
        m = messages[0]
        check(m["Body"] == fifo_body("a1"), f"Body {m['Body']}")
        check(m["MessageId"] == kept["id_a1"], f"MessageId {m['MessageId']}")
        system = m.get("Attributes", {})
        want = {
            "MessageGroupId": "a",
            "MessageDeduplicationId": "a1",
            "SequenceNumber": kept["seq_a1"],
            "ApproximateReceiveCount": "1",
        }
        wrong = {k: system.get(k) for k, v in want.items() if system.get(k) != v}
        check(not wrong, f"Attributes differ: {wrong}")
        kept["h_a1"] = m["ReceiptHandle"]

    def receive_other_group() -> None:
        messages = receive(
            **{system_names: ["All"]},
            MaxNumberOfMessages=10,
            WaitTimeSeconds=5,
            ReceiveRequestAttemptId=ATTEMPT,
        )
        bodies = [m["Body"] for m in messages]
        check(bodies == [fifo_body(x) for x in ("b1", "b2", "b3")], f"received {bodies}")
        want = [
            ("b", "b1", kept["seq_b1"]),
            ("b", hashlib.sha256(fifo_body("b2").encode()).hexdigest(), kept["seq_b2"]),
            ("b", "b3", kept["seq_b3"]),
        ]
        got = [
            tuple(
                m.get("Attributes", {}).get(k)
                for k in ("MessageGroupId", "MessageDeduplicationId", "SequenceNumber")
            )
            for m in messages
        ]
        check(got == want, f"Attributes {got}")
        kept["h_b"] = [m["ReceiptHandle"] for m in messages]

    def receive_retry_attempt() -> None:
        messages = receive(
            **{system_names: ["All"]},
            MaxNumberOfMessages=10,
            WaitTimeSeconds=5,
            ReceiveRequestAttemptId=ATTEMPT,
        )
        handles = [m["ReceiptHandle"] for m in messages]
        check(handles == kept["h_b"], f"receipt handles {handles} != {kept['h_b']}")
        bodies = [m["Body"] for m in messages]
        check(bodies == [fifo_body(x) for x in ("b1", "b2", "b3")], f"received {bodies}")

    def receive_held_group() -> None:
        messages = receive(MaxNumberOfMessages=10, WaitTimeSeconds=0)
        check(not messages, f"received {[m['Body'] for m in messages]}")

    def delete_message() -> None:
        sqs.delete_message(QueueUrl=kept["url"], ReceiptHandle=kept["h_a1"])

    def receive_next_in_group() -> None:
        messages = receive(
            **{system_names: ["MessageGroupId", "SequenceNumber"]},
            MaxNumberOfMessages=10,
            WaitTimeSeconds=5,
        )
        bodies = [m["Body"] for m in messages]
        check(bodies == [fifo_body("a2"), fifo_body("a3")], f"received {bodies}")
        got = [m.get("Attributes") for m in messages]
        want = [
            {"MessageGroupId": "a", "SequenceNumber": kept["seq_a2"]},
            {"MessageGroupId": "a", "SequenceNumber": kept["seq_a3"]},
        ]
        check(got == want, f"Attributes {got}")
        kept["h_a"] = [m["ReceiptHandle"] for m in messages]

    def delete_message_batch() -> None:
        handles = dict(zip(("a2", "a3", "b1", "b2", "b3"), kept["h_a"] + kept["h_b"], strict=True))
        r = sqs.delete_message_batch(
            QueueUrl=kept["url"],
            Entries=[{"Id": k, "ReceiptHandle": h} for k, h in handles.items()],
        )
        check(ids(r.get("Successful")) == set(handles), f"Successful {r.get('Successful')}")
        check(not r.get("Failed"), f"Failed {r.get('Failed')}")

    def receive_empty() -> None:
        messages = receive(MaxNumberOfMessages=10, WaitTimeSeconds=0)
        check(not messages, f"received {[m['Body'] for m in messages]}")

    def send_message_missing_group() -> None:
        expect_error(
            lambda: send(kept["url"], fifo_body("x"), None, "x1"),
            "MissingParameter",
            "MissingRequiredParameterException",
        )

    def send_message_missing_deduplication_id() -> None:
        expect_error(
            lambda: send(kept["dead_url"], fifo_body("x"), "x", None),
            "InvalidParameterValue",
            "InvalidParameterValueException",
        )

    def send_message_delay() -> None:
        expect_error(
            lambda: send(kept["url"], fifo_body("x"), "x", "x2", DelaySeconds=5),
            "InvalidParameterValue",
            "InvalidParameterValueException",
        )

    def create_queue_fifo_name_only() -> None:
        expect_error(
            lambda: sqs.create_queue(QueueName=prefix + "fifo-plain.fifo"),
            "InvalidParameterValue",
            "InvalidParameterValueException",
        )

    def create_queue_fifo_attribute_only() -> None:
        expect_error(
            lambda: sqs.create_queue(
                QueueName=prefix + "fifo-plain", Attributes={"FifoQueue": "true"}
            ),
            "InvalidParameterValue",
            "InvalidParameterValueException",
        )

    def delete_queues() -> None:
        for url in (kept["url"], kept["dead_url"]):
            sqs.delete_queue(QueueUrl=url)

    def list_queues_empty() -> None:
        urls = sqs.list_queues(QueueNamePrefix=prefix + "fifo-").get("QueueUrls", [])
        check(urls == [], f"ListQueues answered {urls}")

    return [
        create_dead_letter_queue,
        create_queue,
        get_queue_attributes,
        get_dead_letter_queue_attributes,
        send_message_a1,
        send_message_b1,
        send_message_a2,
        send_message_duplicate,
        send_message_content_based,
        send_message_content_duplicate,
        send_message_batch,
        receive_first,
        receive_other_group,
        receive_retry_attempt,
        receive_held_group,
        delete_message,
        receive_next_in_group,
        delete_message_batch,
        receive_empty,
        send_message_missing_group,
        send_message_missing_deduplication_id,
        send_message_delay,
        create_queue_fifo_name_only,
        create_queue_fifo_attribute_only,
        delete_queues,
        list_queues_empty,
    ]


SCENARIOS: dict[str, Callable[[Any, str], list[Step]]] = {
    "sqs-core": sqs_core,
    "sqs-fifo": sqs_fifo,
}


def main() -> int:
    scenario = os.environ.get("OKURI_SCENARIO") or DEFAULT_SCENARIO
    if scenario not in SCENARIOS:
        print(f"unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    sqs = boto3.client(
        "sqs",
        config=Config(
            retries={"total_max_attempts": 1, "mode": "standard"},
            parameter_validation=False,  # step 17's empty batch must reach the server
            connect_timeout=5,
            read_timeout=30,
        ),
    )
    protocol = sqs.meta.service_model.protocol
    if protocol not in CLIENT_BY_PROTOCOL:
        print(f"boto3 {boto3.__version__} speaks {protocol!r} to SQS: no client", file=sys.stderr)
        return 1
    client, default_prefix = CLIENT_BY_PROTOCOL[protocol]
    prefix = os.environ.get("OKURI_SCENARIO_PREFIX", default_prefix)
    steps = SCENARIOS[scenario](sqs, prefix)
    for number, step in enumerate(steps, 1):
        name = step.__name__.replace("_", "-")
        try:
            step()
        except (StepFailed, ClientError, botocore.exceptions.BotoCoreError, KeyError) as err:
            print(f"step {number} {name} failed: {err!r}", file=sys.stderr)
            return 1
        print(f"step {number} {name}: ok")
    print(
        "SCENARIO "
        + json.dumps({"client": client, "version": boto3.__version__, "scenario": scenario})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
