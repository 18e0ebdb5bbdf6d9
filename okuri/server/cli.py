"""The `okuri` command: `serve`, plus `dst`, `keys ...` and `queues ...` handed to the modules
owning them.

Exit codes: 0 done, 1 failed (could not start, pending sends lost, a delegate missing), 2 usage
or settings error, 141 a delegate's output pipe closed early. The delegates import their
modules only when invoked (plain imports inside functions, so import-linter sees the edges), so
`okuri serve` never loads the simulator or the client the admin commands use, and a build
without one still serves. Their arguments are
passed on verbatim (argparse's REMAINDER would swallow or reject leading flags such as `--seeds`).

The benchmarks are not part of okuri: they live beside it in a checkout (`python -m bench ...`).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Callable

from okuri import __version__
from okuri.server.settings import Settings, SettingsError, add_arguments

Main = Callable[[list[str]], int]


def _dst() -> Main:
    from okuri.sim.runner import cli_main  # the simulator loads only for `okuri dst`

    return cli_main


def _keys_create() -> Main:
    from okuri.principals.keyfile import cli_main

    return cli_main


def _queues() -> Main:
    from okuri.admin.queues import cli_main  # okuri.client loads only for `okuri queues`

    return cli_main


def _keys_list() -> Main:
    from okuri.admin.keys import list_main

    return list_main


def _keys_revoke() -> Main:
    from okuri.admin.keys import revoke_main

    return revoke_main


def _keys_rotate() -> Main:
    from okuri.admin.keys import rotate_main

    return rotate_main


# Commands whose arguments belong to a tool module: the words naming them -> (a function
# importing its `cli_main(argv) -> int`, help).
DELEGATES: dict[tuple[str, ...], tuple[Callable[[], Main], str]] = {
    ("dst",): (_dst, "deterministic simulation: okuri dst [SEED] [--seeds N]"),
    ("keys", "create"): (
        _keys_create,
        "create a native bearer key, or with --sqs an SQS access key: "
        "okuri keys create [--sqs] --role R [--namespace N] --file F",
    ),
    ("keys", "list"): (_keys_list, "list the keys file's keys: okuri keys list [--file F]"),
    ("keys", "revoke"): (_keys_revoke, "remove a key: okuri keys revoke ID [--file F]"),
    ("keys", "rotate"): (
        _keys_rotate,
        "replace a key by a new one, same role and namespace: okuri keys rotate ID [--file F]",
    ),
    ("queues",): (
        _queues,
        "a running okuri's queues, through its native API: "
        "okuri queues list|show|create|purge|delete|peek|redrive",
    ),
}

# `okuri bench ...` before the bench left the package: one line saying where it went.
BENCH_MOVED = (
    "okuri: error: `okuri bench` is not part of the okuri command; "
    "run `python -m bench ...` from a checkout of okuri's repository"
)


DISTRIBUTION = "okuri-queue"  # okuri's name on package indexes; the import package is `okuri`
# An unrelated project that holds the name `okuri` on the Python package index and also installs
# an import package named `okuri`.
FOREIGN_DISTRIBUTION = "okuri"

SIGPIPE_EXIT = 128 + 13  # what a shell reports for a process killed by SIGPIPE


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
    commands.add_parser("dst", add_help=False, help=DELEGATES[("dst",)][1])
    keys = commands.add_parser(
        "keys",
        help="native bearer keys and SQS access keys in the keys file: "
        "okuri keys create|list|revoke|rotate",
    )
    keys_commands = keys.add_subparsers(dest="keys_command", metavar="KEYS", required=True)
    for word in ("create", "list", "revoke", "rotate"):
        keys_commands.add_parser(word, add_help=False, help=DELEGATES[("keys", word)][1])
    commands.add_parser("queues", add_help=False, help=DELEGATES[("queues",)][1])
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
    load, _ = DELEGATES[words]
    command = "okuri " + " ".join(words)
    try:
        run = load()
    except ModuleNotFoundError as err:
        why = f"needs {err.name}, which this build lacks"
        print(f"okuri: error: `{command}` {why}", file=sys.stderr)
        return 1
    except ImportError as err:
        print(f"okuri: error: `{command}` cannot load: {err}", file=sys.stderr)
        return 1
    try:
        code = run(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`okuri dst --seeds 1000 | head`): stop quietly, as a tool killed
        # by SIGPIPE would, and keep the interpreter's last flush from complaining again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT
    return code if isinstance(code, int) else 0


def foreign_distribution_warning() -> str | None:
    """A warning when the unrelated `okuri` distribution is installed beside this one.

    pip lets both write the folder `okuri/` of site-packages: whichever was installed last owns
    the files they share, and uninstalling either deletes them from under the other.
    """
    try:
        version = importlib.metadata.version(FOREIGN_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None
    return (
        f"okuri: warning: the unrelated distribution `{FOREIGN_DISTRIBUTION}` {version} is "
        f"installed beside {DISTRIBUTION}; both install the import package `okuri`, so whichever "
        f"was installed last owns its files. Run `pip uninstall {FOREIGN_DISTRIBUTION} "
        f"{DISTRIBUTION}`, then install {DISTRIBUTION} again."
    )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if (warning := foreign_distribution_warning()) is not None:
        print(warning, file=sys.stderr)
    if next((word for word in argv if not word.startswith("-")), None) == "bench":
        print(BENCH_MOVED, file=sys.stderr)
        return 2
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
    from okuri.server.process import run  # aiohttp and aiobotocore load only when serving

    return run(settings)


if __name__ == "__main__":
    sys.exit(main())
