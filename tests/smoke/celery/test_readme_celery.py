"""The README's Celery quickstart, run as written: its app module and its worker command.

Only the broker address and key pair are supplied (the test server's instead of localhost:8080's
development pair), as the SQS quickstart test supplies only the environment block.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery_smoke import CeleryOkuri, CeleryWorker

from tests.servers import SQS_KEY, SQS_SECRET
from tests.surface.test_readme_quickstart import block

INTEGRATION = Path(__file__).resolve().parents[3] / "integrations" / "celery"
README_BROKER = "sqs://okuri:okuri-local-secret@localhost:8080"
TASK = """

@app.task
def touch(path):
    with open(path, "w") as f:
        f.write("ran")
"""
RUN_S = 60.0


def test_readme_celery_quickstart_runs_a_task(celery_okuri: CeleryOkuri, tmp_path: Path) -> None:
    app_source = block("quickstart-celery")
    assert README_BROKER in app_source
    host = celery_okuri.server.url.removeprefix("http://")
    broker = f"sqs://{SQS_KEY}:{SQS_SECRET}@{host}"
    (tmp_path / "myapp.py").write_text(app_source.replace(README_BROKER, broker) + TASK)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "OKURI_"))},
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(INTEGRATION)]),
    }
    log_path = tmp_path / "worker.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", block("quickstart-celery-worker")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    worker = CeleryWorker("readme", proc, log_path)
    try:
        done = tmp_path / "done"
        send = f"import myapp; myapp.touch.delay({str(done)!r})"
        subprocess.run(
            [sys.executable, "-c", send], env=env, cwd=tmp_path, check=True, timeout=RUN_S
        )
        deadline = time.monotonic() + RUN_S
        while not done.exists() and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"the README's worker exited with {proc.returncode}:\n{worker.log}")
            time.sleep(0.2)
        assert done.exists(), f"the task did not run within {RUN_S} s:\n{worker.log[-4000:]}"
    finally:
        worker.stop()
