"""py-spy sampling one server over a benchmark's measured window, for `python -m bench sqs
--profile`.

Why apart: it is an optional tool around a run, not part of the load or the figures, and it is
the one place that drives an external profiler process (started and stopped by its own pid).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from bench.servers import STOP_S, BenchError, spawn, tail

SAMPLE_RATE_HZ = 250


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

    async def opened(self) -> None:
        self.start()

    async def closed(self) -> None:
        await self.stop()

    def start(self) -> None:
        exe = self.exe or find_py_spy()
        if exe is None:
            raise BenchError("--profile needs py-spy (pip install py-spy)")
        argv = [exe, "record", "--pid", str(self.pid), "--rate", str(SAMPLE_RATE_HZ),
                "--format", "raw", "--gil", "--nonblocking", "--output", self.out]  # fmt: skip
        try:
            self._spy = spawn(argv, dict(os.environ), self.log_path).proc
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
            raise BenchError(f"py-spy wrote no profile:\n{tail(self.log_path)}")
