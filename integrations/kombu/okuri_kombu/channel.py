"""The okuri:// channel and its QoS: kombu's virtual channel mapped onto okuri's leases.

| kombu | okuri native API |
| --- | --- |
| `queue_declare` | create the queue (attributes: transport options); count: `stats.visible` |
| `basic_publish` | produce one item: the message as JSON (okuri_kombu/payloads.py) |
| consume (`drain_events`) | lease up to the prefetch room (at most 100) with a long poll |
| `basic_get` | lease one item, without waiting |
| `basic_ack` | complete |
| `basic_reject(requeue=True)`, recover, close | retry now |
| `basic_reject(requeue=False)` | retry dead: to the queue's dead-letter queue |
| `queue_purge`, `queue_delete` | purge, delete |

Acks and rejects return at once; okuri_kombu/keeper.py sends them, in batches, and renews the
leases of the messages still held. Exchanges are kombu's virtual ones, kept in each process:
direct routing works wherever the publishing process declared the queue (kombu's Producer
and Celery do, with the binding); fanout and topic exchanges are not shared yet.

The consuming thread blocks in `drain_events` (kombu's synchronous model, as its Redis
transport's `_get` or its SQS transport without a hub): one lease request at a time per channel,
long-polling up to `wait_time_s` (at most 1 s per queue when consuming several, so that one
idle queue cannot hold up another), bounded by `drain_events`' timeout.
"""

from __future__ import annotations

import threading
from queue import Empty
from typing import TYPE_CHECKING, Any

from kombu.transport import virtual
from kombu.utils.scheduling import FairCycle

from okuri.client import Client, Item, NotFoundError

from .leases import BATCH_MAX
from .options import Options
from .payloads import Payload, item_text, payload_of

if TYPE_CHECKING:
    from .keeper import LeaseKeeper
    from .transport import Transport

MULTI_QUEUE_WAIT_S = 1  # the long poll per queue when a channel consumes from several
IDLE_WAIT_S = 1.0  # how long drain_events waits for room (or a consumer) before Empty


class QoS(virtual.QoS):
    """kombu's prefetch accounting; an ack or reject also goes to the lease keeper."""

    channel: Channel

    def ack(self, delivery_tag: str) -> None:
        self.channel.keeper.ack(delivery_tag)
        super().ack(delivery_tag)
        self.channel.wake()

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        # Not virtual.QoS.reject: that publishes a copy of a requeued message. Here the leased
        # item itself is made visible again (retry now), or moved to the dead-letter queue.
        keeper = self.channel.keeper
        if requeue:
            keeper.requeue(delivery_tag)
        else:
            keeper.dead(delivery_tag)
        self._quick_ack(delivery_tag)
        self.channel.wake()


class Channel(virtual.Channel):
    QoS = QoS
    do_restore = True  # unacked messages are released (retry now) when the channel closes
    supports_fanout = False

    connection: Transport

    def __init__(self, connection: Transport, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self._ready = threading.Event()  # set when room or a consumer may have appeared
        self._noack_queues: set[str] = set()

    @property
    def okuri(self) -> Client:
        return self.connection.okuri

    @property
    def keeper(self) -> LeaseKeeper:
        return self.connection.keeper

    @property
    def options(self) -> Options:
        return self.connection.options

    def wake(self) -> None:
        """Room in the prefetch window, or a consumer: a waiting drain_events may lease."""
        self._ready.set()

    # --- queues ------------------------------------------------------------------------------

    def _new_queue(self, queue: str, **kwargs: Any) -> None:
        self.connection.ensure_queue(queue)

    def _has_queue(self, queue: str, **kwargs: Any) -> bool:
        try:
            self.okuri.get_queue(self.connection.okuri_name(queue))
        except NotFoundError:
            return False
        return True

    def _size(self, queue: str) -> int:
        try:
            return self.okuri.get_queue(self.connection.okuri_name(queue)).stats.visible
        except NotFoundError:
            return 0

    def _purge(self, queue: str) -> int:
        size = self._size(queue)
        try:
            self.okuri.purge_queue(self.connection.okuri_name(queue))
        except NotFoundError:
            return 0
        return size

    def _delete(self, queue: str, *args: Any, **kwargs: Any) -> None:
        self.connection.delete_queue(queue)

    def queue_delete(
        self, queue: str, if_unused: bool = False, if_empty: bool = False, **kwargs: Any
    ) -> None:
        """Delete the okuri queue once, whatever this process bound it to (the virtual
        channel deletes a queue once per binding, and not at all without one)."""
        if if_empty and self._size(queue):
            return
        self._delete(queue)
        for exchange, routing_key, arguments in list(self.state.queue_bindings(queue)):
            self.queue_unbind(queue, exchange, routing_key, arguments)
        self.state.queue_bindings_delete(queue)

    # --- publishing --------------------------------------------------------------------------

    def _put(self, queue: str, message: Payload, **kwargs: Any) -> None:
        name = self.connection.ensure_queue(queue)
        self.okuri.produce(name, [Item(item_text(message))])

    # --- consuming ---------------------------------------------------------------------------

    def basic_consume(
        self, queue: str, no_ack: bool, callback: Any, consumer_tag: str, **kwargs: Any
    ) -> Any:
        if no_ack:
            self._noack_queues.add(queue)
        result = super().basic_consume(queue, no_ack, callback, consumer_tag, **kwargs)
        self.wake()
        return result

    def basic_cancel(self, consumer_tag: str) -> Any:
        queue = self._tag_to_queue.get(consumer_tag)
        result = super().basic_cancel(consumer_tag)
        if queue is not None and queue not in self._active_queues:
            self._noack_queues.discard(queue)
        return result

    def basic_get(self, queue: str, no_ack: bool = False, **kwargs: Any) -> Any:
        """One message leased without waiting, or None."""
        payloads = self._lease(queue, 1, 0, no_ack=no_ack)
        if not payloads:
            return None
        message = self.Message(payloads[0], channel=self)
        if not no_ack:
            self.qos.append(message, message.delivery_tag)
        return message

    def _get(self, queue: str, timeout: float | None = None) -> Payload:
        payloads = self._lease(queue, 1, 0)
        if not payloads:
            raise Empty()
        return payloads[0]

    def _reset_cycle(self) -> None:
        self._cycle = FairCycle(self._lease_and_deliver, self._active_queues, Empty)

    def drain_events(self, timeout: float | None = None, callback: Any = None) -> None:
        """Lease from the consumed queues and deliver; Empty when nothing came. Without room
        in the prefetch window (or without consumers) it waits, up to a second, for an ack
        or a consumer first, so that kombu's loop around it never spins."""
        self._ready.clear()
        if not (self._consumers and self.qos.can_consume()):
            bound = IDLE_WAIT_S if timeout is None else min(timeout, IDLE_WAIT_S)
            self._ready.wait(bound)
            raise Empty()
        self.cycle.get(callback or self.connection._deliver, timeout=timeout)

    def _lease_and_deliver(self, queue: str, callback: Any, timeout: float | None = None) -> None:
        room = self.qos.can_consume_max_estimate()
        most = BATCH_MAX if room is None else min(max(room, 1), BATCH_MAX)
        payloads = self._lease(queue, most, self._wait_s(timeout), queue in self._noack_queues)
        if not payloads:
            raise Empty()
        for payload in payloads:
            callback(payload, queue)

    def _wait_s(self, timeout: float | None) -> int:
        wait_s = self.options.wait_time_s
        if len(self._active_queues) > 1:
            wait_s = min(wait_s, MULTI_QUEUE_WAIT_S)
        if timeout is not None:
            wait_s = min(wait_s, int(timeout))
        return max(wait_s, 0)

    def _lease(self, queue: str, most: int, wait_s: int, no_ack: bool = False) -> list[Payload]:
        """Lease up to `most` items of kombu queue `queue`, each now held (or, for a no-ack
        consumer, completed at once)."""
        name = self.connection.ensure_queue(queue)
        leased_at = self.connection.clock()
        try:
            items = self.okuri.lease(
                name, most, lease_s=self.options.lease_s, request_timeout_s=wait_s
            )
        except NotFoundError:  # deleted meanwhile: declared again on the next poll
            self.connection.forget_queue(queue)
            return []
        keeper = self.keeper
        for item in items:
            if no_ack:
                keeper.complete_unheld(name, item.handle)
            else:
                keeper.hold(name, item.handle, leased_at)
        return [payload_of(item, name) for item in items]

    def _restore(self, message: Any) -> None:
        """Give an unacked message back (the channel closes, or recover): retry it now."""
        self.keeper.requeue(message.delivery_tag)

    def _restore_at_beginning(self, message: Any) -> None:
        self._restore(message)

    def close(self) -> None:
        super().close()
        self.wake()
