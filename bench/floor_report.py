"""What `python -m bench floor` computes from its timings, and the text it prints.

Why apart: the floor's arithmetic is the claim the bench makes, so it is a few pure functions a
test can check by hand; the layout is a plain function of the result dict (also printed as
JSON), as bench/sqs_report.py is. A figure that could not be read prints as "-".

floor(call) = the hello-world server's p50 for the same call from the same client
              + (durable writes the call's answer must wait for) x (the store's write p50)
ratio       = okuri's p50 / floor
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from bench.floor_calls import (
    COMPLETE,
    DELETE,
    GET_URL,
    LEASE,
    PRODUCE,
    PUBLISH,
    RECEIVE,
    SEND,
    SEND_TO_RECEIPT,
)

LABEL_CHARS = 28
CELL_CHARS = 10
CPU_RATIO_TARGET = 2.0  # the target: okuri's CPU per request within 2x the floor's


@dataclass(frozen=True)
class Row:
    """One call of the table, and how many store writes its answer waits for."""

    key: str
    label: str
    writes: int
    why: str


ROWS = (
    Row(SEND, "SQS SendMessage", 1, "its segment"),
    Row(RECEIVE, "SQS ReceiveMessage", 1, "the lease's commit"),
    Row(DELETE, "SQS DeleteMessage", 1, "the commit"),
    Row(GET_URL, "SQS GetQueueUrl", 0, "nothing"),
    Row(SEND_TO_RECEIPT, "SQS send to first receipt", 2, "the segment, the lease's commit"),
    Row(PRODUCE, "native produce", 1, "its segment"),
    Row(LEASE, "native lease", 1, "the lease's commit"),
    Row(COMPLETE, "native complete", 1, "the commit"),
    Row(PUBLISH, "okuri:// publish (kombu)", 1, "its segment"),
)


def p50_ms(seconds: list[float]) -> float | None:
    return statistics.median(seconds) * 1000 if seconds else None


def floor_ms(hello_p50_ms: float | None, writes: int, write_p50_ms: float | None) -> float | None:
    """The least a call can take: the hello-world server's answer plus the writes it waits for."""
    if hello_p50_ms is None or (writes and write_p50_ms is None):
        return None
    return hello_p50_ms + writes * (write_p50_ms or 0.0)


def ratio(p50: float | None, floor: float | None) -> float | None:
    return None if p50 is None or not floor else p50 / floor


def _rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def row_figures(
    row: Row,
    okuri_s: list[float],
    hello_s: list[float],
    write_p50_ms: float | None,
    misses: int = 0,
) -> dict[str, Any]:
    """One row of the result: okuri's p50, the floor and their ratio, from raw seconds."""
    p50, hello = p50_ms(okuri_s), p50_ms(hello_s)
    floor = floor_ms(hello, row.writes, write_p50_ms)
    return {
        "call": row.key,
        "label": row.label,
        "writes": row.writes,
        "writes_are": row.why,
        "samples": len(okuri_s),
        "hello_samples": len(hello_s),
        "misses": misses,
        "p50_ms": _rounded(p50),
        "hello_p50_ms": _rounded(hello),
        "floor_ms": _rounded(floor),
        "ratio": _rounded(ratio(p50, floor), 2),
    }


# --- the text ----------------------------------------------------------------------------------


def cell(fmt: str, value: Any) -> str:
    return "-" if value is None else fmt.format(value)


def _ms(value: float | None) -> str:
    return cell("{:.2f} ms", value)


def _store_lines(run: dict[str, Any]) -> list[str]:
    writes = run["store_writes"]
    if run["store"] == "s3":
        store = (
            f"store: {run['described']}; write p50 {_ms(run['write_p50_ms'])} (a conditional "
            f"PUT, If-None-Match: *; If-Match {_ms(writes['put_if_match_p50_ms'])}; "
            f"{writes['samples']} writes)"
        )
        latency = (
            f"latency added: {run['latency_added_ms']:g} ms to every store request, by a proxy "
            "in front of moto; the S3 floor uses the proxy's latency"
        )
    else:
        store = (
            f"store: {run['described']}; write p50 {_ms(run['write_p50_ms'])} (the local "
            f"store's put_if_absent; put_if_match {_ms(writes['put_if_match_p50_ms'])}; "
            f"{writes['samples']} writes)"
        )
        latency = "latency added: none"
    whose = "as given" if run["linger_given"] else "the server's default on this store"
    linger = f"okuri linger: {run['linger_ms']} ms ({whose})"
    if run["linger_ms"]:
        linger += (
            "; it holds a write while two clients share a queue's writes, never a lone one "
            "as here"
        )
    return [store, latency, linger]


SURFACE_ROUNDS = {
    "sqs": "an SQS round (send, receive, delete, GetQueueUrl)",
    "native": "a native round (produce, lease, complete)",
    "kombu": "an okuri:// publish",
}


def _requests(per: dict[str, float] | None) -> str:
    if per is None:
        return "not read"
    return ", ".join(f"{k} {v:g}" for k, v in per.items()) or "none"


def _cpu_lines(cpu: dict[str, Any] | None) -> list[str]:
    if not cpu:
        return ["server CPU per request: not measured"]
    okuri, hello = cpu["okuri_ms_per_call"], cpu["hello_ms_per_call"]
    return [
        f"server CPU per GetQueueUrl (writes nothing), over {cpu['calls']} calls: okuri "
        f"{_ms(okuri)}, hello-world {_ms(hello)}, ratio {cell('{:.2f}', cpu['ratio'])} "
        f"(target: within {CPU_RATIO_TARGET:g}x)",
        "okuri's store requests per GetQueueUrl: "
        + _requests(cpu.get("okuri_store_requests_per_call")),
    ]


def _store_request_lines(run: dict[str, Any]) -> list[str]:
    return [
        f"okuri's store requests per {SURFACE_ROUNDS.get(surface, surface)}: {_requests(per)}"
        for surface, per in (run.get("store_requests_per_round") or {}).items()
    ]


def _table(run: dict[str, Any]) -> list[str]:
    head = "call".ljust(LABEL_CHARS) + "".join(
        name.rjust(CELL_CHARS) for name in ("writes", "p50 ms", "floor ms", "ratio")
    )
    lines = [head]
    for r in run["rows"]:
        lines.append(
            r["label"].ljust(LABEL_CHARS)
            + str(r["writes"]).rjust(CELL_CHARS)
            + cell("{:.2f}", r["p50_ms"]).rjust(CELL_CHARS)
            + cell("{:.2f}", r["floor_ms"]).rjust(CELL_CHARS)
            + cell("{:.2f}", r["ratio"]).rjust(CELL_CHARS)
        )
    for label, why in run["skipped"].items():
        lines.append(f"{label.ljust(LABEL_CHARS)}  skipped: {why}")
    return lines


def _notes(run: dict[str, Any]) -> list[str]:
    lines = []
    for r in run["rows"]:
        if r["misses"]:
            lines.append(
                f"{r['label']}: {r['misses']} got nothing within its wait (not timed)"
            )
    for target, errors in run["errors"].items():
        if errors["count"]:
            lines.append(f"{target}: {errors['count']} calls failed; first: {errors['first']}")
    code = run["server"].get("exit_code")
    if code not in (0, None):
        lines.append(f"okuri serve exited {code}")
    return lines


def render(result: dict[str, Any]) -> str:
    c, machine = result["config"], result["machine"]
    lines = [
        f"python -m bench floor: one caller, one call at a time; up to {c['calls']} rounds or "
        f"{c['seconds']:g} s per loop",
        f"machine: a 10-million-step Python loop takes {machine['python_loop_10m_s']:.2f} s; "
        f"{machine['cpus']} CPUs",
    ]
    for run in result["runs"]:
        lines += ["", *_store_lines(run), "", *_table(run), ""]
        lines += [*_store_request_lines(run), *_cpu_lines(run["cpu"]), *_notes(run)]
    lines += [
        "",
        "floor = the hello-world server's p50 for the same call (same client, same HTTP stack) "
        "+ writes x the store's write p50; ratio = p50 / floor",
    ]
    return "\n".join(lines)
