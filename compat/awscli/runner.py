"""Run one AWS CLI example against a real okuri, the way a user following it would.

For each example the runner:

1. empties okuri (deletes every queue: example queue names are fixed, so examples cannot share
   a server's state) and prepares what the example takes for granted: the queues its URLs and
   ARNs name, messages to receive, receipt handles from a real ReceiveMessage, a dead-letter
   queue holding redriven messages, tags to list, a running message move task;
2. substitutes only what a user would have to substitute anyway: the example's queue URLs
   (`https://sqs.<region>.amazonaws.com/<account>/<Name>`, `https://queue.amazonaws.com/...`)
   become okuri's URL of the queue with that name, ARNs get okuri's region and account, placeholder
   receipt and task handles (`AQEB...==`) become real ones, placeholder account ids okuri's. Every
   flag and option stays as written; `file://` inputs are written out as the .rst shows them;
3. runs each command with the installed `aws` (version 1, which ignores AWS_ENDPOINT_URL, so
   `--endpoint-url` is appended), keys and region from the environment, JSON output;
4. checks the last command's output against the documented one (`shape.compare`), or, for an
   action okuri does not serve, that the CLI reports UnsupportedOperation.

Setup goes through boto3 rather than the CLI: it is scaffolding, not what is under test, and a
subprocess per step would be slow. Which actions okuri serves comes from the action matrix of
docs/sqs-compatibility.md, which tests hold equal to the server's own tables and to a running
server, so an action that lands changes what its examples expect without an edit here (and the
runner, like any user, needs nothing of okuri's internals).
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from compat.awscli.examples import Example
from compat.awscli.shape import compare
from compat.server import clean_environ

__all__ = ["HANDLED", "Outcome", "Runner", "aws_executable", "cli_actions", "okuri_tables"]

NAME = r"[A-Za-z0-9_-]{1,80}"
# Queue URLs and ARNs as the examples write them; group 1 is the queue's name.
EXAMPLE_URL = re.compile(
    rf"https?://(?:[a-z0-9-]+\.)*amazonaws\.com(?:\.cn)?/[^/\s\"\\]+/({NAME})(?![A-Za-z0-9_.-])"
)
EXAMPLE_ARN = re.compile(rf"arn:aws[a-z-]*:sqs:[a-z0-9-]+:[^:\s\"\\]+:({NAME})(?![A-Za-z0-9_.-])")
EXAMPLE_HANDLE = re.compile(r"AQEB[A-Za-z0-9+/=]*\.\.\.[A-Za-z0-9+/=]*")
EXAMPLE_ACCOUNT = re.compile(r"[0-9]*EXAMPLE|[0-9]{12}")
TASK_HANDLE_FLAG = "--task-handle"
# okuri's public list of the SQS actions it serves and refuses, which tests hold equal to the
# server's tables (tests/unit/test_sqs_compatibility_doc.py) and to a running server
# (tests/surface/test_sqs_compatibility_matrix.py).
COMPATIBILITY_DOC = Path(__file__).resolve().parents[2] / "docs" / "sqs-compatibility.md"
MATRIX = re.compile(r"<!-- actions -->(.*?)<!-- /actions -->", re.S)
MATRIX_ROW = re.compile(r"^\| (\w+) \| (supported|unsupported) \|", re.M)

CLI_TIMEOUT_S = 60
RECEIVE_ATTEMPTS = 20  # each a 1 s long poll: a bound on waiting for setup messages
MOVE_TASK_MESSAGES = 10  # a task moving these at 1 message/s is still running when cancelled
# Attributes SetQueueAttributes takes; the others in a documented output are read-only.
SETTABLE_ATTRIBUTES = frozenset(
    {
        "DelaySeconds",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "ReceiveMessageWaitTimeSeconds",
        "VisibilityTimeout",
        "RedrivePolicy",
        "RedriveAllowPolicy",
        "Policy",
        "KmsMasterKeyId",
        "KmsDataKeyReusePeriodSeconds",
        "SqsManagedSseEnabled",
    }
)


# Where an example is older than SQS's current answer, the member SQS now adds is not held
# against okuri: (CLI operation, member path) -> why. Keep this short and cite the change.
DOCUMENTATION_PREDATES: dict[tuple[str, str], str] = {
    ("get-queue-attributes", "Attributes.SqsManagedSseEnabled"): (
        "SQS has enabled SSE-SQS on new queues by default since 2022, so `All` lists "
        "SqsManagedSseEnabled; the example's output is older"
    ),
}


class SetupError(RuntimeError):
    """okuri did not reach the state an example takes for granted."""


def okuri_tables(doc: Path = COMPATIBILITY_DOC) -> tuple[frozenset[str], frozenset[str]]:
    """(actions okuri serves, actions it answers UnsupportedOperation for), from the action
    matrix of docs/sqs-compatibility.md."""
    section = MATRIX.search(doc.read_text())
    if section is None:
        raise ValueError(f"{doc} has no <!-- actions --> matrix")
    rows = MATRIX_ROW.findall(section.group(1))
    served = frozenset(action for action, status in rows if status == "supported")
    return served, frozenset(action for action, status in rows if status == "unsupported") - served


def cli_actions() -> dict[str, str]:
    """CLI operation name -> SQS action name, from botocore's SQS model (as the CLI builds it)."""
    import botocore.session
    from botocore import xform_name

    model = botocore.session.get_session().get_service_model("sqs")
    return {xform_name(name, "-"): name for name in model.operation_names}


def aws_executable() -> str:
    """The `aws` next to this interpreter (the venv's awscli), else the one on PATH."""
    beside = Path(sys.executable).with_name("aws")
    if beside.exists():
        return str(beside)
    found = shutil.which("aws")
    if found is None:
        raise FileNotFoundError("the AWS CLI (pip install awscli) is not installed")
    return found


# --- okuri state, through boto3 ----------------------------------------------------------------


class _Okuri:
    def __init__(self, client: Any) -> None:
        self.client = client
        self.urls: dict[str, str] = {}
        probe = "awscli-examples-probe"
        url = client.create_queue(QueueName=probe)["QueueUrl"]
        arn = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        client.delete_queue(QueueUrl=url)
        self.arn_prefix: str = arn.removesuffix(probe)  # arn:aws:sqs:<region>:<account>:
        self.account_id: str = self.arn_prefix.split(":")[4]
        self.url_prefix: str = url.removesuffix(probe)  # http://host:port/<account>/

    def reset(self) -> None:
        token: str | None = None
        while True:
            more = {"NextToken": token} if token else {}
            page = self.client.list_queues(MaxResults=1000, **more)
            for url in page.get("QueueUrls", []):
                self.client.delete_queue(QueueUrl=url)
            token = page.get("NextToken")
            if not token:
                break
        self.urls.clear()

    def arn(self, name: str) -> str:
        return self.arn_prefix + name

    def url(self, name: str) -> str:
        return self.urls.get(name) or self.url_prefix + name

    def queue(
        self,
        name: str,
        attributes: dict[str, str] | None = None,
        tags: dict[str, str] | None = None,
    ) -> str:
        """Create the queue if it does not exist yet; then set `attributes` on it."""
        if name not in self.urls:
            self.urls[name] = self.client.create_queue(
                QueueName=name, **({"tags": tags} if tags else {})
            )["QueueUrl"]
        if attributes:
            self.client.set_queue_attributes(QueueUrl=self.urls[name], Attributes=attributes)
        return self.urls[name]

    def redrive_to(self, source: str, dead_letters: str, max_receive_count: int) -> None:
        policy = {
            "deadLetterTargetArn": self.arn(dead_letters),
            "maxReceiveCount": max_receive_count,
        }
        self.queue(dead_letters)
        self.queue(source, {"RedrivePolicy": json.dumps(policy)})

    def send(self, name: str, body: str, attributes: dict[str, Any] | None = None) -> None:
        self.client.send_message(
            QueueUrl=self.queue(name),
            MessageBody=body,
            **({"MessageAttributes": attributes} if attributes else {}),
        )

    def visible(self, name: str) -> int:
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.queue(name), AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"])

    def receipt_handles(self, name: str, count: int) -> list[str]:
        """Send `count` messages to the queue and receive them: `count` live receipt handles."""
        for k in range(count):
            self.send(name, f"awscli example message {k + 1}")
        # Received with the queue's visibility timeout (30 s): each receive gets new messages.
        handles: list[str] = []
        for _ in range(RECEIVE_ATTEMPTS):
            got = self.client.receive_message(
                QueueUrl=self.queue(name),
                MaxNumberOfMessages=min(10, count - len(handles)),
                WaitTimeSeconds=1,
            ).get("Messages", [])
            handles += [m["ReceiptHandle"] for m in got]
            if len(handles) >= count:
                return handles
        raise SetupError(f"received {len(handles)} of the {count} messages sent to {name}")

    def dead_letters(self, source: str, dead_letters: str, count: int) -> None:
        """`count` messages in `dead_letters`, moved there from `source` by its RedrivePolicy
        (maxReceiveCount 1): each is received once and made visible again, then one more
        receive finds them past the count and okuri moves them. That receive does not long-poll:
        a long poll that keeps finding the same dead message copies it to the dead-letter queue
        again on every pass (an okuri bug, reported with this runner)."""
        self.redrive_to(source, dead_letters, 1)
        handles = self.receipt_handles(source, count)
        self.client.change_message_visibility_batch(
            QueueUrl=self.queue(source),
            Entries=[
                {"Id": str(i), "ReceiptHandle": handle, "VisibilityTimeout": 0}
                for i, handle in enumerate(handles)
            ],
        )
        self.client.receive_message(
            QueueUrl=self.queue(source), MaxNumberOfMessages=10, WaitTimeSeconds=0
        )
        moved = 0
        for _ in range(RECEIVE_ATTEMPTS):
            moved = self.visible(dead_letters)
            if moved >= count:
                break
            # Wait for the move without sleeping here: a long poll of the dead-letter queue
            # returns when a message lands (leaving it visible).
            self.client.receive_message(
                QueueUrl=self.queue(dead_letters), VisibilityTimeout=0, WaitTimeSeconds=1
            )
        if moved != count:
            raise SetupError(
                f"{dead_letters} holds {moved} messages after {count} were dead-lettered "
                f"from {source}"
            )

    def start_move_task(self, dead_letters: str, destination: str | None = None) -> str:
        """A move task out of `dead_letters` at 1 message/s, so it is still running soon after."""
        return str(
            self.client.start_message_move_task(
                SourceArn=self.arn(dead_letters),
                MaxNumberOfMessagesPerSecond=1,
                **({"DestinationArn": self.arn(destination)} if destination else {}),
            )["TaskHandle"]
        )


# --- what each example takes for granted --------------------------------------------------------


@dataclass
class _Context:
    example: Example
    okuri: _Okuri
    implemented: frozenset[str]
    task_handle: str | None = None

    @property
    def argv(self) -> tuple[str, ...]:
        return self.example.commands[-1]

    def option(self, flag: str) -> list[str]:
        return _option(self.argv, flag)

    def named_queue(self, flag: str) -> str:
        """The queue a URL or ARN option names."""
        (value,) = self.option(flag)
        found = EXAMPLE_URL.fullmatch(value) or EXAMPLE_ARN.fullmatch(value)
        if found is None:
            raise SetupError(f"{flag} {value} names no queue")
        return found.group(1)

    def documented(self) -> Any:
        return self.example.output.document if self.example.output.kind == "json" else {}


def _nothing_more(ctx: _Context) -> None:
    """The queues the example names and the receipt handles it uses are all it needs."""


def _get_queue_attributes(ctx: _Context) -> None:
    """The queue has the settable attributes the documented output shows (a RedrivePolicy...)."""
    shown = ctx.documented().get("Attributes", {})
    attributes = {
        name: EXAMPLE_ARN.sub(lambda m: ctx.okuri.arn(m.group(1)), value)
        for name, value in shown.items()
        if name in SETTABLE_ATTRIBUTES
    }
    ctx.okuri.queue(ctx.named_queue("--queue-url"), attributes)


def _receive_message(ctx: _Context) -> None:
    """The documented messages, with their bodies and message attributes, wait in the queue."""
    name = ctx.named_queue("--queue-url")
    for message in ctx.documented().get("Messages", []):
        attributes = {}
        for key, value in message.get("MessageAttributes", {}).items():
            attribute = {k: v for k, v in value.items() if k in ("DataType", "StringValue")}
            if "BinaryValue" in value:  # the CLI prints blobs base64-encoded
                attribute["BinaryValue"] = base64.b64decode(value["BinaryValue"])
            attributes[key] = attribute
        ctx.okuri.send(name, message["Body"], attributes)


def _purge_queue(ctx: _Context) -> None:
    """The queue has a message to purge."""
    ctx.okuri.send(ctx.named_queue("--queue-url"), "awscli example message to purge")


def _list_dead_letter_source_queues(ctx: _Context) -> None:
    """The queues the documented output lists send their dead letters to the named queue."""
    target = ctx.named_queue("--queue-url")
    for url in ctx.documented().get("queueUrls", []):
        found = EXAMPLE_URL.fullmatch(url)
        if found:
            ctx.okuri.redrive_to(found.group(1), target, 5)


def _list_queue_tags(ctx: _Context) -> None:
    """The queue carries the documented tags."""
    tags = ctx.documented().get("Tags", {})
    ctx.okuri.queue(ctx.named_queue("--queue-url"), tags=tags)


def _untag_queue(ctx: _Context) -> None:
    """The queue carries the tags the example removes."""
    tags = {key: "awscli-example" for key in ctx.option("--tag-keys")}
    ctx.okuri.queue(ctx.named_queue("--queue-url"), tags=tags)


def _remove_permission(ctx: _Context) -> None:
    """The queue's policy holds the permission the example removes."""
    ctx.okuri.client.add_permission(
        QueueUrl=ctx.okuri.queue(ctx.named_queue("--queue-url")),
        Label=ctx.option("--label")[0],
        AWSAccountIds=[ctx.okuri.account_id],
        Actions=["SendMessage"],
    )


def _start_message_move_task(ctx: _Context) -> None:
    """The source is a dead-letter queue holding redriven messages; the destination (if named)
    is the queue they came from."""
    dead_letters = ctx.named_queue("--source-arn")
    destination = ctx.option("--destination-arn")
    source = ctx.named_queue("--destination-arn") if destination else f"{dead_letters}-source"
    ctx.okuri.dead_letters(source, dead_letters, 2)


def _list_message_move_tasks(ctx: _Context) -> None:
    """The named dead-letter queue holds redriven messages and a move task out of it runs."""
    dead_letters = ctx.named_queue("--source-arn")
    source = f"{dead_letters}-source"
    ctx.okuri.dead_letters(source, dead_letters, MOVE_TASK_MESSAGES)
    if "StartMessageMoveTask" in ctx.implemented:
        # The documented tasks name their destination: so does this one.
        ctx.okuri.start_move_task(dead_letters, destination=source)


def _cancel_message_move_task(ctx: _Context) -> None:
    """A move task is running (1 message/s over several messages); its handle is the one to
    cancel. The example names no queue: these are the names the other examples use."""
    ctx.okuri.dead_letters("MyQueue", "MyDeadLetterQueue", MOVE_TASK_MESSAGES)
    if "StartMessageMoveTask" in ctx.implemented:
        ctx.task_handle = ctx.okuri.start_move_task("MyDeadLetterQueue")


# Every example file this runner knows how to prepare for, by CLI operation. A file for an
# operation not listed here fails the coverage test: a new awscli example is noticed.
PREPARE: dict[str, Callable[[_Context], None]] = {
    "add-permission": _nothing_more,
    "cancel-message-move-task": _cancel_message_move_task,
    "change-message-visibility": _nothing_more,
    "change-message-visibility-batch": _nothing_more,
    "create-queue": _nothing_more,
    "delete-message": _nothing_more,
    "delete-message-batch": _nothing_more,
    "delete-queue": _nothing_more,
    "get-queue-attributes": _get_queue_attributes,
    "get-queue-url": _nothing_more,
    "list-dead-letter-source-queues": _list_dead_letter_source_queues,
    "list-message-move-tasks": _list_message_move_tasks,
    "list-queue-tags": _list_queue_tags,
    "list-queues": _nothing_more,
    "purge-queue": _purge_queue,
    "receive-message": _receive_message,
    "remove-permission": _remove_permission,
    "send-message": _nothing_more,
    "send-message-batch": _nothing_more,
    "set-queue-attributes": _nothing_more,
    "start-message-move-task": _start_message_move_task,
    "tag-queue": _nothing_more,
    "untag-queue": _untag_queue,
}
HANDLED = frozenset(f"{operation}.rst" for operation in PREPARE)


def _texts(example: Example) -> Iterable[str]:
    for argv in example.commands:
        yield from argv
    yield from example.input_files.values()


def referenced_queues(example: Example) -> list[str]:
    """Queues the example takes for granted: named by its URLs and ARNs (command, input files
    and documented output) and by --queue-name, except the one create-queue creates."""
    names: list[str] = []
    for text in [*_texts(example), example.output.text]:
        for pattern in (EXAMPLE_URL, EXAMPLE_ARN):
            names += pattern.findall(text)
    created = set()
    for argv in example.commands:
        values = _option(argv, "--queue-name")
        if argv[2] == "create-queue":
            created.update(values)
        else:
            names += values
    return [n for n in dict.fromkeys(names) if n not in created]


def receipt_placeholders(example: Example) -> list[str]:
    """The placeholder receipt handles, in order (a task handle's placeholder is not one)."""
    found: list[str] = []
    for argv in example.commands:
        for i, arg in enumerate(argv):
            if i == 0 or argv[i - 1] != TASK_HANDLE_FLAG:
                found += EXAMPLE_HANDLE.findall(arg)
    for text in example.input_files.values():
        found += EXAMPLE_HANDLE.findall(text)
    return list(dict.fromkeys(found))


def _option(argv: tuple[str, ...], flag: str) -> list[str]:
    """The values given after `flag` in a command (up to the next flag)."""
    if flag not in argv:
        return []
    values = []
    for arg in argv[argv.index(flag) + 1 :]:
        if arg.startswith("--"):
            break
        values.append(arg)
    return values


# --- running and judging ------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    example: Example
    action: str
    expect: Literal["the documented output", "UnsupportedOperation"]
    commands: tuple[tuple[str, ...], ...] = ()  # as run, values substituted
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    mismatches: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # value differences within the documented shape
    substituted: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.mismatches

    def report(self) -> str:
        """A readable account: what ran, what was expected, every difference."""
        verdict = "as documented" if self.passed else f"{len(self.mismatches)} difference(s)"
        lines = [f"{self.example.id} ({self.action}, expecting {self.expect}): {verdict}"]
        for argv in self.commands:
            lines.append("  $ " + shlex.join(argv))
        lines += [f"  - {m}" for m in self.mismatches]
        lines += [f"  note: {n}" for n in self.notes]
        if not self.passed:
            lines += [f"  substituted: {old} -> {new}" for old, new in self.substituted.items()]
            if self.expect == "the documented output" and self.example.output.kind != "none":
                lines.append("  documented output:")
                lines += ["    " + line for line in self.example.output.text.splitlines()]
            lines.append(f"  real output (exit {self.returncode}):")
            lines += ["    " + line for line in (self.stdout or "(nothing)").splitlines()]
            if self.stderr.strip():
                lines += ["    stderr: " + line for line in self.stderr.strip().splitlines()]
        return "\n".join(lines)


class Runner:
    """Runs examples against one okuri (every queue on it is deleted before each example)."""

    def __init__(
        self,
        endpoint_url: str,
        access_key_id: str,
        secret_access_key: str,
        workdir: Path,
        *,
        region: str = "us-east-1",
        aws: str | None = None,
        tables: tuple[frozenset[str], frozenset[str]] | None = None,
    ) -> None:
        import boto3
        from botocore.config import Config

        self.endpoint_url = endpoint_url.rstrip("/")
        self.workdir = workdir
        self.aws = aws or aws_executable()
        self.implemented, self.unsupported = tables or okuri_tables()
        self.actions = cli_actions()
        workdir.mkdir(parents=True, exist_ok=True)
        config_file = workdir / "aws-config"  # an empty config: no profile of the developer's
        config_file.touch()
        self.env = {
            **clean_environ(),
            "AWS_ACCESS_KEY_ID": access_key_id,
            "AWS_SECRET_ACCESS_KEY": secret_access_key,
            "AWS_DEFAULT_REGION": region,
            "AWS_CONFIG_FILE": str(config_file),
            "AWS_SHARED_CREDENTIALS_FILE": str(config_file),
            "AWS_DEFAULT_OUTPUT": "json",
            "AWS_MAX_ATTEMPTS": "1",
            "AWS_EC2_METADATA_DISABLED": "true",
        }
        client = boto3.client(
            "sqs",
            endpoint_url=self.endpoint_url,
            region_name=region,
            aws_access_key_id=access_key_id,
            aws_secret_access_key=secret_access_key,
            config=Config(retries={"max_attempts": 1}),
        )
        self.okuri = _Okuri(client)

    def expectation(self, action: str) -> Literal["the documented output", "UnsupportedOperation"]:
        if action in self.implemented:
            return "the documented output"
        if action in self.unsupported:
            return "UnsupportedOperation"
        raise LookupError(f"okuri neither serves nor refuses {action}")

    def run(self, example: Example) -> Outcome:
        from botocore.exceptions import BotoCoreError, ClientError

        action = self.actions.get(example.operation, example.operation)
        expect = self.expectation(action)
        prepare = PREPARE.get(example.operation)
        if prepare is None:
            return Outcome(example, action, expect, mismatches=("no preparation is defined",))
        ctx = _Context(example, self.okuri, self.implemented)
        try:
            self.okuri.reset()
            prepare(ctx)
            for name in referenced_queues(example):
                self.okuri.queue(name)
            placeholders = receipt_placeholders(example)
            receipts: dict[str, str] = {}
            if placeholders:
                target = ctx.named_queue("--queue-url")
                handles = self.okuri.receipt_handles(target, len(placeholders))
                receipts = dict(zip(placeholders, handles, strict=True))
        except (BotoCoreError, ClientError, SetupError) as err:
            return Outcome(example, action, expect, mismatches=(f"setting up: {err}",))
        substituted: dict[str, str] = {}
        commands = tuple(
            self._substitute_argv(argv, receipts, ctx.task_handle, substituted)
            for argv in example.commands
        )
        here = self.workdir / example.id.replace("#", "-")
        here.mkdir(parents=True, exist_ok=True)
        for name, content in example.input_files.items():
            (here / name).write_text(self._substitute_text(content, receipts, substituted, True))
        results = [self._cli(argv, here) for argv in commands]
        last = results[-1]
        mismatches: list[str] = []
        notes: list[str] = []
        for argv, result in zip(commands[:-1], results[:-1], strict=True):
            if result.returncode != 0:
                mismatches.append(f"{shlex.join(argv)} failed: {result.stderr.strip()}")
        if expect == "UnsupportedOperation":
            if last.returncode == 0 or "UnsupportedOperation" not in last.stderr:
                mismatches.append(
                    f"{action} is in okuri's UNSUPPORTED table, but the CLI did not report "
                    "UnsupportedOperation"
                )
        elif last.returncode != 0:
            mismatches.append(f"the command failed (exit {last.returncode})")
        else:
            mismatches += self._judge(example, last.stdout, notes)
        return Outcome(
            example,
            action,
            expect,
            commands,
            last.returncode,
            last.stdout,
            last.stderr,
            tuple(mismatches),
            tuple(notes),
            substituted,
        )

    @staticmethod
    def _judge(example: Example, stdout: str, notes: list[str]) -> list[str]:
        expected = example.output
        if expected.kind == "none":
            return ["documented no output, but the command printed some"] if stdout.strip() else []
        if expected.kind == "text":
            return [] if stdout.strip() else ["documented text, but the command printed none"]
        if not stdout.strip():
            return ["documented a JSON output, but the command printed nothing"]
        try:
            real = json.loads(stdout)
        except ValueError:
            return ["documented a JSON output, but the command printed something else"]
        comparison = compare(expected.document, real)
        notes += comparison.notes
        mismatches = []
        for mismatch in comparison.mismatches:
            why = DOCUMENTATION_PREDATES.get((example.operation, mismatch.split(":", 1)[0]))
            if why is None:
                mismatches.append(mismatch)
            else:
                notes.append(f"{mismatch} (allowed: {why})")
        return mismatches

    def _cli(self, argv: tuple[str, ...], cwd: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.aws, *argv[1:]],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=CLI_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )

    def _substitute_argv(
        self,
        argv: tuple[str, ...],
        receipts: dict[str, str],
        task_handle: str | None,
        substituted: dict[str, str],
    ) -> tuple[str, ...]:
        out = [argv[0]]
        for previous, arg in itertools.pairwise(argv):
            if previous == TASK_HANDLE_FLAG and task_handle and EXAMPLE_HANDLE.fullmatch(arg):
                substituted[arg] = task_handle
                out.append(task_handle)
            elif EXAMPLE_ACCOUNT.fullmatch(arg):
                substituted[arg] = self.okuri.account_id
                out.append(self.okuri.account_id)
            else:
                out.append(self._substitute_text(arg, receipts, substituted, False))
        return (*out, "--endpoint-url", self.endpoint_url)

    def _substitute_text(
        self, text: str, receipts: dict[str, str], substituted: dict[str, str], in_json: bool
    ) -> str:
        def swap(value: str, real: str) -> str:
            substituted[value] = real
            return json.dumps(real)[1:-1] if in_json else real

        text = EXAMPLE_URL.sub(lambda m: swap(m.group(0), self.okuri.url(m.group(1))), text)
        text = EXAMPLE_ARN.sub(lambda m: swap(m.group(0), self.okuri.arn(m.group(1))), text)

        def receipt(m: re.Match[str]) -> str:
            return swap(m.group(0), receipts[m.group(0)]) if m.group(0) in receipts else m.group(0)

        return EXAMPLE_HANDLE.sub(receipt, text)
