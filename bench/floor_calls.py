"""The calls `python -m bench floor` times: one caller, one call at a time, through the clients an
application would use, against any server that answers them (okuri serve, or the hello-world
server of bench/floor_hello.py, so that the two are timed by the very same code).

- SQS through botocore, signed with okuri's development pair: SendMessage, ReceiveMessage of
  the message just sent, DeleteMessage of it, GetQueueUrl; one round is the four in turn.
- the native API through okuri.client's blocking `Client`: produce one item, lease it,
  complete it.
- okuri:// through kombu and okuri_kombu (confirm_publish on, the default): one
  `Producer.publish` to a direct exchange bound to a queue, as Celery publishes a task.

Each loop runs WARMUP_ROUNDS untimed rounds first (connections opened, caches filled), then
rounds until its `Budget` of rounds or seconds is spent. A receive or lease that got nothing is
not timed (it is no receive of a message just sent) and is counted as a miss; a call that
failed is counted, its first error kept, and the loop goes on. Clients retry nothing, so a
failure shows. A surface that cannot be set up raises `BenchError`; okuri:// without kombu or
okuri_kombu raises `Unavailable`.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any, TypeVar
from urllib.parse import quote

from bench.measure import error_line, process_cpu_s
from bench.metrics import NodeCounters
from bench.servers import (
    DEV_ACCESS_KEY_ID,
    DEV_SECRET_ACCESS_KEY,
    BenchError,
    botocore_client,
)

T = TypeVar("T")

SEND, RECEIVE, DELETE, GET_URL = (
    "sqs.SendMessage", "sqs.ReceiveMessage", "sqs.DeleteMessage", "sqs.GetQueueUrl",
)  # fmt: skip
SEND_TO_RECEIPT = "sqs.send-to-receipt"  # a send's start to the receive that got it answering
PRODUCE, LEASE, COMPLETE = "native.produce", "native.lease", "native.complete"
PUBLISH = "kombu.publish"

QUEUE = "okuri-floor"
BODY = "b" * 256  # every body sent: 256 bytes
WARMUP_ROUNDS = 5
CPU_WARMUP_CALLS = 20
RECEIVE_WAIT_S = 2  # a receive (or lease) of what was just sent waits at most this long for it
CALL_TIMEOUT_S = 10.0
SETUP_ERRORS = (Exception,)  # whatever a client raises: botocore's, httpx's, kombu's


# Reads the server's counters (okuri's /metrics), around the timed rounds; None: not okuri.
Probe = Callable[[], NodeCounters | None]


class Unavailable(Exception):
    """A surface this machine cannot drive (kombu or okuri_kombu cannot be imported)."""


@dataclass(frozen=True)
class Budget:
    """At most `calls` rounds, and no round started after `seconds`."""

    calls: int
    seconds: float

    def rounds(self) -> Iterator[int]:
        deadline = perf_counter() + self.seconds
        for i in range(self.calls):
            if perf_counter() >= deadline:
                return
            yield i


@dataclass
class Timings:
    """Seconds each call took, by call; misses and failures counted, the first failure kept."""

    seconds: dict[str, list[float]] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    first_error: str | None = None
    rounds: int = 0
    # The server's object-store requests by class over the timed rounds (None: not probed).
    store_requests: dict[str, int] | None = None

    def time(
        self, name: str, call: Callable[[], T], kept: Callable[[T], bool] = lambda _: True
    ) -> T | None:
        """`call()`, timed under `name` if its answer is `kept` (else counted as a miss);
        None when it raised."""
        start = perf_counter()
        try:
            answer = call()
        except Exception as err:
            self.errors += 1
            if self.first_error is None:
                self.first_error = error_line(f"{name}: {type(err).__name__}: {err}")
            return None
        took_s = perf_counter() - start
        if kept(answer):
            self.seconds.setdefault(name, []).append(took_s)
        else:
            self.misses[name] = self.misses.get(name, 0) + 1
        return answer


def store_requests(
    before: NodeCounters | None, after: NodeCounters | None
) -> dict[str, int] | None:
    """The store requests by class between two readings of okuri's counters."""
    if before is None or after is None:
        return None
    return {k: int(v) for k, v in sorted(after.minus(before).store.items()) if v}


def _loop(one_round: Callable[[Timings], None], budget: Budget, probe: Probe | None) -> Timings:
    warmup = Timings()
    for _ in range(WARMUP_ROUNDS):
        one_round(warmup)
    timings = Timings()
    before = probe() if probe else None
    for _ in budget.rounds():
        one_round(timings)
        timings.rounds += 1
    timings.store_requests = store_requests(before, probe() if probe else None)
    return timings


def _setup(what: str, call: Callable[[], T]) -> T:
    try:
        return call()
    except SETUP_ERRORS as err:
        raise BenchError(f"{what}: {type(err).__name__}: {error_line(str(err))}") from err


# --- SQS, through botocore ---------------------------------------------------------------------


def _sqs_client(endpoint: str) -> Any:
    return botocore_client(
        "sqs", endpoint, DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY,
        read_timeout_s=CALL_TIMEOUT_S + RECEIVE_WAIT_S, attempts=1, connections_max=1,
    )  # fmt: skip


def sqs_rounds(endpoint: str, budget: Budget, probe: Probe | None = None) -> Timings:
    """send, receive it, delete it, get the queue's URL: each timed, round after round."""
    client = _sqs_client(endpoint)
    try:
        created = _setup("SQS CreateQueue", lambda: client.create_queue(QueueName=QUEUE))
        url = created["QueueUrl"]

        def one_round(t: Timings) -> None:
            began = perf_counter()
            t.time(SEND, lambda: client.send_message(QueueUrl=url, MessageBody=BODY))
            got = t.time(
                RECEIVE,
                lambda: client.receive_message(
                    QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=RECEIVE_WAIT_S
                ),
                lambda answer: bool(answer.get("Messages")),
            )
            messages = (got or {}).get("Messages") or []
            if messages:
                t.seconds.setdefault(SEND_TO_RECEIPT, []).append(perf_counter() - began)
                handle = messages[0]["ReceiptHandle"]
                t.time(DELETE, lambda: client.delete_message(QueueUrl=url, ReceiptHandle=handle))
            t.time(GET_URL, lambda: client.get_queue_url(QueueName=QUEUE))

        return _loop(one_round, budget, probe)
    finally:
        client.close()


@dataclass(frozen=True)
class CpuPerCall:
    calls: int
    cpu_ms_per_call: float | None  # None: the process's CPU cannot be read (no /proc)
    store_requests: dict[str, int] | None = None  # over all `calls` (None: not probed)


def sqs_cpu_per_call(
    endpoint: str, pid: int, budget: Budget, probe: Probe | None = None
) -> CpuPerCall:
    """The server's CPU (process `pid`) per GetQueueUrl, a call that writes nothing."""
    client = _sqs_client(endpoint)
    try:
        _setup("SQS CreateQueue", lambda: client.create_queue(QueueName=QUEUE))
        for _ in range(CPU_WARMUP_CALLS):
            client.get_queue_url(QueueName=QUEUE)
        counters = probe() if probe else None
        before, calls = process_cpu_s(pid), 0
        for _ in budget.rounds():
            client.get_queue_url(QueueName=QUEUE)
            calls += 1
        after = process_cpu_s(pid)
        requests = store_requests(counters, probe() if probe else None)
    except SETUP_ERRORS as err:
        raise BenchError(f"SQS GetQueueUrl: {type(err).__name__}: {error_line(str(err))}") from err
    finally:
        client.close()
    if before is None or after is None or not calls:
        return CpuPerCall(calls, None, requests)
    return CpuPerCall(calls, (after - before) * 1000 / calls, requests)


# --- the native API, through okuri.client ------------------------------------------------------


def native_rounds(
    endpoint: str, key: str, budget: Budget, probe: Probe | None = None
) -> Timings:
    """produce one item, lease it, complete it: each timed, round after round."""
    from okuri.client import Client, LeasedItem, RetryPolicy

    with Client(
        endpoint, key, timeout_s=CALL_TIMEOUT_S, retries=RetryPolicy(attempts_max=1)
    ) as client:
        _setup("native create_queue", lambda: client.create_queue(QUEUE))

        def one_round(t: Timings) -> None:
            t.time(PRODUCE, lambda: client.produce(QUEUE, BODY))
            items: list[LeasedItem] | None = t.time(
                LEASE,
                lambda: client.lease(QUEUE, 1, request_timeout_s=RECEIVE_WAIT_S),
                lambda leased: bool(leased),
            )
            if items:
                t.time(COMPLETE, lambda: client.complete(QUEUE, items))

        return _loop(one_round, budget, probe)


# --- okuri://, through kombu and okuri_kombu ----------------------------------------------------


def import_okuri_kombu() -> None:
    """Import kombu and okuri_kombu: installed, or else from this checkout's integrations/kombu
    (as the tests and `python -m bench celery` find it). Raises Unavailable saying why not."""
    try:
        importlib.import_module("kombu")
    except ImportError as err:
        raise Unavailable(f"kombu cannot be imported ({err})") from err
    checkout = Path(__file__).resolve().parents[1] / "integrations" / "kombu"
    try:
        okuri_kombu: Any = importlib.import_module("okuri_kombu")
    except ModuleNotFoundError as err:
        if err.name != "okuri_kombu" or not (checkout / "okuri_kombu").is_dir():
            raise Unavailable(f"okuri_kombu cannot be imported ({err})") from err
        sys.path.append(str(checkout))
        try:
            okuri_kombu = importlib.import_module("okuri_kombu")
        except ImportError as again:
            raise Unavailable(f"okuri_kombu cannot be imported ({again})") from again
    except ImportError as err:
        raise Unavailable(f"okuri_kombu cannot be imported ({err})") from err
    okuri_kombu.register()


def kombu_rounds(
    endpoint: str, key: str, budget: Budget, probe: Probe | None = None
) -> Timings:
    """One confirmed publish to a direct exchange bound to a queue, as Celery sends a task."""
    import_okuri_kombu()
    kombu: Any = importlib.import_module("kombu")  # its classes are mostly unannotated
    Connection, Exchange, Queue = kombu.Connection, kombu.Exchange, kombu.Queue
    url = endpoint.replace("http://", f"okuri://:{quote(key, safe='')}@", 1)
    exchange = Exchange(QUEUE, "direct")
    queue = Queue(QUEUE, exchange, routing_key=QUEUE)
    # kombu retries a connection forever unless told: once here, and a failure is the bench's.
    options = {"confirm_publish": True, "timeout_s": CALL_TIMEOUT_S, "max_retries": 1}
    with Connection(url, transport_options=options) as connection:
        _setup("kombu connect", lambda: connection.ensure_connection(max_retries=1))
        producer = _setup("kombu Producer", lambda: connection.Producer(serializer="json"))
        _setup("kombu declare", lambda: queue.declare(channel=producer.channel))

        def one_round(t: Timings) -> None:
            t.time(
                PUBLISH,
                lambda: producer.publish(
                    {"body": BODY}, exchange=exchange, routing_key=QUEUE, declare=[queue]
                ),
            )

        return _loop(one_round, budget, probe)
