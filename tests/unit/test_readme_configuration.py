"""The README's Configuration table is held to okuri/server/settings.py's OPTIONS.

Every option's variable has a row (a row may group several), the table names no variable that
is not an option, and where a row states a default it is the option's own. The table once left
out `OKURI_EXPIRY_SWEEP_S` while promising every variable, each with a flag.
"""

from __future__ import annotations

import argparse
import re

from okuri import limits
from okuri.server.settings import OPTIONS, Option, add_arguments
from tests.readme import README

VARIABLE = re.compile(r"`(OKURI_[A-Z0-9_]+)`")
VALUE = re.compile(r"`([^`]*)`")
# Options without one default (None in OPTIONS) whose row still states the values they take:
# the linger window's default depends on the store (`100` on S3, `0` on a local directory).
DERIVED = {"OKURI_LINGER_MS": [str(limits.linger_ms_default), str(limits.linger_ms_local_default)]}
# How a row says an option has no value unless set (a blank cell says it too).
NO_VALUE = re.compile(r"^(?:none|AWS|AWS default chain|Host header|the listen address.*)?$")


def table_rows(text: str) -> list[tuple[list[str], str]]:
    """(variables, default cell) of each row of the Configuration section's table."""
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if line.startswith("| `OKURI_"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((VARIABLE.findall(cells[0]), cells[1]))
    return rows


def stated_defaults(variables: list[str], cell: str) -> dict[str, str]:
    """Each variable's part of a default cell: one part per variable (split on ', ' or ' / ')
    when the counts agree, else the whole cell for every variable."""
    parts = re.split(r", | / ", cell) if len(variables) > 1 else [cell]
    if len(parts) != len(variables):
        parts = [cell] * len(variables)
    return dict(zip(variables, parts, strict=True))


def disagreements(option: Option, part: str) -> str | None:
    """Why the default `part` states is not `option`'s, or None when it agrees."""
    values = VALUE.findall(part)
    if option.env in DERIVED:
        return None if values == DERIVED[option.env] else f"{values} != {DERIVED[option.env]}"
    if option.default is None:
        return None if not values and NO_VALUE.match(part) else f"{part!r} for no default"
    if option.default == "":
        return None if part == "empty" else f"{part!r} for the empty default"
    return None if values[:1] == [option.default] else f"{part!r} for {option.default!r}"


def test_every_option_has_a_row_and_every_row_is_an_option() -> None:
    named = [v for variables, _ in table_rows(README.read_text()) for v in variables]
    options = [o.env for o in OPTIONS]
    assert sorted(set(options) - set(named)) == [], "options missing from the README's table"
    assert sorted(set(named) - set(options)) == [], "README rows that are not options"
    assert len(named) == len(set(named)), "a variable with two rows"


def test_stated_defaults_are_the_options_own() -> None:
    by_env = {o.env: o for o in OPTIONS}
    wrong = {
        env: why
        for variables, cell in table_rows(README.read_text())
        for env, part in stated_defaults(variables, cell).items()
        if (why := disagreements(by_env[env], part)) is not None
    }
    assert wrong == {}


def test_each_variable_has_the_matching_flag_the_table_promises() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = {s for action in parser._actions for s in action.option_strings}
    assert "each with a matching flag of `okuri serve`" in README.read_text()
    for option in OPTIONS:
        assert "--" + option.env.removeprefix("OKURI_").lower().replace("_", "-") in flags


def test_a_missing_row_or_a_wrong_default_is_caught() -> None:
    """The checks above on a table that lacks a row and states a wrong default."""
    text = "intro\n## Configuration\n\n| `OKURI_LISTEN` | `0.0.0.0:1` | x |\n## Next\n"
    rows = table_rows(text)
    assert [v for vs, _ in rows for v in vs] == ["OKURI_LISTEN"]
    listen = next(o for o in OPTIONS if o.env == "OKURI_LISTEN")
    assert disagreements(listen, rows[0][1]) is not None
    assert disagreements(listen, f"`{listen.default}`") is None
