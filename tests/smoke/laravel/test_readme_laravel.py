"""The README's Laravel quickstart, run as written against a real `okuri serve` that has the
README's key pair.

The smoke app beside this file stands in for the reader's Laravel app: the test copies it and
puts the README's `sqs` connection, verbatim but for the address, in place of the app's own in
`config/queue.php`. Then one shell, started from the checkout with a clean PATH, runs the
README's environment block (which activates `.venv`, where the AWS CLI is) and, in the copy, the
README's Laravel shell block: the AWS CLI creates the `default` queue and `php artisan queue:work
sqs` waits for jobs. Once the queue exists, the app's `okuri:dispatch` sends one job through the
same connection; the test waits until the worker has run it (the app's run log) and deleted it
(the queue is empty), then stops the worker by its pid with SIGTERM, as a process manager
would, and checks that it exits 0 (a failure SIGKILLs the process group the test started
instead). Skips and fails as test_laravel_live.py does (the `laravel` fixture).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from compat.clients import LARAVEL_APP, ROOT, laravel_loader_environ
from okuri.server.settings import DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY
from tests.readme import README, README_ENDPOINT, block, env_block, environment
from tests.servers import ServerProcess, explain, run_or_fail

RUN_S = 60.0  # each wait below; the CLI, the worker's start and one job take a few seconds
STOP_S = 30.0  # the worker stops once its receive returns: within the 10 s long poll
POLL_S = 0.2
JOB = "readme"  # what the dispatched RecordRun job writes in the run log
# The smoke app's own `sqs` connection in config/queue.php, which the README's replaces.
APP_SQS_CONNECTION = re.compile(r"^ *'sqs' => \[\n.*?^ *\],\n", re.M | re.S)


def app_with_readme_config(server: ServerProcess, tmp: Path) -> Path:
    """A copy of the smoke app whose `sqs` connection is the README's, pointed at `server`."""
    fragment = block("quickstart-laravel-config")
    assert fragment.startswith("'sqs' => [\n") and README_ENDPOINT in fragment, fragment
    app = tmp / "app"
    skip = shutil.ignore_patterns("vendor", "storage", "*.sqlite", "*.py", "__pycache__")
    shutil.copytree(ROOT / LARAVEL_APP, app, ignore=skip)
    config = app / "config" / "queue.php"
    spliced, found = APP_SQS_CONNECTION.subn(
        lambda _: fragment.replace(README_ENDPOINT, server.url), config.read_text()
    )
    assert found == 1, f"{LARAVEL_APP}/config/queue.php has {found} `sqs` connections, not 1"
    config.write_text(spliced)
    return app


def in_app(server: ServerProcess, app: Path, script: str) -> list[str]:
    """bash running the README's environment block from the checkout, then `script` in `app`."""
    cd = f"cd {shlex.quote(str(app))}\n"
    return ["bash", "-euo", "pipefail", "-c", env_block(server) + cd + script]


def worker_pid(shell: subprocess.Popen[bytes]) -> int:
    """The pid of `php artisan queue:work`: the shell's, when bash ran its last command in its
    own process (bash 5.1 and later do), else the shell's child."""
    children = Path(f"/proc/{shell.pid}/task/{shell.pid}/children").read_text().split()
    for pid in (shell.pid, *map(int, children)):
        if b"queue:work" in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    pytest.fail(f"no `php artisan queue:work` among pid {shell.pid} and its children {children}")


def stop_worker(shell: subprocess.Popen[bytes]) -> int:
    """SIGTERM the worker, as a process manager stops one: it finishes its receive (a long poll
    of up to the queue's 10 s) and exits. The shell's exit code, which is then the worker's."""
    os.kill(worker_pid(shell), signal.SIGTERM)
    return shell.wait(timeout=STOP_S)


@pytest.mark.usefixtures("laravel")
def test_readme_laravel_quickstart_creates_the_queue_and_its_worker_runs_a_dispatched_job(
    readme_server: ServerProcess, tmp_path: Path, laravel_env: dict[str, str]
) -> None:
    server = readme_server
    app = app_with_readme_config(server, tmp_path)
    shell = block("quickstart-laravel-worker")
    assert README_ENDPOINT in shell and shell.rstrip().endswith("php artisan queue:work sqs")
    env = {**environment(), **laravel_env, **laravel_loader_environ()}
    queue_url = f"{server.url}/000000000000/default"
    run_log = Path(laravel_env["LARAVEL_STORAGE_PATH"]) / "okuri-smoke" / "runs.jsonl"
    log_path = tmp_path / "worker.log"

    def worker_log() -> str:
        return log_path.read_text(errors="replace")

    def wait(what: str, done: Callable[[], bool]) -> None:
        deadline = time.monotonic() + RUN_S
        while not done():
            if worker.poll() is not None:
                why = f"the README's Laravel block exited {worker.returncode} before {what}"
                pytest.fail(explain(why, worker_log(), "", server), pytrace=False)
            if time.monotonic() > deadline:
                why = f"not {what} within {RUN_S} s"
                pytest.fail(explain(why, worker_log(), "", server), pytrace=False)
            time.sleep(POLL_S)

    with open(log_path, "ab") as log:
        worker = subprocess.Popen(
            in_app(server, app, shell.replace(README_ENDPOINT, server.url)),
            cwd=README.parent,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        wait("the AWS CLI created the queue", lambda: queue_url in worker_log())

        sent = run_or_fail(
            in_app(server, app, f"php artisan okuri:dispatch {JOB}"),
            "okuri:dispatch",
            server,
            cwd=README.parent,
            env={**env, "QUEUE_CONNECTION": "sqs"},  # what the README has the app's .env set
            timeout_s=RUN_S,
        )
        assert f"dispatched {JOB} to {queue_url}" in sent.stdout, sent.stdout

        wait("the worker ran the job", lambda: run_log.is_file() and JOB in run_log.read_text())
        sqs = server.sqs_client(DEV_ACCESS_KEY_ID, DEV_SECRET_ACCESS_KEY)
        counts = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]

        def deleted() -> bool:
            got = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=counts)
            return all(got["Attributes"][name] == "0" for name in counts)

        wait("the worker deleted the job", deleted)
        assert stop_worker(worker) == 0, worker_log()
    finally:
        if worker.poll() is None:  # a failure above: SIGKILL the group this test started
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=STOP_S)

    runs = [json.loads(line) for line in run_log.read_text().splitlines() if line]
    assert [(r["job"], r["attempt"]) for r in runs] == [(JOB, 1)], runs
    assert "App\\Jobs\\RecordRun" in worker_log(), worker_log()  # the worker says what it ran
