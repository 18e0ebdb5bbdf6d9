"""`python -m bench floor`: its latency proxy, its arithmetic, its hello-world server, one real run.

The proxy tests sleep for real: added latency is the point. The hello-world server runs
in-process on a thread of its own, so botocore, okuri.client and kombu (blocking clients) talk
to it over real HTTP. The end-to-end run starts `okuri serve` and checks shapes only, never how
close to the floor okuri is: the machine is shared.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from bench import floor_calls, floor_hello, floor_report, latency_proxy, servers
from bench.floor_calls import Budget

ROOT = Path(__file__).resolve().parents[2]
LATENCY_S = 0.05
REQUESTS_ON_ONE_CONNECTION = 4
IO_TIMEOUT_S = 10.0


# --- the latency proxy -------------------------------------------------------------------------


@pytest.fixture
async def proxied() -> AsyncIterator[tuple[int, float]]:
    """The hello-world app behind a latency proxy adding LATENCY_S: (the proxy's port, latency)."""
    runner = web.AppRunner(floor_hello.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, servers.LOOPBACK, 0)
    await site.start()
    app_port = runner.addresses[0][1]
    proxy = await latency_proxy.start(servers.LOOPBACK, app_port, LATENCY_S)
    try:
        yield proxy.sockets[0].getsockname()[1], LATENCY_S
    finally:
        proxy.close()
        await runner.cleanup()


async def _answer(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """One HTTP/1.1 answer off the stream: its status line and its body (Content-Length)."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IO_TIMEOUT_S)
    status, *lines = head.decode().split("\r\n")
    length = next(int(v) for k, _, v in (x.partition(": ") for x in lines) if k.lower() ==
                  "content-length")  # fmt: skip
    body = await asyncio.wait_for(reader.readexactly(length), IO_TIMEOUT_S)
    return status.encode(), body


async def test_latency_proxy_delays_every_answer_on_one_kept_alive_connection(
    proxied: tuple[int, float],
) -> None:
    port, latency_s = proxied
    reader, writer = await asyncio.open_connection(servers.LOOPBACK, port)
    try:
        for _ in range(REQUESTS_ON_ONE_CONNECTION):
            start = time.monotonic()
            writer.write(b"GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
            await writer.drain()
            status, body = await _answer(reader)
            assert time.monotonic() - start >= latency_s
            assert status == b"HTTP/1.1 200 OK" and body == b"ok"
    finally:
        writer.close()


async def test_latency_proxy_lets_a_100_continue_through_at_once_and_delays_the_answer() -> None:
    """botocore and aiobotocore send each PUT with Expect: 100-continue: a write pays the
    latency once, not once for its head and again for its body."""
    latency_s = 0.5
    runner = web.AppRunner(floor_hello.app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, servers.LOOPBACK, 0).start()
    proxy = await latency_proxy.start(servers.LOOPBACK, runner.addresses[0][1], latency_s)
    reader, writer = await asyncio.open_connection(
        servers.LOOPBACK, proxy.sockets[0].getsockname()[1]
    )
    body = b'{"QueueName": "q"}'
    try:
        start = time.monotonic()
        writer.write(
            b"POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: AmazonSQS.GetQueueUrl\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        await writer.drain()
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IO_TIMEOUT_S)
        assert latency_proxy.is_interim(interim)
        assert time.monotonic() - start < latency_s
        writer.write(body)
        await writer.drain()
        status, answer = await _answer(reader)
        assert time.monotonic() - start >= latency_s
        assert status == b"HTTP/1.1 200 OK" and json.loads(answer)["QueueUrl"].endswith("/q")
    finally:
        writer.close()
        proxy.close()
        await runner.cleanup()


# --- the floor's arithmetic and text -----------------------------------------------------------


def test_a_floor_is_the_hello_world_answer_plus_each_write_the_call_waits_for() -> None:
    assert floor_report.floor_ms(0.5, 1, 2.0) == 2.5
    assert floor_report.floor_ms(0.5, 2, 2.0) == 4.5
    assert floor_report.floor_ms(0.5, 0, None) == 0.5  # a call that writes needs no store figure
    assert floor_report.floor_ms(0.5, 1, None) is None
    assert floor_report.floor_ms(None, 0, 2.0) is None
    assert floor_report.ratio(5.0, 2.5) == 2.0
    assert floor_report.ratio(None, 2.5) is None and floor_report.ratio(5.0, None) is None


def test_a_row_takes_medians_of_okuri_and_of_hello_world_and_divides() -> None:
    row = next(r for r in floor_report.ROWS if r.key == floor_calls.SEND)
    figures = floor_report.row_figures(row, [0.003, 0.005, 0.004], [0.001, 0.001], 1.5, misses=2)
    assert figures["writes"] == 1 and figures["samples"] == 3 and figures["misses"] == 2
    assert figures["p50_ms"] == pytest.approx(4.0)
    assert figures["hello_p50_ms"] == pytest.approx(1.0)
    assert figures["floor_ms"] == pytest.approx(2.5)
    assert figures["ratio"] == pytest.approx(1.6)
    empty = floor_report.row_figures(row, [], [0.001], 1.5)
    assert empty["p50_ms"] is None and empty["ratio"] is None


def _run(store: str, linger_ms: int) -> dict[str, object]:
    rows = [
        floor_report.row_figures(r, [0.004], [0.001], 1.5 if store == "local" else 31.0)
        for r in floor_report.ROWS[:-1]
    ]
    return {
        "store": store,
        "described": "somewhere",
        "latency_added_ms": 30.0 if store == "s3" else 0.0,
        "linger_ms": linger_ms,
        "linger_given": False,
        "store_writes": {"samples": 9, "put_if_absent_p50_ms": 1.5, "put_if_match_p50_ms": 1.6},
        "write_p50_ms": 1.5,
        "rows": rows,
        "skipped": {"okuri:// publish (kombu)": "kombu is not installed"},
        "store_requests_per_round": {"sqs": {"cas": 2.0, "put": 1.0}},
        "cpu": {"calls": 500, "okuri_ms_per_call": 0.3, "hello_ms_per_call": 0.1, "ratio": 3.0},
        "errors": {"okuri": {"count": 1, "first": "boom"}, "hello-world": {"count": 0}},
        "server": {"exit_code": 0},
    }


def test_the_text_names_machine_store_latency_linger_and_every_row() -> None:
    result = {
        "config": {"calls": 9, "seconds": 5.0},
        "machine": {"cpus": 2, "python_loop_10m_s": 0.25},
        "runs": [_run("local", 0), _run("s3", 100)],
    }
    text = floor_report.render(result)
    assert "10-million-step Python loop takes 0.25 s" in text
    assert "latency added: none" in text
    assert "latency added: 30 ms" in text and "the S3 floor uses the proxy's latency" in text
    assert "okuri linger: 0 ms" in text and "okuri linger: 100 ms" in text
    header = next(line for line in text.splitlines() if line.startswith("call"))
    assert header.split() == ["call", "writes", "p50", "ms", "floor", "ms", "ratio"]
    for row in floor_report.ROWS[:-1]:
        assert row.label in text
    assert "skipped: kombu is not installed" in text
    assert "okuri 0.30 ms, hello-world 0.10 ms, ratio 3.00 (target: within 2x)" in text
    assert "okuri: 1 calls failed; first: boom" in text
    assert "cas 2, put 1" in text


# --- the hello-world server --------------------------------------------------------------------


@pytest.fixture
def hello() -> Iterator[str]:
    """The hello-world app on a thread's own event loop: its http:// endpoint."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(floor_hello.app(), access_log=None)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, servers.LOOPBACK, 0).start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{servers.LOOPBACK}:{runner.addresses[0][1]}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(IO_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(IO_TIMEOUT_S)
        loop.close()


def test_hello_world_answers_botocore_in_sqs_shapes_with_true_checksums(hello: str) -> None:
    sqs = servers.botocore_client(
        "sqs", hello, servers.DEV_ACCESS_KEY_ID, servers.DEV_SECRET_ACCESS_KEY, attempts=1
    )
    try:
        url = sqs.create_queue(QueueName="floor")["QueueUrl"]
        assert url.endswith("/floor")
        sent = sqs.send_message(QueueUrl=url, MessageBody="hello")
        assert sent["MD5OfMessageBody"] == hashlib.md5(b"hello").hexdigest()
        [message] = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
        assert message["MD5OfBody"] == hashlib.md5(message["Body"].encode()).hexdigest()
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        assert sqs.get_queue_url(QueueName="floor")["QueueUrl"] == url
    finally:
        sqs.close()


def test_hello_world_answers_okuri_client_in_native_shapes(hello: str) -> None:
    from okuri.client import Client

    with Client(hello, "any-key") as client:
        assert client.create_queue("floor").name == "floor"
        assert client.list_queues().queues == ()
        assert len(client.produce("floor", ["a", "b"])) == 2
        [item] = client.lease("floor", 1)
        assert item.text == floor_hello.RECEIVED_BODY
        assert client.complete("floor", [item]) == ["completed"]
        assert client.create_exchange("x", "direct").bindings == ()
        assert client.bind("x", "floor", "k").bindings[0].queue == "floor"
        assert list(client.publish("x", "k", "m")) == ["k"]


def test_every_bench_loop_runs_clean_against_hello_world(hello: str) -> None:
    budget = Budget(calls=3, seconds=IO_TIMEOUT_S)
    loops = [
        floor_calls.sqs_rounds(hello, budget),
        floor_calls.native_rounds(hello, "any-key", budget),
        floor_calls.kombu_rounds(hello, "any-key", budget),  # kombu is a dev dependency
    ]
    for timings in loops:
        assert timings.errors == 0, timings.first_error
        assert timings.misses == {} and timings.rounds == 3
    keys = {k: len(v) for t in loops for k, v in t.seconds.items()}
    assert keys == {row.key: 3 for row in floor_report.ROWS}
    cpu = floor_calls.sqs_cpu_per_call(hello, os.getpid(), budget)
    assert cpu.calls == 3


# --- one real run ------------------------------------------------------------------------------


@pytest.mark.slow  # starts servers: `make test`, not `make check`
def test_bench_floor_json_on_a_local_store_has_every_row_with_a_floor_and_a_ratio() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "floor", "--calls", "20", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**servers.clean_environ(), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["machine"]["python_loop_10m_s"] > 0
    [run] = result["runs"]
    assert run["store"] == "local" and run["latency_added_ms"] == 0
    assert run["write_p50_ms"] > 0 and run["server"]["exit_code"] == 0
    assert run["skipped"] == {}
    assert [r["label"] for r in run["rows"]] == [r.label for r in floor_report.ROWS]
    for row in run["rows"]:
        for figure in ("p50_ms", "hello_p50_ms", "floor_ms", "ratio"):
            assert isinstance(row[figure], float) and row[figure] > 0, (row["label"], figure)
    assert run["errors"]["okuri"]["count"] == 0, run["errors"]
    cpu = run["cpu"]
    assert cpu["calls"] > 0 and cpu["okuri_ms_per_call"] is not None
