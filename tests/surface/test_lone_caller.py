"""A lone client waiting on each answer is not held by the linger; two clients share its windows.

The linger (100 ms on S3) caps how often a node writes a queue, so that many clients share each
write. One client that waits on every answer has no one to share with: were its calls held, each
would wait out a whole window (issue 29). One client is one connection: its requests may each run
in a task of their own on the server, so the server names the connection as the caller.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tests.servers import start_server

LINGER_MS = 1500  # far above any round trip here, so a held call cannot hide in the noise


def test_a_lone_client_is_not_held_by_the_linger_and_two_share_it(tmp_path: Path) -> None:
    server = start_server(
        tmp_path, {"OKURI_DATA_DIR": str(tmp_path / "data"), "OKURI_LINGER_MS": str(LINGER_MS)}
    )
    try:
        sqs = server.sqs_client()
        url = sqs.create_queue(QueueName="lone")["QueueUrl"]
        start = time.monotonic()
        for i in range(3):
            sqs.send_message(QueueUrl=url, MessageBody=f"m{i}")
            (m,) = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        lone_s = time.monotonic() - start
        # Nine calls, six of them writes: held, they would take at least five windows.
        assert lone_s < 2 * LINGER_MS / 1000, lone_s

        # Two clients sending at once share the windows: a send waits for the next one.
        times: list[float] = []

        def sender() -> None:
            client = server.sqs_client()
            for i in range(2):
                began = time.monotonic()
                client.send_message(QueueUrl=url, MessageBody=f"shared {i}")
                times.append(time.monotonic() - began)

        threads = [threading.Thread(target=sender) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(times) == 4
        assert max(times) >= LINGER_MS / 1000 * 0.5, times
    finally:
        assert server.terminate() == 0
