"""Message attributes: typed metadata sent beside the body, and choosing which come back.

Configured only by the standard AWS environment variables (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION). Every line starting with
"ok:" is checked; the program exits non-zero at the first claim that does not hold.
"""

from __future__ import annotations

import secrets
import sys

import boto3

sqs = boto3.client("sqs")

ATTRIBUTES = {
    "customer": {"DataType": "String", "StringValue": "Ada Lovelace"},
    "quantity": {"DataType": "Number", "StringValue": "3"},
    "thumbnail": {"DataType": "Binary", "BinaryValue": b"\x89PNG\r\n\x1a\n"},
    # A custom type label after the base type: the label travels with the value.
    "order.total": {"DataType": "Number.euros", "StringValue": "19.99"},
    "order.channel": {"DataType": "String", "StringValue": "web"},
}


def check(condition: bool, claim: str) -> None:
    """Print a claim this example makes, or stop with a non-zero exit if it is false."""
    if not condition:
        sys.exit(f"FAILED: {claim}")
    print(f"ok: {claim}")


def receive_again(url: str, names: list[str] | None) -> dict:
    """Receive the one message, then hand it straight back so it can be received again."""
    kwargs = {} if names is None else {"MessageAttributeNames": names}
    (message,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=5, **kwargs)["Messages"]
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
    )
    return message


def main() -> None:
    name = f"example-attributes-{secrets.token_hex(3)}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    try:
        sent = sqs.send_message(
            QueueUrl=url, MessageBody="order placed", MessageAttributes=ATTRIBUTES
        )
        # boto3 checks both digests itself and raises if they do not match.
        print(f"sent {sent['MessageId']}, attributes digest {sent['MD5OfMessageAttributes']}")
        check(bool(sent.get("MD5OfMessageAttributes")), "the service digested the attributes")

        message = receive_again(url, ["All"])
        for key, value in sorted(message["MessageAttributes"].items()):
            print(f"  {key}: {value}")
        check(message["MessageAttributes"] == ATTRIBUTES, "all five attributes came back as sent")

        message = receive_again(url, ["order.*"])
        check(
            sorted(message["MessageAttributes"]) == ["order.channel", "order.total"],
            "a name ending in .* selects the attributes with that prefix",
        )

        message = receive_again(url, ["quantity", "missing"])
        check(
            message["MessageAttributes"] == {"quantity": ATTRIBUTES["quantity"]},
            "named attributes are returned; unknown names are ignored",
        )

        message = receive_again(url, None)
        check("MessageAttributes" not in message, "without MessageAttributeNames none come back")
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

        # Attributes in a batch, one set per entry.
        batch = sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {
                    "Id": f"line{n}",
                    "MessageBody": f"line item {n}",
                    "MessageAttributes": {
                        "line": {"DataType": "Number", "StringValue": str(n)},
                    },
                }
                for n in range(3)
            ],
        )
        check(len(batch["Successful"]) == 3, "a batch with attributes was sent")
        lines = {}
        for _ in range(5):
            for item in sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=2,
                MessageAttributeNames=["line"],
            ).get("Messages", []):
                lines[item["Body"]] = item["MessageAttributes"]["line"]["StringValue"]
                sqs.delete_message(QueueUrl=url, ReceiptHandle=item["ReceiptHandle"])
            if len(lines) == 3:
                break
        check(
            lines == {f"line item {n}": str(n) for n in range(3)},
            "each batch entry kept its own attributes",
        )
    finally:
        sqs.delete_queue(QueueUrl=url)


if __name__ == "__main__":
    main()
