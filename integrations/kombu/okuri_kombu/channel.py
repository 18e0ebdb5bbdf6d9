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
| exchanges, bindings, publish to an exchange | okuri's exchanges (okuri_kombu/exchanges.py) |
| queue `expires`, `message_ttl`, `auto_delete` | okuri_kombu/arguments.py |

Acks and rejects return at once; okuri_kombu/keeper.py sends them, in batches, and renews the
leases of the messages still held.

The consuming thread blocks in `drain_events` (kombu's synchronous model, as its Redis
transport's `_get` or its SQS transport without a hub): one lease request at a time,
long-polling up to `wait_time_s`, bounded by `drain_events`' timeout. When the connection
consumes several queues, they take turns; when a lease waits for room, and how long each
polls, is okuri_kombu/pacing.py's.
"""

from __future__ import annotations

from queue import Empty
from typing import TYPE_CHECKING, Any

from kombu.transport import virtual
from kombu.transport.base import to_rabbitmq_queue_arguments
from kombu.utils.scheduling import FairCycle

from okuri.client import Client, Item, NotFoundError

from .arguments import QueueArguments
from .leases import BATCH_MAX
from .options import Options
from .pacing import NO_POLL, lease_wait_s, poll_wait_s
from .payloads import Payload, item_text, message_expired, payload_of

if TYPE_CHECKING:
    from .keeper import LeaseKeeper
    from .transport import Transport



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
    supports_fanout = True  # bindings live in okuri, shared by every process

    connection: Transport

    def __init__(self, connection: Transport, **kwargs: Any) -> None:
        self._noack_queues: set[str] = set()
        self._leased_at = float("-inf")  # when this channel last leased (connection.clock)
        self._aux_polled_at: dict[str, float] = {}  # auto_delete queues: their last short poll
        super().__init__(connection, **kwargs)

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
        self.connection.ready.set()

    def can_lease(self) -> bool:
        """Whether this channel has consumers and room enough in its prefetch window."""
        return self.lease_wait_s() == 0.0

    def lease_wait_s(self) -> float | None:
        """How long until this channel leases: 0 now; None not before an ack or a consumer
        (okuri_kombu/pacing.py)."""
        if not self._consumers:
            return None
        qos = self.qos
        room, window = qos.can_consume_max_estimate(), qos.prefetch_count
        return lease_wait_s(room, window, self._leased_at, self.connection.clock())

    # --- queues ------------------------------------------------------------------------------

    def prepare_queue_arguments(self, arguments: Any, **kwargs: Any) -> Any:
        """kombu's `expires`, `message_ttl`, ... as RabbitMQ's x- arguments (as kombu's Redis
        transport takes them), read by _new_queue."""
        return to_rabbitmq_queue_arguments(arguments, **kwargs)

    def _new_queue(
        self, queue: str, auto_delete: bool = False, arguments: Any = None, **kwargs: Any
    ) -> None:
        self.connection.set_arguments(queue, QueueArguments.read(arguments, auto_delete))
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
        # okuri drops a deleted queue's bindings itself; here only the process's own record.
        for exchange, routing_key, arguments in list(self.state.queue_bindings(queue)):
            virtual.Channel.queue_unbind(self, queue, exchange, routing_key, arguments)
        self.state.queue_bindings_delete(queue)

    # --- exchanges and bindings --------------------------------------------------------------

    def exchange_declare(
        self,
        exchange: str | None = None,
        type: str = "direct",
        durable: bool = False,
        auto_delete: bool = False,
        arguments: Any = None,
        nowait: bool = False,
        passive: bool = False,
    ) -> None:
        """Declare the exchange on okuri (kept in-process if this key may not; see
        okuri_kombu/exchanges.py), and in kombu's state of this connection."""
        type = type or "direct"
        exchange = exchange or f"amq.{type}"
        self.connection.exchanges.declare(exchange, type, passive)
        if passive and exchange in self.state.exchanges:
            return
        super().exchange_declare(exchange, type, durable, auto_delete, arguments, nowait)

    def exchange_delete(self, exchange: str, if_unused: bool = False, nowait: bool = False) -> None:
        """Delete the okuri exchange and its bindings; its queues stay (kombu's virtual channel
        would delete the empty ones)."""
        self.connection.exchanges.delete(exchange)
        self.state.exchanges.pop(exchange, None)

    def queue_bind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        """Bind on okuri every time (idempotent there: a binding lost with an expired queue is
        made again), then in kombu's state."""
        exchange = exchange or "amq.direct"
        if exchange not in self.state.exchanges:
            self.exchange_declare(exchange)
        okuri_queue = self.connection.ensure_queue(queue)
        self.connection.exchanges.bind(exchange, okuri_queue, routing_key)
        super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        pass  # queue_bind has bound it on okuri already

    def queue_unbind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        exchange = exchange or "amq.direct"
        self.connection.exchanges.unbind(exchange, self.connection.okuri_name(queue), routing_key)
        super().queue_unbind(queue, exchange, routing_key, arguments, **kwargs)

    # --- publishing --------------------------------------------------------------------------

    def basic_publish(
        self, message: Payload, exchange: str, routing_key: str, **kwargs: Any
    ) -> Any:
        """One request: to a named exchange, okuri's publish (okuri routes it); to kombu's
        default exchange, a produce to the queue the routing key names."""
        self._inplace_augment_message(message, exchange, routing_key)
        if not exchange:
            return self._put(routing_key, message, **kwargs)
        exchanges = self.connection.exchanges
        routed = exchanges.publish(exchange, routing_key, item_text(message))
        if routed is None:  # a direct exchange kept in-process: kombu's own routing
            return self.typeof(exchange).deliver(message, exchange, routing_key, **kwargs)
        if not routed and self._rebind(exchange, routing_key):
            exchanges.publish(exchange, routing_key, item_text(message))
        return None

    def _rebind(self, exchange: str, routing_key: str) -> bool:
        """After a publish okuri routed nowhere: make again the bindings this process made
        that the routing key matches (their queue expired or was deleted, and with it the
        binding); whether there were any."""
        try:
            queues = self.typeof(exchange).lookup(
                self.get_table(exchange), exchange, routing_key, None
            )
        except KeyError:
            return False
        queues = [q for q in queues if q]
        if queues:  # the exchange may have gone too
            self.connection.exchanges.declare(exchange, self.state.exchanges[exchange]["type"])
        for queue in queues:
            self.connection.forget_queue(queue)
            for bound_exchange, key, _ in list(self.state.queue_bindings(queue)):
                if bound_exchange == exchange:
                    okuri_queue = self.connection.ensure_queue(queue)
                    self.connection.exchanges.bind(exchange, okuri_queue, key)
        return bool(queues)

    def _put(self, queue: str, message: Payload, **kwargs: Any) -> None:
        connection = self.connection
        if self.options.confirm_publish:
            connection.produce(queue, [Item(item_text(message))])
        else:
            connection.ensure_queue(queue)  # a refusal is the caller's, as when confirmed
            connection.publisher.publish(queue, item_text(message))

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
        """Cancel; an `auto_delete` queue that no consumer of this connection consumes any
        more is deleted (as RabbitMQ deletes one after its last consumer, and kombu's Redis
        transport its fanout queues)."""
        queue = self._tag_to_queue.get(consumer_tag)
        result = super().basic_cancel(consumer_tag)
        if queue is not None and queue not in self._active_queues:
            self._noack_queues.discard(queue)
            if self.connection.arguments(queue).auto_delete and not self.connection.consumes(queue):
                self.queue_delete(queue)
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
        """Lease from the consumed queues and deliver; Empty when nothing came, at once
        without room in the prefetch window or without consumers (the transport's
        drain_events then waits for an ack or a consumer, so that its loop never spins)."""
        if not self.can_lease():
            raise Empty()
        # A deadline, not the timeout, to each queue: their long polls add up within it.
        deadline = None if timeout is None else self.connection.clock() + timeout
        self.cycle.get(callback or self.connection._deliver, deadline=deadline)

    def _lease_and_deliver(self, queue: str, callback: Any, deadline: float | None = None) -> None:
        room = self.qos.can_consume_max_estimate()
        most = BATCH_MAX if room is None else min(max(room, 1), BATCH_MAX)
        wait_s = self._wait_s(queue, deadline)
        if wait_s == NO_POLL:  # an auto_delete queue beside others, polled a moment ago
            raise Empty()
        payloads = self._lease(queue, most, wait_s, queue in self._noack_queues)
        if not payloads:
            raise Empty()
        for payload in payloads:
            callback(payload, queue)

    def _wait_s(self, queue: str, deadline: float | None) -> int:
        """The long poll of a lease of `queue` ending by `deadline` at the latest (give or take
        pacing.POLL_SLACK_S), or NO_POLL (okuri_kombu/pacing.py)."""
        connection = self.connection
        now = connection.clock()
        aux = connection.arguments(queue).auto_delete and connection.consumes_other_than_auto()
        wait_s = poll_wait_s(
            self.options.wait_time_s,
            None if deadline is None else max(0.0, deadline - now),
            queues_consumed=connection.consumed_count(),
            auto_delete_beside_others=aux,
            since_poll_s=now - self._aux_polled_at.get(queue, float("-inf")),
        )
        if aux and wait_s != NO_POLL:
            self._aux_polled_at[queue] = now
        return wait_s

    def _lease(self, queue: str, most: int, wait_s: int, no_ack: bool = False) -> list[Payload]:
        """Lease up to `most` items of kombu queue `queue`, each now held (or, for a no-ack
        consumer, completed at once)."""
        connection = self.connection
        name = connection.ensure_queue(queue)
        leased_at = self._leased_at = connection.clock()
        if wait_s:
            connection.long_polled = True
        arguments = connection.arguments(queue)
        keeper = self.keeper
        kept: list[Payload] = []
        while not kept:
            try:
                items = self.okuri.lease(
                    name, most, lease_s=self.options.lease_s, request_timeout_s=wait_s
                )
            except NotFoundError:  # deleted meanwhile (or expired): made again on the next poll
                connection.forget_queue(queue, lost=True)
                return []
            if not items:
                break
            now_s = connection.wall_clock()
            for item in items:
                payload = payload_of(item, name)
                enqueued_s = item.enqueued_at.timestamp()
                if arguments.expired(enqueued_s, now_s) or message_expired(
                    payload, enqueued_s, now_s
                ):  # past the queue's message_ttl, or its own expiration: dropped
                    keeper.complete_unheld(name, item.handle)
                elif no_ack:
                    keeper.complete_unheld(name, item.handle)
                    kept.append(payload)
                else:
                    keeper.hold(name, item.handle, leased_at)
                    kept.append(payload)
            wait_s = 0  # every one was past its TTL: look again, without waiting
        return kept

    def _restore(self, message: Any) -> None:
        """Give an unacked message back (the channel closes, or recover): retry it now."""
        self.keeper.requeue(message.delivery_tag)

    def _restore_at_beginning(self, message: Any) -> None:
        self._restore(message)

    def close(self) -> None:
        connection = self.connection  # kombu's close unsets it
        super().close()
        if connection is not None:
            connection.ready.set()
