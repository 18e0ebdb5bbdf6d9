"""`python -m compat.awscli --endpoint-url URL --delete-all-queues [EXAMPLE ...]`: run the AWS
CLI's SQS examples against a running okuri and print what differs from the documentation.

The runner deletes every queue on that okuri before each example (the examples' queue names are
fixed), so point it at a throwaway one. Exit status 1 if any example differs in shape.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

from compat.awscli.examples import discover
from compat.awscli.runner import HANDLED, Runner

LOCAL_KEY_ID, LOCAL_SECRET = "okuri", "okuri-local-secret"  # `okuri serve`'s development pair


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m compat.awscli", description=__doc__)
    parser.add_argument("--endpoint-url", required=True, help="okuri's SQS listener")
    parser.add_argument(
        "--delete-all-queues",
        action="store_true",
        help="required: confirms that every queue on that okuri may be deleted",
    )
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--notes", action="store_true", help="also print value differences")
    parser.add_argument("examples", nargs="*", help="run only ids containing one of these")
    args = parser.parse_args(argv)
    if not args.delete_all_queues:
        parser.error("--delete-all-queues is required: each example starts from an empty okuri")
    files = discover()
    unparsed = [f for f in files if f.error]
    unhandled = {f.name for f in files} ^ HANDLED
    examples = [
        example
        for f in files
        for example in f.examples
        if not args.examples or any(wanted in example.id for wanted in args.examples)
    ]
    with tempfile.TemporaryDirectory(prefix="okuri-awscli-") as workdir:
        runner = Runner(
            args.endpoint_url,
            os.environ.get("AWS_ACCESS_KEY_ID", LOCAL_KEY_ID),
            os.environ.get("AWS_SECRET_ACCESS_KEY", LOCAL_SECRET),
            Path(workdir),
            region=args.region,
        )
        outcomes = [runner.run(example) for example in examples]
    for outcome in outcomes:
        if not outcome.passed or args.notes:
            print(outcome.report(), end="\n\n")
    per_action: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    for outcome in outcomes:
        per_action[outcome.action] += 1
        passed[outcome.action] += outcome.passed
    for action in sorted(per_action):
        print(f"{action:32} {passed[action]}/{per_action[action]}")
    commands = sum(len(o.example.commands) for o in outcomes)
    print(
        f"{len(files)} example files, {len(examples)} examples ({commands} commands), "
        f"{sum(passed.values())} as documented"
    )
    for f in unparsed:
        print(f"not understood: {f.error}")
    if unhandled:
        print(f"example files the runner does not handle (or no longer finds): {sorted(unhandled)}")
    return 0 if all(o.passed for o in outcomes) and not unparsed and not unhandled else 1


if __name__ == "__main__":
    sys.exit(main())
