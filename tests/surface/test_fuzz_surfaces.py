"""Seeded fuzzing of every surface of a real `okuri serve` but SQS (test_sqs_bad_input.py and
the SigV4 property tests cover that one): the native HTTP/JSON API, gRPC, and the peer
endpoint, plus the client-supplied integers and mid-body hang-ups that once answered 500.

Requests carry a valid admin key, so what a fuzzer sends reaches parsing rather than stopping at
authentication. Each seed is fixed, so a failure replays with the same requests; counts are
bounded so the module runs in seconds. What must hold: no answer is a 5xx (gRPC: no INTERNAL
nor UNKNOWN), no traceback reaches the server's log, no request is counted as an internal
failure in /metrics, and afterwards the server is still ready and answers a normal request.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import grpc
import pytest
from google.protobuf import message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from okuri import limits
from okuri.api.v1 import queue_service_pb2 as pb
from okuri.server.peers import Peers
from tests import rawhttp
from tests.rawhttp import PREFACE, exchange, request, signed
from tests.servers import SQS_KEY, SQS_SECRET, ServerProcess, keyed_server, role_keys

ADMIN = "fuzz-test-admin-key-0123456789"
QUEUE, EXCHANGE = "fz", "fx"
SEEDS = (11, 23, 47)
HTTP_CASES = 120  # per seed
GRPC_CASES = 150  # per seed
FRAME_CASES = 15  # per seed: connections of garbage HTTP/2 frames
PEER_CASES = 40  # per seed
ANSWER_S = 2.0  # a fuzzed lease may long-poll: past this, it is waiting, not failing
INTERNAL = ('outcome="InternalFailure"', 'outcome="internal"', 'outcome="unavailable"')
SERVICE = pb.DESCRIPTOR.services_by_name["QueueService"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    tmp = tmp_path_factory.mktemp("fuzz")
    proc = keyed_server(tmp, ADMIN, role_keys(tmp).file)
    for method, path, body in [
        ("POST", "/v1/queues", {"name": QUEUE}),
        ("POST", "/v1/exchanges", {"name": EXCHANGE, "type": "direct"}),
        ("POST", f"/v1/exchanges/{EXCHANGE}/bind", {"queue": QUEUE, "routing_key": "k"}),
    ]:
        answer = exchange(proc, request(method, path, [auth()], json.dumps(body).encode()))
        assert rawhttp.status(answer) == 200, answer
    yield proc
    proc.terminate()


def auth(key: str = ADMIN) -> tuple[str, str]:
    return ("Authorization", f"Bearer {key}")


class Watch:
    """What the server wrote while a test ran: its log from where it stood, and /metrics."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.start = len(server.log)

    def check(self) -> None:
        """No traceback or ERROR line since the start, no internal failure counted, and the
        server still ready and answering a normal request."""
        assert self.server.get("/readyz").status == 200
        normal = request("GET", "/v1/queues?limit=1", [auth()])
        answer = exchange(self.server, normal)
        assert rawhttp.status(answer) == 200, answer
        time.sleep(0.2)  # the log is written by another process: let it catch up
        since = self.server.log[self.start :]
        assert "Traceback" not in since and " ERROR " not in since, since[-4000:]
        metrics = self.server.get("/metrics").text
        assert not [line for line in metrics.splitlines() if any(i in line for i in INTERNAL)]


# --- client-supplied integers and hang-ups (each once a 500) ----------------------------------

SUPERSCRIPT_TWO = quote("²")
LONG = "1" * 5000  # int() refuses more than 4,300 digits


@pytest.mark.parametrize(
    "target",
    [
        f"/v1/queues?limit={SUPERSCRIPT_TWO}",
        f"/v1/queues?limit={LONG}",
        f"/v1/exchanges?limit={SUPERSCRIPT_TWO}",
        f"/v1/queues/{QUEUE}/messages?limit={SUPERSCRIPT_TWO}",
        f"/v1/queues/{QUEUE}/messages?limit={LONG}",
        "/v1/queues?limit=%EF%BC%91",  # a fullwidth 1: int() takes it
    ],
)
def test_a_native_query_integer_that_is_not_ascii_digits_is_a_400(
    server: ServerProcess, target: str
) -> None:
    watch = Watch(server)
    answer = exchange(server, request("GET", target, [auth()]))
    assert rawhttp.status(answer) == 400, answer
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "wrong_type"
    watch.check()


@pytest.mark.parametrize("index", [SUPERSCRIPT_TWO, LONG, "%EF%BC%91"])
def test_an_sqs_query_list_index_that_is_not_ascii_digits_is_invalid(
    server: ServerProcess, index: str
) -> None:
    watch = Watch(server)
    form = (
        f"Action=SendMessageBatch&QueueUrl={quote(server.url + '/000000000000/' + QUEUE)}"
        f"&SendMessageBatchRequestEntry.{index}.Id=a"
        f"&SendMessageBatchRequestEntry.{index}.MessageBody=b"
    )
    data, _ = signed(
        server, SQS_KEY, SQS_SECRET, body=form.encode(),
        content_type="application/x-www-form-urlencoded",
    )  # fmt: skip
    answer = exchange(server, data)
    assert rawhttp.status(answer) == 400, answer
    assert b"<Code>InvalidParameterValue</Code>" in answer
    watch.check()


@pytest.mark.parametrize("stamp", ["²", LONG, "-1", " 1", "1_000"])
def test_a_peer_signature_stamp_that_is_not_ascii_digits_is_refused(
    server: ServerProcess, stamp: str
) -> None:
    watch = Watch(server)
    headers = [("X-Okuri-Peer-Signature", f"{stamp}:x"), ("X-Okuri-Peer-Scope", QUEUE)]
    answer = exchange(server, request("POST", "/_okuri/peer/commit", headers, b"{}"))
    assert 400 <= rawhttp.status(answer) < 500, answer
    watch.check()


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        (f"/v1/queues/{QUEUE}/messages", [auth()]),
        ("/", [("X-Amz-Target", "AmazonSQS.SendMessage"), ("Content-Type", rawhttp.AWS_JSON)]),
    ],
    ids=["native", "sqs"],
)
def test_a_client_that_hangs_up_mid_body_is_not_a_server_error(
    server: ServerProcess, path: str, headers: list[tuple[str, str]]
) -> None:
    """Its problem, not the server's: no traceback, no internal failure for the alert."""
    watch = Watch(server)
    for _ in range(3):
        cut = request("POST", path, headers, b'{"items": [{"body": "', length=1000)
        exchange(server, cut, hang_up=True)
    watch.check()


# --- native HTTP/JSON ------------------------------------------------------------------------

HTTP_BASES: list[tuple[str, str, Any]] = [
    ("POST", "/v1/queues", {"name": "fz-new", "fifo": False,
                            "attributes": {"lease_timeout_s": 30, "max_attempts": 5}}),
    ("GET", f"/v1/queues/{QUEUE}", None),
    ("GET", "/v1/queues?prefix=f&limit=10&after=a", None),
    ("PATCH", f"/v1/queues/{QUEUE}", {"attributes": {"delay_s": 0, "expires_s": 3600}}),
    ("POST", f"/v1/queues/{QUEUE}/messages",
     {"items": [{"body": "x", "delay_s": 0, "attributes": {"a": "b"}, "dedup_id": "d"}]}),
    ("POST", f"/v1/queues/{QUEUE}/lease", {"max_items": 1, "lease_s": 5, "request_timeout_s": 0}),
    ("POST", f"/v1/queues/{QUEUE}/complete", {"handles": ["h"]}),
    ("POST", f"/v1/queues/{QUEUE}/retry", {"items": [{"handle": "h", "delay_s": 1}]}),
    ("POST", f"/v1/queues/{QUEUE}/extend", {"handles": ["h"], "lease_s": 5}),
    ("POST", f"/v1/queues/{QUEUE}/redrive", {"target": QUEUE, "max_items": 1}),
    ("GET", f"/v1/queues/{QUEUE}/messages?limit=5&after=0.0", None),
    ("POST", "/v1/exchanges", {"name": "fx-new", "type": "fanout"}),
    ("GET", f"/v1/exchanges/{EXCHANGE}", None),
    ("GET", "/v1/exchanges?prefix=f&limit=5", None),
    ("POST", f"/v1/exchanges/{EXCHANGE}/bind", {"queue": QUEUE, "routing_key": "k"}),
    ("POST", f"/v1/exchanges/{EXCHANGE}/messages",
     {"routing_key": "k", "items": [{"body": "x", "enqueue_at": "2030-01-01T00:00:00Z"}]}),
]  # fmt: skip

WEIRD_TEXT = [
    "", " ", "²", "\x00", "\u202e", "é" * 300, "x" * 5000, "../..", "%", "0.0", "-1",
    "1e400", LONG, "null", "fz", "fx", "2030-01-01T00:00:00Z", "9999-99-99T99:99:99Z",
]  # fmt: skip
WEIRD_NUMBERS: list[Any] = [
    0,
    -1,
    1,
    7,
    2**31,
    2**63 - 1,
    -(2**63),
    2**64 * 10,
    1.5,
    -0.0,
    1e308,
    True,
    False,
]


def weird_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if roll < 0.35:
        return rng.choice(WEIRD_NUMBERS)
    if roll < 0.7:
        return rng.choice([*WEIRD_TEXT, "\ud800"])  # a lone surrogate: JSON can say it
    if roll < 0.8 or depth > 2:
        return None
    if roll < 0.9:
        return [weird_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(WEIRD_TEXT): weird_json(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def mutate_json(rng: random.Random, doc: Any) -> Any:
    """`doc` with one node replaced, removed, or given a stranger beside it."""
    if not isinstance(doc, dict | list) or not doc or rng.random() < 0.1:
        return weird_json(rng)
    doc = json.loads(json.dumps(doc))  # a copy
    node: Any = doc
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        key = rng.choice(keys)
        child = node[key]
        if isinstance(child, dict | list) and child and rng.random() < 0.6:
            node = child
            continue
        roll = rng.random()
        if roll < 0.6:
            node[key] = weird_json(rng)
        elif roll < 0.8 or not isinstance(node, dict):
            node[key] = mutate_json(rng, child) if isinstance(child, dict | list) else [child]
        elif len(node) > 1:
            del node[key]
        else:
            node[rng.choice(WEIRD_TEXT)] = weird_json(rng)
        return doc


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """Bytes flipped, cut, inserted or repeated."""
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        at = rng.randint(0, len(data))
        if roll < 0.3 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif roll < 0.5:
            del data[at:]
        elif roll < 0.8:
            data[at:at] = rng.randbytes(rng.randint(1, 8))
        else:
            data[at:at] = data[at : at + rng.randint(1, 64)] * rng.randint(2, 50)
    return bytes(data)


def mutate_target(rng: random.Random, target: str) -> str:
    path, _, query = target.partition("?")
    roll = rng.random()
    if roll < 0.4:
        pairs = [
            f"{quote(rng.choice(['limit', 'after', 'prefix', 'x']))}="
            f"{quote(rng.choice(WEIRD_TEXT), safe='')}"
            for _ in range(rng.randint(1, 4))
        ]
        query = "&".join(pairs)
    elif roll < 0.7:
        segments = path.split("/")
        at = rng.randrange(1, len(segments))
        segments[at] = rng.choice(
            ["%2F", "%00", "%FF", "..", "%C2%B2", "x" * 300, quote("é" * 100), "", "%", "fx", "fz"]
        )
        path = "/".join(segments)
    else:
        query = rng.choice(["%", "&&&", "a=%FF", "=x", "limit=1&limit=%C2%B2", "x" * 5000])
    return f"{path}?{query}" if query else path


def http_case(rng: random.Random) -> bytes:
    method, target, doc = rng.choice(HTTP_BASES)
    headers = [auth(), ("Content-Type", "application/json")]
    body = b"" if doc is None else json.dumps(doc).encode()
    roll = rng.random()
    if roll < 0.3:
        body = json.dumps(mutate_json(rng, doc)).encode()
    elif roll < 0.5:
        body = mutate_bytes(rng, body or b"{}")
    elif roll < 0.65:
        target = mutate_target(rng, target)
    elif roll < 0.75:
        method = rng.choice(["PUT", "DELETE", "OPTIONS", "PATCH", "GET", "POST", "HEAD"])
    elif roll < 0.85:
        headers[1] = ("Content-Type", rng.choice(
            ["text/plain", "application/json; charset=utf-16", "", "multipart/form-data; b=x",
             "application/x-www-form-urlencoded"]))  # fmt: skip
        headers.append(("x-request-id", rng.choice(WEIRD_TEXT).encode("utf-8", "replace")
                        .decode("latin-1")[:200]))  # fmt: skip
    elif roll < 0.92:
        headers.append(("Content-Encoding", rng.choice(["gzip", "deflate", "br", "x"])))
        body = rng.randbytes(rng.randint(1, 64))
    else:
        body = rng.choice([b"[" * 100_000, b'{"a":' * 5000, b'"' + b"x" * 100_000 + b'"'])
    return request(method, target, headers, body)


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_native_http_is_never_a_server_error(server: ServerProcess, seed: int) -> None:
    rng = random.Random(seed)
    watch = Watch(server)
    cases = [http_case(rng) for _ in range(HTTP_CASES)]
    oversized = request(
        "POST", f"/v1/queues/{QUEUE}/messages", [auth()], b" " * (limits.request_bytes_max + 1)
    )
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda c: exchange(server, c, timeout_s=ANSWER_S), cases))
    answers.append(exchange(server, oversized))
    bad = [
        (case[:300], answer[:300])
        for case, answer in zip(cases, answers, strict=False)
        if rawhttp.status(answer) >= 500 or (not answer and b"/lease " not in case[:200])
    ]
    assert not bad, (bad, server.log[watch.start :][-6000:])
    assert rawhttp.status(answers[-1]) == 413
    watch.check()


# --- gRPC ------------------------------------------------------------------------------------

INTS = {
    FieldDescriptor.CPPTYPE_INT32: [0, -1, 1, 7, 2**31 - 1, -(2**31)],
    FieldDescriptor.CPPTYPE_INT64: [0, -1, 1, 7, 2**63 - 1, -(2**63), 253402300800],
    FieldDescriptor.CPPTYPE_UINT32: [0, 1, 7, 2**32 - 1],
    FieldDescriptor.CPPTYPE_UINT64: [0, 1, 7, 2**64 - 1],
}
FLOATS = [0.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e308]


def scalar(rng: random.Random, field: FieldDescriptor) -> Any:
    kind = field.cpp_type
    if kind in INTS:
        return rng.choice(INTS[kind])
    if kind in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return rng.choice(FLOATS)
    if kind == FieldDescriptor.CPPTYPE_BOOL:
        return rng.random() < 0.5
    if kind == FieldDescriptor.CPPTYPE_ENUM:
        return rng.choice([v.number for v in field.enum_type.values] + [99, -1])
    if field.type == FieldDescriptor.TYPE_BYTES:
        return rng.randbytes(rng.choice([0, 1, 16, 70_000]))
    text = rng.choice(WEIRD_TEXT)
    return rng.choice([text, QUEUE, EXCHANGE, "k"])


def randomize(rng: random.Random, message: Message, depth: int = 0) -> None:
    """Set some of `message`'s fields, of any type, to values at and past their bounds."""
    for field in message.DESCRIPTOR.fields:
        if rng.random() < 0.4:
            continue
        value = getattr(message, field.name)
        try:
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                for _ in range(rng.randint(0, 3)):
                    value_field = field.message_type.fields_by_name["value"]
                    value[scalar(rng, field.message_type.fields_by_name["key"])] = scalar(
                        rng, value_field
                    )
            elif field.message_type is not None:
                if depth > 3:
                    continue
                if field.is_repeated:
                    for _ in range(rng.choice([0, 1, 2, 3, 200])):
                        randomize(rng, value.add(), depth + 1)
                else:
                    value.SetInParent()
                    randomize(rng, value, depth + 1)
            elif field.is_repeated:
                value.extend(scalar(rng, field) for _ in range(rng.choice([0, 1, 2, 200])))
            else:
                setattr(message, field.name, scalar(rng, field))
        except (TypeError, ValueError):
            continue  # a value protobuf itself refuses to hold cannot be sent this way
    for name, known in (("queue", QUEUE), ("exchange", EXCHANGE)):
        if name in message.DESCRIPTOR.fields_by_name and rng.random() < 0.6:
            setattr(message, name, known)  # past the not-found, into the operation


def grpc_case(rng: random.Random) -> tuple[str, bytes]:
    method = rng.choice(list(SERVICE.methods))
    kind: Descriptor = method.input_type
    message = message_factory.GetMessageClass(kind)()
    randomize(rng, message)
    data = message.SerializeToString()
    roll = rng.random()
    if roll < 0.3:
        data = mutate_bytes(rng, data)
    elif roll < 0.4:
        data = rng.randbytes(rng.randint(0, 64))
    elif roll < 0.45:  # a field claiming more bytes than follow, or a varint that never ends
        data += rng.choice([b"\x0a\xff\xff\xff\x0f", b"\x08" + b"\xff" * 11, b"\x7a\x05ab"])
    return method.name, data


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_grpc_is_never_internal_or_unknown(server: ServerProcess, seed: int) -> None:
    rng = random.Random(seed)
    watch = Watch(server)
    cases = [grpc_case(rng) for _ in range(GRPC_CASES)]
    cases.append(("Produce", b"\x12" + b"\x80\x80\x80\x02" + b"x" * (limits.request_bytes_max)))
    metadata = (("authorization", f"Bearer {ADMIN}"),)
    bad = []
    with grpc.insecure_channel(server.url.removeprefix("http://")) as channel:
        futures = [
            (name, data, channel.unary_unary(f"/{SERVICE.full_name}/{name}").future(
                data, metadata=metadata, timeout=ANSWER_S))
            for name, data in cases
        ]  # fmt: skip
        for name, data, future in futures:
            try:
                future.result()
            except grpc.RpcError as err:
                assert isinstance(err, grpc.Call)
                if err.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
                    bad.append((name, data[:200], err.code(), err.details()))
    assert not bad, bad
    watch.check()


def frames(rng: random.Random) -> bytes:
    """HTTP/2 frames after the preface: well-formed headers over random types, flags, streams
    and payloads, sometimes led by a valid SETTINGS frame."""
    out = PREFACE + (b"\x00\x00\x00\x04\x00\x00\x00\x00\x00" if rng.random() < 0.5 else b"")
    for _ in range(rng.randint(1, 6)):
        payload = rng.randbytes(rng.randint(0, 40))
        length = len(payload) if rng.random() < 0.8 else rng.randrange(1 << 24)
        kind, flags = rng.randrange(12), rng.randrange(256)
        stream = rng.choice([0, 1, 3, 2, 2**31 - 1, rng.randrange(1 << 32)])
        out += length.to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big")
        out += payload
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_garbage_http2_frames_close_only_their_connection(server: ServerProcess, seed: int) -> None:
    rng = random.Random(seed)
    watch = Watch(server)
    cases = [frames(rng) for _ in range(FRAME_CASES)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda c: exchange(server, c, timeout_s=1.0), cases))
    watch.check()


# --- the peer endpoint -----------------------------------------------------------------------


def peer_case(rng: random.Random) -> bytes:
    now = str(int(time.time()))
    signature = rng.choice([
        "", "x", ":", f"{now}:", f"{now}:{rng.randbytes(32).hex()}", f"{now}:{'z' * 64}",
        f"{rng.choice(WEIRD_TEXT)}:{rng.randbytes(8).hex()}", f"-{now}:x", f"{now}{now}:x",
    ])  # fmt: skip
    headers = [
        ("X-Okuri-Peer-Signature", signature.encode("utf-8", "replace").decode("latin-1")),
        ("X-Okuri-Peer-Scope", rng.choice([QUEUE, "", "²", "x" * 5000, "nope"])),
    ]
    if rng.random() < 0.3:
        headers.append(auth())
    body = rng.choice([b"", b"{}", b"[]", rng.randbytes(rng.randint(1, 200)), b"\x00" * 1000])
    length = None if rng.random() < 0.8 else rng.choice([0, len(body) + 10, 10**10])
    return request("POST", "/_okuri/peer/commit", headers, body, length=length)


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_peer_commits_are_refused_never_a_server_error(
    server: ServerProcess, seed: int
) -> None:
    rng = random.Random(seed)
    watch = Watch(server)
    cases = [peer_case(rng) for _ in range(PEER_CASES)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda c: exchange(server, c, timeout_s=ANSWER_S), cases))
    bad = [
        (case[:300], answer[:300])
        for case, answer in zip(cases, answers, strict=True)
        if rawhttp.status(answer) >= 500 or rawhttp.status(answer) == 200
    ]
    assert not bad, bad
    watch.check()


def signed_peer_case(rng: random.Random, peers: Peers) -> bytes:
    """A forward signed with the deployment's secret, as a node's would be, whose body and scope
    are mutated: it reaches the engine's decoding, which must refuse it as a 4xx."""
    commit: Any = {"q": QUEUE, "inc": "i", "ops": [["L", 1, 60_000]], "slots": []}
    if rng.random() < 0.5:
        body = json.dumps(mutate_json(rng, commit)).encode()
    else:
        body = mutate_bytes(rng, json.dumps(commit).encode())
    scope = rng.choice(["", "us-east-1", "eu-north-1", "zz-fake-1", "\u00b2", "x" * 80])
    headers = list(peers.headers(scope, body).items())
    return request("POST", "/_okuri/peer/commit", headers, body)


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_signed_peer_commits_are_never_a_server_error(
    server: ServerProcess, seed: int
) -> None:
    rng = random.Random(seed)
    peers = Peers(SQS_SECRET, lambda scope: pytest.fail("a test's Peers commits nothing"))
    watch = Watch(server)
    cases = [signed_peer_case(rng, peers) for _ in range(PEER_CASES)]
    answers = [exchange(server, case, timeout_s=ANSWER_S) for case in cases]
    bad = [
        (case[:300], answer[:300])
        for case, answer in zip(cases, answers, strict=True)
        if rawhttp.status(answer) >= 500
    ]
    assert not bad, bad
    watch.check()


Fuzz = Callable[[random.Random], object]


@pytest.mark.parametrize("make", [http_case, grpc_case, frames])
def test_a_seed_makes_the_same_cases_every_time(make: Fuzz) -> None:
    """A failure replays from its seed alone (the peer cases carry the clock's stamp, so they
    replay in kind only)."""
    first, second = random.Random(5), random.Random(5)
    assert [make(first) for _ in range(30)] == [make(second) for _ in range(30)]
