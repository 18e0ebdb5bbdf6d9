"""Whole numbers written by a client (a query parameter, a header, a list index): the one reading
every surface uses.

Python's own readings accept more than a wire format means: `str.isdigit()` is true of `²` and
of other scripts' digits, `int()` takes spaces, `+`, underscores and any script's digits, and
refuses more than 4,300 digits with a ValueError a caller rarely expects. Reading a number the
client sent through anything but this is how a stray character became a 500. Here only ASCII
digits count, and a length bound comes first, so the answer is a number or None and each
surface words its own 400.
"""

from __future__ import annotations

# 2**63 has 19 digits: every count, size, index and epoch second okuri reads fits.
digits_max_default = 19
_ASCII_DIGITS = frozenset("0123456789")


def whole_number(
    text: str, *, signed: bool = False, digits_max: int = digits_max_default
) -> int | None:
    """`text` as an int when it is 1 to `digits_max` ASCII digits (after one leading '-' when
    `signed`); None otherwise, for the caller to refuse in its surface's words."""
    negative = signed and text.startswith("-")
    body = text[1:] if negative else text
    if not 1 <= len(body) <= digits_max or not _ASCII_DIGITS.issuperset(body):
        return None
    value = int(body)
    return -value if negative else value
