"""Visibility timeout: a received message is hidden, reappears if not deleted, and can be
kept hidden for longer while work on it goes on.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import secrets
import sys
import time

import boto3

sqs = boto3.client("sqs")
VISIBILITY_S = 1
EXTEND_TO_S = 2  # each heartbeat hides the message for this long from now


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def receive(url: str, wait_s: int) -> list[dict]:
    return sqs.receive_message(
        QueueUrl=url,
        WaitTimeSeconds=wait_s,
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    ).get("Messages", [])


def main() -> None:
    name = f"example-visibility-{secrets.token_hex(3)}"
    url = sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": str(VISIBILITY_S)})[
        "QueueUrl"
    ]
    try:
        sqs.send_message(QueueUrl=url, MessageBody="resize image 42")

        (first,) = receive(url, wait_s=5)
        print(f"received {first['MessageId']}; hidden for {VISIBILITY_S} s")
        check(not receive(url, wait_s=0), "while hidden, no one else receives it")

        # The consumer "crashes": it never deletes the message, so it comes back.
        start = time.perf_counter()
        again = receive(url, wait_s=10)
        took_s = time.perf_counter() - start
        print(f"received it again after {took_s:.2f} s")
        check(
            [m["MessageId"] for m in again] == [first["MessageId"]],
            "the undeleted message reappeared after its visibility timeout",
        )
        check(
            again[0]["Attributes"]["ApproximateReceiveCount"] == "2",
            "its receive count is now 2",
        )

        # Hand it back at once: visibility 0 makes it receivable immediately.
        sqs.change_message_visibility(
            QueueUrl=url, ReceiptHandle=again[0]["ReceiptHandle"], VisibilityTimeout=0
        )
        (current,) = receive(url, wait_s=5)
        check(current["MessageId"] == first["MessageId"], "visibility 0 released it at once")

        # Long work: extend the timeout before it runs out, like a heartbeat. Each step of
        # "work" here is a one-second receive that proves no one else can see the message.
        handle = current["ReceiptHandle"]
        work_start = time.perf_counter()
        for step in range(1, 3):
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=handle, VisibilityTimeout=EXTEND_TO_S
            )
            check(
                not receive(url, wait_s=1),
                f"step {step}: visibility extended, the message stays hidden",
            )
        worked_s = time.perf_counter() - work_start
        print(f"worked {worked_s:.2f} s in all")
        check(
            worked_s > VISIBILITY_S, f"the work outlasted the {VISIBILITY_S} s visibility timeout"
        )

        sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)
        counts = sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
            ],
        )["Attributes"]
        check(
            counts
            == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0"},
            "deleted with its newest receipt handle, the message is gone",
        )
    finally:
        sqs.delete_queue(QueueUrl=url)


if __name__ == "__main__":
    main()
