"""Sending and receiving with the boto3 resource API: Queue and Message objects, and batches.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import secrets
import sys

import boto3

sqs = boto3.resource("sqs")


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def main() -> None:
    name = f"example-resource-{secrets.token_hex(3)}"
    queue = sqs.create_queue(QueueName=name)
    try:
        print(f"created {queue.url} ({queue.attributes['QueueArn']})")
        check(sqs.get_queue_by_name(QueueName=name) == queue, "get_queue_by_name finds it")
        check(
            queue in sqs.queues.filter(QueueNamePrefix=name),
            "the queues collection lists it",
        )

        # One message at a time: the response carries the new message's id.
        sent = queue.send_message(MessageBody="hello from the resource API")
        print(f"sent {sent['MessageId']}")
        expected = {"hello from the resource API"}

        # Up to ten at a time: every entry has an Id, unique within the batch.
        entries = [{"Id": f"job{n}", "MessageBody": f"job number {n}"} for n in range(5)]
        batch = queue.send_messages(Entries=entries)
        check(
            len(batch["Successful"]) == 5 and not batch.get("Failed"),
            "send_messages sent all five entries of the batch",
        )
        expected |= {entry["MessageBody"] for entry in entries}

        # Receive until all six arrived; a receive may return fewer than asked for.
        received = {}
        for _ in range(10):
            for message in queue.receive_messages(MaxNumberOfMessages=10, WaitTimeSeconds=2):
                received[message.message_id] = message
            if len(received) >= len(expected):
                break
        for message in received.values():
            print(f"received {message.message_id}: {message.body}")
        check(
            {m.body for m in received.values()} == expected,
            "every message sent was received",
        )

        # Delete one through the Message object, the rest in one batch.
        first, *rest = received.values()
        first.delete()
        deleted = queue.delete_messages(
            Entries=[
                {"Id": str(n), "ReceiptHandle": message.receipt_handle}
                for n, message in enumerate(rest)
            ]
        )
        check(
            len(deleted["Successful"]) == len(rest) and not deleted.get("Failed"),
            "delete_messages deleted the rest in one batch",
        )

        # Queue attributes are cached on the object; reload() fetches them again.
        queue.reload()
        waiting = int(queue.attributes["ApproximateNumberOfMessages"])
        in_flight = int(queue.attributes["ApproximateNumberOfMessagesNotVisible"])
        print(f"approximately {waiting} waiting, {in_flight} in flight")
        check(waiting == 0 and in_flight == 0, "the queue is empty once all are deleted")
        check(
            not queue.receive_messages(WaitTimeSeconds=1),
            "nothing is left to receive",
        )
    finally:
        queue.delete()


if __name__ == "__main__":
    main()
