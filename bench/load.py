"""The closed-loop load of `python -m bench sqs` (and the SQS half of `python -m bench native`),
over one endpoint or spread over several.

Why apart: the load is the same whichever client speaks it (the light client or aiobotocore,
both answering botocore-shaped dicts) and however many nodes serve it; only the figures it
keeps matter to the rest. P producers each send SendMessageBatch(10) and send again as soon as
the answer arrives; C consumers each loop ReceiveMessage(10, long poll) + DeleteMessageBatch.
With several clients (one per node), producer p and consumer c use client p and c modulo
their number, so the work is spread evenly and a message is often received from a node other
than the one it was sent to.

Producers pause while more than `backlog_max` messages are sent but not yet deleted, so the
queue cannot grow without bound when sends outrun receives; without that, the latency figures
would measure the length of the run rather than the server (Little's law: latency is backlog /
throughput).

The phases, the backlog cap and the figures are `ClosedLoop`'s, whatever the surface; `Driver`
speaks SQS, and bench.native_load's driver the native API, so both surfaces are measured
the same way.

Phases: warm-up (not counted), a measured window, then producers stop and consumers drain for
at most `drain_s`. The window is `seconds` long, or, with `messages` (SQS driver only), counted:
after the warm-up, producers pause until sends in flight have answered and the queue is empty
(at most `drain_s`), then the window opens and producers send exactly `messages` in total; it
closes when that many were deleted (at most `seconds`), so the rate is the count over the time
to move it through an empty queue. Window hooks (a profiler, a metrics scrape) run as the
window opens and closes. Every failed request is counted and the first one kept; none is fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from bench.ledger import Ledger
from bench.measure import (
    Window,
    error_line,
    machine_cpu,
    make_body,
    percent,
    rate,
    rounded,
    sent_ns,
)

BATCH_ENTRIES = 10
ERROR_PAUSE_S = 0.05  # after a failed request, so a broken server is not hammered in a loop
BACKLOG_POLL_S = 0.25
CANCEL_S = 10.0  # bound on waiting for cancelled request tasks to unwind
PRODUCER_STOP_SLACK_S = 5.0
CALLS = ("SendMessageBatch", "ReceiveMessage", "DeleteMessageBatch")  # timed per call and node

BACKLOG_DEFAULT_MIN = 200

C = TypeVar("C")


class SqsClient(Protocol):
    """The calls the load makes, as aiobotocore and bench.sqs_client.LightSqs spell them."""

    async def send_message_batch(self, **params: Any) -> Any: ...

    async def receive_message(self, **params: Any) -> Any: ...

    async def delete_message_batch(self, **params: Any) -> Any: ...


class WindowHook(Protocol):
    """Runs when the measured window opens and when it closes (closed at most once)."""

    async def opened(self) -> None: ...

    async def closed(self) -> None: ...


@dataclass(frozen=True)
class Workload:
    producers: int
    consumers: int
    seconds: float
    warmup_s: float
    drain_s: float
    wait_s: int
    backlog_max: int
    # 0: a standard queue; N: a FIFO queue whose messages spread over N message groups (each
    # with its own deduplication id), to compare with the standard queue under the same load.
    fifo_groups: int = 0
    # Each producer is a sequential client instead: send a batch, receive, delete what came,
    # in turn (an application's round trip, one call at a time); no consumers run apart.
    sequential: bool = False
    # 0: a window of `seconds`; N: a window of N messages sent and deleted, `seconds` at most.
    messages: int = 0

    def queue_request(self, name: str) -> dict[str, Any]:
        """CreateQueue's parameters for the queue this workload runs on."""
        if not self.fifo_groups:
            return {"QueueName": name}
        return {"QueueName": name + ".fifo", "Attributes": {"FifoQueue": "true"}}

    def entry(self, producer: int, n: int, k: int) -> dict[str, Any]:
        """The `k`th entry of a batch: message `n` of `producer`."""
        entry: dict[str, Any] = {"Id": str(k), "MessageBody": make_body(producer, n)}
        if self.fifo_groups:
            entry["MessageGroupId"] = f"g{(producer * 7919 + n) % self.fifo_groups}"
            entry["MessageDeduplicationId"] = f"{producer}-{n}"
        return entry


def default_backlog(producers: int, consumers: int, batch: int = BATCH_ENTRIES) -> int:
    """Two batches per producer or consumer, at least BACKLOG_DEFAULT_MIN: enough that no
    consumer waits for work and no producer for room."""
    return max(BACKLOG_DEFAULT_MIN, 2 * batch * max(producers, consumers))


class ClosedLoop(Generic[C]):
    """The phases, the backlog cap and the counts of a closed-loop load over `clients`; a
    surface's driver says how its producers and consumers speak (`produce`, `consume`).

    With a `ledger` (bench.ledger), a driver records every acknowledged send, delivery
    and delete by message id, so a run can say that nothing acknowledged was lost."""

    batch = BATCH_ENTRIES  # messages per send, receive and delete request

    def __init__(
        self,
        clients: Sequence[C],
        queue: str,
        workload: Workload,
        ledger: Ledger | None = None,
    ) -> None:
        if not clients:
            raise ValueError("the load needs at least one client")
        self.clients = list(clients)
        self.queue = queue
        self.workload = workload
        self.ledger = ledger
        self.window = Window()
        self.measuring = False
        self.producing = True
        self.sent = 0  # messages accepted, all phases
        self.deleted = 0  # messages deleted, all phases
        self.errors = 0
        self.first_error: str | None = None
        self._room = asyncio.Event()  # a delete made room under the backlog cap
        self._empty = asyncio.Event()  # producers stopped and everything sent was deleted
        # With a message count: what producers may still send (None: no count yet).
        self._quota: int | None = None
        self._sending = 0  # sends in flight
        self._granted = asyncio.Event()  # the quota grew
        self._quiet = asyncio.Event()  # paused: nothing in flight, nothing left in the queue
        self._counted = asyncio.Event()  # the window's count was deleted

    @property
    def backlog(self) -> int:
        return max(0, self.sent - self.deleted)

    def _client(self, worker: int) -> C:
        return self.clients[worker % len(self.clients)]

    def _error(self, what: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = error_line(what)

    async def _failed(self, action: str, err: Exception) -> None:
        """A request that failed: counted, then a short pause so a broken server is not
        hammered in a loop."""
        self._error(f"{action}: {err}")
        await asyncio.sleep(ERROR_PAUSE_S)

    async def _room_to_send(self) -> bool:
        """False (after waiting a little for a delete) while the backlog is at its cap."""
        limit = self.workload.backlog_max
        if limit and self.backlog >= limit:
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), BACKLOG_POLL_S)
            return False
        return True

    def _claim(self) -> int:
        """How many messages the next send may carry: a batch, or under a message count what is
        left of it (0: none now)."""
        if self._quota is None:
            return self.batch
        n = min(self.batch, self._quota)
        self._quota -= n
        return n

    def _unclaim(self, n: int) -> None:
        """Messages the window's count let through but that were not accepted (a failed send
        or entry): someone sends them again."""
        if self._quota is not None and self.measuring and n > 0:
            self._quota += n
            self._granted.set()

    async def _no_quota(self) -> None:
        """Wait a little for the quota to grow (or for the run to stop producing)."""
        self._granted.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._granted.wait(), BACKLOG_POLL_S)

    def _check_quiet(self) -> None:
        if self._quota == 0 and not self._sending and self.backlog == 0:
            self._quiet.set()

    async def _settle(self) -> None:
        """Before a counted window: stop sending, then wait (at most drain_s) until the sends
        in flight have answered and the consumers have emptied the queue."""
        self._quota = 0
        self._quiet.clear()
        self._check_quiet()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._quiet.wait(), self.workload.drain_s)

    async def _measure_count(self, messages: int, seconds_max: float) -> None:
        """Let producers send `messages` in all; return once that many were deleted in the
        window, or after `seconds_max`."""
        self._counted.clear()
        self._quota = messages
        self._granted.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._counted.wait(), seconds_max)

    def _was_sent(self, ok: int) -> None:
        self.sent += ok
        if self.measuring:
            self.window.send_requests += 1
            self.window.messages_sent += ok

    def _was_received(self, bodies: Sequence[str], now_ns: int) -> None:
        if self.measuring:
            self.window.receive_requests += 1
            self.window.messages_received += len(bodies)
            if not bodies:
                self.window.empty_receives += 1
            for body in bodies:
                stamp = sent_ns(body)
                if stamp is not None:
                    self.window.latency.add((now_ns - stamp) / 1e9)

    def _was_deleted(self, ok: int) -> None:
        self.deleted += ok
        self._room.set()
        if not self.producing and self.backlog == 0:
            self._empty.set()
        self._check_quiet()
        if self.measuring:
            self.window.delete_requests += 1
            self.window.messages_deleted += ok
            if self.workload.messages and self.window.messages_deleted >= self.workload.messages:
                self._counted.set()

    def _was_called(self, action: str, worker: int, seconds: float) -> None:
        if self.measuring:
            self.window.called(action, worker % len(self.clients), seconds)

    def _was_held(self, seconds: float) -> None:
        if self.measuring:
            self.window.holds += 1
            self.window.held_s += seconds

    def _group_bound(self) -> dict[str, Any] | None:
        """FIFO: the rate the in-flight rule allows. A group's messages go to one receive at a
        time, held until deleted, so at most min(groups, consumers) receives hold messages at
        once; each carries what a receive got, for as long as a receive holds it."""
        win, groups = self.window, self.workload.fifo_groups
        got = win.receive_requests - win.empty_receives
        if not groups or not got or not win.holds or win.held_s <= 0:
            return None
        holders = min(groups, self.workload.consumers)
        per_receive = win.messages_received / got
        hold_s = win.held_s / win.holds
        return {
            "holders_max": holders,
            "messages_per_receive": round(per_receive, 2),
            "hold_ms": round(hold_s * 1000, 2),
            "messages_per_s": rate(holders * per_receive, hold_s),
        }

    async def produce(self, producer: int) -> None:
        raise NotImplementedError

    async def consume(self, consumer: int) -> None:
        raise NotImplementedError

    async def cycle(self, worker: int) -> None:
        """A sequential client (`Workload.sequential`); surfaces without one refuse it."""
        raise NotImplementedError

    async def run(
        self, server_cpu_s: Callable[[], float | None], hooks: Sequence[WindowHook] = ()
    ) -> dict[str, Any]:
        w = self.workload
        if w.messages and w.warmup_s <= 0:
            self._quota = 0  # no warm-up: nothing is sent before the counted window
        if w.sequential:
            producers = [asyncio.ensure_future(self.cycle(p)) for p in range(w.producers)]
            consumers = []
        else:
            producers = [asyncio.ensure_future(self.produce(p)) for p in range(w.producers)]
            consumers = [asyncio.ensure_future(self.consume(c)) for c in range(w.consumers)]
        open_hooks: list[WindowHook] = []
        try:
            await asyncio.sleep(w.warmup_s)
            if w.messages:
                await self._settle()
            for hook in hooks:
                await hook.opened()
                open_hooks.append(hook)
            cpu0, client0, machine0 = server_cpu_s(), time.process_time(), machine_cpu()
            t0 = time.monotonic()
            self.measuring = True
            if w.messages:
                await self._measure_count(w.messages, w.seconds)
            else:
                await asyncio.sleep(w.seconds)
            self.measuring = False
            cpu1, client1, machine1 = server_cpu_s(), time.process_time(), machine_cpu()
            t1 = time.monotonic()
            while open_hooks:
                await open_hooks.pop(0).closed()
            self.producing = False
            self._granted.set()  # wake producers waiting for a count's quota: they stop now
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*producers), w.drain_s + w.wait_s + PRODUCER_STOP_SLACK_S
                )
            if w.sequential:  # the sequential clients have stopped: drain as consumers
                consumers = [asyncio.ensure_future(self.consume(c)) for c in range(w.producers)]
            # A send in flight when producing stopped may land after a delete emptied the
            # backlog: judge emptiness again now that every producer has returned.
            if self.backlog == 0:
                self._empty.set()
            else:
                self._empty.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._empty.wait(), w.drain_s)
            drained_s = time.monotonic() - t1
        finally:
            for hook in open_hooks:
                await hook.closed()
            await cancel([*producers, *consumers])
        window_s = t1 - t0
        server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        client_cpu = client1 - client0
        others = stolen = None
        if machine0 is not None and machine1 is not None:
            busy = machine1.busy_s - machine0.busy_s
            others = max(0.0, busy - client_cpu - (server_cpu or 0.0))
            stolen = machine1.stolen_s - machine0.stolen_s
        return self._figures(window_s, server_cpu, client_cpu, others, stolen, drained_s)

    def _figures(
        self,
        window_s: float,
        server_cpu_s: float | None,
        client_cpu_s: float,
        others_cpu_s: float | None,
        stolen_cpu_s: float | None,
        drained_s: float,
    ) -> dict[str, Any]:
        win = self.window
        moved = win.messages_deleted
        return {
            "window_s": round(window_s, 3),
            "messages_per_s": rate(moved, window_s),
            "messages_deleted": moved,
            "messages_sent": win.messages_sent,
            "sent_messages_per_s": rate(win.messages_sent, window_s),
            "send_requests_per_s": rate(win.send_requests, window_s),
            "receive_requests_per_s": rate(win.receive_requests, window_s),
            "delete_requests_per_s": rate(win.delete_requests, window_s),
            "empty_receives": win.empty_receives,
            "latency_ms": {
                "p50": rounded(win.latency.percentile_ms(0.50)),
                "p99": rounded(win.latency.percentile_ms(0.99)),
                "max": round(win.latency.max_s * 1000, 1),
                "samples": win.latency.samples,
            },
            "cpu": {
                "server_percent": percent(server_cpu_s, window_s),
                "client_percent": percent(client_cpu_s, window_s) or 0.0,
                "other_processes_percent": percent(others_cpu_s, window_s),
                "stolen_percent": percent(stolen_cpu_s, window_s),
                "server_messages_per_cpu_s": (
                    None
                    if not server_cpu_s or server_cpu_s <= 0
                    else round(moved / server_cpu_s, 1)
                ),
            },
            "call_p50_ms": {a: win.call_p50_ms(a) for a in CALLS},
            "call_p50_ms_by_node": {
                a: [win.call_p50_ms(a, node) for node in range(len(self.clients))] for a in CALLS
            },
            "fifo_group_bound": self._group_bound(),
            "errors": self.errors,
            "first_error": self.first_error,
            "drain": {"seconds": round(drained_s, 2), "left_in_queue": self.backlog},
        }


class Driver(ClosedLoop[SqsClient]):
    """The SQS surface's closed loop: SendMessageBatch(10), ReceiveMessage(10) with a long
    poll, DeleteMessageBatch of what was received."""

    @property
    def queue_url(self) -> str:
        return self.queue

    def _succeeded(self, action: str, reply: Any) -> list[Any]:
        """The entries of a batch `reply` that succeeded; the first failed entry is an error."""
        failed = reply.get("Failed") or ()
        if failed:
            self._error(f"{action} entry failed: {failed[0]}")
        return list(reply.get("Successful") or ())

    async def produce(self, producer: int) -> None:
        client = self._client(producer)
        seq = 0
        while self.producing:
            if not await self._room_to_send():
                continue
            n = self._claim()
            if not n:
                await self._no_quota()
                continue
            await self._send(client, producer, seq, n)
            seq += n

    async def consume(self, consumer: int) -> None:
        client = self._client(consumer)
        while True:
            await self._receive_and_delete(client, consumer)

    async def cycle(self, worker: int) -> None:
        """Send a batch, then receive once and delete what came, as one application doing one
        call at a time would, until producing stops (consumers then drain what is left)."""
        client = self._client(worker)
        seq = 0
        while self.producing:
            n = self._claim()  # none while a counted window has not opened or is spent
            if n:
                await self._send(client, worker, seq, n)
                seq += n
            await self._receive_and_delete(client, worker)

    async def _send(self, client: SqsClient, producer: int, seq: int, n: int) -> None:
        """Send `n` messages in one batch; what was not accepted goes back to the quota."""
        entries = [self.workload.entry(producer, seq + k, k) for k in range(n)]
        self._sending += 1
        try:
            ok = await self._send_batch(client, producer, entries)
        finally:
            self._sending -= 1
        self._unclaim(n - len(ok or ()))
        if ok is not None:
            if self.ledger is not None:
                self.ledger.acknowledged((e["MessageId"] for e in ok), time.monotonic())
            self._was_sent(len(ok))
        self._check_quiet()

    async def _send_batch(
        self, client: SqsClient, producer: int, entries: list[dict[str, Any]]
    ) -> list[Any] | None:
        """The entries accepted; None when the request failed (counted, never fatal)."""
        start_s = time.monotonic()
        try:
            reply = await client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as err:  # any failure is counted and reported, never fatal
            await self._failed("SendMessageBatch", err)
            return None
        self._was_called("SendMessageBatch", producer, time.monotonic() - start_s)
        return self._succeeded("SendMessageBatch", reply)

    async def _receive_and_delete(self, client: SqsClient, consumer: int) -> None:
        sent_s = time.monotonic()
        try:
            reply = await client.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=self.batch,
                WaitTimeSeconds=self.workload.wait_s,
            )
        except Exception as err:
            await self._failed("ReceiveMessage", err)
            return
        messages = reply.get("Messages") or []
        received_s = time.monotonic()
        if messages:
            self._was_called("ReceiveMessage", consumer, received_s - sent_s)
        self._was_received([m.get("Body", "") for m in messages], time.monotonic_ns())
        if not messages:
            return
        if self.ledger is not None:
            self.ledger.delivered(_facts(messages), sent_s, 0)
        entries = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
        ]
        deleting_s = time.monotonic()
        try:
            reply = await client.delete_message_batch(QueueUrl=self.queue_url, Entries=entries)
        except Exception as err:
            await self._failed("DeleteMessageBatch", err)
            return
        self._was_called("DeleteMessageBatch", consumer, time.monotonic() - deleting_s)
        ok = self._succeeded("DeleteMessageBatch", reply)
        if self.ledger is not None:
            done = [messages[int(e["Id"])] for e in ok]
            self.ledger.deleted(_facts(done), time.monotonic(), 0)
        self._was_held(time.monotonic() - received_s)
        self._was_deleted(len(ok))


def _facts(messages: Sequence[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(id, id, receipt handle) of SQS messages, as the ledger takes them: a message is known
    by its MessageId."""
    return [(m["MessageId"], m["MessageId"], m["ReceiptHandle"]) for m in messages]


async def cancel(tasks: Sequence[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), CANCEL_S)
