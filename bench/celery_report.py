"""The text `python -m bench celery` prints: one row per broker and load, side by side, with ratios
against Redis and the broker's CPU per task; then the pairs a Celery user compares: okuri as
shipped against the brokers that are as durable when `apply_async` returns (RabbitMQ with
publisher confirms, Redis with `appendfsync always`), okuri with `confirm_publish` off against
their defaults, and `sqs://` on okuri against `sqs://` on each in-memory emulator that ran
(ministack, moto).

Why apart: the figures are a plain dict (also printed as JSON); their layout is a separate
concern, testable on a hand-made dict. A figure that could not be read prints as "-".
"""

from __future__ import annotations

from typing import Any

from bench.sqs_report import cell

BASELINE = "redis"
STORE_CLASSES = ("put", "cas", "get", "list", "delete")  # okuri's store requests, by price class
API_PREFIX = "api "  # a per-task count of API requests, by operation
SQS_ON_OKURI = "sqs"  # kombu's sqs:// transport on okuri...
EMULATORS = ("ministack", "moto")  # ...and the same transport on each in-memory emulator
NAME_CHARS = 18  # "okuri-unconfirmed" and a space ("rabbitmq-confirm" fits)
CELL_CHARS = 12
# A row's figures that rounds spread, as its line below names and prints them.
SPREADS = (
    ("enqueue", "enqueue_tasks_per_s", "{:.0f}"),
    ("end2end", "end_to_end_tasks_per_s", "{:.0f}"),
    ("cpu", "broker_cpu_ms_per_task", "{:.2f}"),
)


def _ratio(value: float | None, base: float | None) -> float | None:
    if value is None or not base:
        return None
    return value / base


def _row(name: str, run: dict[str, Any] | None, base: dict[str, Any] | None) -> str:
    if run is None:
        return name.ljust(NAME_CHARS) + "-".rjust(CELL_CHARS) * 5
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
        cell("{:.2f}", run.get("broker_cpu_ms_per_task")),
    ]
    line = name.ljust(NAME_CHARS) + "".join(c.rjust(CELL_CHARS) for c in cells)
    if not run["complete"]:
        line += f"   incomplete: sent {run['sent']}, ran {run['executed']} of {run['tasks']}"
    if run.get("store_per_task"):
        line += f"\n{'':{NAME_CHARS}}per task: " + _per_task(run["store_per_task"])
    if run.get("rounds", 1) > 1:
        spreads = [f"{what} {_spread(run.get(f'{key}_spread'), fmt)}" for what, key, fmt in SPREADS]
        line += f"\n{'':{NAME_CHARS}}medians of {run['rounds']} runs; " + ", ".join(spreads)
    return line


def _per_task(counts: dict[str, float]) -> str:
    """okuri's store requests by class, manifest commits and API requests, each per task."""
    store = ", ".join(f"{cls} {n:.2f}" for cls, n in counts.items() if cls in STORE_CLASSES)
    api = ", ".join(
        f"{op.removeprefix(API_PREFIX)} {n:.2f}"
        for op, n in counts.items()
        if op.startswith(API_PREFIX)
    )
    commits = counts.get("commits")
    parts = [f"store {store or '-'}", f"manifest commits {cell('{:.2f}', commits)}"]
    if "syncs" in counts:
        parts.append(f"syncs {counts['syncs']:.2f}")
    return "; ".join([*parts, f"requests {api}"] if api else parts)


def _spread(pair: list[float] | None, fmt: str) -> str:
    return "-" if pair is None else f"{fmt.format(pair[0])} to {fmt.format(pair[1])}"


def _run_of(brokers: dict[str, Any], name: str, load: str) -> dict[str, Any] | None:
    run: dict[str, Any] | None = brokers.get(name, {}).get("runs", {}).get(load)
    return run


# (numerator, denominator, what the pair compares)
PAIRS = (
    ("okuri", "rabbitmq-confirm", "durable against durable"),
    ("okuri", "redis-always", "durable against durable"),
    ("okuri", "okuri-files", "the journal against a file per object"),
    ("okuri-unconfirmed", "rabbitmq", "lazy against lazy"),
    ("okuri-unconfirmed", "redis", "lazy against lazy"),
    *((SQS_ON_OKURI, emulator, "sqs:// on okuri against an emulator") for emulator in EMULATORS),
)


def _pairs(brokers: dict[str, Any], load: str) -> list[str]:
    """Each of PAIRS where both ran: enqueue and end to end, one over the other."""
    lines = []
    for mine, peer_name, what in PAIRS:
        ours, peer = _run_of(brokers, mine, load), _run_of(brokers, peer_name, load)
        if ours is None or peer is None:
            continue
        ratios = [
            cell("{:.2f}x", _ratio(ours[key], peer[key]))
            for key in ("enqueue_tasks_per_s", "end_to_end_tasks_per_s")
        ]
        lines.append(f"{mine} / {peer_name} ({what}): enqueue {ratios[0]}, end2end {ratios[1]}")
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
        h.rjust(CELL_CHARS)
        for h in ("enqueue/s", "vs redis", "end2end/s", "vs redis", "cpu ms/task")
    )
    for load in result["loads"]:
        lines += ["", f"{load['name']}: {load['producers']} producer process(es)", header]
        base = result["brokers"].get(BASELINE, {}).get("runs", {}).get(load["name"])
        for name, b in result["brokers"].items():
            lines.append(_row(name, b["runs"].get(load["name"]), base))
        lines += _pairs(result["brokers"], load["name"])
    lines += [
        "",
        "enqueue/s: tasks / time until the last producer's apply_async returned (the worker "
        "consuming meanwhile); end2end/s: tasks / time until the last task ran. Both from the "
        "producers' go; connections and the queue's declaration are warmed up before it. "
        "cpu ms/task: the broker's processes' CPU (user and system, every thread) from the go "
        "until the last task ran, over the tasks. per task (okuri's rows, from its /metrics): "
        "store requests by class, manifest commits, syncs (the local store's fsync and "
        "fdatasync calls: its durable write barriers; the journal syncs once for the writes "
        "that arrive together), and requests to okuri's API by operation.",
    ]
    return "\n".join(lines)
