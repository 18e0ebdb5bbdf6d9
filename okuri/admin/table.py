"""Output for people and for scripts: an aligned table, or JSON.

Tables are for reading: columns padded to their widest cell, long cells cut with an ellipsis,
control characters shown escaped so a message body cannot move the cursor or forge a line.
`--json` prints the whole values instead, one JSON document, for scripts.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

cell_chars_max = 60  # a table cell longer than this is cut (the JSON output has it whole)


def cell(value: object, most: int = cell_chars_max) -> str:
    """`value` as one table cell: "-" for nothing, escaped, cut to `most` characters."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    text = str(value)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= most else text[: most - 1] + "…"


def table(
    header: Sequence[str], rows: Sequence[Sequence[object]], out: TextIO | None = None
) -> None:
    """Print `rows` under `header`, each column as wide as its widest cell."""
    out = out or sys.stdout
    cells = [list(header), *([cell(v) for v in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip(), file=out)


def pairs(rows: Sequence[tuple[str, object]], out: TextIO | None = None) -> None:
    """Print `name  value` lines, names aligned (one record, as `show` prints it)."""
    out = out or sys.stdout
    width = max((len(name) for name, _ in rows), default=0)
    for name, value in rows:
        print(f"{name.ljust(width)}  {cell(value, 200)}".rstrip(), file=out)


def as_json(value: Any, out: TextIO | None = None) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str), file=out or sys.stdout)
