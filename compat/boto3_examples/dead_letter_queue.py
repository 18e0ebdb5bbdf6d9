"""A dead-letter queue: after maxReceiveCount failed receives, a message moves aside.

The source queue's RedrivePolicy names the dead-letter queue by its ARN. A consumer that
cannot process a message hands it back (visibility 0) instead of deleting it; once it has
been received maxReceiveCount times, the next receive moves it to the dead-letter queue.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import json
import secrets
import sys

import boto3

sqs = boto3.client("sqs")
MAX_RECEIVE_COUNT = 2


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def main() -> None:
    name = f"example-dlq-{secrets.token_hex(3)}"
    urls: list[str] = []
    try:
        dead_url = sqs.create_queue(QueueName=f"{name}-dead-letters")["QueueUrl"]
        urls.append(dead_url)
        dead_arn = sqs.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]

        # The redrive policy is a JSON document inside a string attribute.
        policy = {"deadLetterTargetArn": dead_arn, "maxReceiveCount": str(MAX_RECEIVE_COUNT)}
        url = sqs.create_queue(
            QueueName=name,
            Attributes={"RedrivePolicy": json.dumps(policy), "VisibilityTimeout": "30"},
        )["QueueUrl"]
        urls.append(url)
        stored = json.loads(
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["RedrivePolicy"])["Attributes"][
                "RedrivePolicy"
            ]
        )
        print(f"{name} redrives to {stored['deadLetterTargetArn']}")
        check(
            stored["deadLetterTargetArn"] == dead_arn
            and int(stored["maxReceiveCount"]) == MAX_RECEIVE_COUNT,
            "the queue keeps its RedrivePolicy",
        )

        sqs.send_message(QueueUrl=url, MessageBody='{"order": 17, "total": "not a number"}')

        receives = 0
        for attempt in range(1, MAX_RECEIVE_COUNT + 3):
            messages = sqs.receive_message(
                QueueUrl=url,
                WaitTimeSeconds=1,
                MessageSystemAttributeNames=["ApproximateReceiveCount"],
            ).get("Messages", [])
            if not messages:
                print(f"attempt {attempt}: nothing to receive")
                break
            message = messages[0]
            receives += 1
            count = message["Attributes"]["ApproximateReceiveCount"]
            print(f"attempt {attempt}: received it (receive count {count}); processing fails")
            # Hand it back at once instead of letting the 30 s visibility timeout run out.
            sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
        check(
            receives == MAX_RECEIVE_COUNT,
            f"the message was received exactly maxReceiveCount ({MAX_RECEIVE_COUNT}) times",
        )

        dead = sqs.receive_message(
            QueueUrl=dead_url, WaitTimeSeconds=5, MessageSystemAttributeNames=["All"]
        ).get("Messages", [])
        for message in dead:
            print(f"in the dead-letter queue: {message['Body']}")
            for key, value in sorted(message.get("Attributes", {}).items()):
                print(f"  {key} = {value}")
        check(
            [m["Body"] for m in dead] == ['{"order": 17, "total": "not a number"}'],
            "the message landed in the dead-letter queue",
        )
        sqs.delete_message(QueueUrl=dead_url, ReceiptHandle=dead[0]["ReceiptHandle"])
    finally:
        for queue_url in urls:
            sqs.delete_queue(QueueUrl=queue_url)


if __name__ == "__main__":
    main()
