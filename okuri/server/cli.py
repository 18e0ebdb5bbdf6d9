"""The `okuri` command: `serve`, plus `dst` and `bench cost|sqs` handed to the modules owning them.

Exit codes: 0 done, 1 failed (could not start, pending sends lost, a delegate missing), 2 usage
or settings error. `dst` and `bench ...` import their modules only when invoked, so `okuri serve`
never loads the simulator, and a build without one still serves. Their arguments are passed on
verbatim (argparse's REMAINDER would swallow or reject leading flags such as `--seeds`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from okuri import __version__
from okuri.server.settings import Settings, SettingsError, add_arguments

Delegate = Callable[[list[str]], int]


def _dst(argv: list[str]) -> int:
    from okuri.sim.runner import cli_main

    code: int | None = cli_main(argv)
    return code or 0


def _bench_cost(argv: list[str]) -> int:
    from okuri.bench.cost import cli_main

    code: int | None = cli_main(argv)
    return code or 0


def _bench_sqs(argv: list[str]) -> int:
    from okuri.bench.sqs import cli_main

    code: int | None = cli_main(argv)
    return code or 0


# Commands whose arguments belong to another module: the words naming them -> (module, runner).
DELEGATES: dict[tuple[str, ...], tuple[str, Delegate]] = {
    ("dst",): ("okuri.sim.runner", _dst),
    ("bench", "cost"): ("okuri.bench.cost", _bench_cost),
    ("bench", "sqs"): ("okuri.bench.sqs", _bench_sqs),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okuri", description="A job queue whose only durable state lives in an S3 bucket."
    )
    parser.add_argument("--version", action="version", version=f"okuri {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="run a node: SQS listener, health listener, store",
        description="Run an okuri node. Every flag overrides its OKURI_* environment variable.",
    )
    add_arguments(serve)
    commands.add_parser(
        "dst",
        add_help=False,
        help="deterministic simulation: okuri dst [SEED] [--seeds N] [--start S]",
    )
    bench = commands.add_parser("bench", help="benchmarks: okuri bench cost|sqs [--json]")
    bench_commands = bench.add_subparsers(dest="bench_command", metavar="BENCH", required=True)
    bench_commands.add_parser("cost", add_help=False, help="object-store requests per message")
    bench_commands.add_parser("sqs", add_help=False, help="end-to-end SQS throughput, beside moto")
    return parser


def _split(argv: list[str]) -> tuple[list[str], list[str], tuple[str, ...] | None]:
    """(words for argparse, words for a delegate, which delegate) for a delegated command."""
    first = next((i for i, word in enumerate(argv) if not word.startswith("-")), None)
    if first is not None:
        for words in DELEGATES:
            end = first + len(words)
            if tuple(argv[first:end]) == words:
                return argv[:end], argv[end:], words
    return argv, [], None


def _delegate(words: tuple[str, ...], argv: list[str]) -> int:
    module, run = DELEGATES[words]
    command = "okuri " + " ".join(words)
    try:
        return run(argv)
    except ModuleNotFoundError as err:
        if err.name is not None and (module + ".").startswith(err.name + "."):
            why = f"needs {module}, which this build lacks"
        else:
            why = f"cannot load {module}: {err}"
        print(f"okuri: error: `{command}` {why}", file=sys.stderr)
        return 1
    except ImportError as err:
        print(f"okuri: error: `{command}` cannot load {module}: {err}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    head, rest, delegate = _split(argv)
    parser = build_parser()
    try:
        args = parser.parse_args(head)
    except SystemExit as exit_:  # --help, --version, usage errors: argparse already printed
        return exit_.code if isinstance(exit_.code, int) else 2
    if delegate is not None:
        return _delegate(delegate, rest)
    try:
        settings = Settings.load(os.environ, vars(args))
    except SettingsError as err:
        print(f"okuri: error: {err}", file=sys.stderr)
        return 2
    from okuri.server.app import run  # aiohttp and aiobotocore load only when serving

    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
