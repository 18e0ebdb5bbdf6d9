"""The okuri:// transport: one kombu connection, its okuri client, its lease keeper, its queues.

`okuri://KEY@host:port` speaks okuri's native HTTP/JSON API at `http://host:port` (default
port 8080) with bearer key KEY, through okuri.client; `okuris://` at `https://host:port`
(default port 443), as does `okuri://` with kombu's `ssl` connection option (Celery's
`broker_use_ssl`). `ssl` may be a mapping: `ca_certs` (a CA bundle to trust) and `cert_reqs`
(`ssl.CERT_NONE`: do not verify; for tests only). The key may sit in the URL's user or
password field (`okuri://:KEY@host`), or in the `key` transport option. A key given as the
user is moved to the password field, so that kombu's and Celery's logs show it masked.

The transport is synchronous (`implements.asynchronous` is false): a Celery worker runs it in
its blocking loop, which drains with a timeout of two seconds. See okuri_kombu/channel.py.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from queue import Empty
from typing import Any

import httpx
from kombu.transport import virtual

from okuri.client import (
    Client,
    ConflictError,
    ForbiddenError,
    Item,
    NotFoundError,
    OkuriClientError,
    RetryableError,
    ServerError,
    StdlibHttpTransport,
)
from okuri.client.stdlib_http import proxied

from .arguments import QueueArguments
from .channel import Channel
from .exchanges import Exchanges, ExchangeTypeError
from .http import HttpClient
from .http import logger as http_logger
from .keeper import LeaseKeeper
from .names import QueueNameError, okuri_queue_name
from .options import Options
from .publisher import Publisher

VERSION = "0.0.1"
IDLE_WAIT_S = 1.0  # how long drain_events waits for room (or a consumer) when it cannot poll


class Transport(virtual.Transport):
    Channel = Channel

    scheme = "http"
    default_port = 8080  # type: ignore[assignment]  # kombu declares None
    driver_type = "okuri"
    driver_name = "okuri"

    # What Celery and kombu's `ensure` treat as the connection failing (reconnect and retry):
    # no answer, 429, 503 and other 5xx. The rest (a bad key, a refused request) is the
    # channel's, and is raised to the caller.
    connection_errors = (  # type: ignore[assignment]  # kombu declares a 1-tuple
        *virtual.Transport.connection_errors,
        RetryableError,
        ServerError,
        socket.error,
    )
    channel_errors = (  # type: ignore[assignment]
        *virtual.Transport.channel_errors,
        OkuriClientError,
        QueueNameError,
        ExchangeTypeError,
    )
    # What kombu's `ensure` (Celery's publish retries) retries after reconnecting: the connection
    # errors; a refusal is not retried (without these, kombu would retry every error above).
    recoverable_connection_errors = connection_errors
    recoverable_channel_errors: tuple[type[BaseException], ...] = ()

    implements = virtual.Transport.implements.extend(
        asynchronous=False,
        exchange_type=frozenset(["direct", "topic", "fanout"]),
        heartbeats=False,
    )

    def __init__(self, client: Any, **kwargs: Any) -> None:
        super().__init__(client, **kwargs)
        given = client.transport_options or {}
        self.options = Options.read(given)
        if given.get("polling_interval") is None:
            # A long poll waits on the server; a short one (wait_time_s 0) must pause here.
            self.polling_interval = 0.0 if self.options.wait_time_s else 1.0
        if client.userid and not client.password:  # okuri://KEY@host: mask KEY in logs
            client.password, client.userid = client.userid, None
        self.clock = time.monotonic
        self.wall_clock = time.time  # against items' enqueued_at (a queue's message_ttl)
        self._okuri: Client | None = None
        self._http: httpx.Client | None = None  # the okuri client's, closed with the connection
        self._keeper: LeaseKeeper | None = None
        self._publisher: Publisher | None = None
        self.conninfo: Any = client  # kombu's Connection (kombu types `client` as None)
        self._queues: dict[str, str] = {}  # kombu queue name -> okuri queue, declared
        self._lost: set[str] = set()  # queues found missing: bindings to make again
        self._arguments: dict[str, QueueArguments] = {}  # kombu queue name -> its arguments
        self._lock = threading.Lock()
        self.exchanges = Exchanges(lambda: self.okuri, self.options.queue_name_prefix)
        self.ready = threading.Event()  # an ack or a consumer: a waiting drain may lease
        self.long_polled = False  # whether a drain round sent a long poll

    # --- the client --------------------------------------------------------------------------

    def base_url(self) -> str:
        conninfo = self.conninfo
        host = conninfo.hostname or "localhost"
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 address
        port = conninfo.port or self.default_port
        scheme = "https" if conninfo.ssl else self.scheme
        return f"{scheme}://{host}:{port}"

    def key(self) -> str:
        key = self.conninfo.password or self.conninfo.userid or self.options.key
        if not key:
            raise ValueError(
                "okuri:// needs a bearer key: okuri://KEY@host:port, okuri://:KEY@host:port "
                "or the transport option 'key'"
            )
        return str(key)

    def new_client(self) -> Client:
        """The okuri client this connection talks through (a test may override this)."""
        url, key, verify = self.base_url(), self.key(), _verify(self.conninfo.ssl)
        timeout_s = self.options.timeout_s
        if proxied(url):  # only httpx goes through a proxy
            self._http = HttpClient(verify=verify)  # logs at DEBUG, not INFO
            return Client(url, key, timeout_s=timeout_s, http=self._http)
        transport = StdlibHttpTransport(
            url, key, timeout_s=timeout_s, verify=verify, logger=http_logger
        )  # the least CPU per call: a producer waits on each
        return Client(transport=transport)

    def new_keeper(self, client: Client) -> LeaseKeeper:
        """The lease keeper of this connection (a test may override this)."""
        return LeaseKeeper(client, self.options.lease_s, clock=self.clock)

    @property
    def okuri(self) -> Client:
        with self._lock:
            if self._okuri is None:
                self._okuri = self.new_client()
            return self._okuri

    @property
    def keeper(self) -> LeaseKeeper:
        client = self.okuri
        with self._lock:
            if self._keeper is None:
                self._keeper = self.new_keeper(client)
            return self._keeper

    @property
    def publisher(self) -> Publisher:
        """The thread that sends unconfirmed publishes (transport option confirm_publish off)."""
        with self._lock:
            if self._publisher is None:
                self._publisher = Publisher(self.produce)
            return self._publisher

    def produce(self, queue: str, items: list[Item]) -> list[str]:
        """Produce `items` to kombu queue `queue`, declared first if this connection has not; one
        deleted (or expired) since its declaration is declared again and the produce sent again."""
        try:
            return self.okuri.produce(self.ensure_queue(queue), items)
        except NotFoundError:
            self.forget_queue(queue, lost=True)
            return self.okuri.produce(self.ensure_queue(queue), items)

    # --- queues ------------------------------------------------------------------------------

    def okuri_name(self, queue: str) -> str:
        return okuri_queue_name(queue, self.options.queue_name_prefix)

    def set_arguments(self, queue: str, arguments: QueueArguments) -> None:
        self._arguments[queue] = arguments

    def arguments(self, queue: str) -> QueueArguments:
        """What kombu declared queue `queue` with (expires, message_ttl, auto_delete)."""
        return self._arguments.get(queue) or QueueArguments()

    def ensure_queue(self, queue: str) -> str:
        """The okuri queue of kombu queue `queue`, created if missing (once per connection;
        again after it was found missing, with the bindings this connection made to it)."""
        name = self._queues.get(queue)
        if name is not None:
            return name
        name = self.okuri_name(queue)
        attributes = {**self.options.attributes_for(queue), **self.arguments(queue).attributes()}
        try:
            self.okuri.create_queue(name, **attributes)
        except ConflictError:
            pass  # it exists with other attributes: it is used as it is
        except ForbiddenError as refused:
            # A producer or consumer key may not create queues; it may use one that exists.
            try:
                self.okuri.get_queue(name)
            except NotFoundError:
                raise refused from None
        self._queues[queue] = name
        if queue in self._lost:
            self._lost.discard(queue)
            for exchange, routing_key, _ in list(self.state.queue_bindings(queue)):
                self.exchanges.bind(exchange, name, routing_key)
        return name

    def forget_queue(self, queue: str, lost: bool = False) -> None:
        """Declare `queue` again on its next use; `lost`: it was found missing, so make its
        bindings again too."""
        self._queues.pop(queue, None)
        if lost:
            self._lost.add(queue)

    def consumes(self, queue: str) -> bool:
        return any(queue in channel._active_queues for channel in self.channels)

    def consumed_count(self) -> int:
        """How many queues this connection's consumers with room to lease consume."""
        return sum(len(c._active_queues) for c in self.channels if c.can_lease())

    def consumes_other_than_auto(self) -> bool:
        """Whether a consumer of this connection consumes a queue that is not auto_delete."""
        return any(
            not self.arguments(queue).auto_delete
            for channel in self.channels
            for queue in channel._active_queues
        )

    def delete_queue(self, queue: str) -> None:
        self.forget_queue(queue)
        self._lost.discard(queue)
        with contextlib.suppress(NotFoundError):
            self.okuri.delete_queue(self.okuri_name(queue))

    # --- the connection ----------------------------------------------------------------------

    def drain_events(self, connection: Any, timeout: float | None = None, **kwargs: Any) -> None:
        """Deliver what one lease brings; socket.timeout (TimeoutError) once `timeout` s passed.

        As kombu's virtual transport, but each lease long-polls only for the time left, and the
        time a lease cannot wait on okuri (the part under a second: okuri waits whole seconds)
        is waited here after a short poll, so a drain ends at about its timeout, neither much
        later (a stopping Celery worker, which drains with a timeout of two seconds, sees its
        stop flag that soon) nor sooner: kombu's ConsumerMixin (`celery events`, Flower) and
        SimpleQueue.get drain again at once, and would spin. `timeout` 0 polls once."""
        deadline = None if timeout is None else self.clock() + timeout
        cycle: Any = self.cycle
        while True:
            left_s = None if deadline is None else max(0.0, deadline - self.clock())
            self.ready.clear()
            self.long_polled = False
            try:
                cycle.get(self._deliver, timeout=left_s)
                return
            except Empty:
                pass
            pause_s = self._pause_s()
            if deadline is not None:
                left_s = deadline - self.clock()
                if left_s <= 0:
                    raise TimeoutError() from None  # socket.timeout
                pause_s = min(pause_s, left_s)
            if pause_s > 0:
                self.pause(pause_s)
            if deadline is not None and self.clock() >= deadline:
                raise TimeoutError() from None

    def _pause_s(self) -> float:
        """How long to wait after a round that brought nothing, before the next: after a long
        poll, kombu's `polling_interval` (0 unless set); when no channel may lease yet, until
        one may (an ack or a consumer ends the pause sooner); when one could but short-polled
        only (less than a second left, `wait_time_s` 0, auto_delete queues between polls),
        `polling_interval` or a second: never a loop of short polls."""
        if self.long_polled:
            return float(self.polling_interval or 0.0)
        pause_s = float(self.polling_interval or IDLE_WAIT_S)
        lease_wait_s = self._lease_wait_s()
        return min(pause_s, lease_wait_s) if lease_wait_s > 0 else pause_s

    def pause(self, seconds: float) -> None:
        """Wait `seconds`, or until an ack, a consumer or a closing channel (a test may
        override this)."""
        self.ready.wait(seconds)

    def _lease_wait_s(self) -> float:
        """How long until a channel may lease whatever an ack does (Channel.lease_wait_s)."""
        waits = [w for ch in self.channels if (w := ch.lease_wait_s()) is not None]
        return min(waits, default=IDLE_WAIT_S)

    def establish_connection(self) -> Any:
        self.okuri.list_queues(limit=1)  # reaches okuri, and okuri takes the key
        return super().establish_connection()

    def close_connection(self, connection: Any) -> None:
        try:
            super().close_connection(connection)  # the channels give their unacked back
        finally:
            with self._lock:
                keeper, client, http = self._keeper, self._okuri, self._http
                publisher = self._publisher
                self._keeper = self._okuri = self._http = self._publisher = None
            if publisher is not None:  # first: it still needs the client
                publisher.close()
            if keeper is not None:
                keeper.close()
            if client is not None:
                client.close()
            if http is not None:
                http.close()
            self._queues.clear()
            self._lost.clear()
            self.exchanges.clear()

    @property
    def default_connection_params(self) -> dict[str, Any]:
        return {"port": self.default_port, "hostname": "localhost"}

    def driver_version(self) -> str:
        return VERSION


class SecureTransport(Transport):
    """okuris://: the native API over HTTPS."""

    scheme = "https"
    default_port = 443


def _verify(options: object) -> bool | ssl.SSLContext:
    """The client's `verify` (httpx's meaning) for kombu's `ssl` connection option."""
    if not isinstance(options, Mapping):
        return True
    if options.get("cert_reqs") == ssl.CERT_NONE:
        return False
    ca_certs = options.get("ca_certs")
    return ssl.create_default_context(cafile=ca_certs) if ca_certs else True
