"""TLS on the main listener: a real `okuri serve` with OKURI_TLS_CERT and OKURI_TLS_KEY.

A certificate authority is made in each test (tests/certs.py), so each client can be told which
roots to trust: boto3 (`verify=`) and okuri's client over https:// and grpcs:// (kombu over
okuris:// is in tests/smoke/kombu/test_kombu_tls.py). Also: a plaintext request gets the clear
400, a client trusting another CA fails, mutual TLS refuses a client without a certificate,
SIGHUP swaps the certificate for new connections, and bad settings refuse to start.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import botocore.exceptions
import grpc
import pytest
from botocore.config import Config
from cryptography import x509

from okuri.client import NO_RETRIES, Client, GrpcTransport, StdlibHttpTransport, TransportError
from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from tests import certs
from tests.certs import Authority

if TYPE_CHECKING:
    from tests.servers import Launch, RunToExit, ServerProcess

ADMIN_KEY = "tls-admin-key-0123456789"


@pytest.fixture
def ca(tmp_path: Path) -> Authority:
    return Authority.make(tmp_path, "okuri-test-ca")


@pytest.fixture
def server_files(tmp_path: Path, ca: Authority) -> dict[str, str]:
    return certs.server_files(tmp_path, ca)


@pytest.fixture
def launch_tls(launch: Launch) -> Launch:
    """`launch`, returning once the main listener serves (readiness), not only health."""

    def start(env: dict[str, str] | None = None) -> ServerProcess:
        server = launch(env)
        server.wait_for("/readyz")
        return server

    return start


def https_url(server: ServerProcess) -> str:
    return server.url.replace("http://", "https://", 1)


def port_of(server: ServerProcess) -> int:
    return int(server.url.rsplit(":", 1)[1])


def served_certificate(server: ServerProcess, ca: Authority) -> x509.Certificate:
    """The certificate a new connection is given (verified against `ca`)."""
    context = ssl.create_default_context(cafile=str(ca.path))
    with (
        socket.create_connection(("127.0.0.1", port_of(server)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def boto3_sqs(server: ServerProcess, verify: str | bool, config: Config | None = None) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=https_url(server),
        region_name="us-east-1",
        aws_access_key_id=DEV_ACCESS_KEY_ID,
        aws_secret_access_key=DEV_SECRET_ACCESS_KEY,
        verify=verify,
        config=config,
    )


def test_boto3_over_tls_creates_sends_and_receives_with_https_queue_urls(
    launch_tls: Launch, server_files: dict[str, str], ca: Authority
) -> None:
    server = launch_tls(server_files)
    sqs = boto3_sqs(server, str(ca.path))
    url = sqs.create_queue(QueueName="tls-jobs")["QueueUrl"]
    assert url == f"{https_url(server)}/000000000000/tls-jobs"
    assert sqs.list_queues()["QueueUrls"] == [url]
    sqs.send_message(QueueUrl=url, MessageBody="over TLS")
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["Body"] for m in got] == ["over TLS"]


def test_native_client_over_https_and_grpcs(
    launch_tls: Launch, server_files: dict[str, str], ca: Authority
) -> None:
    server = launch_tls({**server_files, "OKURI_ADMIN_KEY": ADMIN_KEY})
    context = ssl.create_default_context(cafile=str(ca.path))
    https = StdlibHttpTransport(https_url(server), ADMIN_KEY, verify=context)
    with Client(transport=https) as client:
        client.create_queue("tls-native")
        client.produce("tls-native", [b"by https"])
    roots = grpc.ssl_channel_credentials(root_certificates=ca.path.read_bytes())
    grpcs = GrpcTransport(f"grpcs://127.0.0.1:{port_of(server)}", ADMIN_KEY, credentials=roots)
    with Client(transport=grpcs) as client:
        client.produce("tls-native", [b"by grpcs"])
        leased = client.lease("tls-native", 10, request_timeout_s=1)
        assert sorted(m.body for m in leased) == [b"by grpcs", b"by https"]


def negotiated(server: ServerProcess, ca: Authority, offered: list[str]) -> str | None:
    """The protocol ALPN settles on when a client offers `offered`, in its order."""
    context = ssl.create_default_context(cafile=str(ca.path))
    context.set_alpn_protocols(offered)
    with (
        socket.create_connection(("127.0.0.1", port_of(server)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        return tls.selected_alpn_protocol()


def test_http_clients_that_offer_h2_get_http_1_1_and_grpc_clients_get_h2(
    launch_tls: Launch, server_files: dict[str, str], ca: Authority
) -> None:
    """curl, browsers and the console offer h2 before http/1.1; the only HTTP/2 server behind
    the port is grpcio's, so such a client must be given HTTP/1.1 (it used to get h2 and fail
    with INTERNAL_ERROR). gRPC clients offer h2 without http/1.1, and still get h2."""
    server = launch_tls({**server_files, "OKURI_ADMIN_KEY": ADMIN_KEY})
    assert negotiated(server, ca, ["h2", "http/1.1"]) == "http/1.1"
    assert negotiated(server, ca, ["grpc-exp", "h2"]) == "h2"
    assert negotiated(server, ca, ["h2"]) == "h2"
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed: the ALPN checks above ran, curl's own did not")
    for path, headers in (("/", []), ("/v1/queues", ["-H", f"Authorization: Bearer {ADMIN_KEY}"])):
        done = subprocess.run(
            ["curl", "-sS", "--max-time", "10", "--cacert", str(ca.path), *headers,
             "-w", "\n%{http_version} %{http_code}", https_url(server) + path],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout.rsplit("\n", 1)[1] == "1.1 200", done.stdout
    # gRPC over TLS still works on the same port (h2 chosen by ALPN).
    roots = grpc.ssl_channel_credentials(root_certificates=ca.path.read_bytes())
    grpcs = GrpcTransport(f"grpcs://127.0.0.1:{port_of(server)}", ADMIN_KEY, credentials=roots)
    with Client(transport=grpcs) as client:
        client.create_queue("alpn")


def test_plaintext_http_to_the_tls_port_gets_a_clear_400(
    launch_tls: Launch, server_files: dict[str, str]
) -> None:
    server = launch_tls(server_files)
    answer = server.request("GET", "/")  # http:// to the TLS port
    assert answer.status == 400
    assert "speaks TLS" in answer.text and "https://" in answer.text
    posted = server.request("POST", "/", b"Action=ListQueues")  # a P that is no HTTP/2 preface
    assert posted.status == 400 and "speaks TLS" in posted.text
    plain_sqs = server.sqs_client(retries={"max_attempts": 1})
    with pytest.raises(botocore.exceptions.ClientError, match="speaks TLS"):
        plain_sqs.list_queues()
    with socket.create_connection(("127.0.0.1", port_of(server)), timeout=10) as sock:
        sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        sock.settimeout(10)
        frames = b""
        while chunk := sock.recv(4096):
            frames += chunk
    assert frames[3] == 0x07  # GOAWAY
    assert b"use grpcs://" in frames
    plain_grpc = GrpcTransport(f"grpc://127.0.0.1:{port_of(server)}", ADMIN_KEY, timeout_s=20)
    started_s = time.monotonic()
    with (
        Client(transport=plain_grpc, retries=NO_RETRIES) as client,
        pytest.raises(TransportError, match="UNAVAILABLE"),
    ):
        client.list_queues()
    assert time.monotonic() - started_s < 10  # refused at once, not retried until the deadline


def test_a_client_trusting_another_ca_fails_verification(
    launch_tls: Launch, server_files: dict[str, str], tmp_path: Path
) -> None:
    server = launch_tls(server_files)
    stranger = Authority.make(tmp_path, "another-ca")
    context = ssl.create_default_context(cafile=str(stranger.path))
    with (
        pytest.raises(ssl.SSLCertVerificationError),
        socket.create_connection(("127.0.0.1", port_of(server)), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1"),
    ):
        pass
    assert server.request("GET", "/").status == 400  # the server is still there


def test_mutual_tls_refuses_a_client_without_a_certificate_and_serves_one_with(
    launch_tls: Launch, server_files: dict[str, str], ca: Authority, tmp_path: Path
) -> None:
    server = launch_tls(
        {**server_files, "OKURI_TLS_CLIENT_CA": str(ca.path), "OKURI_ADMIN_KEY": ADMIN_KEY}
    )
    bare = boto3_sqs(server, str(ca.path))
    # TLS 1.3 ends the client's handshake before the server has checked it: the refusal shows
    # as an alert (SSLError) or as the connection closing on the first request.
    refused = (botocore.exceptions.SSLError, botocore.exceptions.ConnectionClosedError)
    with pytest.raises(refused):
        bare.list_queues()
    cert, key = tmp_path / "client.pem", tmp_path / "client-key.pem"
    ca.issue(cert, key, "okuri-client", client=True)
    context = ssl.create_default_context(cafile=str(ca.path))
    context.load_cert_chain(cert, key)
    https = StdlibHttpTransport(https_url(server), ADMIN_KEY, verify=context)
    with Client(transport=https) as client:
        assert client.list_queues().queues == ()


def engine_event(server: ServerProcess, name: str) -> int:
    found = re.search(
        rf'^okuri_engine_events_total{{event="{name}"}} (\d+)$', server.get("/metrics").text, re.M
    )
    return int(found.group(1)) if found else 0


def test_under_mutual_tls_a_node_forwards_to_the_leader_with_its_own_certificate(
    launch_tls: Launch, ca: Authority, tmp_path: Path
) -> None:
    """Two nodes on one data directory, each demanding client certificates: the second's
    commits reach the queue's leader because it presents its own certificate (one issued for
    both usages), and it checks the leader's against SSL_CERT_FILE's authority."""
    cert, key = tmp_path / "node.pem", tmp_path / "node-key.pem"
    ca.issue(cert, key, "okuri-node", node=True)
    env = {
        "OKURI_TLS_CERT": str(cert),
        "OKURI_TLS_KEY": str(key),
        "OKURI_TLS_CLIENT_CA": str(ca.path),
        "SSL_CERT_FILE": str(ca.path),
    }
    a, b = launch_tls(env), launch_tls(env)
    client_cert, client_key = tmp_path / "client.pem", tmp_path / "client-key.pem"
    ca.issue(client_cert, client_key, "okuri-client", client=True)
    mutual = Config(client_cert=(str(client_cert), str(client_key)))
    sqs_a, sqs_b = boto3_sqs(a, str(ca.path), mutual), boto3_sqs(b, str(ca.path), mutual)
    url = sqs_a.create_queue(QueueName="mtls-peered")["QueueUrl"]
    sqs_a.send_message(QueueUrl=url, MessageBody="first")
    assert len(sqs_a.receive_message(QueueUrl=url).get("Messages", [])) == 1  # a leads
    entries = [{"Id": str(j), "MessageBody": f"m-{j}"} for j in range(10)]
    assert not sqs_b.send_message_batch(QueueUrl=url, Entries=entries).get("Failed")
    got: set[str] = set()
    for _ in range(20):  # receives and deletes through b commit through a, the leader
        msgs = sqs_b.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=30, WaitTimeSeconds=1
        ).get("Messages", [])
        got.update(m["Body"] for m in msgs)
        for m in msgs:
            sqs_b.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        if len(got) == len(entries):
            break
    assert got == {e["MessageBody"] for e in entries}
    assert engine_event(b, "manifest_forwards") > 0
    assert engine_event(b, "manifest_forward_failures") == 0
    assert engine_event(a, "peer_commit_ops") > 0


def test_sighup_serves_the_new_certificate_to_new_connections_and_keeps_it_on_a_bad_reload(
    launch_tls: Launch, server_files: dict[str, str], ca: Authority
) -> None:
    server = launch_tls(server_files)
    first = served_certificate(server, ca)
    cert, key = Path(server_files["OKURI_TLS_CERT"]), Path(server_files["OKURI_TLS_KEY"])
    serial = ca.issue(cert, key, "okuri-server-2")
    os.kill(server.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while (now := served_certificate(server, ca)).serial_number != serial:
        assert time.monotonic() < deadline, "the new certificate was never served"
        time.sleep(0.05)
    assert now.serial_number != first.serial_number
    assert now.subject.rfc4514_string() == "CN=okuri-server-2"

    key.write_text("not a key\n")
    os.kill(server.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while "keeping the TLS certificate in use" not in server.log:
        assert time.monotonic() < deadline, server.log
        time.sleep(0.05)
    assert served_certificate(server, ca).serial_number == serial


def test_a_cert_without_a_key_exits_2_and_unusable_files_refuse_to_start(
    run_to_exit: RunToExit, tmp_path: Path, server_files: dict[str, str]
) -> None:
    alone = run_to_exit({"OKURI_TLS_CERT": server_files["OKURI_TLS_CERT"]})
    assert alone.returncode == 2, alone.stderr
    assert "set both OKURI_TLS_CERT and OKURI_TLS_KEY" in alone.stderr
    assert "Traceback" not in alone.stderr

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    for env in (
        {**server_files, "OKURI_TLS_CERT": str(garbage)},
        {**server_files, "OKURI_TLS_KEY": str(tmp_path / "missing.pem")},
        {**server_files, "OKURI_TLS_CLIENT_CA": str(garbage)},
    ):
        result = run_to_exit(env)
        assert result.returncode == 1, result.stderr
        assert "Traceback" not in result.stderr
        refusals = [ln for ln in result.stderr.splitlines() if ln.startswith("okuri: error: ")]
        assert len(refusals) == 1 and "OKURI_TLS_" in refusals[0], result.stderr
