"""Managing queues with the boto3 client API: create, get the URL, list, attributes, delete.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import secrets
import sys

import boto3

sqs = boto3.client("sqs")


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def main() -> None:
    prefix = f"example-queues-{secrets.token_hex(3)}"
    name = f"{prefix}-orders"
    urls: list[str] = []
    try:
        # CreateQueue: attribute values are always strings.
        attributes = {"VisibilityTimeout": "45", "MessageRetentionPeriod": "86400"}
        url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        urls.append(url)
        print(f"created {url}")
        check(url.endswith("/" + name), "the queue URL ends with the queue name")

        # Creating it again with the same attributes is not an error: it returns the same URL.
        again = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        check(again == url, "creating an existing queue with the same attributes returns its URL")

        # ... but with different attributes it is refused.
        try:
            sqs.create_queue(QueueName=name, Attributes={"VisibilityTimeout": "10"})
            check(False, "a queue cannot be re-created with different attributes")
        except sqs.exceptions.QueueNameExists:
            check(True, "a queue cannot be re-created with different attributes")

        # GetQueueUrl: find a queue by name.
        found = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        check(found == url, "get_queue_url finds the queue by name")

        # ListQueues: with a name prefix, through the paginator.
        other = sqs.create_queue(QueueName=f"{prefix}-invoices")["QueueUrl"]
        urls.append(other)
        listed = [
            queue_url
            for page in sqs.get_paginator("list_queues").paginate(QueueNamePrefix=prefix)
            for queue_url in page.get("QueueUrls", [])
        ]
        print(f"queues named {prefix}*: {listed}")
        check(sorted(listed) == sorted(urls), "list_queues returns exactly the two new queues")

        # GetQueueAttributes: everything, or just the names asked for.
        everything = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        for key in sorted(everything):
            print(f"  {key} = {everything[key]}")
        check(everything["VisibilityTimeout"] == "45", "VisibilityTimeout is 45 s as created")
        check(everything["QueueArn"].endswith(":" + name), "the queue ARN ends with its name")
        some = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["MessageRetentionPeriod", "DelaySeconds"]
        )["Attributes"]
        check(
            some == {"MessageRetentionPeriod": "86400", "DelaySeconds": "0"},
            "only the attributes asked for are returned",
        )

        # SetQueueAttributes: change a queue after it was created.
        sqs.set_queue_attributes(
            QueueUrl=url, Attributes={"VisibilityTimeout": "60", "DelaySeconds": "5"}
        )
        changed = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["VisibilityTimeout", "DelaySeconds"]
        )["Attributes"]
        check(
            changed == {"VisibilityTimeout": "60", "DelaySeconds": "5"},
            "set_queue_attributes changed VisibilityTimeout and DelaySeconds",
        )

        # DeleteQueue. (SQS notes that a deletion can take up to 60 seconds to settle.)
        sqs.delete_queue(QueueUrl=other)
        urls.remove(other)
        try:
            sqs.get_queue_url(QueueName=f"{prefix}-invoices")
            check(False, "a deleted queue can no longer be found")
        except sqs.exceptions.QueueDoesNotExist:
            check(True, "a deleted queue can no longer be found")
    finally:
        for queue_url in urls:
            sqs.delete_queue(QueueUrl=queue_url)


if __name__ == "__main__":
    main()
