"""The README's Celery quickstart, run as a new user would: every block verbatim, in a fresh
virtualenv, with a clean PATH.

The install block runs in a directory laid out like the checkout (`.venv`, a copy of
`integrations/celery`), so it installs Celery from the package index and okuri-celery from the
copy exactly as written. Only the broker address and key pair in `myapp.py` are replaced, by the
test server's, as the SQS quickstart test replaces only the environment block.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from celery_smoke import CeleryOkuri, CeleryWorker

from tests.readme import block, environment, run_shell
from tests.servers import SQS_KEY, SQS_SECRET

INTEGRATION = Path(__file__).resolve().parents[3] / "integrations" / "celery"
README_BROKER = "sqs://okuri:okuri-local-secret@localhost:8080"
INSTALL_S = 600.0
RUN_S = 60.0


ACTIVATE = ". .venv/bin/activate\n"  # the environment the install block made, as a reader has it


@pytest.mark.timeout(INSTALL_S + 300)  # the install, then a worker, a task and the teardown
def test_readme_celery_quickstart_runs_a_task(celery_okuri: CeleryOkuri, tmp_path: Path) -> None:
    skip = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")
    shutil.copytree(INTEGRATION, tmp_path / "integrations" / "celery", ignore=skip)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / ".venv")], check=True)
    env = environment()
    install = block("quickstart-celery-install")
    assert install.startswith(ACTIVATE)
    proc = run_shell(install, tmp_path, INSTALL_S)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]

    app_source = block("quickstart-celery")
    assert README_BROKER in app_source
    host = celery_okuri.server.url.removeprefix("http://")
    broker = f"sqs://{SQS_KEY}:{SQS_SECRET}@{host}"
    (tmp_path / "myapp.py").write_text(app_source.replace(README_BROKER, broker))

    log_path = tmp_path / "worker.log"
    with open(log_path, "ab") as log:
        worker_proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", ACTIVATE + block("quickstart-celery-worker")],
            cwd=tmp_path,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    worker = CeleryWorker("readme", worker_proc, log_path)
    try:
        sent = run_shell(ACTIVATE + block("quickstart-celery-send"), tmp_path, RUN_S)
        assert sent.returncode == 0, sent.stderr
        task_id = sent.stdout.strip()
        assert task_id, "the send block printed no task id"
        done = f"Task myapp.add[{task_id}] succeeded in"
        deadline = time.monotonic() + RUN_S
        while done not in worker.log and time.monotonic() < deadline:
            if worker_proc.poll() is not None:
                pytest.fail(
                    f"the README's worker exited with {worker_proc.returncode}:\n{worker.log}"
                )
            time.sleep(0.2)
        line = next((ln for ln in worker.log.splitlines() if done in ln), None)
        assert line is not None, f"the task did not run within {RUN_S} s:\n{worker.log[-4000:]}"
        assert line.rstrip().endswith(": 5"), line
    finally:
        worker.stop()
