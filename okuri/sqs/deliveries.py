"""A delivered message as ReceiveMessage answers it: its body and digest, and the system and
message attributes the receive asked for."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any

from okuri.engine import DEDUP_ID_ATTRIBUTE, Delivery
from okuri.sqs import message_attributes as ma
from okuri.sqs import messages as msg

SENDER_KEY = "okuri.sender"  # where a message keeps the access key id that sent it
DEDUP_ID_KEY = DEDUP_ID_ATTRIBUTE  # a FIFO message's MessageDeduplicationId, as given or derived


def render(
    delivered: Sequence[Delivery],
    system_names: Sequence[str],
    user_names: Sequence[str],
    account_id: str,
    arn: Callable[[str], str],
) -> dict[str, Any]:
    """ReceiveMessage's answer; `account_id` is the sender of a message that names none (sent
    through the native API), `arn` names a dead-letter source queue."""
    return {"Messages": [_render(d, system_names, user_names, account_id, arn) for d in delivered]}


def _render(
    d: Delivery,
    system_names: Sequence[str],
    user_names: Sequence[str],
    account_id: str,
    arn: Callable[[str], str],
) -> dict[str, Any]:
    m = d.message
    try:
        body = m.body.decode()
    except UnicodeDecodeError:  # binary, from the native API: SQS bodies are text
        body = base64.b64encode(m.body).decode("ascii")
    out: dict[str, Any] = {
        "MessageId": m.id,
        "ReceiptHandle": d.receipt_handle,
        "MD5OfBody": msg.md5_of_body(body),
        "Body": body,
    }
    trace = m.system_attributes.get("AWSTraceHeader")
    system = msg.build_system_attributes(
        sender_id=str(m.system_attributes.get(SENDER_KEY, account_id)),
        sent_ms=m.sent_ms,
        receive_count=d.receive_count,
        first_receive_ms=d.first_receive_ms,
        trace_header=trace.get("StringValue") if isinstance(trace, dict) else None,
        group_id=m.group_id,
        dedup_id=_stored_str(m.system_attributes.get(DEDUP_ID_KEY)),
        sequence_number=d.sequence_number,
        dead_letter_source_arn=(
            arn(m.dead_letter_source) if m.dead_letter_source is not None else None
        ),
    )
    chosen = msg.select_system_attributes(system, system_names)
    if chosen:
        out["Attributes"] = chosen
    # Selected as stored (JSON-ready already); only what is returned is decoded, to digest.
    user = ma.select_message_attributes(m.attributes, user_names)
    if user:
        digest = msg.md5_of_message_attributes(ma.decode_message_attributes(user))
        out["MD5OfMessageAttributes"] = digest
        out["MessageAttributes"] = user
    return out


def _stored_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
