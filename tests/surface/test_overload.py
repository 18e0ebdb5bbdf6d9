"""Overload shedding against a real `okuri serve` with small bounds (4 requests in flight, 2 long
polls, 4 MiB of bodies), set by environment variables as an operator would set them.

The bounds are filled deterministically: long polls on an empty queue, and authenticated native
requests whose headers are sent but whose bodies are held back (the server has authenticated
and admitted them and waits in its body read, under a read timeout set long for this module),
each confirmed on /metrics before anything is asserted. Only authenticated requests count
against these bounds: what unauthenticated ones can hold is tests/surface/test_hardening.py's.
Past a bound, SQS clients get RequestThrottled (429, which botocore with retries off reports
and with retries on, legacy or standard, retries until it succeeds), the native API gets 429
`overloaded` with Retry-After (gRPC: RESOURCE_EXHAUSTED with the pushback trailer), which
okuri.client waits out on either wire, /readyz stays ready, peers are not shed, /metrics counts
what was shed, and no acknowledged send is lost. Every wait is bounded; nothing asserts how
long anything took.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import grpc
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from okuri import limits
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.api.v1 import queue_service_pb2_grpc as pb_grpc
from okuri.client import RetryPolicy
from okuri.server.peers import PATH as PEER_PATH
from tests.clients import CLIENTS, open_client
from tests.servers import SQS_KEY, SQS_REGION, SQS_SECRET, Response, ServerProcess, http
from tests.servers import start_server as start

REQUESTS_MAX, LONG_POLLS_MAX, BYTES_MAX = 4, 2, limits.request_bytes_max
ADMIN = "overload-test-admin-key-0123456789"
WAIT_S = 20.0  # bound on each wait for the server to reach a state
NO_RETRIES = {"retries": {"total_max_attempts": 1}, "read_timeout": 60}
LONG_POLL_S = 20
SENDERS, SENDS_EACH = 8, 20


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("overload")
    proc = start(
        tmp,
        {
            "OKURI_DATA_DIR": str(tmp / "data"),
            "OKURI_ADMIN_KEY": ADMIN,
            "OKURI_INFLIGHT_REQUESTS_MAX": str(REQUESTS_MAX),
            "OKURI_LONG_POLLS_MAX": str(LONG_POLLS_MAX),
            "OKURI_INFLIGHT_BYTES_MAX": str(BYTES_MAX),
            "OKURI_READ_TIMEOUT_S": "600",  # held bodies stay held for as long as a test runs
        },
    )
    yield proc
    proc.terminate()


@pytest.fixture
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=SENDERS + 4) as executor:
        yield executor


# --- reading the server --------------------------------------------------------------------


def metrics(server: ServerProcess) -> dict[str, float]:
    answer = server.get("/metrics")
    assert answer.status == 200
    out = {}
    for line in answer.text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def in_flight(server: ServerProcess, kind: str) -> int:
    return int(metrics(server)[f'okuri_inflight{{kind="{kind}"}}'])


def shed(server: ServerProcess, surface: str, kind: str) -> int:
    return int(metrics(server)[f'okuri_shed_requests_total{{surface="{surface}",kind="{kind}"}}'])


def shed_past(server: ServerProcess, surface: str, kind: str, count: int) -> Callable[[], bool]:
    return lambda: shed(server, surface, kind) > count


def wait_until(server: ServerProcess, what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"not reached within {WAIT_S} s: {what}; metrics: {metrics(server)}")
        time.sleep(0.02)


def throttled(call: Callable[[], Any]) -> ClientError:
    with pytest.raises(ClientError) as caught:
        call()
    err = caught.value
    assert err.response["Error"]["Code"] == "RequestThrottled", err.response
    assert err.response["ResponseMetadata"]["HTTPStatusCode"] == 429
    return err


def native(server: ServerProcess, method: str, path: str, body: Any = None) -> Response:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
    return http(method, server.url + path, data, headers)


def overloaded(answer: Response) -> None:
    assert answer.status == 429, answer.text
    assert answer.headers["retry-after"] == str(limits.overload_retry_after_s)
    assert json.loads(answer.body)["error"]["code"] == "overloaded"


def exhausted(server: ServerProcess, rpc: str, request: Any) -> None:
    """The gRPC call is refused RESOURCE_EXHAUSTED, the native code in its trailer."""
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        stub = pb_grpc.QueueServiceStub(channel)
        with pytest.raises(grpc.RpcError) as caught:
            getattr(stub, rpc)(request, metadata=(("authorization", f"Bearer {ADMIN}"),))
    err: Any = caught.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, err
    trailers = dict(err.trailing_metadata())
    assert trailers["okuri-error-code"] == "overloaded"
    assert trailers["grpc-retry-pushback-ms"] == str(limits.overload_retry_after_s * 1000)


def query(server: ServerProcess, params: dict[str, str]) -> Response:
    """A signed query-protocol POST, as the query SDKs send it."""
    encoded = urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
    form = "application/x-www-form-urlencoded; charset=utf-8"
    request = AWSRequest("POST", server.url + "/", data=encoded, headers={"Content-Type": form})
    SigV4Auth(Credentials(SQS_KEY, SQS_SECRET), "sqs", SQS_REGION).add_auth(request)
    return http("POST", server.url + "/", encoded.encode(), dict(request.headers.items()))


# --- holding the bounds full ---------------------------------------------------------------


class HeldBody:
    """A native request, with its key, whose headers are sent and whose body is held back: the
    server authenticates and admits it from its headers and waits in its body read, holding a
    request slot and `size` bytes, until `finish`."""

    def __init__(self, server: ServerProcess, size: int) -> None:
        where = urllib.parse.urlsplit(server.url)
        assert where.hostname is not None and where.port is not None
        self.sock = socket.create_connection((where.hostname, where.port), timeout=WAIT_S)
        self.body = b"{}" + b" " * (size - 2)
        head = (
            f"POST /v1/queues HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Length: {size}\r\n"
            f"Content-Type: application/json\r\nAuthorization: Bearer {ADMIN}\r\n"
            "Connection: close\r\n\r\n"
        )
        self.sock.sendall(head.encode())

    def finish(self) -> int:
        """Send the body; the status of the answer (a queue without a name: refused, so it has
        no effect)."""
        with self.sock:
            self.sock.sendall(self.body)
            answer = b""
            while b"\r\n" not in answer:
                chunk = self.sock.recv(4096)
                if not chunk:
                    break
                answer += chunk
        return int(answer.split(b" ", 2)[1])


def hold_requests(server: ServerProcess, count: int, size: int = 2) -> list[HeldBody]:
    before = in_flight(server, "requests")
    held = [HeldBody(server, size) for _ in range(count)]
    wait_until(
        server,
        f"{count} held requests admitted",
        lambda: in_flight(server, "requests") == before + count,
    )
    return held


def finish(held: list[HeldBody]) -> None:
    for h in held:
        assert h.finish() == 400  # no queue name: refused after admission, nothing was done


def hold_long_polls(
    server: ServerProcess, pool: ThreadPoolExecutor, queue_url: str, count: int
) -> list[Future[Any]]:
    def poll() -> Any:
        sqs = server.sqs_client(**NO_RETRIES)
        return sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=LONG_POLL_S)

    polls = [pool.submit(poll) for _ in range(count)]
    wait_until(
        server, f"{count} long polls waiting", lambda: in_flight(server, "long_polls") == count
    )
    return polls


def release_long_polls(server: ServerProcess, queue_url: str, polls: list[Future[Any]]) -> None:
    """Send each waiting long poll a message, then delete what they got."""
    sqs = server.sqs_client()
    for n in range(len(polls)):
        sqs.send_message(QueueUrl=queue_url, MessageBody=f"wake-{n}")
    for poll in polls:
        for m in poll.result(timeout=WAIT_S + LONG_POLL_S).get("Messages", []):
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    wait_until(server, "no long polls left", lambda: in_flight(server, "long_polls") == 0)


# --- the scenarios ------------------------------------------------------------------------


def test_long_polls_past_the_bound_are_throttled_on_both_protocols_and_429_natively(
    server: ServerProcess, pool: ThreadPoolExecutor
) -> None:
    sqs = server.sqs_client(**NO_RETRIES)
    url = sqs.create_queue(QueueName="lp-held")["QueueUrl"]
    waits = sqs.create_queue(
        QueueName="lp-default", Attributes={"ReceiveMessageWaitTimeSeconds": "5"}
    )["QueueUrl"]
    sqs_before = shed(server, "sqs", "long_polls")
    native_before = shed(server, "native", "long_polls")
    grpc_before = shed(server, "grpc", "long_polls")
    polls = hold_long_polls(server, pool, url, LONG_POLLS_MAX)

    err = throttled(lambda: sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1))
    assert isinstance(err, sqs.exceptions.RequestThrottled)  # SQS's own modelled exception
    throttled(lambda: sqs.receive_message(QueueUrl=waits))  # the queue's default wait counts
    answer = query(
        server,
        {"Action": "ReceiveMessage", "Version": "2012-11-05", "QueueUrl": url,
         "WaitTimeSeconds": "1"},
    )  # fmt: skip
    assert answer.status == 429, answer.text
    assert b"<Code>RequestThrottled</Code>" in answer.body
    overloaded(native(server, "POST", "/v1/queues/lp-held/lease", {"request_timeout_s": 5}))
    exhausted(server, "Lease", pb.LeaseRequest(queue="lp-held", request_timeout_s=5))

    # Short polls wait for nothing, so they are only requests, and there is room for them.
    assert "Messages" not in sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    assert native(server, "POST", "/v1/queues/lp-held/lease", {}).status == 200
    assert server.get("/readyz").status == 200
    assert shed(server, "sqs", "long_polls") == sqs_before + 3
    assert shed(server, "native", "long_polls") == native_before + 1
    assert shed(server, "grpc", "long_polls") == grpc_before + 1
    release_long_polls(server, url, polls)


def test_requests_past_the_bound_are_throttled_and_retrying_clients_get_through(
    server: ServerProcess, pool: ThreadPoolExecutor
) -> None:
    sqs = server.sqs_client(**NO_RETRIES)
    url = sqs.create_queue(QueueName="requests")["QueueUrl"]
    sqs_before = shed(server, "sqs", "requests")
    native_before = shed(server, "native", "requests")
    grpc_before = shed(server, "grpc", "requests")
    held = hold_requests(server, REQUESTS_MAX)

    throttled(lambda: sqs.send_message(QueueUrl=url, MessageBody="refused"))
    overloaded(native(server, "GET", "/v1/queues"))
    exhausted(server, "ListQueues", pb.ListQueuesRequest())
    assert server.get("/readyz").status == 200
    assert server.get("/healthz").status == 200
    assert server.request("POST", PEER_PATH, b"{}").status != 429  # peers are never shed
    assert shed(server, "sqs", "requests") == sqs_before + 1
    assert shed(server, "native", "requests") == native_before + 1
    assert shed(server, "grpc", "requests") == grpc_before + 1
    finish(held)

    # With retries on, in either botocore retry mode, a throttled send goes through once the
    # bound frees: each client is refused at least once while it is full, then it is freed.
    for mode in ("legacy", "standard"):
        retrying = server.sqs_client(retries={"mode": mode, "max_attempts": 10})
        held = hold_requests(server, REQUESTS_MAX)
        refused_before = shed(server, "sqs", "requests")
        sending = pool.submit(retrying.send_message, QueueUrl=url, MessageBody=mode)
        wait_until(
            server,
            f"the {mode}-mode client refused once",
            shed_past(server, "sqs", "requests", refused_before),
        )
        finish(held)
        assert sending.result(timeout=WAIT_S * 2)["MessageId"]
    got = drain(server, url)
    assert sorted(got) == ["legacy", "standard"]  # and not the refused one


class FreeingWhileWaiting(list[float]):
    """The waits of an okuri.client between tries, recorded; the first frees `held`, as a
    bound frees up while a client waits."""

    def __init__(self, held: list[HeldBody]) -> None:
        super().__init__()
        self.held = held

    def append(self, seconds: float) -> None:
        super().append(seconds)
        finish(self.held)
        self.held.clear()


@pytest.mark.parametrize("kind", CLIENTS)
def test_the_python_client_waits_out_a_shed_produce_and_enqueues_it_once(
    server: ServerProcess, kind: str
) -> None:
    """okuri.client, each client over each wire: its produce is shed while every request slot
    is held, waited out for the server's Retry-After (over gRPC, grpc-retry-pushback-ms) while
    the slots free up, then sent again and enqueued once."""
    surface = "grpc" if kind.endswith("grpc") else "native"
    queue = f"shed-{kind.replace('+', '-')}"
    policy = RetryPolicy(attempts_max=2, backoff_s_base=0.1)
    held: list[HeldBody] = []
    slept = FreeingWhileWaiting(held)
    with open_client(kind, server.url, ADMIN, retries=policy, slept=slept) as okuri:
        okuri.create_queue(queue)
        before = shed(server, surface, "requests")
        held += hold_requests(server, REQUESTS_MAX)
        [sent] = okuri.produce(queue, "through")
        assert shed(server, surface, "requests") == before + 1
        assert len(slept) == 1
        assert limits.overload_retry_after_s <= slept[0] < limits.overload_retry_after_s + 0.1
        leased = okuri.lease(queue, 10, request_timeout_s=1)
    assert [(item.id, item.text) for item in leased] == [(sent, "through")]


def test_bodies_past_the_byte_bound_are_throttled(server: ServerProcess) -> None:
    sqs = server.sqs_client(**NO_RETRIES)
    url = sqs.create_queue(QueueName="bytes")["QueueUrl"]
    before = shed(server, "sqs", "bytes")
    held = hold_requests(server, 1, BYTES_MAX)
    assert in_flight(server, "bytes") == BYTES_MAX

    throttled(lambda: sqs.send_message(QueueUrl=url, MessageBody="a small body"))
    assert shed(server, "sqs", "bytes") == before + 1
    finish(held)
    sqs.send_message(QueueUrl=url, MessageBody="after")
    assert drain(server, url) == ["after"]


def test_nothing_acknowledged_is_lost_while_a_node_sheds(
    server: ServerProcess, pool: ThreadPoolExecutor
) -> None:
    """Senders that do not retry race for the two request slots that two long polls leave free;
    some sends are refused (one surely: it is sent while every slot is held). Every acknowledged
    one is received and deleted; no refused one ever is."""
    sqs = server.sqs_client(**NO_RETRIES)
    url = sqs.create_queue(QueueName="ledger")["QueueUrl"]
    idle = sqs.create_queue(QueueName="ledger-idle")["QueueUrl"]
    polls = hold_long_polls(server, pool, idle, LONG_POLLS_MAX)
    held = hold_requests(server, REQUESTS_MAX - LONG_POLLS_MAX)
    throttled(lambda: sqs.send_message(QueueUrl=url, MessageBody="sure-refusal"))
    refused = {"sure-refusal"}
    finish(held)

    def send(sender: int) -> tuple[set[str], set[str]]:
        client = server.sqs_client(**NO_RETRIES)
        acked, lost = set(), set()
        for n in range(SENDS_EACH):
            body = f"s{sender}-{n}"
            try:
                client.send_message(QueueUrl=url, MessageBody=body)
                acked.add(body)
            except ClientError as err:
                assert err.response["Error"]["Code"] == "RequestThrottled", err.response
                lost.add(body)
        return acked, lost

    acked: set[str] = set()
    for done in [pool.submit(send, s) for s in range(SENDERS)]:
        ok, no = done.result(timeout=WAIT_S * 3)
        acked |= ok
        refused |= no
    release_long_polls(server, idle, polls)

    received = drain(server, url)
    assert set(received) == acked, (
        f"{len(acked)} acknowledged, {len(refused)} refused, {len(received)} received; "
        f"missing {sorted(acked - set(received))[:10]}, "
        f"unexpected {sorted(set(received) - acked)[:10]}"
    )
    assert len(acked) + len(refused) == SENDERS * SENDS_EACH + 1


def drain(server: ServerProcess, url: str) -> list[str]:
    """Receive and delete until the queue is empty; the bodies, in the order received."""
    sqs = server.sqs_client()
    bodies: list[str] = []
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0)
        messages = got.get("Messages", [])
        if not messages:
            counts = sqs.get_queue_attributes(
                QueueUrl=url,
                AttributeNames=[
                    "ApproximateNumberOfMessages",
                    "ApproximateNumberOfMessagesNotVisible",
                ],
            )["Attributes"]
            if set(counts.values()) == {"0"}:
                return bodies
            time.sleep(0.05)
            continue
        bodies += [m["Body"] for m in messages]
        entries = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
        ]
        deleted = sqs.delete_message_batch(QueueUrl=url, Entries=entries)
        assert not deleted.get("Failed"), deleted
    pytest.fail(f"{url} did not drain within {WAIT_S} s; received {len(bodies)}")
