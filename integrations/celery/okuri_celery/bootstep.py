"""The Celery side of the heartbeat: a consumer bootstep fed by the `task_received` signal.

Celery's consumer (in the worker's main process, where kombu's SQS channel and every receipt
handle live) sends `task_received` for each task message it accepts, before an eta task is put
on the timer or a task is reserved for the pool. The bootstep turns each such request into a
`Held` entry whose `settled()` is true once Celery acknowledged or rejected the message (task
started without `acks_late`, succeeded, failed, retried, revoked, rejected or requeued), or once
the channel that received it is closed (kombu then makes its unacked messages visible again).

The SQS client is the transport's own (`channel.sqs(queue)`), so the endpoint, region,
credentials, predefined queues and `client-config` from the broker settings apply unchanged.

The heartbeat thread starts with the consumer and keeps running through a warm shutdown while the
pool finishes its tasks; it stops in the consumer's final shutdown, before the task channel closes
and kombu releases what is left.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import bootsteps
from celery.signals import task_received

from .heartbeat import Heartbeat, HeartbeatSettings, Held

__all__ = ["VisibilityHeartbeat", "install", "settings_from_conf"]

logger = logging.getLogger("okuri_celery")


def settings_from_conf(conf: Any) -> HeartbeatSettings:
    """Heartbeat settings from a Celery app's configuration.

    okuri_heartbeat_visibility_s  default: broker_transport_options["visibility_timeout"]
                                  (kombu's own default, 1800, if that is unset)
    okuri_heartbeat_interval_s    default: a third of the visibility
    okuri_heartbeat_hold_s_max    default: 43200 (SQS's 12 h limit on one message)
    okuri_heartbeat_held_max      default: 10000
    """
    transport = conf.get("broker_transport_options") or {}
    visibility_s = conf.get("okuri_heartbeat_visibility_s") or transport.get("visibility_timeout")
    return HeartbeatSettings.derive(
        visibility_s=visibility_s,
        interval_s=conf.get("okuri_heartbeat_interval_s"),
        hold_s_max=conf.get("okuri_heartbeat_hold_s_max"),
        held_max=conf.get("okuri_heartbeat_held_max"),
    )


class VisibilityHeartbeat(bootsteps.StartStopStep):  # type: ignore[misc]  # celery is untyped
    """Consumer bootstep: `app.steps["consumer"].add(VisibilityHeartbeat)`."""

    name = "okuri_celery.VisibilityHeartbeat"
    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c: Any, **kwargs: Any) -> None:
        super().__init__(c, **kwargs)
        self.heartbeat: Heartbeat | None = None
        self._consumer: Any = None
        self._warned_not_sqs = False

    def start(self, c: Any) -> None:
        # Called again after every broker reconnect: one thread and one receiver for the life
        # of the consumer.
        if self.heartbeat is not None:
            return
        self.heartbeat = Heartbeat(settings_from_conf(c.app.conf))
        self._consumer = c
        task_received.connect(self._on_task_received, weak=False)
        self.heartbeat.start()

    def shutdown(self, c: Any) -> None:
        task_received.disconnect(self._on_task_received)
        if self.heartbeat is not None:
            self.heartbeat.stop()
            self.heartbeat = None

    def _on_task_received(self, sender: Any = None, request: Any = None, **_: Any) -> None:
        if sender is not self._consumer or request is None or self.heartbeat is None:
            return
        entry = held_from_request(request)
        if entry is None:
            if not self._warned_not_sqs:
                self._warned_not_sqs = True
                logger.warning(
                    "okuri heartbeat: the broker is not kombu's SQS transport; nothing to extend"
                )
            return
        self.heartbeat.hold(entry)


def held_from_request(request: Any) -> Held | None:
    """The heartbeat entry for a Celery request, or None if it did not come from SQS."""
    message = request.message
    channel = message.channel
    info = message.delivery_info or {}
    queue_url = info.get("sqs_queue")
    sqs_message = info.get("sqs_message") or {}
    receipt_handle = sqs_message.get("ReceiptHandle")
    if not queue_url or not receipt_handle or not hasattr(channel, "sqs"):
        return None
    routing_key = info.get("routing_key")
    queue = channel.canonical_queue_name(routing_key) if routing_key else None
    client = channel.sqs(queue=queue)

    def settled() -> bool:
        return bool(
            request.acknowledged or message.acknowledged or getattr(channel, "closed", False)
        )

    return Held(
        queue_url=queue_url,
        receipt_handle=receipt_handle,
        client=client,
        settled=settled,
        task=f"{request.name}[{request.id}]",
    )


def install(app: Any) -> None:
    """Add the heartbeat to `app`'s workers (same as adding the bootstep by hand)."""
    app.steps["consumer"].add(VisibilityHeartbeat)
