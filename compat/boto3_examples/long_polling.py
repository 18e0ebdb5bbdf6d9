"""Long polling: the queue's ReceiveMessageWaitTimeSeconds and the per-call WaitTimeSeconds.

A long poll waits up to the given number of seconds for a message instead of answering
empty at once, and returns as soon as one arrives. This example times three receives:
one that waits the queue's default and finds nothing, one that is woken by a message
sent while it waits, and a short poll that answers at once.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import secrets
import sys
import threading
import time

import boto3

sqs = boto3.client("sqs")


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def timed_receive(url: str, **kwargs: object) -> tuple[list[dict], float]:
    """The messages one ReceiveMessage call returned, and how long it took in seconds."""
    start = time.perf_counter()
    messages = sqs.receive_message(QueueUrl=url, **kwargs).get("Messages", [])
    return messages, time.perf_counter() - start


def main() -> None:
    name = f"example-long-polling-{secrets.token_hex(3)}"
    # Every receive on this queue waits up to 2 s unless the call says otherwise.
    url = sqs.create_queue(QueueName=name, Attributes={"ReceiveMessageWaitTimeSeconds": "2"})[
        "QueueUrl"
    ]
    try:
        messages, took_s = timed_receive(url)
        print(f"receive without WaitTimeSeconds: {len(messages)} messages after {took_s:.2f} s")
        check(
            not messages and took_s >= 1.5,
            "an empty receive waited for the queue's ReceiveMessageWaitTimeSeconds (2 s)",
        )

        # Ask to wait up to 10 s; a producer sends one second into the wait.
        producer = threading.Timer(
            1.0, lambda: sqs.send_message(QueueUrl=url, MessageBody="sent while you waited")
        )
        producer.start()
        messages, took_s = timed_receive(url, WaitTimeSeconds=10)
        producer.join()
        print(f"receive with WaitTimeSeconds=10: {len(messages)} message after {took_s:.2f} s")
        check(
            [m["Body"] for m in messages] == ["sent while you waited"],
            "the waiting receive got the message sent while it waited",
        )
        check(
            0.5 <= took_s < 5,
            "it returned as soon as the message arrived, not after the full 10 s",
        )
        sqs.delete_message(QueueUrl=url, ReceiptHandle=messages[0]["ReceiptHandle"])

        # WaitTimeSeconds=0 on the call overrides the queue: a short poll answers at once.
        messages, took_s = timed_receive(url, WaitTimeSeconds=0)
        print(f"receive with WaitTimeSeconds=0: {len(messages)} messages after {took_s:.2f} s")
        check(not messages and took_s < 1.5, "a short poll on an empty queue answers at once")
    finally:
        sqs.delete_queue(QueueUrl=url)


if __name__ == "__main__":
    main()
