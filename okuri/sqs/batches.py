"""What every SQS batch action shares: entry ids, the bound on a batch, and answers made of
`Successful` and `Failed` entries, the latter with SQS's error fields."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from typing import Any

from okuri import limits
from okuri.sqs.errors import SqsError

BATCH_ID = re.compile(r"^[A-Za-z0-9_-]{1,80}$")


def check(entries: list[dict[str, Any]], entry_shape: str) -> None:
    if not entries:
        raise SqsError(
            "EmptyBatchRequest", f"There should be at least one {entry_shape} in the request."
        )
    if len(entries) > limits.batch_entries_max:
        raise SqsError(
            "TooManyEntriesInBatchRequest",
            f"Maximum number of entries per request are {limits.batch_entries_max}. "
            f"You have sent {len(entries)}.",
        )
    seen: set[str] = set()
    for entry in entries:
        entry_id = entry["Id"]
        if not BATCH_ID.fullmatch(entry_id):  # match() would admit a trailing newline
            raise SqsError(
                "InvalidBatchEntryId",
                "A batch entry id can only contain alphanumeric characters, hyphens and "
                "underscores. It can be at most 80 letters long.",
            )
        if entry_id in seen:
            raise SqsError("BatchEntryIdsNotDistinct", f"Id {entry_id} repeated.")
        seen.add(entry_id)


def entry_bytes(entry: dict[str, Any]) -> int:
    """What one SendMessageBatch entry counts against the batch bound: its body and its message
    attributes' names, types and values, before they are validated (SQS counts the attributes:
    recorded, a 1 MiB - 8 byte body with an 8-byte attribute and a 1-byte second message is
    BatchRequestTooLong at 1048577 bytes). A value that is not base64 counts as its text."""
    total = len(entry["MessageBody"].encode())
    for name, value in (entry.get("MessageAttributes") or {}).items():
        total += len(name.encode()) + len(value.get("DataType", "").encode())
        text = value.get("StringValue")
        if text is not None:
            total += len(text.encode())
        elif (blob := value.get("BinaryValue")) is not None:
            try:
                total += len(base64.b64decode(blob, validate=True))
            except (binascii.Error, ValueError):
                total += len(blob.encode())
    return total


def finish(
    entries: Sequence[dict[str, Any]],
    results: Sequence[object],
    problem: Callable[[object, str], SqsError | None],
    failed: list[dict[str, Any]],
) -> dict[str, Any]:
    """The answer of a batch on receipt handles: `problem(result, handle)` says why an entry
    failed (None: it succeeded); `failed` already holds the entries refused before the engine."""
    successful = []
    for entry, result in zip(entries, results, strict=True):
        err = problem(result, entry["ReceiptHandle"])
        if err is None:
            successful.append({"Id": entry["Id"]})
        else:
            failed.append(failure(entry["Id"], err))
    return answer(successful, failed)


def answer(successful: list[Any], failed: list[Any]) -> dict[str, Any]:
    """SQS leaves `Failed` out of a batch answer when every entry succeeded."""
    return {"Successful": successful, "Failed": failed} if failed else {"Successful": successful}


def failure(entry_id: str, err: SqsError) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "SenderFault": err.sender_fault,
        "Code": err.legacy_code,
        "Message": err.message,
    }
