"""Run a Python program with vcrpy recording its HTTP: `python -m compat.vcr_record OUT PROG [ARG]`.

How compat.record records the Python SDK clients (boto3, and boto3-query in its own
virtualenv): PROG runs as `__main__` in this interpreter inside vcrpy's `use_cassette(OUT)` in
record mode "all", so every request the SDK sends goes to the real server and is written, with
its answer, to the cassette OUT when the program ends, also when it fails (the recorder then
shows the last exchange). The exit status is the program's.

It runs in the client's interpreter, not okuri's: only the standard library and vcrpy here.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import vcr

USAGE = "usage: python -m compat.vcr_record CASSETTE PROGRAM [ARG ...]"


def _exit_status(code: object) -> int:
    """SystemExit's code as a process would report it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        print(USAGE, file=sys.stderr)
        return 2
    cassette, program, *rest = args
    recorder = vcr.VCR(record_mode="all")
    sys.argv = [program, *rest]
    sys.path.insert(0, str(Path(program).resolve().parent))  # as `python PROGRAM` would
    with recorder.use_cassette(cassette):
        try:
            runpy.run_path(program, run_name="__main__")
        except SystemExit as done:
            return _exit_status(done.code)
    return 0


if __name__ == "__main__":
    sys.exit(main())
