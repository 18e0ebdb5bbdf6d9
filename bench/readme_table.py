"""The README's set-up timings table: its rows, rendered from measurements and read back.

Why a module of its own: `python -m bench readme` writes the table and tests/unit holds the
README to it, so both need the one rendering, without running anything. The table sits between
`<!-- timings -->` and `<!-- /timings -->`: one row per command of `COMMANDS`, in that order,
each with its times, the machine they were measured on (a 10-million-step Python loop, its
cores, pip's cache, the day) and how the time scales. Rewriting replaces the rows measured and
keeps the others (a `make test` measured days earlier) as they were.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

START, END = "<!-- timings -->", "<!-- /timings -->"
HEADER = (
    "| command | what it does | time: first run on a fresh clone; a later run "
    "| machine: 10-million-step Python loop, cores, pip's cache, day | how the time scales |\n"
    "| --- | --- | --- | --- | --- |"
)
# pip's cache at the first run: as the machine had it, emptied, or not noted (older figures).
PIP_CACHES = ("warm", "empty", "unrecorded")


@dataclass(frozen=True)
class Command:
    name: str  # what a reader types, e.g. "make serve"
    does: str
    scales: str


COMMANDS: tuple[Command, ...] = (
    Command(
        "make serve",
        "installs okuri and the quickstart's clients (boto3, the AWS CLI) into `.venv`, then "
        "serves; timed until it answers",
        "the first run is pip downloading and installing (network, one core); later runs only "
        "start the server",
    ),
    Command(
        "make check",
        "installs the test toolchain (first run), then lint, types, unit tests, the store "
        "contract and 100 simulation seeds",
        "tests and seeds run one worker per core, so more cores shorten it; the first run adds "
        "the install",
    ),
    Command(
        "make test",
        "everything `make check` runs, the servers, SDK clients, Celery and Laravel live, the "
        "compose stack in containers, 600 simulation seeds",
        "the first run adds the SDK clients, podman and chromium (apt-get) and five container "
        "images; pytest runs one worker per core, mostly waiting on servers",
    ),
)
BY_NAME = {c.name: c for c in COMMANDS}


@dataclass(frozen=True)
class Timing:
    """One command measured: on a fresh clone, then (if measured) once more in that clone."""

    command: str
    first_s: float
    later_s: float | None
    loop_s: float  # a 10-million-step Python loop on the machine, just before the first run
    cores: int
    pip_cache: str  # one of PIP_CACHES
    day: str  # YYYY-MM-DD


_TIME = re.compile(r"^(?P<first>[0-9,.]+) s(?:; later (?P<later>[0-9,.]+) s)?$")
_MACHINE = re.compile(
    r"^(?P<loop>[0-9]+\.[0-9]+) s, (?P<cores>[0-9]+) cores?, pip cache "
    rf"(?P<cache>{'|'.join(PIP_CACHES)}), (?P<day>[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})$"
)


def _seconds(s: float) -> str:
    """Whole seconds, but tenths below ten (a later `make serve` starts in under one)."""
    return f"{s:.1f} s" if s < 9.95 else f"{round(s):,} s"


def render_row(timing: Timing) -> str:
    """The table row of `timing`."""
    command = BY_NAME[timing.command]
    time = _seconds(timing.first_s)
    if timing.later_s is not None:
        time += f"; later {_seconds(timing.later_s)}"
    cores = f"{timing.cores} core" + ("" if timing.cores == 1 else "s")
    machine = f"{timing.loop_s:.3f} s, {cores}, pip cache {timing.pip_cache}, {timing.day}"
    return f"| `{command.name}` | {command.does} | {time} | {machine} | {command.scales} |"


def parse_row(line: str) -> Timing:
    """The timing a row of the table states; ValueError naming what does not fit."""
    cells = [c.strip() for c in line.strip().removeprefix("|").removesuffix("|").split(" | ")]
    if len(cells) != 5 or not (cells[0].startswith("`") and cells[0].endswith("`")):
        raise ValueError(f"not a timings row: {line!r}")
    name = cells[0].strip("`")
    if name not in BY_NAME:
        raise ValueError(f"{name!r} is none of {', '.join(BY_NAME)}")
    time, machine = _TIME.match(cells[2]), _MACHINE.match(cells[3])
    if time is None or machine is None:
        raise ValueError(f"{name}: cannot read time {cells[2]!r} or machine {cells[3]!r}")
    later = time.group("later")
    return Timing(
        command=name,
        first_s=float(time.group("first").replace(",", "")),
        later_s=None if later is None else float(later.replace(",", "")),
        loop_s=float(machine.group("loop")),
        cores=int(machine.group("cores")),
        pip_cache=machine.group("cache"),
        day=machine.group("day"),
    )


def render_table(timings: dict[str, Timing]) -> str:
    """The header and one row per command, in COMMANDS' order; every command needs a timing."""
    missing = [c.name for c in COMMANDS if c.name not in timings]
    if missing:
        raise ValueError(f"no figures for {', '.join(missing)}: measure them")
    return "\n".join([HEADER, *(render_row(timings[c.name]) for c in COMMANDS)])


def table_rows(text: str) -> list[str]:
    """The rows (below the header) of the table between the markers in `text`."""
    start, end = text.find(START), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {START} ... {END} table")
    lines = text[start + len(START) : end].strip().splitlines()
    return lines[2:]


def check_rewritable(text: str, commands: list[str]) -> None:
    """ValueError unless measuring `commands` will let `rewrite` fill the whole table: known
    commands, and a readable row for every other one."""
    unknown = [c for c in commands if c not in BY_NAME]
    if unknown:
        raise ValueError(f"{', '.join(unknown)}: none of {', '.join(BY_NAME)}")
    kept = {parse_row(row).command for row in table_rows(text)}
    missing = [c.name for c in COMMANDS if c.name not in kept and c.name not in commands]
    if missing:
        raise ValueError(f"no figures for {', '.join(missing)}: measure them too")


def rewrite(text: str, measured: list[Timing]) -> str:
    """`text` with the table's rows for `measured` replaced, every other row kept."""
    timings = {t.command: t for t in map(parse_row, table_rows(text))}
    timings.update({t.command: t for t in measured})
    start, end = text.index(START) + len(START), text.index(END)
    return text[:start] + "\n" + render_table(timings) + "\n" + text[end:]
