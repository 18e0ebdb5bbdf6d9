"""`python -m bench SUB ...`: the benchmarks' one entry point, run from a checkout.

Why here and not `okuri bench`: the bench is a tool beside the product, not part of the wheel,
so okuri's own command cannot offer it. Each subcommand's module is imported only when it runs
(several pull in Celery, moto or py-spy), and its arguments are passed on verbatim.

Exit codes: what the subcommand returns (0 done, 1 a check failed, 2 usage), 141 when the
output pipe closed early.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

SIGPIPE_EXIT = 128 + 13  # what a shell reports for a process killed by SIGPIPE

Main = Callable[[list[str]], int]

COMMANDS: dict[str, str] = {
    "cost": "object-store requests per message",
    "sqs": "end-to-end SQS throughput of 1..N nodes, beside an emulator",
    "native": "end-to-end native API throughput (batches of 100) beside the SQS surface's",
    "cluster": "nodes on one store SIGKILLed under load: nothing lost",
    "celery": "one Celery load on okuri (okuri:// and sqs://), Redis and RabbitMQ, side by side",
    "floor": "one sequential caller: each call's p50 beside its floor (hello-world server, writes)",
    "consumers": "simulated SQS consumer loops on one node on an S3 latency model: msgs/s, waits",
    "scaleout": "simulated 1..16 nodes on an S3 latency model: throughput and cost",
    "testing": "one app's test suite under moto's mock_aws, then okuri's pytest fixtures",
    "readme": "the README's set-up commands timed on a fresh clone: its timings table",
}


# Subcommands whose module is not named after them.
MODULES = {"celery": "celery_bench"}


def load(name: str) -> Main:
    """The `cli_main` of subcommand `name`, imported now (and only it)."""
    if name not in COMMANDS:
        raise KeyError(name)
    module = importlib.import_module(f"bench.{MODULES.get(name, name)}")
    main: Main = module.cli_main
    return main


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {text}" for name, text in COMMANDS.items()]
    return "usage: python -m bench SUB [ARGS ...]  (SUB --help for its flags)\n" + "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"python -m bench: error: no subcommand {name!r}\n{usage()}", file=sys.stderr)
        return 2
    try:
        code = load(name)(rest)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`python -m bench cost | head`): stop quietly, as a tool killed by
        # SIGPIPE would, and keep the interpreter's last flush from complaining again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return SIGPIPE_EXIT
    return code


if __name__ == "__main__":
    sys.exit(main())
