"""A throwaway `okuri serve` for compat's tools (the recorder and the boto3 examples runner).

`okuri_serve(workdir, settings)` starts okuri on free 127.0.0.1 ports with its data in
`workdir/data` and its log in `workdir/okuri.log`, waits until /readyz answers (trying fresh
ports when it lost a race for one), yields its SQS URL and stops it by its pid, never by name.
The server sees none of the caller's AWS_* or OKURI_* settings, only those given.

Starting and stopping is bench/launch.py's, the one launcher that the tests and the bench use
too: a tool beside okuri, as compat is, so importing it keeps compat off okuri's internals.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from bench import launch
from bench.launch import ROOT, LaunchError, free_port

__all__ = ["ROOT", "ServerError", "clean_environ", "free_port", "okuri_serve"]

SERVER_START_S = 30.0
SERVER_STOP_S = 10.0


class ServerError(RuntimeError):
    """okuri did not become ready."""


def clean_environ() -> dict[str, str]:
    """This environment minus the AWS_* and OKURI_* settings a developer's shell may have."""
    return launch.clean_environ(("AWS_", "OKURI_"), checkout=False)


@contextlib.contextmanager
def okuri_serve(workdir: Path, settings: Mapping[str, str]) -> Iterator[str]:
    """A fresh, ready `okuri serve` with `settings` (OKURI_* variables); yields its SQS URL."""
    settings = {**settings, "OKURI_DATA_DIR": str(workdir / "data")}
    try:
        served = launch.start_serve(
            settings,
            workdir / "okuri.log",
            base=launch.clean_environ(("AWS_", "OKURI_")),
            timeout_s=SERVER_START_S,
            stop_s=SERVER_STOP_S,
            cwd=ROOT,
        )
    except LaunchError as err:
        raise ServerError(str(err)) from err
    try:
        yield served.url
    finally:
        served.process.stop()
