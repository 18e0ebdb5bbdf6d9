"""The text `python -m bench celery` prints: one row per broker and load, side by side, with ratios
against Redis, and `sqs://` on okuri against `sqs://` on each in-memory emulator that ran
(ministack, moto).

Why apart: the figures are a plain dict (also printed as JSON); their layout is a separate
concern, testable on a hand-made dict. A figure that could not be read prints as "-".
"""

from __future__ import annotations

from typing import Any

from bench.sqs_report import cell

BASELINE = "redis"
SQS_ON_OKURI = "sqs"  # kombu's sqs:// transport on okuri...
EMULATORS = ("ministack", "moto")  # ...and the same transport on each in-memory emulator
NAME_CHARS = 18  # "okuri-unconfirmed" and a space
CELL_CHARS = 12


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return value / base


def _row(name: str, run: dict[str, Any] | None, base: dict[str, Any] | None) -> str:
    if run is None:
        return name.ljust(NAME_CHARS) + "-".rjust(CELL_CHARS) * 4
    enqueue, e2e = run["enqueue_tasks_per_s"], run["end_to_end_tasks_per_s"]
    base_e, base_x = (
        (None, None)
        if base is None
        else (base["enqueue_tasks_per_s"], base["end_to_end_tasks_per_s"])
    )
    cells = [
        cell("{:.0f}", enqueue),
        cell("{:.2f}x", _ratio(enqueue, base_e)),
        cell("{:.0f}", e2e),
        cell("{:.2f}x", _ratio(e2e, base_x)),
    ]
    line = name.ljust(NAME_CHARS) + "".join(c.rjust(CELL_CHARS) for c in cells)
    if not run["complete"]:
        line += f"   incomplete: sent {run['sent']}, ran {run['executed']} of {run['tasks']}"
    return line


def _run_of(brokers: dict[str, Any], name: str, load: str) -> dict[str, Any] | None:
    run: dict[str, Any] | None = brokers.get(name, {}).get("runs", {}).get(load)
    return run


def _sqs_pairs(brokers: dict[str, Any], load: str) -> list[str]:
    """sqs:// on okuri over sqs:// on each emulator, enqueue and end to end, where both ran."""
    okuri = _run_of(brokers, SQS_ON_OKURI, load)
    lines = []
    for emulator in EMULATORS:
        peer = _run_of(brokers, emulator, load)
        if okuri is None or peer is None:
            continue
        ratios = [
            cell("{:.2f}x", _ratio(okuri[key], peer[key]))
            for key in ("enqueue_tasks_per_s", "end_to_end_tasks_per_s")
        ]
        lines.append(f"sqs:// on okuri / on {emulator}: enqueue {ratios[0]}, end2end {ratios[1]}")
    return lines


def render(result: dict[str, Any]) -> str:
    c = result["config"]
    lines = [
        f"python -m bench celery: {c['tasks']} add(i, i) tasks, results ignored, one prefork "
        f"worker (concurrency {c['concurrency']}, prefetch multiplier 4); {c['cpus']} CPUs "
        "shared by the broker, the worker and the producers",
        f"sqs:// settings: wait_time_seconds {c['sqs_wait_time_seconds']}, polling_interval "
        f"{c['sqs_polling_interval']:g}; okuri://: lease_s {c['okuri_lease_s']}, wait_time_s "
        f"{c['okuri_wait_time_s']}",
    ]
    for name, why in result["skipped"].items():
        lines.append(f"skipped {name}: {why}")
    for name, b in result["brokers"].items():
        lines.append(f"{name}: {b['described']}")
    header = "broker".ljust(NAME_CHARS) + "".join(
        h.rjust(CELL_CHARS) for h in ("enqueue/s", "vs redis", "end2end/s", "vs redis")
    )
    for load in result["loads"]:
        lines += ["", f"{load['name']}: {load['producers']} producer process(es)", header]
        base = result["brokers"].get(BASELINE, {}).get("runs", {}).get(load["name"])
        for name, b in result["brokers"].items():
            lines.append(_row(name, b["runs"].get(load["name"]), base))
        lines += _sqs_pairs(result["brokers"], load["name"])
    lines += [
        "",
        "enqueue/s: tasks / time until the last producer's apply_async returned (the worker "
        "consuming meanwhile); end2end/s: tasks / time until the last task ran. Both from the "
        "producers' go; connections and the queue's declaration are warmed up before it.",
    ]
    return "\n".join(lines)
