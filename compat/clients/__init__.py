"""The one table of SDK clients whose traffic okuri is checked against.

Each row names a scenario program (the step lists are in README.md beside this file), how to run
it from the repository root, the queue-name prefix it works under, the scenarios it runs (one per
run, named by OKURI_SCENARIO), how to tell whether it is installed or built, and how its HTTP is
recorded: by vcrpy inside a Python program's own interpreter, or by the recording proxy.
`python -m compat.record` and the live client tests both read this table; adding a client (a
Laravel app, say) is one more row.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository root; commands run from here
# The scenarios every SDK program runs, one per run; the first is each program's default.
SCENARIOS = ("sqs-core", "sqs-fifo")
# The older boto3 whose SQS model speaks the query protocol, in a virtualenv of its own.
BOTO3_QUERY_PYTHON = "compat/clients/boto3-query/.venv/bin/python"
LARAVEL_APP = "tests/smoke/laravel"
# Third-party clients that no package registry serves, read in place (never copied into the
# repository) from ../shared/clients beside the checkout, as on the project's CI and development
# machines, or from where a variable names. A user's own clone has neither until they are
# fetched (README.md, "Set up"); the tests that need them then skip, saying what to fetch.
SHARED_CLIENTS = ROOT.parent / "shared" / "clients"
# The AWS SDK for PHP, in Composer's vendor/ layout, that tests/smoke/laravel loads beside
# Debian's Laravel when the app has no vendor/ of its own (tests/smoke/laravel/bootstrap).
AWS_SDK_PHP_VARIABLE = "AWS_SDK_PHP_VENDOR"
# AWS's boto3 SQS examples: python/example_code/sqs and python/test_tools of a checkout of
# AWS's example collection at this commit, whose 33 tests (and their switch that sends every
# call to the endpoint instead of stubs) tests/compat/test_aws_sdk_examples.py expects.
AWS_EXAMPLES_VARIABLE = "AWS_DOC_SDK_EXAMPLES"
AWS_EXAMPLES_REPOSITORY = "https://github.com/awsdocs/aws-doc-sdk-examples.git"
AWS_EXAMPLES_COMMIT = "176c601445f4d4e42a2124617980724f193738a8"


def aws_sdk_php(environ: Mapping[str, str] = os.environ) -> Path:
    """The Composer vendor/ folder the smoke app reads the AWS SDK for PHP from: the one
    AWS_SDK_PHP_VENDOR names, else ../shared/clients/aws-sdk-php/vendor."""
    return Path(environ.get(AWS_SDK_PHP_VARIABLE) or SHARED_CLIENTS / "aws-sdk-php" / "vendor")


def aws_examples(environ: Mapping[str, str] = os.environ) -> Path:
    """The folder of AWS's boto3 SQS examples: python/example_code/sqs of the checkout
    AWS_DOC_SDK_EXAMPLES names, else of ../shared/clients/aws-doc-sdk-examples."""
    checkout = environ.get(AWS_EXAMPLES_VARIABLE) or SHARED_CLIENTS / "aws-doc-sdk-examples"
    return Path(checkout) / "python" / "example_code" / "sqs"


def aws_examples_missing(environ: Mapping[str, str] = os.environ) -> str | None:
    """None if AWS's boto3 SQS examples are there to run; otherwise what is missing and how to
    get it."""
    sqs = aws_examples(environ)
    test_tools = sqs.parents[1] / "test_tools"
    if (sqs / "test").is_dir() and test_tools.is_dir():
        return None
    return (
        f"AWS's boto3 SQS examples are missing: no {sqs / 'test'} and {test_tools}. "
        f"Clone {AWS_EXAMPLES_REPOSITORY} at commit {AWS_EXAMPLES_COMMIT[:12]} into "
        f"../shared/clients/aws-doc-sdk-examples beside the checkout, or set "
        f"{AWS_EXAMPLES_VARIABLE} to such a checkout (README.md, Set up)"
    )


@dataclass(frozen=True)
class Client:
    name: str  # also the recordings' file names (see recording_name)
    command: tuple[str, ...]  # argv, paths relative to ROOT
    prefix: str  # OKURI_SCENARIO_PREFIX: every queue the program makes starts with it
    requires: tuple[str, ...]  # files (relative to ROOT) that exist once the program is built
    check: Callable[[], str | None]  # None when runnable, else why not and how to fix it
    # What the program runs, one scenario per run; its SCENARIO line must name the one asked for.
    scenarios: tuple[str, ...] = SCENARIOS
    # A Python program (`python PROGRAM`) whose interpreter has vcrpy: recorded by vcrpy in
    # process (compat/vcr_record.py). Any other program is recorded by compat/proxy.py.
    vcrpy: bool = False
    # Variables the program needs besides the contract's (where third-party code it loads lives).
    environ: Callable[[], dict[str, str]] = lambda: {}

    def argv(self) -> list[str]:
        """The command with the interpreter resolved and program paths made absolute."""
        first, *rest = self.command
        if first == "python":
            first = sys.executable
        elif "/" in first:
            first = str(ROOT / first)
        return [first, *(str(ROOT / a) if a.startswith("compat/") else a for a in rest)]

    def vcrpy_argv(self, cassette: Path) -> list[str]:
        """The command run under vcrpy, recording into `cassette`: `python -m compat.vcr_record
        CASSETTE PROGRAM [ARG ...]` with the program's own interpreter."""
        if not self.vcrpy:
            raise ValueError(f"{self.name} is not recorded by vcrpy")
        interpreter, *program = self.argv()
        return [interpreter, "-m", "compat.vcr_record", str(cassette), *program]

    def recording_name(self, scenario: str) -> str:
        """The cassette's file stem: the client's name for its first scenario (sqs-core), else
        `<name>.<scenario>` (compat/recordings/aws-sdk-go-v1.sqs-fifo.yaml)."""
        return self.name if scenario == self.scenarios[0] else f"{self.name}.{scenario}"

    def missing(self) -> str | None:
        """None if the program can run here; otherwise a sentence saying what to build."""
        for path in self.requires:
            if not (ROOT / path).exists():
                return f"{path} is missing"
        return self.check()


def _python_modules(*names: str) -> Callable[[], str | None]:
    def check() -> str | None:
        for name in names:
            if importlib.util.find_spec(name) is None:
                return f"the Python package {name} is not installed (make install)"
        return None

    return check


def _executable(name: str, hint: str) -> Callable[[], str | None]:
    def check() -> str | None:
        return None if shutil.which(name) else f"{name} is not on PATH ({hint})"

    return check


def _virtualenv(directory: str) -> Callable[[], str | None]:
    """A client's own virtualenv under `directory`: installed by `make clients` (which touches
    .venv/.installed last) from, and no older than, that directory's requirements.txt."""

    def check() -> str | None:
        stamp, pins = ROOT / directory / ".venv/.installed", ROOT / directory / "requirements.txt"
        if not stamp.exists():
            return f"{directory}/.venv is not installed (make clients)"
        if pins.stat().st_mtime > stamp.stat().st_mtime:
            return f"{directory}/.venv is older than its requirements.txt (make clients)"
        return None

    return check


def _nothing() -> str | None:
    return None


def laravel_sdk_missing(environ: Mapping[str, str] = os.environ) -> str | None:
    """None if the smoke app can find the AWS SDK for PHP: composer's vendor/ in the app, or the
    vendor/ folder of `aws_sdk_php`; otherwise what is missing and how to get it."""
    if (ROOT / LARAVEL_APP / "vendor" / "autoload.php").is_file():
        return None
    vendor = aws_sdk_php(environ)
    if (vendor / "aws" / "aws-sdk-php" / "src" / "Sdk.php").is_file():
        return None
    return (
        f"the AWS SDK for PHP is missing: neither {LARAVEL_APP}/vendor nor {vendor} holds "
        "aws/aws-sdk-php. Run `composer require aws/aws-sdk-php` in a folder of your own and "
        f"set {AWS_SDK_PHP_VARIABLE} to its vendor/ (or put that vendor/ at "
        "../shared/clients/aws-sdk-php/vendor beside the checkout), or run `composer install` "
        f"in {LARAVEL_APP}, which installs Laravel too (README.md, Set up)"
    )


def laravel_loader_environ(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The variables that tell the smoke app (or a copy of it elsewhere) where Laravel and the
    SDK are: composer's autoloader in the app, else the SDK's vendor/ folder. Spelled out, since
    the programs' environments drop every other AWS_* variable."""
    composer = ROOT / LARAVEL_APP / "vendor" / "autoload.php"
    if composer.is_file():
        return {"LARAVEL_VENDOR_AUTOLOAD": str(composer)}
    return {AWS_SDK_PHP_VARIABLE: str(aws_sdk_php(environ))}


def _laravel() -> str | None:
    """php on PATH, the AWS SDK for PHP where the app looks for it, and the app's artisan loading
    Laravel and the SDK: composer's vendor/ in the app, else Debian's packaged Laravel with the
    shared SDK (tests/smoke/laravel/bootstrap/autoload.php)."""
    if shutil.which("php") is None:
        return "php is not on PATH (make clients installs Debian's PHP and Laravel packages)"
    sdk = laravel_sdk_missing()
    if sdk is not None:
        return sdk
    try:
        done = subprocess.run(
            ["php", f"{LARAVEL_APP}/artisan", "okuri:smoke", "--check"],
            cwd=ROOT,
            env={**os.environ, **laravel_loader_environ()},
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        return f"php {LARAVEL_APP}/artisan okuri:smoke --check did not finish in 60 s"
    if done.returncode != 0:
        why = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or ["no output"]
        return f"{LARAVEL_APP} cannot load Laravel and aws-sdk-php: {why[0]}"
    return None


CLIENTS: dict[str, Client] = {
    c.name: c
    for c in (
        Client(
            "boto3",
            ("python", "compat/clients/boto3/scenario.py"),
            "boto3-",
            (),
            _python_modules("boto3", "vcr"),
            vcrpy=True,
        ),
        Client(
            "boto3-query",
            (BOTO3_QUERY_PYTHON, "compat/clients/boto3/scenario.py"),
            "boto3q-",
            (BOTO3_QUERY_PYTHON,),
            _virtualenv("compat/clients/boto3-query"),
            vcrpy=True,
        ),
        Client(
            "aws-sdk-js-v3",
            ("node", "compat/clients/js/scenario.mjs"),
            "js-v3-",
            (
                "compat/clients/js/scenario.mjs",
                "compat/clients/js/node_modules/@aws-sdk/client-sqs/package.json",
            ),
            _executable("node", "install Node.js, then npm ci in compat/clients/js"),
        ),
        Client(
            "aws-sdk-go-v1",
            ("compat/clients/go/bin/scenario-v1",),
            "go-v1-",
            ("compat/clients/go/bin/scenario-v1",),
            _nothing,
        ),
        Client(
            "aws-sdk-go-v2",
            ("compat/clients/go/bin/scenario-v2",),
            "go-v2-",
            ("compat/clients/go/bin/scenario-v2",),
            _nothing,
        ),
        Client(
            "laravel",
            ("php", f"{LARAVEL_APP}/artisan", "okuri:smoke"),
            "laravel-",
            (f"{LARAVEL_APP}/artisan",),
            _laravel,
            scenarios=("laravel-queue", "laravel-fifo"),
            environ=laravel_loader_environ,
        ),
    )
}


def select(names: list[str]) -> list[Client]:
    """The clients named (all of them for an empty list); an unknown name is a ValueError."""
    if not names:
        return list(CLIENTS.values())
    unknown = [n for n in names if n not in CLIENTS]
    if unknown:
        raise ValueError(f"unknown client(s) {', '.join(unknown)}; known: {', '.join(CLIENTS)}")
    return [CLIENTS[n] for n in names]
