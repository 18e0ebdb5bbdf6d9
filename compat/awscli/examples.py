"""The AWS CLI's own SQS examples: find them in the installed awscli package and parse them.

Each `awscli/examples/sqs/<operation>.rst` documents one CLI operation with one or more examples:
a command literal block (after `Command::`, or after a prose paragraph ending in `::`), zero or
more `Input file (name.json)::` blocks that the command reads as `file://name.json`, and either
an `Output::` block (JSON, or `None.`) or a sentence saying the command produces no output.

Parsing is strict. A literal block that is none of these, an example without a documented
output, or a `file://` input the file does not show is an `ExampleFormatError`, recorded on the
file rather than raised, so a new awscli release that documents examples differently fails the
example it changed instead of being skipped. Nothing here runs anything.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "Example",
    "ExampleFile",
    "ExampleFormatError",
    "Expected",
    "discover",
    "examples_dir",
    "parse_example_file",
]

INPUT_FILE = re.compile(r"^Input file \(([^)\s]+)\)::$")
FILE_ARGUMENT = re.compile(r"^file://(.+)$")
NO_OUTPUT = re.compile(r"produces no output", re.IGNORECASE)
CONTINUATION = re.compile(r"\\\n[ \t]*")
TAB_COLUMNS = 8  # reStructuredText expands tabs to 8-column stops


class ExampleFormatError(ValueError):
    """An example file documents something this parser does not understand."""


@dataclass(frozen=True)
class Expected:
    """What the documentation says the command prints: nothing, a JSON document, or text."""

    kind: Literal["none", "json", "text"]
    document: Any = None  # the parsed JSON when kind == "json"
    text: str = ""  # the block as documented


@dataclass(frozen=True)
class Example:
    file: str  # "receive-message.rst"
    index: int  # 1-based, in the order the file shows its examples
    commands: tuple[tuple[str, ...], ...]  # argv of each command, "aws" first
    input_files: Mapping[str, str]  # file name -> the content the .rst shows
    output: Expected
    title: str = ""  # the nearest heading or prose line above the command

    @property
    def id(self) -> str:
        return f"{self.file}#{self.index}"

    @property
    def operation(self) -> str:
        """The CLI operation of the command whose output is documented (the last one)."""
        return self.commands[-1][2]


@dataclass(frozen=True)
class ExampleFile:
    name: str
    examples: tuple[Example, ...] = ()
    error: str | None = None  # why the file could not be parsed; it then has no examples


@dataclass
class _Draft:
    commands: tuple[tuple[str, ...], ...]
    title: str
    input_files: dict[str, str] = field(default_factory=dict)
    output: Expected | None = None


def examples_dir() -> Path:
    """`awscli/examples/sqs` of the installed awscli (version 1; its examples ship with it)."""
    import awscli

    return Path(awscli.__file__).resolve().parent / "examples" / "sqs"


def discover(directory: Path | None = None) -> list[ExampleFile]:
    """Every example file, sorted by name; unparseable files carry their error."""
    directory = directory or examples_dir()
    files = []
    for path in sorted(directory.glob("*.rst")):
        try:
            examples = parse_example_file(path.name, path.read_text(encoding="utf-8"))
        except ExampleFormatError as err:
            files.append(ExampleFile(path.name, error=str(err)))
        else:
            files.append(ExampleFile(path.name, tuple(examples)))
    return files


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _dedent(block: list[str]) -> str:
    while block and not block[0].strip():
        block = block[1:]
    while block and not block[-1].strip():
        block = block[:-1]
    width = min((_indent(line) for line in block if line.strip()), default=0)
    return "\n".join(line[width:].rstrip() for line in block)


def _commands(block: str, where: str) -> tuple[tuple[str, ...], ...]:
    commands = []
    for line in CONTINUATION.sub(" ", block).split("\n"):
        if not line.strip():
            continue
        try:
            argv = tuple(shlex.split(line))
        except ValueError as err:
            raise ExampleFormatError(f"{where}: cannot split {line!r}: {err}") from err
        if len(argv) < 3 or argv[:2] != ("aws", "sqs"):
            raise ExampleFormatError(f"{where}: not an `aws sqs` command: {line!r}")
        commands.append(argv)
    return tuple(commands)


def _expected(block: str) -> Expected:
    if block.strip() in ("None.", "None", ""):
        return Expected("none", text=block)
    try:
        return Expected("json", json.loads(block), block)
    except ValueError:
        return Expected("text", text=block)


def parse_example_file(name: str, text: str) -> list[Example]:
    """The examples of one .rst file, in order; `ExampleFormatError` if any is not understood."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(TAB_COLUMNS).split("\n")
    drafts: list[_Draft] = []
    title = ""
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        start, base = i, _indent(lines[i])
        while i < len(lines) and lines[i].strip():
            i += 1
        paragraph = " ".join(line.strip() for line in lines[start:i])
        if not paragraph.endswith("::"):
            if NO_OUTPUT.search(paragraph) and drafts:
                _set_output(drafts[-1], Expected("none", text=paragraph), name)
            elif not drafts or drafts[-1].output is not None:
                title = paragraph
            continue
        block_lines = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > base):
            block_lines.append(lines[i])
            i += 1
        block = _dedent(block_lines)
        where = f"{name} line {start + 1}"
        found = INPUT_FILE.match(paragraph)
        if paragraph.startswith("Output"):
            if not drafts:
                raise ExampleFormatError(f"{where}: an output before any command")
            _set_output(drafts[-1], _expected(block), name)
        elif found:
            if not drafts:
                raise ExampleFormatError(f"{where}: an input file before any command")
            drafts[-1].input_files[found.group(1)] = block + "\n"
        elif block.startswith("aws "):
            prose = paragraph.removesuffix("::").strip()
            drafts.append(_Draft(_commands(block, where), prose if prose != "Command" else title))
        else:
            raise ExampleFormatError(f"{where}: a literal block of unknown kind: {paragraph!r}")
    if not drafts:
        raise ExampleFormatError(f"{name}: no example command found")
    examples = []
    for index, draft in enumerate(drafts, start=1):
        where = f"{name} example {index}"
        if draft.output is None:
            raise ExampleFormatError(f"{where}: no documented output")
        for argv in draft.commands:
            for arg in argv:
                ref = FILE_ARGUMENT.match(arg)
                if ref and ref.group(1) not in draft.input_files:
                    raise ExampleFormatError(f"{where}: reads {arg}, which the file does not show")
        if Path(name).stem != draft.commands[-1][2]:
            raise ExampleFormatError(f"{where}: runs {draft.commands[-1][2]}, not {name}")
        examples.append(
            Example(name, index, draft.commands, draft.input_files, draft.output, draft.title)
        )
    return examples


def _set_output(draft: _Draft, expected: Expected, name: str) -> None:
    if draft.output is not None:
        raise ExampleFormatError(f"{name}: two documented outputs for one command")
    draft.output = expected
