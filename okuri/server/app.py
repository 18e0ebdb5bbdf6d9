"""The running server: the one place that picks concrete adapters and wires them together.

It owns the start-up order and the shutdown order, because both decide whether messages survive:
- start: the health listener first (so a slow bucket shows as "not ready", not as a dead
  process), then the store, then the start-up probe that refuses a store which does not enforce
  conditional writes, then the engine, and only then the main listener;
- stop (SIGTERM or SIGINT): readiness turns 503, the main listener stops accepting and lets
  in-flight requests finish, `engine.close()` flushes pending sends, the store closes, and the
  health listener goes last. Exit 0 when every pending send was flushed, 1 otherwise.
Failures to start are one line on stderr and exit code 1, never a traceback
(okuri.server.startup); the process around a server is okuri.server.process.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from aiohttp import web

from okuri import __version__, limits
from okuri.clock import Clock, SystemClock
from okuri.console.history import History, Reading, Sampler
from okuri.console.routes import Console
from okuri.engine import Admission, Bounds, Engine, PeerRequestInvalid, caller
from okuri.errors import OkuriError
from okuri.native.grpc_service import SERVICE_NAME as GRPC_SERVICE
from okuri.native.grpc_service import QueueService
from okuri.native.http import PREFIX as NATIVE_PREFIX
from okuri.native.http import NativeHttp
from okuri.principals.keyfile import load_keys_file, loose_mode_warning
from okuri.principals.keys import KeysFileInvalid, KeyTable
from okuri.principals.local import DEV_ADMIN_KEY
from okuri.server import logs
from okuri.server.grpc_backend import GrpcBackend
from okuri.server.health import Health, admission_lines, health_app, queue_lines, sync_lines
from okuri.server.malformed import Runner
from okuri.server.peers import PATH as PEER_PATH
from okuri.server.peers import Peers, advertised_url
from okuri.server.regions import Regions
from okuri.server.settings import Settings
from okuri.server.startup import StartupError, listen, one_line, open_store, urls_of, verify_store
from okuri.server.tls import ServerTls, TlsFiles, TlsFilesInvalid
from okuri.sqs.actions import SqsActions
from okuri.sqs.http import SqsHttp
from okuri.sqs.sigv4_errors import AuthError
from okuri.store.counting import CountingStore, RequestCounts
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.server")


class Server:
    """One okuri node; `start` then `stop`. `stop` also undoes a start that failed half-way."""

    def __init__(
        self,
        settings: Settings,
        clock: Clock | None = None,
        store: ObjectStore | None = None,
        node_id: str | None = None,
    ) -> None:
        """`store`: an open store to serve from instead of the one the settings name (an
        embedded server in memory, okuri/server/embedded.py); the server closes it on stop.
        `node_id` names this node in its engine and its JSON log lines (a new one if None)."""
        self.settings = settings
        self.clock = clock or SystemClock()
        self._given_store = store
        self.node_id = node_id or self.clock.new_id()[:8]
        # A request aiohttp cannot parse is one line naming its kind, never its bytes, in a
        # program that embeds okuri and configures logging itself too (idempotent).
        logs.install()
        self.counts = RequestCounts()
        self.health = Health(self.counts, self.clock)
        self.store: ObjectStore | None = None
        self.engine: Engine | None = None
        # aiohttp's own access lines in text mode at debug; JSON lines have okuri's access records.
        text_debug = settings.log_level == "debug" and settings.log_format == "text"
        access_log = log if text_debug else None
        self._health_runner = Runner(
            health_app(self.health),
            access_log=access_log,
            shutdown_timeout=limits.health_shutdown_s,
        )
        self.sqs: SqsHttp | None = None
        # What the SQS and native surfaces hold in flight; peers and health are never shed.
        self.admission = Admission(
            Bounds(
                requests_max=settings.inflight_requests_max,
                bytes_max=settings.inflight_bytes_max,
                long_polls_max=settings.long_polls_max,
                unverified_bytes_max=settings.unverified_bytes_max,
                sender_bytes_max=settings.sender_bytes_max,
            )
        )
        self._peer_url = ""
        self.regions: Regions | None = None
        self.peers = Peers(
            settings.secret_access_key,
            self._engine_for_scope,
            self._peer_tls,
            self.clock,
            settings.read_timeout_s,
        )
        main = web.Application(client_max_size=limits.request_bytes_max)
        main.router.add_route("POST", PEER_PATH, self._serve_peer)
        self.native: NativeHttp | None = None
        self.key_table = KeyTable(
            settings.admin_key,
            [],
            (settings.access_key_id, settings.secret_access_key),
            dev_key=settings.uses_dev_admin_key,
        )
        main.router.add_route("*", NATIVE_PREFIX + "{tail:.*}", self._serve_native)
        # The console only with a key to enter, configured or the development key (otherwise
        # /console is any unknown path).
        self.history = History(self._reading)
        self._sampler: Sampler | None = None
        if settings.admin_key or settings.api_keys_file or settings.uses_dev_admin_key:
            keys = (lambda: self.key_table) if settings.auth else None
            Console(keys, self.history, self.clock).add_routes(main)
        main.router.add_route("*", "/{tail:.*}", self._serve_sqs)
        # After an answer given before its body was read (a refusal, a body that stopped
        # arriving), aiohttp reads and drops the rest before it closes, for this long at most:
        # a read like any other, so it has the read timeout too.
        self._main_runner = Runner(
            main,
            access_log=access_log,
            shutdown_timeout=limits.shutdown_grace_s,
            lingering_time=min(limits.lingering_s_max, float(settings.read_timeout_s)),
            keepalive_timeout=limits.keepalive_s,
        )
        self.grpc = GrpcBackend(
            self.health.readiness,
            "okuri-grpc-" + self.clock.new_id(),
            gate=self.admission.gate("grpc"),
            read_timeout_s=settings.read_timeout_s,
        )
        self.tls: ServerTls | None = None

    async def _serve_sqs(self, request: web.Request) -> web.StreamResponse:
        if self.sqs is None:
            raise web.HTTPServiceUnavailable(text="starting")
        caller.set(request.protocol)  # one client's connection: its requests come in turn
        return await self.sqs.handle(request)

    async def _serve_native(self, request: web.Request) -> web.StreamResponse:
        if self.native is None:
            raise web.HTTPServiceUnavailable(text="starting")
        caller.set(request.protocol)
        return await self.native.handle(request)

    def _reading(self) -> Reading:
        engine = self.engine
        if engine is None:
            return Reading({}, {}, {})
        return Reading(engine.cached_counts(), engine.sent, engine.deleted)

    def _load_keys(self) -> KeyTable:
        """The environment's keys and the keys file's; raises KeysFileInvalid."""
        path = self.settings.api_keys_file
        if not path:
            return self.key_table.with_stored([])
        entries = load_keys_file(path)
        warning = loose_mode_warning(path, entries)
        if warning is not None:
            log.warning("%s", warning)
        return self.key_table.with_stored(entries)

    def reload_keys(self) -> None:
        """Re-read the keys file (SIGHUP); a file that does not load keeps the keys in use."""
        try:
            self.key_table = self._load_keys()
        except KeysFileInvalid as err:
            log.error("keeping the keys in use: %s", err)
            return
        log.info("native API and SQS keys reloaded from %s", self.settings.api_keys_file)

    async def _serve_peer(self, request: web.Request) -> web.StreamResponse:
        if self.regions is None:
            raise web.HTTPServiceUnavailable(text="starting")
        return await self.peers.handle(request)

    def _engine_for_scope(self, scope: str) -> Engine:
        """The engine a forwarded commit names: the home region's for "", else a region's; a
        region this node does not serve (nodes configured with other OKURI_REGIONS) is
        refused as an invalid forward, never committed in the home region."""
        assert self.regions is not None
        try:
            return self.regions.actions_for(scope or None).engine
        except AuthError:
            raise PeerRequestInvalid(
                f"this node does not serve region {scope[:80]!r} (OKURI_REGIONS)"
            ) from None

    def _peer_tls(self) -> ssl.SSLContext | None:
        return None if self.tls is None else self.tls.peer_context

    def _connect_peers(self, engine: Engine, scope: str) -> None:
        engine.peering.client = self.peers
        engine.peering.url = self._peer_url
        engine.peering.scope = scope

    @property
    def urls(self) -> list[str]:
        """Where the main listener answers (ports resolved, so ':0' works in tests)."""
        return urls_of(self._main_runner, "http" if self.tls is None else "https")

    @property
    def health_urls(self) -> list[str]:
        return urls_of(self._health_runner)

    async def start(self) -> None:
        settings = self.settings
        if settings.tls_cert is not None and settings.tls_key is not None:
            files = TlsFiles(settings.tls_cert, settings.tls_key, settings.tls_client_ca)
            try:
                self.tls = await asyncio.to_thread(ServerTls, files)
            except TlsFilesInvalid as err:
                raise StartupError(str(err)) from err
        await listen(self._health_runner, settings.health_listen, "health")
        opened = self._given_store if self._given_store is not None else await open_store(settings)
        self.store = CountingStore(opened, self.counts)
        await verify_store(self.store, self.clock)
        self.engine = Engine(
            self.store,
            self.clock,
            linger_ms=settings.linger_ms,
            ack_logs=settings.ack_logs,
            lanes=settings.lanes,
            fifo_partitions=limits.fifo_partitions if settings.fifo_partitions else 0,
            node_id=self.node_id,
            quotas=settings.quotas,
        )
        sqs_gate = self.admission.gate("sqs")
        actions = SqsActions(
            self.engine,
            region=settings.region,
            account_id=settings.account_id,
            public_url=settings.public_url,
            gate=sqs_gate,
        )

        def regional_actions(engine: Engine, region: str) -> SqsActions:
            self._connect_peers(engine, region)
            engine.start_expiry_sweeper(settings.expiry_sweep_s)
            return SqsActions(
                engine,
                region=region,
                account_id=settings.account_id,
                public_url=settings.public_url,
                url_region=region,
                gate=sqs_gate,
            )

        self.regions = Regions(
            actions,
            self.store,
            self.clock,
            settings.linger_ms,
            regional_actions,
            settings.regions,
            settings.quotas,
        )
        self.sqs = SqsHttp(
            actions,
            self.clock,
            (lambda: self.key_table) if settings.auth else None,
            self.regions.actions_for,
            sqs_gate,
            settings.read_timeout_s,
        )
        try:
            self.key_table = await asyncio.to_thread(self._load_keys)
        except KeysFileInvalid as err:
            raise StartupError(str(err)) from err
        native_keys = (lambda: self.key_table) if settings.auth else None
        self.native = NativeHttp(
            self.engine,
            self.clock,
            native_keys,
            self.admission.gate("native"),
            read_timeout_s=settings.read_timeout_s,
        )
        service = QueueService(
            self.engine,
            self.clock,
            native_keys,
            self.admission.gate("grpc"),
            self.native.stats,  # one metric family, by transport
            self.grpc.client_address,  # grpcio sees the splice; the splice knows the client
        )
        try:
            await self.grpc.start({GRPC_SERVICE: service.handler()})
        except (OSError, RuntimeError) as err:
            raise StartupError(f"cannot start the gRPC server: {one_line(err)}") from err
        await listen(
            self._main_runner,
            settings.listen,
            "SQS",
            self.grpc,
            self.tls,
            settings.read_timeout_s,
        )
        self._peer_url = advertised_url(settings.peer_url, settings.listen, self.urls)
        self._connect_peers(self.engine, "")
        self.engine.start_expiry_sweeper(settings.expiry_sweep_s)
        self._sampler = Sampler(self.history, self.clock)
        self.health.serving(
            self.engine.probe_store,
            self.engine.stats,
            [
                self.sqs.metric_lines,
                self.native.stats.metric_lines,
                lambda: queue_lines(self.engine, self.clock.now_ms()),
                lambda: admission_lines(self.admission),
                lambda: sync_lines(opened),
            ],
        )
        log.info(
            "okuri %s serving SQS on %s, health on %s; store: %s; linger %d ms; peers reach "
            "it at %s",
            __version__,
            ", ".join(self.urls),
            ", ".join(self.health_urls),
            settings.describe_store()
            if self._given_store is None
            else f"{type(self._given_store).__name__} (given)",
            settings.linger_ms,
            self._peer_url or "(nowhere: it never leads)",
        )
        if settings.uses_dev_credentials:
            log.warning(
                "SQS clients are accepted with the built-in development key %r; set "
                "OKURI_ACCESS_KEY_ID and OKURI_SECRET_ACCESS_KEY before exposing this server",
                settings.access_key_id,
            )
        if self.key_table.accepts_dev_key:
            self._announce_dev_key()
        elif settings.auth and self.key_table.empty:
            log.info(
                "the native API (/v1/) refuses every request until a bearer key is configured: "
                "the keys file %s holds none (`okuri keys create`)",
                settings.api_keys_file,
            )

    def _announce_dev_key(self) -> None:
        """Say that the published development key is in force, and that it is published: it
        is the one key a log line may show."""
        log.warning(
            "no native API key is configured, so the native API (/v1/ and gRPC), the console "
            "(/console) and `okuri queues` accept the published development admin key %r, from "
            "this machine only (loopback clients, not through a proxy). It is no secret: set "
            "OKURI_ADMIN_KEY or OKURI_API_KEYS_FILE for keys of your own, which turn it off",
            DEV_ADMIN_KEY,
        )
        if not self.settings.listens_on_loopback:
            log.warning(
                "OKURI_LISTEN=%s takes connections from other hosts, which the development key "
                "refuses (401 dev_key_not_local): configure a key for them",
                self.settings.listen,
            )

    def engines(self) -> list[Engine]:
        """Every engine serving: the home region's, then each other region's in use."""
        home = [] if self.engine is None else [self.engine]
        return home + ([] if self.regions is None else self.regions.engines())

    async def stop(self) -> bool:
        """Shut down in order; True when every pending send was flushed to the store."""
        self.health.phase = "stopping"
        flushed = True
        # Idle long polls answer at once rather than hold the drain for their WaitTimeSeconds.
        if self.engine is not None:
            self.engine.stop_waiting()
        if self.regions is not None:
            self.regions.stop_waiting()
        self.grpc.stopping()
        if self._sampler is not None:
            await self._sampler.stop()
        # HTTP requests and gRPC calls drain together; the listener stops accepting first.
        await asyncio.gather(self._main_runner.cleanup(), self.grpc.stop(limits.shutdown_grace_s))
        regions, self.regions = self.regions, None
        if regions is not None:
            await regions.close()
        engine, self.engine = self.engine, None
        if engine is not None:
            try:
                await asyncio.wait_for(engine.close(), limits.flush_timeout_s)
            except (OkuriError, TimeoutError) as err:
                log.error("pending sends could not be flushed: %s", one_line(err))
                flushed = False
        await self.peers.close()
        store, self.store = self.store, None
        if store is not None:
            try:
                await store.close()
            except (OkuriError, OSError) as err:
                log.warning("closing the store: %s", one_line(err))
        await self._health_runner.cleanup()
        return flushed
