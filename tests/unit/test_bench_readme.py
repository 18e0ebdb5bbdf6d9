"""The README's set-up timings: one table that `python -m bench readme` renders and rewrites.

The README once gave its figures in prose, for two differently fast "fresh two-core" machines,
and they went stale. Here the table's shape is held (markers, one row per command, the machine
column) and every row must read back into exactly what the bench would render, so that a
rewrite by the bench and a hand edit cannot drift apart. The timers run against stand-in
Makefiles: a `make serve` that answers /readyz and is stopped afterwards, a failing `make check`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.launch import answers
from bench.readme import MeasureFailed, shell_environ, time_make, time_serve
from bench.readme_table import (
    COMMANDS,
    END,
    HEADER,
    START,
    Timing,
    check_rewritable,
    parse_row,
    render_row,
    rewrite,
    table_rows,
)
from tests.readme import README

SERVE = COMMANDS[0]
FIXED = Timing("make serve", 52.4, 1.23, 0.4987, 2, "empty", "2026-12-08")


def set_up_section() -> str:
    return README.read_text().split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]


def test_a_fixed_measurement_renders_as_the_readme_row_format() -> None:
    assert render_row(FIXED) == (
        f"| `make serve` | {SERVE.does} | 52 s; later 1.2 s "
        f"| 0.499 s, 2 cores, pip cache empty, 2026-12-08 | {SERVE.scales} |"
    )
    assert parse_row(render_row(FIXED)) == Timing(
        "make serve", 52.0, 1.2, 0.499, 2, "empty", "2026-12-08"
    )


def test_the_readme_table_has_one_row_per_command_as_the_bench_renders_it() -> None:
    text = README.read_text()
    block = text[text.index(START) + len(START) : text.index(END)].strip()
    assert block.startswith(HEADER + "\n")
    assert "machine: 10-million-step Python loop" in HEADER
    rows = table_rows(text)
    assert [parse_row(r).command for r in rows] == [c.name for c in COMMANDS]
    assert [render_row(parse_row(r)) for r in rows] == rows


def test_a_rewrite_replaces_the_measured_row_and_keeps_the_others() -> None:
    text = README.read_text()
    rows = table_rows(text)
    updated = rewrite(text, [FIXED])
    assert table_rows(updated) == [render_row(FIXED), *rows[1:]]
    assert updated[: updated.index(START)] == text[: text.index(START)]
    assert updated[updated.index(END) :] == text[text.index(END) :]


def test_a_table_without_a_commands_figures_cannot_be_rewritten() -> None:
    text = f"{START}\n{HEADER}\n{render_row(FIXED)}\n{END}\n"
    with pytest.raises(ValueError, match="no figures for make check, make test"):
        rewrite(text, [FIXED])
    with pytest.raises(ValueError, match="no <!-- timings -->"):
        rewrite("no table here", [FIXED])
    with pytest.raises(ValueError, match="no figures for make test: measure them too"):
        check_rewritable(text, ["make check"])  # checked before measuring, not after
    check_rewritable(text, ["make check", "make test"])


def test_set_up_keeps_two_commands_and_no_figures_outside_the_table() -> None:
    section = set_up_section()
    assert re.findall(r"```sh\n(.*?)```", section, re.S) == ["make serve\n", "make test\n"]
    prose = section[: section.index(START)] + section[section.index(END) :]
    assert re.findall(r"\b[0-9][0-9,.]* s\b", prose) == []
    assert "python -m bench readme" in section


def test_a_new_shell_has_no_virtualenv_nor_okuri_settings(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    environ = {"PATH": f"{venv}/bin:/usr/bin", "OKURI_LISTEN": ":1", "VIRTUAL_ENV": str(venv)}
    env = shell_environ(environ, tmp_path / "cache")
    assert env == {"PATH": "/usr/bin", "PIP_CACHE_DIR": str(tmp_path / "cache")}


def test_serve_is_timed_until_it_answers_and_then_stopped(tmp_path: Path) -> None:
    """A stand-in `make serve`: a static file server whose /readyz is a file."""
    (tmp_path / "readyz").write_text("ok\n")
    (tmp_path / "Makefile").write_text(
        "serve:\n\techo $$OKURI_HEALTH_LISTEN > health; "
        "exec python3 -m http.server --bind 127.0.0.1 $${OKURI_HEALTH_LISTEN##*:}\n"
    )
    seconds = time_serve(tmp_path, shell_environ(os.environ, None), tmp_path / "log", 30)
    assert 0 < seconds < 30
    health = (tmp_path / "health").read_text().strip()
    assert "GET /readyz" in (tmp_path / "log").read_text()
    assert not answers(f"http://{health}/readyz"), "make serve still answers after the timing"


def test_a_failing_make_target_is_reported_with_its_log(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text("check:\n\techo lint found 1 error; exit 3\n")
    with pytest.raises(MeasureFailed, match=r"make check exited 2\n(.|\n)*lint found 1 error"):
        time_make("check", tmp_path, shell_environ(os.environ, None), tmp_path / "log", 30)
