"""Run boto3 example programs, unmodified, against okuri, and report pass or fail for each.

Two sets of programs:

- this folder's own examples (every `*.py` here except this runner and `_`-prefixed helpers),
  each a standalone script configured only by the standard AWS environment variables, which
  exits non-zero when what it shows did not happen;
- with `--aws-examples PATH`, the SQS programs of a checkout of AWS's public SDK example
  collection (`PATH/python/example_code/sqs`), run as they are, then the collection's pytest
  tests for them in real-AWS mode (see `_aws_real_mode.py`), with AWS_ENDPOINT_URL pointing at
  okuri.

Given `--endpoint`, the runner starts nothing and uses that endpoint; otherwise it starts a
fresh `okuri serve` on free loopback ports with a temporary data directory and a fixed key pair,
and stops it (by its pid) at the end. Every program runs in its own process, bounded in time;
a program that outlives its bound is killed with its process group and counted as failed.

    python -m compat.boto3_examples.run [--aws-examples PATH] [--endpoint URL]

Exit status: 0 if everything passed, 1 if anything failed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from compat.server import ROOT, clean_environ, okuri_serve

EXAMPLES_DIR = Path(__file__).resolve().parent
RUNNER_FILES = frozenset({"run.py", "__init__.py"})

# The key pair a runner-started okuri accepts; it never leaves this machine's loopback.
EXAMPLES_KEY_ID = "AKIDOKURIEXAMPLES"
EXAMPLES_SECRET = "okuri-examples-secret"
# okuri's local development pair, used with --endpoint when no AWS_* keys are set.
LOCAL_KEY_ID, LOCAL_SECRET = "okuri", "okuri-local-secret"
REGION = "us-east-1"

EXAMPLE_TIMEOUT_S = 60.0
AWS_PROGRAM_TIMEOUT_S = 180.0
AWS_TESTS_TIMEOUT_S = 900.0
OUTPUT_TAIL_CHARS = 4000

AWS_SQS_FOLDER = Path("python", "example_code", "sqs")
REAL_AWS_PLUGIN = "compat.boto3_examples._aws_real_mode"
REAL_AWS_OPTION = "--use-real-aws-may-incur-charges"
# What an interactive demo is fed, and only if its source shows that it reads stdin.
DEFAULT_ANSWERS = "y\n" * 50


@dataclass(frozen=True)
class Target:
    """An SQS endpoint and the credentials to sign for it."""

    endpoint_url: str
    access_key_id: str
    secret_access_key: str
    region: str = REGION

    def environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """This process's environment with every AWS_* and OKURI_* variable replaced.

        Shared config and credential files are pointed at nothing so that a developer's
        profile (another endpoint, a session token) cannot leak into the programs.
        """
        env = clean_environ()
        env.update(
            AWS_ENDPOINT_URL=self.endpoint_url,
            AWS_ACCESS_KEY_ID=self.access_key_id,
            AWS_SECRET_ACCESS_KEY=self.secret_access_key,
            AWS_DEFAULT_REGION=self.region,
            AWS_CONFIG_FILE=os.devnull,
            AWS_SHARED_CREDENTIALS_FILE=os.devnull,
            AWS_EC2_METADATA_DISABLED="true",
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
        )
        env.update(extra or {})
        return env


@dataclass(frozen=True)
class Outcome:
    """How one program or one test ended: passed, failed, error or skipped."""

    kind: str  # "example", "aws program" or "aws test"
    name: str
    status: str
    seconds: float
    detail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class Finished:
    returncode: int | None  # None: killed at its time bound
    output: str
    seconds: float


def _tail(text: str) -> str:
    return text if len(text) <= OUTPUT_TAIL_CHARS else "..." + text[-OUTPUT_TAIL_CHARS:]


def run_program(
    argv: Sequence[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin_text: str | None = None,
) -> Finished:
    """Run one program to its end or its time bound; stdout and stderr together."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL if stdin_text is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, so a timeout takes its children too
    )
    try:
        output, _ = proc.communicate(stdin_text, timeout=timeout_s)
        returncode: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this call started, nothing else
        output, _ = proc.communicate()
        output += f"\n[killed after {timeout_s:.0f} s]"
        returncode = None
    return Finished(returncode, output, time.perf_counter() - start)


# --- this folder's examples ------------------------------------------------------------------


def discover_examples() -> list[Path]:
    """Every example script in this folder, by name."""
    return sorted(
        path
        for path in EXAMPLES_DIR.glob("*.py")
        if path.name not in RUNNER_FILES and not path.name.startswith("_")
    )


def run_example(
    script: Path, target: Target, timeout_s: float = EXAMPLE_TIMEOUT_S, python: str | None = None
) -> Outcome:
    done = run_program(
        [python or sys.executable, str(script)], script.parent, target.environ(), timeout_s
    )
    status = "passed" if done.returncode == 0 else "failed"
    return Outcome("example", script.stem, status, done.seconds, _tail(done.output))


# --- AWS's SDK example collection ------------------------------------------------------------


def aws_sqs_folder(checkout: Path) -> Path:
    folder = checkout / AWS_SQS_FOLDER
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder; is {checkout} the collection's root?")
    return folder


def aws_programs(checkout: Path) -> list[Path]:
    """The runnable programs of the collection's SQS folder: those with a main guard."""
    return sorted(
        path
        for path in aws_sqs_folder(checkout).glob("*.py")
        if "__name__ == " in path.read_text(errors="replace")
    )


def reads_stdin(source: str) -> bool:
    """Whether a program's source shows it asks the user for input."""
    return any(sign in source for sign in ("input(", "sys.stdin", "demo_tools"))


def run_aws_program(
    program: Path,
    target: Target,
    python: str,
    timeout_s: float = AWS_PROGRAM_TIMEOUT_S,
    answers: str = DEFAULT_ANSWERS,
) -> Outcome:
    stdin_text = answers if reads_stdin(program.read_text(errors="replace")) else None
    done = run_program(
        [python, program.name], program.parent, target.environ(), timeout_s, stdin_text
    )
    status = "passed" if done.returncode == 0 else "failed"
    return Outcome("aws program", program.name, status, done.seconds, _tail(done.output))


def _junit_outcomes(report: Path) -> list[Outcome]:
    outcomes = []
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        status, detail = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                detail = _tail(f"{child.get('message', '')}\n{child.text or ''}".strip())
                break
        outcomes.append(Outcome("aws test", name, status, float(case.get("time", 0)), detail))
    return outcomes


def run_aws_tests(
    checkout: Path, target: Target, python: str, timeout_s: float = AWS_TESTS_TIMEOUT_S
) -> list[Outcome]:
    """The collection's own SQS tests, in real-AWS mode, one outcome per test."""
    folder = aws_sqs_folder(checkout)
    with tempfile.TemporaryDirectory(prefix="okuri-aws-tests-") as tmp:
        report = Path(tmp) / "report.xml"
        pythonpath = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        done = run_program(
            [
                python, "-m", "pytest", "test",
                "-p", REAL_AWS_PLUGIN, REAL_AWS_OPTION,
                "-p", "no:cacheprovider",
                "-q", "--tb=short", "-o", "junit_family=xunit2", f"--junitxml={report}",
            ],
            folder,
            target.environ({"PYTHONPATH": pythonpath}),
            timeout_s,
        )  # fmt: skip
        if report.exists():
            outcomes = _junit_outcomes(report)
            if outcomes:
                return outcomes
    status = "failed" if done.returncode is not None else "error"
    return [Outcome("aws test", "pytest session", status, done.seconds, _tail(done.output))]


# --- an okuri of our own ---------------------------------------------------------------------


@contextlib.contextmanager
def okuri_server() -> Iterator[Target]:
    """A fresh `okuri serve` on free 127.0.0.1 ports and a temporary data dir, ready to use."""
    settings = {"OKURI_ACCESS_KEY_ID": EXAMPLES_KEY_ID, "OKURI_SECRET_ACCESS_KEY": EXAMPLES_SECRET}
    with (
        tempfile.TemporaryDirectory(prefix="okuri-examples-") as tmp,
        okuri_serve(Path(tmp), settings) as url,
    ):
        yield Target(url, EXAMPLES_KEY_ID, EXAMPLES_SECRET)


# --- the command line ------------------------------------------------------------------------


def report(outcomes: Sequence[Outcome], verbose: bool = False) -> None:
    """One line per program or test, with a failure's output (or any, if verbose) below it."""
    for outcome in outcomes:
        print(
            f"{outcome.status.upper():7} {outcome.kind:11} {outcome.name} ({outcome.seconds:.2f} s)"
        )
        if (verbose or not outcome.passed) and outcome.detail:
            print("\n".join("        " + line for line in outcome.detail.splitlines()))


def summary(outcomes: Sequence[Outcome]) -> list[str]:
    """Totals per kind, then the name of everything that did not pass."""
    lines = []
    for kind in dict.fromkeys(o.kind for o in outcomes):
        of_kind = [o for o in outcomes if o.kind == kind]
        counts = {
            s: sum(o.status == s for o in of_kind) for s in dict.fromkeys(o.status for o in of_kind)
        }
        lines.append(
            f"{kind}: {len(of_kind)} run, " + ", ".join(f"{n} {s}" for s, n in counts.items())
        )
    lines += [f"  {o.status}: {o.kind} {o.name}" for o in outcomes if not o.passed]
    return lines


def run_all(args: argparse.Namespace, target: Target) -> list[Outcome]:
    outcomes: list[Outcome] = []
    python = args.python or sys.executable
    if not args.skip_own:
        for script in discover_examples():
            timeout_s = args.timeout_s or EXAMPLE_TIMEOUT_S
            outcomes.append(run_example(script, target, timeout_s, python))
            report(outcomes[-1:], args.verbose)
    if args.aws_examples:
        checkout = Path(args.aws_examples).resolve()
        for program in aws_programs(checkout):
            timeout_s = args.timeout_s or AWS_PROGRAM_TIMEOUT_S
            outcomes.append(run_aws_program(program, target, python, timeout_s))
            report(outcomes[-1:], args.verbose)
        tests = run_aws_tests(checkout, target, python)
        report(tests, args.verbose)
        outcomes.extend(tests)
    return outcomes


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m compat.boto3_examples.run",
        description="Run boto3 example programs, unmodified, against okuri.",
    )
    parser.add_argument(
        "--aws-examples",
        metavar="PATH",
        help="a checkout of AWS's SDK example collection; runs PATH/python/example_code/sqs "
        "and its tests in real-AWS mode",
    )
    parser.add_argument("--skip-own", action="store_true", help="skip this folder's examples")
    parser.add_argument(
        "--endpoint", help="use this SQS endpoint instead of starting an okuri of our own"
    )
    parser.add_argument("--access-key-id", help="with --endpoint (default: AWS_ACCESS_KEY_ID)")
    parser.add_argument(
        "--secret-access-key", help="with --endpoint (default: AWS_SECRET_ACCESS_KEY)"
    )
    parser.add_argument("--region", default=os.environ.get("AWS_DEFAULT_REGION", REGION))
    parser.add_argument(
        "--python", help="the interpreter for the example programs (default: this one)"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the output of passing programs too"
    )
    parser.add_argument(
        "--timeout-s",
        type=float,
        help=f"time bound per program (default: {EXAMPLE_TIMEOUT_S:.0f} s for this folder's, "
        f"{AWS_PROGRAM_TIMEOUT_S:.0f} s for AWS's; their test session gets "
        f"{AWS_TESTS_TIMEOUT_S:.0f} s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.skip_own and not args.aws_examples:
        build_parser().error("--skip-own leaves nothing to run without --aws-examples")
    if args.aws_examples:
        try:
            aws_sqs_folder(Path(args.aws_examples))
        except FileNotFoundError as err:
            build_parser().error(str(err))
    if args.endpoint:
        target = Target(
            args.endpoint,
            args.access_key_id or os.environ.get("AWS_ACCESS_KEY_ID", LOCAL_KEY_ID),
            args.secret_access_key or os.environ.get("AWS_SECRET_ACCESS_KEY", LOCAL_SECRET),
            args.region,
        )
        outcomes = run_all(args, target)
    else:
        with okuri_server() as target:
            print(f"okuri serving on {target.endpoint_url}")
            outcomes = run_all(args, target)
    print("-" * 60)
    print("\n".join(summary(outcomes)))
    return 0 if outcomes and all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
