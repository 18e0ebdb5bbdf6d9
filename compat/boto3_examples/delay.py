"""Delay: messages that stay invisible for a while after they are sent.

A queue's DelaySeconds applies to every message sent to it; a message's own DelaySeconds
overrides it (on standard queues).

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
QUEUE_DELAY_S = 2


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def receive_bodies(url: str, wait_s: int) -> list[str]:
    messages = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=wait_s
    ).get("Messages", [])
    for message in messages:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    return [message["Body"] for message in messages]


def main() -> None:
    name = f"example-delay-{secrets.token_hex(3)}"
    url = sqs.create_queue(QueueName=name, Attributes={"DelaySeconds": str(QUEUE_DELAY_S)})[
        "QueueUrl"
    ]
    try:
        sent_at = time.perf_counter()
        sqs.send_message(QueueUrl=url, MessageBody="delayed by the queue")
        sqs.send_message(QueueUrl=url, MessageBody="not delayed", DelaySeconds=0)

        first = receive_bodies(url, wait_s=1)
        print(f"at once: {first}")
        check(first == ["not delayed"], "a message's DelaySeconds=0 overrides the queue's delay")

        later = receive_bodies(url, wait_s=10)
        took_s = time.perf_counter() - sent_at
        print(f"after {took_s:.2f} s: {later}")
        check(later == ["delayed by the queue"], "the delayed message arrived")
        check(took_s >= QUEUE_DELAY_S - 0.5, f"not before the queue's {QUEUE_DELAY_S} s delay")

        # Per-entry delays in a batch.
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"DelaySeconds": "0"})
        sent_at = time.perf_counter()
        sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": "now", "MessageBody": "batch, now"},
                {"Id": "soon", "MessageBody": "batch, in 1 s", "DelaySeconds": 1},
            ],
        )
        first = receive_bodies(url, wait_s=1)
        later = receive_bodies(url, wait_s=10)
        took_s = time.perf_counter() - sent_at
        print(f"batch: {first}, then after {took_s:.2f} s: {later}")
        check(
            first == ["batch, now"] and later == ["batch, in 1 s"] and took_s >= 0.5,
            "each batch entry keeps its own delay",
        )
    finally:
        sqs.delete_queue(QueueUrl=url)


if __name__ == "__main__":
    main()
