"""`python -m bench readme`: the README's set-up timings, measured on a fresh clone.

Why: the README's figures went stale and named their machines loosely (issue 41), so they are
one table (bench/readme_table.py) that this one command measures and rewrites. Each command
runs on a fresh `git clone` of this checkout's HEAD in a temporary directory, from a shell's
environment without a virtualenv or okuri's and AWS's variables, then once more in that clone:
`make serve` timed until its health listener answers /readyz (then its process group, which
this started, is stopped by its pid), `make check`, and with --make-test `make test` (about
twenty minutes). Before each, the machine's speed is measured (bench/floor.py's 10-million-step
Python loop) and printed beside it, so a slow run can be told from a slow machine. The clone
has `../shared` beside it as this checkout does (a link), so `make test` finds the third-party
clients there. --write puts the measured rows in README.md, keeping the others.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from bench.flags import bounded
from bench.floor import machine_loop_s
from bench.launch import ROOT, answers, free_ports, tail
from bench.readme_table import (
    BY_NAME,
    END,
    START,
    Timing,
    check_rewritable,
    render_row,
    rewrite,
)

README = ROOT / "README.md"
RUN_S_MAX = 7200.0
READY_POLL_S = 0.2
STOP_S = 15.0
# What a shell started for the command must not inherit: a developer's okuri and AWS settings,
# and an activated virtualenv (the clone makes its own).
DROP = ("OKURI_", "AWS_", "PYTHON", "VIRTUAL_ENV", "PIP_CACHE_DIR")


class MeasureFailed(Exception):
    """A command did not finish, or did not serve, as it should; the message ends with its log."""


def shell_environ(environ: Mapping[str, str], pip_cache: Path | None) -> dict[str, str]:
    """`environ` as a new shell would have it: none of DROP, and no virtualenv's bin on PATH;
    with `pip_cache`, pip's cache there (an empty one, for a fresh machine's first run)."""
    env = {k: v for k, v in environ.items() if not k.startswith(DROP)}
    paths = env.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(p for p in paths if not (Path(p).parent / "pyvenv.cfg").is_file())
    if pip_cache is not None:
        env["PIP_CACHE_DIR"] = str(pip_cache)
    return env


def clone(into: Path) -> Path:
    """A fresh clone of this checkout's HEAD at `into`/okuri, with `../shared` beside it when
    this checkout has one."""
    target = into / "okuri"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(target)], check=True,
                   stdin=subprocess.DEVNULL)  # fmt: skip
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (into / "shared").symlink_to(shared, target_is_directory=True)
    return target


def _start(
    argv: list[str], where: Path, env: Mapping[str, str], log: Path
) -> subprocess.Popen[bytes]:
    """`argv` in a process group of its own (make and what it starts), output appended to log."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv,
            cwd=where,
            env=dict(env),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group this started (by its leader's pid), then SIGKILL it."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=STOP_S)
        except subprocess.TimeoutExpired:
            continue


def time_serve(where: Path, env: Mapping[str, str], log: Path, timeout_s: float) -> float:
    """Seconds from `make serve` to its health listener answering /readyz; then stopped."""
    port, health = free_ports(2)
    env = {**env, "OKURI_LISTEN": f"127.0.0.1:{port}", "OKURI_HEALTH_LISTEN": f"127.0.0.1:{health}"}
    start = time.monotonic()
    proc = _start(["make", "serve"], where, env, log)
    try:
        while not answers(f"http://127.0.0.1:{health}/readyz"):
            if proc.poll() is not None:
                raise MeasureFailed(f"make serve exited {proc.returncode}\n{tail(log)}")
            if time.monotonic() - start > timeout_s:
                raise MeasureFailed(f"make serve: not serving in {timeout_s:g} s\n{tail(log)}")
            time.sleep(READY_POLL_S)
        return time.monotonic() - start
    finally:
        _stop(proc)


def time_make(
    target: str, where: Path, env: Mapping[str, str], log: Path, timeout_s: float
) -> float:
    """Seconds `make TARGET` takes to succeed."""
    start = time.monotonic()
    proc = _start(["make", target], where, env, log)
    try:
        code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise MeasureFailed(f"make {target}: no end in {timeout_s:g} s\n{tail(log)}") from None
    finally:
        _stop(proc)
    if code != 0:
        raise MeasureFailed(f"make {target} exited {code}\n{tail(log)}")
    return time.monotonic() - start


Timer = Callable[[Path, Mapping[str, str], Path, float], float]
TIMERS: dict[str, Timer] = {
    "make serve": time_serve,
    "make check": lambda where, env, log, t: time_make("check", where, env, log, t),
    "make test": lambda where, env, log, t: time_make("test", where, env, log, t),
}


@contextmanager
def fresh_clone(name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"okuri-bench-readme-{name}-") as tmp:
        yield clone(Path(tmp))


def measure(command: str, empty_pip_cache: bool, later: bool, timeout_s: float) -> Timing:
    """`command` on a fresh clone, then (with `later`) once more there."""
    timer = TIMERS[command]
    with fresh_clone(command.split()[-1]) as where:
        cache = where.parent / "pip-cache" if empty_pip_cache else None
        env = shell_environ(os.environ, cache)
        log = where.parent / "run.log"
        loop_s = machine_loop_s()
        first_s = timer(where, env, log, timeout_s)
        later_s = timer(where, env, log, timeout_s) if later else None
    return Timing(
        command=command,
        first_s=first_s,
        later_s=later_s,
        loop_s=loop_s,
        cores=os.cpu_count() or 1,
        pip_cache="empty" if empty_pip_cache else "warm",
        day=dt.date.today().isoformat(),
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench readme",
        description="Time the README's set-up commands on a fresh clone of this checkout's HEAD "
        "(make serve until it answers, make check; make test with --make-test), each beside "
        "the machine's speed, and print (or --write) the README's timings table.",
    )
    add = p.add_argument
    add("--make-test", action="store_true", help="also time make test (about twenty minutes)")
    add("--only", choices=sorted(BY_NAME), action="append",
        help="time only this command (repeatable)")  # fmt: skip
    add("--no-later", action="store_true", help="time the first run only, not a second one")
    add("--empty-pip-cache", action="store_true",
        help="give each fresh clone an empty pip cache, as on a fresh machine")  # fmt: skip
    add("--timeout-s", type=bounded(float, 10, RUN_S_MAX), default=3600.0,
        help="at most this long for each run")  # fmt: skip
    add("--write", action="store_true", help="put the measured rows in README.md")
    return p


def cli_main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    commands = args.only or ["make serve", "make check"] + (["make test"] if args.make_test else [])
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    print(f"fresh clones of HEAD {head} (commit changes first: a clone has only what is committed)")
    text = README.read_text()
    try:
        check_rewritable(text, commands)
    except ValueError as err:
        print(f"python -m bench readme: error: README.md's timings table: {err}", file=sys.stderr)
        return 2
    measured = []
    for command in commands:
        print(f"{command}: measuring...", flush=True)
        try:
            timing = measure(command, args.empty_pip_cache, not args.no_later, args.timeout_s)
        except MeasureFailed as err:
            print(f"python -m bench readme: error: {err}", file=sys.stderr)
            return 1
        measured.append(timing)
        print(render_row(timing), flush=True)
    updated = rewrite(README.read_text(), measured)
    if args.write:
        README.write_text(updated)
        print(f"rewrote {README.name}'s timings table")
    else:
        print("\nthe table, as --write would put it in README.md:")
        print(updated[updated.index(START) + len(START) : updated.index(END)].strip())
    return 0
