"""`okuri bench sqs`: end-to-end SQS throughput and latency of one `okuri serve`, beside moto's.

Why: the issue asks for 5,000 messages/s end to end from one server process with the local
store, and a number is only meaningful next to a peer measured the same way in the same run.
So this starts a real `okuri serve` (free 127.0.0.1 ports, a fresh temporary data directory),
drives it through the public SQS API with aiobotocore exactly as an application would, then
does the same against moto's SQS server (`python -m moto.server`), and prints both.

The load is closed-loop: P producers each send SendMessageBatch(10) and send again as soon as
the answer arrives; C consumers each loop ReceiveMessage(10, long poll) + DeleteMessageBatch.
Producers also pause while more than --backlog-max messages are sent but not yet deleted, so
the queue cannot grow without bound when sends outrun receives; without that, the latency
figures would measure the length of the run rather than the server (Little's law: latency is
backlog / throughput). The default cap is two batches per producer or consumer, at least 200:
enough that no consumer waits for work and no producer for room. Bodies are 100 bytes and
begin with the send time (this process's monotonic clock, in ns), so send-to-receive latency is
read straight from each received body.

Phases: warm-up (not counted), a measured window of --seconds, then producers stop and
consumers drain for at most --drain-seconds; the server is then stopped by its pid (SIGTERM,
SIGKILL after a timeout). Everything is bounded: flags by range, waits by timeouts, latency
samples by a fixed-size histogram.

Caveat, printed with the figures: the load generator runs on the same machine and competes for
the same cores, and botocore's per-request client cost is of the same order as the server's,
so the end-to-end rate is a lower bound for a dedicated server. The CPU figures (server CPU
seconds per message, from /proc) say what one server core could carry on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH_ENTRIES = 10
BODY_BYTES = 100
STAMP_DIGITS = 20  # time.monotonic_ns() as zero-padded decimal at the start of every body

START_S = 30.0  # a cold interpreter importing aiobotocore or moto can take seconds
STOP_S = 15.0  # SIGTERM, then SIGKILL after this long
READY_POLL_S = 0.05
BIND_ATTEMPTS = 3  # a probed free port can be taken before the server binds it
SETUP_S = 20.0  # create and delete the queue
ERROR_PAUSE_S = 0.05  # after a failed request, so a broken server is not hammered in a loop
BACKLOG_POLL_S = 0.25
CANCEL_S = 10.0  # bound on waiting for cancelled request tasks to unwind
LOG_TAIL_CHARS = 3000

# okuri's built-in development credentials (okuri.server.settings; the bench sits below the
# server in the layering, so it cannot import them).
DEV_ACCESS_KEY_ID = "okuri"
DEV_SECRET_ACCESS_KEY = "okuri-local-secret"
REGION = "us-east-1"

# Flag bounds: a limit on everything.
PRODUCERS_MAX = 256
CONSUMERS_MAX = 256
SECONDS_MAX = 3600.0
WARMUP_S_MAX = 600.0
DRAIN_S_MAX = 120.0
WAIT_S_MAX = 20
LINGER_MS_MAX = 10_000
BACKLOG_MAX = 1_000_000
BACKLOG_DEFAULT_MIN = 200

HISTOGRAM_GROWTH = 1.01  # latency buckets 1% wide: under 2,500 buckets span 1 us to an hour
_LOG_GROWTH = math.log(HISTOGRAM_GROWTH)


class BenchError(Exception):
    """The benchmark cannot run (a server did not start, a queue could not be made)."""


# --- what is measured -------------------------------------------------------------------------


class LatencyHistogram:
    """Latencies in log-spaced buckets: memory bounded however many messages a run moves."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self.samples = 0
        self.max_s = 0.0

    def add(self, seconds: float) -> None:
        micros = max(seconds * 1e6, 1.0)
        bucket = int(math.log(micros) / _LOG_GROWTH)
        self._counts[bucket] = self._counts.get(bucket, 0) + 1
        self.samples += 1
        self.max_s = max(self.max_s, seconds)

    def percentile_ms(self, q: float) -> float | None:
        """The q-quantile (0 < q <= 1), to within half a bucket (0.5%); None with no samples."""
        if not self.samples:
            return None
        rank = max(1, math.ceil(q * self.samples))
        seen = 0
        for bucket in sorted(self._counts):
            seen += self._counts[bucket]
            if seen >= rank:
                return float(HISTOGRAM_GROWTH ** (bucket + 0.5) / 1000)
        return self.max_s * 1000


@dataclass
class Window:
    """Counts of what completed inside the measured window."""

    send_requests: int = 0
    messages_sent: int = 0
    receive_requests: int = 0
    empty_receives: int = 0
    messages_received: int = 0
    delete_requests: int = 0
    messages_deleted: int = 0
    latency: LatencyHistogram = field(default_factory=LatencyHistogram)


@dataclass(frozen=True)
class Workload:
    producers: int
    consumers: int
    seconds: float
    warmup_s: float
    drain_s: float
    wait_s: int
    backlog_max: int


@dataclass(frozen=True)
class Target:
    """An SQS endpoint to drive; `cpu_s` reads the server's CPU seconds so far (None: unknown)."""

    name: str
    endpoint: str
    access_key_id: str
    secret_access_key: str
    region: str = REGION
    cpu_s: Callable[[], float | None] = lambda: None


def default_backlog(producers: int, consumers: int) -> int:
    return max(BACKLOG_DEFAULT_MIN, 2 * BATCH_ENTRIES * max(producers, consumers))


def make_body(producer: int, seq: int) -> str:
    head = f"{time.monotonic_ns():0{STAMP_DIGITS}d} p{producer:03d} n{seq:010d} "
    return head + "x" * max(0, BODY_BYTES - len(head))


def sent_ns(body: str) -> int | None:
    try:
        return int(body[:STAMP_DIGITS])
    except ValueError:
        return None


def process_cpu_s(pid: int) -> float | None:
    """User plus system CPU seconds of a process and all its threads (Linux /proc; else None)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def machine_busy_s() -> float | None:
    """CPU seconds every process on this machine has used since boot (Linux /proc; else None).

    The machine may be shared: busy time that is neither the server's nor the load generator's
    is someone else's, and it is printed so a slow run can be told from a slow server.
    """
    try:
        with open("/proc/stat", "rb") as f:
            first = f.readline().split()
    except OSError:
        return None
    if not first or first[0] != b"cpu":
        return None
    ticks = [int(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / os.sysconf("SC_CLK_TCK")


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else 0.0


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


# --- the load ---------------------------------------------------------------------------------


class Driver:
    """Runs the closed-loop workload against one queue and keeps the counts."""

    def __init__(self, client: Any, queue_url: str, workload: Workload) -> None:
        self.client = client
        self.queue_url = queue_url
        self.workload = workload
        self.window = Window()
        self.measuring = False
        self.producing = True
        self.sent = 0  # messages accepted, all phases
        self.deleted = 0  # messages deleted, all phases
        self.errors = 0
        self.first_error: str | None = None
        self._room = asyncio.Event()  # a delete made room under the backlog cap
        self._empty = asyncio.Event()  # producers stopped and everything sent was deleted

    @property
    def backlog(self) -> int:
        return max(0, self.sent - self.deleted)

    def _error(self, what: str) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = " ".join(what.split())[:300]

    async def produce(self, producer: int) -> None:
        seq = 0
        limit = self.workload.backlog_max
        while self.producing:
            if limit and self.backlog >= limit:
                self._room.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._room.wait(), BACKLOG_POLL_S)
                continue
            entries = [
                {"Id": str(k), "MessageBody": make_body(producer, seq + k)}
                for k in range(BATCH_ENTRIES)
            ]
            seq += BATCH_ENTRIES
            try:
                reply = await self.client.send_message_batch(
                    QueueUrl=self.queue_url, Entries=entries
                )
            except Exception as err:  # any failure is counted and reported, never fatal
                self._error(f"SendMessageBatch: {err}")
                await asyncio.sleep(ERROR_PAUSE_S)
                continue
            ok = len(reply.get("Successful") or ())
            failed = reply.get("Failed") or ()
            if failed:
                self._error(f"SendMessageBatch entry failed: {failed[0]}")
            self.sent += ok
            if self.measuring:
                self.window.send_requests += 1
                self.window.messages_sent += ok

    async def consume(self) -> None:
        while True:
            try:
                reply = await self.client.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=BATCH_ENTRIES,
                    WaitTimeSeconds=self.workload.wait_s,
                )
            except Exception as err:
                self._error(f"ReceiveMessage: {err}")
                await asyncio.sleep(ERROR_PAUSE_S)
                continue
            now_ns = time.monotonic_ns()
            messages = reply.get("Messages") or []
            if self.measuring:
                self.window.receive_requests += 1
                self.window.messages_received += len(messages)
                if not messages:
                    self.window.empty_receives += 1
                for m in messages:
                    stamp = sent_ns(m.get("Body", ""))
                    if stamp is not None:
                        self.window.latency.add((now_ns - stamp) / 1e9)
            if not messages:
                continue
            entries = [
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ]
            try:
                reply = await self.client.delete_message_batch(
                    QueueUrl=self.queue_url, Entries=entries
                )
            except Exception as err:
                self._error(f"DeleteMessageBatch: {err}")
                await asyncio.sleep(ERROR_PAUSE_S)
                continue
            ok = len(reply.get("Successful") or ())
            failed = reply.get("Failed") or ()
            if failed:
                self._error(f"DeleteMessageBatch entry failed: {failed[0]}")
            self.deleted += ok
            self._room.set()
            if not self.producing and self.backlog == 0:
                self._empty.set()
            if self.measuring:
                self.window.delete_requests += 1
                self.window.messages_deleted += ok

    async def run(
        self, server_cpu_s: Callable[[], float | None], profiler: Profiler | None = None
    ) -> dict[str, Any]:
        w = self.workload
        producers = [asyncio.ensure_future(self.produce(p)) for p in range(w.producers)]
        consumers = [asyncio.ensure_future(self.consume()) for _ in range(w.consumers)]
        try:
            await asyncio.sleep(w.warmup_s)
            if profiler is not None:
                profiler.start()
            cpu0, client0, busy0 = server_cpu_s(), time.process_time(), machine_busy_s()
            t0 = time.monotonic()
            self.measuring = True
            await asyncio.sleep(w.seconds)
            self.measuring = False
            cpu1, client1, busy1 = server_cpu_s(), time.process_time(), machine_busy_s()
            t1 = time.monotonic()
            if profiler is not None:
                await profiler.stop()
            self.producing = False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*producers), w.drain_s + w.wait_s + 5)
            if self.backlog == 0:
                self._empty.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._empty.wait(), w.drain_s)
            drained_s = time.monotonic() - t1
        finally:
            if profiler is not None:
                await profiler.stop()
            await _cancel([*producers, *consumers])
        window_s = t1 - t0
        server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        client_cpu = client1 - client0
        others = None
        if busy0 is not None and busy1 is not None:
            others = max(0.0, busy1 - busy0 - client_cpu - (server_cpu or 0.0))
        return self._figures(window_s, server_cpu, client_cpu, others, drained_s)

    def _figures(
        self,
        window_s: float,
        server_cpu_s: float | None,
        client_cpu_s: float,
        others_cpu_s: float | None,
        drained_s: float,
    ) -> dict[str, Any]:
        win = self.window
        moved = win.messages_deleted
        return {
            "window_s": round(window_s, 3),
            "messages_per_s": _rate(moved, window_s),
            "messages_deleted": moved,
            "messages_sent": win.messages_sent,
            "sent_messages_per_s": _rate(win.messages_sent, window_s),
            "send_requests_per_s": _rate(win.send_requests, window_s),
            "receive_requests_per_s": _rate(win.receive_requests, window_s),
            "delete_requests_per_s": _rate(win.delete_requests, window_s),
            "empty_receives": win.empty_receives,
            "latency_ms": {
                "p50": _round(win.latency.percentile_ms(0.50)),
                "p99": _round(win.latency.percentile_ms(0.99)),
                "max": round(win.latency.max_s * 1000, 1),
                "samples": win.latency.samples,
            },
            "cpu": {
                "server_percent": _round(
                    None if server_cpu_s is None else 100 * server_cpu_s / window_s
                ),
                "client_percent": _round(100 * client_cpu_s / window_s if window_s else 0.0),
                "other_processes_percent": _round(
                    None if others_cpu_s is None or not window_s else 100 * others_cpu_s / window_s
                ),
                "server_messages_per_cpu_s": (
                    None
                    if not server_cpu_s or server_cpu_s <= 0
                    else round(moved / server_cpu_s, 1)
                ),
            },
            "errors": self.errors,
            "first_error": self.first_error,
            "drain": {"seconds": round(drained_s, 2), "left_in_queue": self.backlog},
        }


async def _cancel(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), CANCEL_S)


async def drive(
    target: Target, workload: Workload, queue_name: str, profiler: Profiler | None = None
) -> dict[str, Any]:
    """Create a queue on `target`, run the workload against it, delete the queue."""
    from aiobotocore.session import get_session
    from botocore.config import Config

    config = Config(
        max_pool_connections=workload.producers + workload.consumers + 4,
        retries={"max_attempts": 1, "mode": "standard"},  # a failure is counted, not hidden
        parameter_validation=False,  # client CPU spent here is CPU the server cannot use
        connect_timeout=5,
        read_timeout=workload.wait_s + 30,
    )
    session = get_session()
    async with session.create_client(
        "sqs",
        region_name=target.region,
        endpoint_url=target.endpoint,
        aws_access_key_id=target.access_key_id,
        aws_secret_access_key=target.secret_access_key,
        config=config,
    ) as client:
        try:
            created = await asyncio.wait_for(client.create_queue(QueueName=queue_name), SETUP_S)
        except Exception as err:
            raise BenchError(f"{target.name}: cannot create queue {queue_name!r}: {err}") from err
        queue_url = created["QueueUrl"]
        figures = await Driver(client, queue_url, workload).run(target.cpu_s, profiler)
        with contextlib.suppress(Exception):  # best effort: a fresh server is discarded anyway
            await asyncio.wait_for(client.delete_queue(QueueUrl=queue_url), SETUP_S)
    return {"target": target.name, "endpoint": target.endpoint, **figures}


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def run_async(main: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(main)


# --- the servers ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str, status: int = 200) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return bool(reply.status == status)
    except (urllib.error.URLError, OSError):
        return False


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


@dataclass
class Process:
    """A server this benchmark started: stopped by its own pid only."""

    proc: subprocess.Popen[bytes]
    log_path: Path

    def wait_ready(self, url: str) -> bool:
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and self.proc.poll() is None:
            if _answers(url):
                return True
            time.sleep(READY_POLL_S)
        return False

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after STOP_S; the exit code (None if it would not die)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout=STOP_S)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                try:
                    self.proc.wait(timeout=STOP_S)
                except subprocess.TimeoutExpired:
                    return None
        return self.proc.returncode


def _spawn(argv: list[str], env: dict[str, str], log_path: Path) -> Process:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    return Process(proc, log_path)


def _start(
    what: str, log_path: Path, launch: Callable[[], tuple[Process, str, str]]
) -> tuple[Process, str]:
    """Start a server on fresh ports until one answers ready; (process, endpoint)."""
    for _ in range(BIND_ATTEMPTS):
        process, endpoint, ready_url = launch()
        if process.wait_ready(ready_url):
            return process, endpoint
        process.stop()
    raise BenchError(f"{what} did not become ready within {START_S:g} s:\n{_tail(log_path)}")


@contextlib.contextmanager
def okuri_server(linger_ms: int | None, workdir: Path, results: dict[str, Any]) -> Iterator[Target]:
    """`okuri serve` on free 127.0.0.1 ports with a fresh data directory, stopped by pid."""
    log_path = workdir / "okuri.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OKURI_")}

    def launch() -> tuple[Process, str, str]:
        port, health = free_port(), free_port()
        data_dir = tempfile.mkdtemp(prefix="data-", dir=workdir)
        server_env = {
            **env,
            "OKURI_LISTEN": f"127.0.0.1:{port}",
            "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health}",
            "OKURI_DATA_DIR": data_dir,
            "OKURI_ACCESS_KEY_ID": DEV_ACCESS_KEY_ID,
            "OKURI_SECRET_ACCESS_KEY": DEV_SECRET_ACCESS_KEY,
        }
        if linger_ms is not None:
            server_env["OKURI_LINGER_MS"] = str(linger_ms)
        argv = [sys.executable, "-m", "okuri.server.cli", "serve"]
        process = _spawn(argv, server_env, log_path)
        return process, f"http://127.0.0.1:{port}", f"http://127.0.0.1:{health}/readyz"

    process, endpoint = _start("okuri serve", log_path, launch)
    pid = process.proc.pid
    results["pid"] = pid
    try:
        yield Target(
            "okuri",
            endpoint,
            DEV_ACCESS_KEY_ID,
            DEV_SECRET_ACCESS_KEY,
            cpu_s=lambda: process_cpu_s(pid),
        )
    finally:
        results["exit_code"] = process.stop()
        if results["exit_code"] not in (0, None):
            results["log_tail"] = _tail(log_path)


@contextlib.contextmanager
def moto_server(workdir: Path, results: dict[str, Any]) -> Iterator[Target]:
    """moto's server mode (it serves SQS among everything else) on a free port, stopped by pid."""
    log_path = workdir / "moto.log"
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": REGION,
    }

    def launch() -> tuple[Process, str, str]:
        port = free_port()
        argv = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
        url = f"http://127.0.0.1:{port}"
        return _spawn(argv, env, log_path), url, url + "/moto-api/"

    process, endpoint = _start("moto server", log_path, launch)
    pid = process.proc.pid
    results["pid"] = pid
    try:
        yield Target("moto", endpoint, "bench", "bench", cpu_s=lambda: process_cpu_s(pid))
    finally:
        results["exit_code"] = process.stop()


def find_py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")  # installed into this venv
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Profiler:
    """py-spy sampling the server over the measured window only, collapsed stacks to `out`.

    Only the thread holding the GIL is sampled (`--gil`), so the stacks say where the server's
    CPU goes; time blocked in fsync or epoll is not in them. It starts when the window opens
    and is stopped with SIGINT when it closes, which makes py-spy write what it has.
    """

    def __init__(self, pid: int, out: str, log_path: Path, exe: str | None = None) -> None:
        self.pid = pid
        self.out = out
        self.log_path = log_path
        self.exe = exe
        self._spy: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        exe = self.exe or find_py_spy()
        if exe is None:
            raise BenchError("--profile needs py-spy (pip install py-spy)")
        argv = [exe, "record", "--pid", str(self.pid), "--rate", "250", "--format", "raw",
                "--gil", "--nonblocking", "--output", self.out]  # fmt: skip
        try:
            self._spy = _spawn(argv, dict(os.environ), self.log_path).proc
        except OSError as err:
            raise BenchError(f"--profile: cannot run py-spy: {err}") from err

    async def stop(self) -> None:
        spy, self._spy = self._spy, None
        if spy is None or spy.poll() is not None:
            return
        os.kill(spy.pid, signal.SIGINT)  # this pid only: py-spy writes its output and exits
        try:
            await asyncio.to_thread(spy.wait, STOP_S)
        except subprocess.TimeoutExpired:
            os.kill(spy.pid, signal.SIGKILL)
            await asyncio.to_thread(spy.wait, STOP_S)

    def check(self) -> None:
        if not os.path.exists(self.out):
            raise BenchError(f"py-spy wrote no profile:\n{_tail(self.log_path)}")


# --- the run ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Options:
    workload: Workload
    linger_ms: int | None
    peer: bool
    endpoint: str | None = None
    access_key_id: str = DEV_ACCESS_KEY_ID
    secret_access_key: str = DEV_SECRET_ACCESS_KEY
    region: str = REGION
    profile: str | None = None
    server_pid: int | None = None  # with `endpoint`: the server's pid on this machine, if known


def _queue_name(target: str) -> str:
    return f"okuri-bench-{target}-{os.getpid()}"


def _run_profiled(target: Target, pid: int | None, opts: Options, workdir: Path) -> dict[str, Any]:
    profiler = None
    if opts.profile is not None and pid is not None:
        profiler = Profiler(pid, opts.profile, workdir / "py-spy.log")
    figures = run_async(drive(target, opts.workload, _queue_name(target.name), profiler))
    if profiler is not None:
        profiler.check()
        figures["profile"] = opts.profile
    return figures


def run_okuri(opts: Options, workdir: Path) -> dict[str, Any]:
    if opts.endpoint is not None:
        pid = opts.server_pid
        target = Target(
            "okuri",
            opts.endpoint,
            opts.access_key_id,
            opts.secret_access_key,
            opts.region,
            cpu_s=lambda: None if pid is None else process_cpu_s(pid),
        )
        figures = _run_profiled(target, pid, opts, workdir)
        figures["server"] = {"pid": pid}
        return figures
    server: dict[str, Any] = {}
    with okuri_server(opts.linger_ms, workdir, server) as target:
        figures = _run_profiled(target, int(server["pid"]), opts, workdir)
    figures["server"] = server
    return figures


def run_moto(opts: Options, workdir: Path) -> dict[str, Any]:
    server: dict[str, Any] = {}
    with moto_server(workdir, server) as target:
        figures = run_async(drive(target, opts.workload, _queue_name("moto")))
    figures["server"] = server
    return figures


def measure(opts: Options) -> dict[str, Any]:
    w = opts.workload
    with tempfile.TemporaryDirectory(prefix="okuri-bench-sqs-") as tmp:
        workdir = Path(tmp)
        okuri = run_okuri(opts, workdir)
        moto = run_moto(opts, workdir) if opts.peer else None
    ratio = None
    if moto is not None and moto["messages_per_s"] > 0:
        ratio = round(okuri["messages_per_s"] / moto["messages_per_s"], 2)
    return {
        "config": {
            "producers": w.producers,
            "consumers": w.consumers,
            "seconds": w.seconds,
            "warmup_s": w.warmup_s,
            "drain_s": w.drain_s,
            "wait_s": w.wait_s,
            "backlog_max": w.backlog_max,
            "batch_entries": BATCH_ENTRIES,
            "body_bytes": BODY_BYTES,
            "linger_ms": opts.linger_ms,
            "store": "external endpoint" if opts.endpoint else "local directory (fresh tmp)",
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_generator": "this process (asyncio + aiobotocore), on the same CPUs as the "
            "server under test",
        },
        "okuri": okuri,
        "moto": moto,
        "ratio_okuri_to_moto": ratio,
    }


# --- output -----------------------------------------------------------------------------------

_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Any], str], ...] = (
    ("messages/s end to end", lambda r: r["messages_per_s"], "{:.0f}"),
    ("messages/s sent", lambda r: r["sent_messages_per_s"], "{:.0f}"),
    ("SendMessageBatch req/s", lambda r: r["send_requests_per_s"], "{:.0f}"),
    ("ReceiveMessage req/s", lambda r: r["receive_requests_per_s"], "{:.0f}"),
    ("DeleteMessageBatch req/s", lambda r: r["delete_requests_per_s"], "{:.0f}"),
    ("empty receives", lambda r: r["empty_receives"], "{:d}"),
    ("send->receive p50 ms", lambda r: r["latency_ms"]["p50"], "{:.1f}"),
    ("send->receive p99 ms", lambda r: r["latency_ms"]["p99"], "{:.1f}"),
    ("server CPU %", lambda r: r["cpu"]["server_percent"], "{:.0f}"),
    ("load generator CPU %", lambda r: r["cpu"]["client_percent"], "{:.0f}"),
    ("other processes' CPU %", lambda r: r["cpu"]["other_processes_percent"], "{:.0f}"),
    ("messages per server CPU-s", lambda r: r["cpu"]["server_messages_per_cpu_s"], "{:.0f}"),
    ("errors", lambda r: r["errors"], "{:d}"),
    ("left in queue after drain", lambda r: r["drain"]["left_in_queue"], "{:d}"),
)


def _cell(fmt: str, value: Any) -> str:
    return "-" if value is None else fmt.format(value)


def render(result: dict[str, Any]) -> str:
    c = result["config"]
    linger = "server default" if c["linger_ms"] is None else f"{c['linger_ms']} ms"
    okuri, moto = result["okuri"], result["moto"]
    lines = [
        f"okuri bench sqs: {c['producers']} producers x SendMessageBatch({c['batch_entries']}), "
        f"{c['consumers']} consumers x ReceiveMessage({c['batch_entries']}, wait "
        f"{c['wait_s']} s) + DeleteMessageBatch; {c['body_bytes']}-byte bodies",
        f"warm-up {c['warmup_s']:g} s, window {c['seconds']:g} s, drain <= {c['drain_s']:g} s; "
        f"backlog cap {c['backlog_max'] or 'none'}; okuri linger {linger}; store: {c['store']}",
        "",
        "".ljust(28) + "okuri".rjust(10) + ("moto".rjust(10) if moto else ""),
    ]
    for label, get, fmt in _ROWS:
        line = label.ljust(28) + _cell(fmt, get(okuri)).rjust(10)
        if moto:
            line += _cell(fmt, get(moto)).rjust(10)
        lines.append(line)
    lines.append("")
    if result["ratio_okuri_to_moto"] is not None:
        lines.append(f"okuri/moto, messages/s end to end: {result['ratio_okuri_to_moto']:.2f}x")
    for r in (okuri, moto):
        if r and r["first_error"]:
            lines.append(f"{r['target']} first error: {r['first_error']}")
        server = (r or {}).get("server") or {}
        if server.get("exit_code") not in (0, None) and r is not None:
            lines.append(f"{r['target']} server exited {server['exit_code']}")
    lines.append(
        f"note: the load generator (one Python process) and the server under test share this "
        f"machine's {result['machine']['cpus']} CPUs; end-to-end rates are lower bounds for a "
        "dedicated server. 'messages per server CPU-s' is what one server core could carry."
    )
    return "\n".join(lines)


# --- the command ------------------------------------------------------------------------------


def _bounded(kind: Callable[[str], Any], low: float, high: float) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="okuri bench sqs",
        description="Closed-loop SQS throughput and latency of `okuri serve`, beside moto's.",
    )
    add = p.add_argument
    add("--producers", type=_bounded(int, 1, PRODUCERS_MAX), default=8)
    add("--consumers", type=_bounded(int, 1, CONSUMERS_MAX), default=8)
    add("--seconds", type=_bounded(float, 0.5, SECONDS_MAX), default=20.0, help="measured window")
    add("--warmup-seconds", dest="warmup_s", type=_bounded(float, 0, WARMUP_S_MAX), default=3.0)
    add(
        "--drain-seconds",
        dest="drain_s",
        type=_bounded(float, 0, DRAIN_S_MAX),
        default=10.0,
        help="at most this long to empty the queue after the window",
    )
    add(
        "--wait-seconds",
        dest="wait_s",
        type=_bounded(int, 0, WAIT_S_MAX),
        default=1,
        help="ReceiveMessage WaitTimeSeconds",
    )
    add(
        "--backlog-max",
        type=_bounded(int, 0, BACKLOG_MAX),
        default=None,
        help="producers pause while this many messages are sent but not deleted (0: never; "
        f"default 2 batches per producer or consumer, at least {BACKLOG_DEFAULT_MIN})",
    )
    add(
        "--linger-ms",
        type=_bounded(int, 0, LINGER_MS_MAX),
        default=None,
        help="OKURI_LINGER_MS for the server started here (default: the server's own)",
    )
    add(
        "--peer",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also measure moto's SQS server with the same workload",
    )
    add("--endpoint", default=None, help="drive this okuri endpoint instead of starting one")
    add("--access-key-id", default=None, help="with --endpoint (env OKURI_ACCESS_KEY_ID)")
    add("--secret-access-key", default=None, help="with --endpoint (env OKURI_SECRET_ACCESS_KEY)")
    add("--region", default=REGION)
    add(
        "--server-pid",
        type=_bounded(int, 1, 2**22),
        default=None,
        help="with --endpoint: that server's pid on this machine, for CPU figures and --profile",
    )
    add(
        "--profile",
        default=None,
        metavar="FILE",
        help="py-spy the started server over the window, collapsed stacks to FILE",
    )
    add("--json", action="store_true", help="print one JSON object")
    return p


def options(args: argparse.Namespace) -> Options:
    return Options(
        workload=Workload(
            producers=args.producers,
            consumers=args.consumers,
            seconds=args.seconds,
            warmup_s=args.warmup_s,
            drain_s=args.drain_s,
            wait_s=args.wait_s,
            backlog_max=(
                default_backlog(args.producers, args.consumers)
                if args.backlog_max is None
                else args.backlog_max
            ),
        ),
        linger_ms=args.linger_ms,
        peer=args.peer,
        endpoint=args.endpoint.rstrip("/") if args.endpoint else None,
        access_key_id=args.access_key_id
        or os.environ.get("OKURI_ACCESS_KEY_ID")
        or DEV_ACCESS_KEY_ID,
        secret_access_key=args.secret_access_key
        or os.environ.get("OKURI_SECRET_ACCESS_KEY")
        or DEV_SECRET_ACCESS_KEY,
        region=args.region,
        profile=args.profile,
        server_pid=args.server_pid,
    )


def cli_main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.endpoint is None and args.server_pid is not None:
        parser.error("--server-pid goes with --endpoint")
    if args.endpoint is not None and args.linger_ms is not None:
        parser.error("--linger-ms applies only to a server this command starts")
    if args.endpoint is not None and args.profile is not None and args.server_pid is None:
        parser.error("--profile with --endpoint needs --server-pid")
    try:
        result = measure(options(args))
    except BenchError as err:
        print(f"okuri bench sqs: error: {err}", file=sys.stderr)
        return 1
    print(json.dumps(result) if args.json else render(result))
    return 0
