"""okuri.digits: the one reading of a whole number a client wrote. Only ASCII digits within a
length bound make a number; everything Python's own readings would also take (or choke on) is
None, for the surface to refuse with its own 400."""

from __future__ import annotations

import pytest

from okuri.digits import digits_max_default, whole_number


@pytest.mark.parametrize(
    ("text", "number"),
    [("0", 0), ("7", 7), ("0042", 42), ("9" * digits_max_default, int("9" * digits_max_default))],
)
def test_ascii_digits_are_their_number(text: str, number: int) -> None:
    assert whole_number(text) == number


@pytest.mark.parametrize(
    "text",
    [
        "",
        "²",  # str.isdigit() is true of it; int() refuses it
        "\u0661\u0662",  # Arabic-Indic digits: int() takes them
        "\uff11\uff12",  # fullwidth digits: int() takes them
        " 5",
        "5 ",
        "+5",
        "-5",
        "1_000",
        "0x10",
        "5.0",
        "1" * (digits_max_default + 1),
        "1" * 5000,  # int() raises past 4,300 digits
    ],
)
def test_anything_else_is_none(text: str) -> None:
    assert whole_number(text) is None


def test_a_signed_reading_takes_one_minus_and_nothing_more() -> None:
    assert whole_number("-5", signed=True) == -5
    assert whole_number("5", signed=True) == 5
    for text in ("--5", "-", "+5", "-²", "- 5", "-" + "1" * 5000):
        assert whole_number(text, signed=True) is None


def test_the_length_bound_is_the_callers() -> None:
    assert whole_number("1234567", digits_max=7) == 1234567
    assert whole_number("12345678", digits_max=7) is None
