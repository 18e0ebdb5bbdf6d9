"""The SQS actions, on top of the engine.

Each action takes the request's already shape-checked JSON members, applies SQS's own rules and
limits, calls the engine, and returns the JSON members SQS answers with. Queues are named by
URL; a URL whose last path segment is a queue's name reaches it, on every node, unless the URL
names a region other than the one the request is signed for. The fourteen core actions are
here; tags live in `okuri.sqs.tags`, permissions in `okuri.sqs.permissions`, dead-letter sources
and message move tasks in `okuri.sqs.move_tasks`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from okuri import limits
from okuri.engine import (  # QUEUE_NAME: use fullmatch, "$" admits a trailing newline
    QUEUE_NAME,
    Engine,
    Gate,
    QueueAttrs,
    QueueView,
    SendRequest,
    SendResult,
)
from okuri.errors import OkuriError, QueueDoesNotExist
from okuri.sqs import (
    batches,
    deliveries,
    fifo,
    move_tasks,
    paging,
    permissions,
    queue_urls,
    receipt_answers,
    tags,
)
from okuri.sqs import message_attributes as ma
from okuri.sqs import messages as msg
from okuri.sqs import queue_attributes as qa
from okuri.sqs.errors import (
    SqsError,
    from_okuri,
    invalid,
    queue_does_not_exist,
    queue_name_exists,
)

COUNT_ATTRIBUTES = frozenset(
    {
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
        "All",
    }
)
# Where dispatch hands a send the request's X-Amzn-Trace-Id, checked; no client member has a
# name like it, and requests are shape-checked before dispatch.
TRACE_PARAM = "okuri:X-Amzn-Trace-Id"
TRACED_ACTIONS = frozenset({"SendMessage", "SendMessageBatch"})
# Where access hands CreateQueue the namespace of the key that signed it (okuri.sqs.access), whose
# quota a new queue must fit (okuri/engine/quotas.py); absent: a key of every queue.
NAMESPACE_PARAM = "okuri:Namespace"

Handler = Callable[[dict[str, Any], str, str], Awaitable[dict[str, Any]]]
Extension = Callable[["SqsActions", dict[str, Any], str, str], Awaitable[dict[str, Any]]]
# Actions implemented outside this module: each is given the SqsActions it serves.
EXTENSIONS: dict[str, Extension] = {
    "TagQueue": tags.tag_queue,
    "UntagQueue": tags.untag_queue,
    "ListQueueTags": tags.list_queue_tags,
    "ListDeadLetterSourceQueues": move_tasks.list_dead_letter_source_queues,
    "StartMessageMoveTask": move_tasks.start_message_move_task,
    "ListMessageMoveTasks": move_tasks.list_message_move_tasks,
    "CancelMessageMoveTask": move_tasks.cancel_message_move_task,
    "AddPermission": permissions.add_permission,
    "RemovePermission": permissions.remove_permission,
}


class SqsActions:
    def __init__(
        self,
        engine: Engine,
        *,
        region: str = "us-east-1",
        account_id: str = "000000000000",
        public_url: str | None = None,
        url_region: str | None = None,
        gate: Gate | None = None,
    ) -> None:
        """`url_region`: a region other than the server's own, named in its queues' URLs.
        `gate` admits each long poll (None: no bound)."""
        self.gate = gate
        self.engine = engine
        self.region = region
        self.account_id = account_id
        self.public_url = public_url.rstrip("/") if public_url else None
        self.url_region = url_region
        self._handlers: dict[str, Handler] = {
            "CreateQueue": self.create_queue,
            "GetQueueUrl": self.get_queue_url,
            "ListQueues": self.list_queues,
            "DeleteQueue": self.delete_queue,
            "PurgeQueue": self.purge_queue,
            "GetQueueAttributes": self.get_queue_attributes,
            "SetQueueAttributes": self.set_queue_attributes,
            "SendMessage": self.send_message,
            "SendMessageBatch": self.send_message_batch,
            "ReceiveMessage": self.receive_message,
            "DeleteMessage": self.delete_message,
            "DeleteMessageBatch": self.delete_message_batch,
            "ChangeMessageVisibility": self.change_message_visibility,
            "ChangeMessageVisibilityBatch": self.change_message_visibility_batch,
        }
        for action, extension in EXTENSIONS.items():
            self._handlers[action] = self._bind(extension)

    def _bind(self, extension: Extension) -> Handler:
        async def handler(p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
            return await extension(self, p, host, caller)

        return handler

    async def dispatch(
        self,
        action: str,
        params: dict[str, Any],
        host: str,
        caller: str,
        trace_header: str | None = None,
    ) -> dict[str, Any]:
        """Run `action`; `trace_header` is the request's X-Amzn-Trace-Id, which a send stores as
        its messages' AWSTraceHeader unless they give that system attribute themselves; a
        header SQS would refuse as that attribute (a character outside XML) refuses the send."""
        if trace_header and action in TRACED_ACTIONS:  # an empty header traces nothing
            trace = {"DataType": "String", "StringValue": trace_header}
            checked = ma.validate_system_attributes({msg.TRACE_HEADER: trace}, operation=action)
            params = {**params, TRACE_PARAM: ma.encode_message_attributes(checked)}
        return await self._handlers[action](params, host, caller)

    # --- naming ------------------------------------------------------------------------------

    def queue_url(self, name: str, host: str) -> str:
        """`host` is the Host a request came to, or its origin (`https://host:port` on a TLS
        listener): a bare host means http://, as on a plaintext listener."""
        base = self.public_url or (host if "://" in host else f"http://{host}")
        if self.url_region is not None:
            return f"{base}/{self.url_region}/{self.account_id}/{name}"
        return f"{base}/{self.account_id}/{name}"

    def arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account_id}:{name}"

    @staticmethod
    def name_in_url(url: str) -> str:
        """The queue name a URL ends in, whatever region it names (QueueDoesNotExist if none)."""
        name = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if not name or not QUEUE_NAME.fullmatch(name):
            raise queue_does_not_exist()
        return name

    def queue_name(self, url: str) -> str:
        """The name of this region's queue `url` addresses. A URL naming another region is
        refused as SQS refuses one (QueueDoesNotExist), never served from this region's queue
        of the same name (okuri.sqs.queue_urls)."""
        name = self.name_in_url(url)
        if queue_urls.regions_named(url, self.public_url) - {self.region}:
            raise queue_does_not_exist()
        return name

    # --- queues ------------------------------------------------------------------------------

    async def _existing(self, name: str) -> QueueView | None:
        try:
            return await self.engine.get_queue(name)
        except QueueDoesNotExist:
            return None

    async def create_queue(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = p["QueueName"]
        qa.validate_queue_name(name)
        given = p.get("Attributes") or {}
        qa.check_fifo_name(name, given)
        attrs = qa.parse_queue_attributes(given, None, for_create=True)
        attrs = tags.with_tags(attrs, tags.check_create_tags(p.get("tags"), name))
        existing = await self._existing(name)
        if existing is not None:
            conflict = qa.create_conflict(given, existing.attrs)
            if conflict is not None:
                raise queue_name_exists(conflict)
            return {"QueueUrl": self.queue_url(name, host)}
        try:
            await self.engine.create_queue(name, attrs, p.get(NAMESPACE_PARAM, ""))
        except OkuriError as err:  # lost a race with a create of different attributes
            raise from_okuri(err) from err
        return {"QueueUrl": self.queue_url(name, host)}

    async def get_queue_url(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = p["QueueName"]
        if not QUEUE_NAME.fullmatch(name):
            raise queue_does_not_exist()
        # Whether the queue exists, from a copy at most a few seconds old: a lone caller asking
        # for the URL before each call otherwise waits a store round trip each time. SQS
        # itself takes up to 60 s to forget a deleted queue.
        await self.engine.get_queue(name, trust_cached_s=limits.queue_url_cached_s)
        return {"QueueUrl": self.queue_url(name, host)}

    async def list_queues(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        prefix = p.get("QueueNamePrefix") or ""
        max_results = paging.check_max_results(p.get("MaxResults"))
        after = paging.decode_token(p.get("NextToken"))
        limit = max_results or paging.list_results_max
        names = await self.engine.list_queues(prefix, limit + 1, after)
        out: dict[str, Any] = {}
        page = names[:limit]
        if page:
            out["QueueUrls"] = [self.queue_url(n, host) for n in page]
        if max_results is not None and len(names) > limit:
            out["NextToken"] = paging.encode_token(page[-1])
        return out

    async def delete_queue(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        await self.engine.delete_queue(self.queue_name(p["QueueUrl"]))
        return {}

    async def purge_queue(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        await self.engine.purge(self.queue_name(p["QueueUrl"]))
        return {}

    async def get_queue_attributes(
        self, p: dict[str, Any], host: str, caller: str
    ) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        names = p.get("AttributeNames") or []
        counts = (0, 0, 0)
        if COUNT_ATTRIBUTES & set(names):
            c = await self.engine.counts(name)  # reads the manifest fresh...
            counts = (c.visible, c.in_flight, c.delayed)
            st = await self.engine.cached_queue(name)  # ...so this one need not
        else:
            st = await self.engine.get_queue(name)
        if not names:
            return {}
        rendered = qa.render_queue_attributes(
            st.attrs,
            names,
            arn=self.arn(name),
            dlq_arn=self.arn,
            counts=counts,
            created_s=st.created_ms // 1000,
            modified_s=st.modified_ms // 1000,
        )
        shown = {k: v for k, v in rendered.items() if not k.startswith(tags.TAG_PREFIX)}
        return {"Attributes": shown} if shown else {}  # none to show: no member (recorded)

    async def set_queue_attributes(
        self, p: dict[str, Any], host: str, caller: str
    ) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        # Applied to the manifest the write replaces, so a concurrent change to tags or to a
        # move task's record is never undone by one computed from an older read.
        await self.engine.update_attributes(
            name,
            lambda attrs: qa.parse_queue_attributes(p["Attributes"], attrs, for_create=False),
            touch=True,
        )
        return {}

    # --- sending -----------------------------------------------------------------------------

    def _send_request(
        self,
        entry: dict[str, Any],
        attrs: QueueAttrs,
        caller: str,
        operation: str = "SendMessage",
        trace: dict[str, Any] | None = None,
    ) -> tuple[SendRequest, dict[str, Any]]:
        """Validate one message as SQS does; returns the engine request and the MD5 members."""
        body = entry["MessageBody"]
        msg.validate_body(body)
        user = ma.validate_message_attributes(
            entry.get("MessageAttributes") or {}, operation=operation
        )
        system = ma.validate_system_attributes(
            entry.get("MessageSystemAttributes") or {}, operation=operation
        )
        msg.validate_message_group_id(entry.get("MessageGroupId"))
        size = len(body.encode()) + ma.message_attributes_bytes(user)
        if size > attrs.max_message_bytes:
            # SQS words it differently in a batch entry (recorded).
            verdict = "cannot be validated" if operation == "SendMessageBatch" else "are invalid"
            raise SqsError(
                "InvalidParameterValue",
                f"One or more parameters {verdict}. Reason: Message must be shorter than "
                f"{attrs.max_message_bytes} bytes.",
            )
        delay = entry.get("DelaySeconds")
        if delay is not None and not 0 <= delay <= limits.delay_s_max:
            raise invalid(
                f"Value {delay} for parameter DelaySeconds is invalid. "
                f"Reason: DelaySeconds must be >= 0 and <= {limits.delay_s_max}."
            )
        md5s: dict[str, Any] = {"MD5OfMessageBody": msg.md5_of_body(body)}
        if user:
            md5s["MD5OfMessageAttributes"] = msg.md5_of_message_attributes(user)
        if system:
            md5s["MD5OfMessageSystemAttributes"] = msg.md5_of_system_attributes(system)
        stored_system = {
            **(trace or {}),  # the header's trace, unless the message gives its own
            **ma.encode_message_attributes(system),
            deliveries.SENDER_KEY: caller,
        }
        group_id, dedup_id = entry.get("MessageGroupId"), entry.get("MessageDeduplicationId")
        if attrs.fifo:
            group_id, dedup_id = fifo.check_send(entry, attrs)
            delay = None  # a 0 passed check_send; the queue's delay applies
            stored_system[deliveries.DEDUP_ID_KEY] = dedup_id
            dedup_id = fifo.dedup_key(attrs, group_id, dedup_id)
        request = SendRequest(
            body=body.encode(),
            delay_s=delay,
            attributes=ma.encode_message_attributes(user),
            system_attributes=stored_system,
            group_id=group_id,
            dedup_id=dedup_id,
        )
        return request, md5s

    async def _queue_attrs(self, name: str) -> QueueAttrs:
        return (await self.engine.cached_queue(name)).attrs

    async def send_message(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        attrs = await self._queue_attrs(name)
        request, md5s = self._send_request(p, attrs, caller, trace=p.get(TRACE_PARAM))
        result = await self.engine.send_one(name, request)
        return {**md5s, "MessageId": result.message_id, **_sequence(result)}

    async def send_message_batch(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        entries = p["Entries"]
        batches.check(entries, "SendMessageBatchRequestEntry")
        total = sum(batches.entry_bytes(e) for e in entries)
        if total > limits.batch_bytes_max:
            raise SqsError(
                "BatchRequestTooLong",
                f"Batch requests cannot be longer than {limits.batch_bytes_max} bytes. "
                f"You have sent {total} bytes.",
            )
        attrs = await self._queue_attrs(name)
        if attrs.fifo:
            fifo.check_batch(entries, attrs)
        failed: list[dict[str, Any]] = []
        accepted: list[tuple[str, SendRequest, dict[str, Any]]] = []
        for entry in entries:
            try:
                request, md5s = self._send_request(
                    entry, attrs, caller, "SendMessageBatch", p.get(TRACE_PARAM)
                )
            except SqsError as err:
                failed.append(batches.failure(entry["Id"], err))
                continue
            accepted.append((entry["Id"], request, md5s))
        results = await self.engine.send(name, [r for _, r, _ in accepted])
        successful = []
        for (entry_id, _, md5s), res in zip(accepted, results, strict=True):
            if isinstance(res, SendResult):
                successful.append(
                    {"Id": entry_id, "MessageId": res.message_id, **md5s, **_sequence(res)}
                )
            elif isinstance(res, OkuriError):
                failed.append(batches.failure(entry_id, from_okuri(res)))
            else:
                failed.append(
                    batches.failure(entry_id, SqsError("InternalFailure", str(res), 500, False))
                )
        return batches.answer(successful, failed)

    # --- receiving ---------------------------------------------------------------------------

    async def receive_message(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        max_messages = p.get("MaxNumberOfMessages", 1)
        if not 1 <= max_messages <= limits.receive_messages_max:
            raise invalid(
                f"Value {max_messages} for parameter MaxNumberOfMessages is invalid. "
                "Reason: Must be between 1 and 10, if provided.",
            )
        visibility = p.get("VisibilityTimeout")
        if visibility is not None and not 0 <= visibility <= limits.visibility_s_max:
            raise invalid(f"Value {visibility} for parameter VisibilityTimeout is invalid.")
        wait = p.get("WaitTimeSeconds")
        if wait is not None and not 0 <= wait <= limits.wait_s_max:
            raise invalid(
                f"Value {wait} for parameter WaitTimeSeconds is invalid. "
                "Reason: Must be >= 0 and <= 20, if provided."
            )
        system_names = [
            *(p.get("AttributeNames") or []),
            *(p.get("MessageSystemAttributeNames") or []),
        ]
        msg.check_system_attribute_names(system_names)
        user_names = p.get("MessageAttributeNames") or []
        attempt = p.get("ReceiveRequestAttemptId")
        if attempt is not None:
            msg.check_printable_id("ReceiveRequestAttemptId", attempt)
            attrs = await self._queue_attrs(name)
            if not attrs.fifo:
                attempt = None  # applies to FIFO queues only; SQS ignores it elsewhere
            else:
                # A retry of a receive whose answer was lost, on this node or another.
                again = await self.engine.recall_receive(name, attempt)
                if again:
                    return deliveries.render(
                        again, system_names, user_names, self.account_id, self.arn
                    )
        with await self._long_poll(name, wait):
            delivered = await self.engine.receive(name, max_messages, visibility, wait)
        if not delivered:
            return {}
        out = deliveries.render(delivered, system_names, user_names, self.account_id, self.arn)
        if attempt is not None:
            vis = visibility if visibility is not None else attrs.visibility_timeout_s
            await self.engine.remember_receive(name, attempt, delivered, vis)
        return out

    async def _long_poll(
        self, name: str, wait_s: int | None
    ) -> contextlib.AbstractContextManager[object]:
        """A long-poll ticket for a receive that may wait (its WaitTimeSeconds, else the queue's
        ReceiveMessageWaitTimeSeconds, above 0); raises Overloaded past the node's bound."""
        if self.gate is None:
            return contextlib.nullcontext()
        if wait_s is None:
            wait_s = (await self._queue_attrs(name)).receive_wait_s
        return self.gate.enter("long_poll") if wait_s > 0 else contextlib.nullcontext()

    # --- finishing ---------------------------------------------------------------------------

    async def delete_message(self, p: dict[str, Any], host: str, caller: str) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        (result,) = await self.engine.ack(name, [p["ReceiptHandle"]])
        err = receipt_answers.ack_error(result, p["ReceiptHandle"])
        if err is not None:
            raise err
        return {}

    async def delete_message_batch(
        self, p: dict[str, Any], host: str, caller: str
    ) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        entries = p["Entries"]
        batches.check(entries, "DeleteMessageBatchRequestEntry")
        results = await self.engine.ack(name, [e["ReceiptHandle"] for e in entries])
        return batches.finish(entries, results, receipt_answers.ack_error, [])

    async def change_message_visibility(
        self, p: dict[str, Any], host: str, caller: str
    ) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        visibility = receipt_answers.visibility_timeout(p["VisibilityTimeout"])
        (result,) = await self.engine.change_visibility(name, [(p["ReceiptHandle"], visibility)])
        err = receipt_answers.visibility_error(result, p["ReceiptHandle"])
        if err is not None:
            raise err
        return {}

    async def change_message_visibility_batch(
        self, p: dict[str, Any], host: str, caller: str
    ) -> dict[str, Any]:
        name = self.queue_name(p["QueueUrl"])
        entries = p["Entries"]
        batches.check(entries, "ChangeMessageVisibilityBatchRequestEntry")
        failed: list[dict[str, Any]] = []
        valid: list[tuple[dict[str, Any], int]] = []
        for entry in entries:
            try:
                valid.append(
                    (entry, receipt_answers.visibility_timeout(entry.get("VisibilityTimeout", 0)))
                )
            except SqsError as err:
                failed.append(batches.failure(entry["Id"], err))
        results = (
            await self.engine.change_visibility(name, [(e["ReceiptHandle"], v) for e, v in valid])
            if valid
            else []
        )
        return batches.finish(
            [e for e, _ in valid], results, receipt_answers.visibility_error, failed
        )


# --- helpers -----------------------------------------------------------------------------------


def _sequence(result: SendResult) -> dict[str, str]:
    """A FIFO send's SequenceNumber member (none on a standard queue)."""
    return {} if result.sequence_number is None else {"SequenceNumber": result.sequence_number}
