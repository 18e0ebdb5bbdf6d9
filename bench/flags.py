"""Command-line numbers with a range, for the bench commands: a limit on everything they take.

Why a module: every `python -m bench` flag that is a count or a duration is bounded, and a value out
of range must be the same one-line usage error (exit code 2) whichever command reads it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def bounded(kind: Callable[[str], Any], low: float, high: float) -> Callable[[str], Any]:
    """An argparse `type` that parses with `kind` and refuses values outside [low, high]."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low:g} to {high:g}")
        return value

    return parse
