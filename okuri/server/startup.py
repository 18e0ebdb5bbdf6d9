"""What a node needs before it serves: its store opened and probed, its listeners bound.

Each failure here becomes one line for the operator (StartupError), never a traceback: a store
that ignores conditional writes is refused, a store that is only slow to answer is retried
within a budget, and a port in use names the listener it was meant for.
"""

from __future__ import annotations

import asyncio
import logging
import os

from aiohttp import web

from okuri import limits
from okuri.clock import Clock
from okuri.errors import OkuriError, StoreError, StoreMisconfigured
from okuri.server.front import FrontSite
from okuri.server.grpc_backend import GrpcBackend
from okuri.server.settings import Address, Settings
from okuri.server.tls import ServerTls, TlsFrontSite
from okuri.store.check import verify_conditional_writes
from okuri.store.directory import LayoutMismatch, open_local
from okuri.store.port import ObjectStore

log = logging.getLogger("okuri.server")


class StartupError(OkuriError):
    """The server cannot start; the message is the one line an operator sees."""


def one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _local_store(data_dir: str, layout: str) -> ObjectStore:
    root = os.path.abspath(data_dir)
    try:
        os.makedirs(root, exist_ok=True)
        return open_local(root, layout)
    except LayoutMismatch as err:
        raise StartupError(f"cannot use data directory {err} (OKURI_LOCAL_STORE)") from err
    except OSError as err:
        raise StartupError(f"cannot use data directory {root}: {err.strerror}") from err


async def open_store(settings: Settings) -> ObjectStore:
    """The store the settings ask for: S3 when a bucket is set, else the local directory."""
    if settings.s3_bucket is None:
        return await asyncio.to_thread(_local_store, settings.data_dir, settings.local_store)
    # The S3 adapter (aiobotocore, botocore: half a second of imports) loads only for S3, so
    # a server on a directory or in memory (an embedded one in tests) starts without it.
    from botocore.exceptions import BotoCoreError

    from okuri.store.s3 import S3Store

    try:
        return await S3Store(
            settings.s3_bucket,
            settings.s3_prefix,
            settings.s3_endpoint,
            settings.s3_region,
            settings.s3_access_key_id,
            settings.s3_secret_access_key,
        ).open()
    except (ValueError, BotoCoreError) as err:
        raise StartupError(f"cannot set up the S3 client: {one_line(err)}") from err


async def verify_store(
    store: ObjectStore, clock: Clock, budget_s: float = limits.startup_check_s
) -> None:
    """Run the conditional-write probe, retrying failures that say nothing about the store.

    The local store is probed too: it cannot ignore conditions, but the probe's real writes are
    the cheapest way to find an unwritable data directory before the first client does.
    """
    deadline_s = clock.monotonic_s() + budget_s
    delay_s = 0.05
    while True:
        remaining_s = deadline_s - clock.monotonic_s()
        try:
            await asyncio.wait_for(verify_conditional_writes(store), max(remaining_s, 0.001))
            return
        except StoreMisconfigured as err:
            raise StartupError(f"refusing to start: {one_line(err)}") from err
        except (StoreError, TimeoutError) as err:
            retryable = isinstance(err, TimeoutError) or err.retryable
            if not retryable or clock.monotonic_s() + delay_s >= deadline_s:
                raise StartupError(
                    f"the object store failed its start-up check within {budget_s:g} s: "
                    + one_line(err)
                ) from err
            log.warning("object store not answering yet (%s); retrying", one_line(err))
        await clock.sleep(delay_s)
        delay_s = min(delay_s * 2, limits.startup_retry_s_max)


def urls_of(runner: web.AppRunner, scheme: str = "http") -> list[str]:
    out = []
    for sockname in runner.addresses:
        host, port = sockname[0], sockname[1]
        out.append(f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}")
    return out


async def listen(
    runner: web.AppRunner,
    address: Address,
    what: str,
    grpc: GrpcBackend | None = None,
    tls: ServerTls | None = None,
    read_timeout_s: float = limits.read_timeout_s_default,
) -> None:
    """Listen on `address`; with `grpc`, gRPC connections go there (okuri.server.front), and
    with `tls` every connection speaks TLS (okuri.server.tls)."""
    await runner.setup()
    site: web.BaseSite
    if grpc is None:
        site = web.TCPSite(runner, address.host, address.port)
    elif tls is None:
        site = FrontSite(runner, address.host, address.port, grpc.splice, read_timeout_s)
    else:
        site = TlsFrontSite(
            runner, address.host, address.port, grpc.splice, tls, read_timeout_s
        )
    try:
        await site.start()
    except OSError as err:
        raise StartupError(
            f"cannot listen on {address} ({what}): {err.strerror or one_line(err)}"
        ) from err
