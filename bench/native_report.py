"""The text `python -m bench native` prints: one column per surface, then the ratio and the ledger.

Why apart: the figures are a plain dict (also printed as JSON); their layout is a separate
concern, testable on a hand-made dict. A figure that could not be read prints as "-".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.sqs_report import STORE_CLASSES, cell

LABEL_CHARS = 34
S3_CPU = "S3 server CPU %"  # a row only with --store s3
CELL_CHARS = 11

ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Any], str], ...] = (
    ("messages/s end to end", lambda r: r["messages_per_s"], "{:.0f}"),
    ("messages/s sent", lambda r: r["sent_messages_per_s"], "{:.0f}"),
    ("produce / send req/s", lambda r: r["send_requests_per_s"], "{:.0f}"),
    ("lease / receive req/s", lambda r: r["receive_requests_per_s"], "{:.0f}"),
    ("complete / delete req/s", lambda r: r["delete_requests_per_s"], "{:.0f}"),
    ("empty leases / receives", lambda r: r["empty_receives"], "{:d}"),
    ("send->receive p50 ms", lambda r: r["latency_ms"]["p50"], "{:.1f}"),
    ("send->receive p99 ms", lambda r: r["latency_ms"]["p99"], "{:.1f}"),
    ("server CPU %", lambda r: r["cpu"]["server_percent"], "{:.0f}"),
    (S3_CPU, lambda r: r["cpu"].get("store_percent"), "{:.0f}"),
    ("load generator CPU %", lambda r: r["cpu"]["client_percent"], "{:.0f}"),
    ("other processes' CPU %", lambda r: r["cpu"]["other_processes_percent"], "{:.0f}"),
    ("CPU stolen by the host %", lambda r: r["cpu"].get("stolen_percent"), "{:.0f}"),
    ("messages per server CPU-s", lambda r: r["cpu"]["server_messages_per_cpu_s"], "{:.0f}"),
    ("manifest commits", lambda r: r["manifest_commits"], "{:d}"),
    *(
        (
            f"store {cls} requests per message",
            lambda r, c=cls: (r["store_requests_per_message"] or {}).get(c),
            "{:.4f}",
        )
        for cls in STORE_CLASSES
    ),
    ("errors", lambda r: r["errors"], "{:d}"),
    ("acknowledged (ledger)", lambda r: r["ledger"]["acknowledged"], "{:d}"),
    ("lost (acknowledged, never received)", lambda r: r["ledger"]["lost"], "{:d}"),
    ("received after completed", lambda r: r["ledger"]["received_after_complete"], "{:d}"),
    ("left in queue after drain", lambda r: r["drain"]["left_in_queue"], "{:d}"),
)


def render(result: dict[str, Any]) -> str:
    c = result["config"]
    linger = "server default" if c["linger_ms"] is None else f"{c['linger_ms']} ms"
    columns = [("native", result["native"])]
    if result.get("sqs") is not None:
        columns.append(("sqs", result["sqs"]))
    wait = c["wait_s"]
    n, b = c["native_items_per_request"], c["sqs_batch_entries"]
    lines = [
        f"python -m bench native: one okuri serve, store: {c['store']}, linger {linger}; "
        f"{c['producers']} producers, {c['consumers']} consumers; {c['body_bytes']}-byte bodies",
        f"native: produce {n} items, lease {n} (request_timeout_s {wait}), complete what was "
        f"leased; {c['client']} client",
    ]
    if result.get("sqs") is not None:
        lines.append(
            f"sqs: SendMessageBatch({b}), ReceiveMessage({b}, wait {wait} s), "
            "DeleteMessageBatch; light client"
        )
    lines += [
        f"each surface on a fresh queue, in turn: warm-up {c['warmup_s']:g} s, window "
        f"{c['seconds']:g} s, drain <= {c['drain_s']:g} s",
        "",
        "".ljust(LABEL_CHARS) + "".join(name.rjust(CELL_CHARS) for name, _ in columns),
    ]
    for label, get, fmt in ROWS:
        values = [get(figures) for _, figures in columns]
        if label == S3_CPU and all(v is None for v in values):
            continue
        lines.append(
            label.ljust(LABEL_CHARS) + "".join(cell(fmt, v).rjust(CELL_CHARS) for v in values)
        )
    lines.append("")
    if result.get("ratio_native_to_sqs") is not None:
        lines.append(f"native/sqs, messages/s end to end: {result['ratio_native_to_sqs']:.2f}x")
    for name, figures in columns:
        ledger = figures["ledger"]
        verdict = "ok" if ledger["lost"] == 0 and ledger["received_after_complete"] == 0 else "FAIL"
        lines.append(
            f"{name} ledger: {verdict}: lost={ledger['lost']} of {ledger['acknowledged']} "
            f"acknowledged, {ledger['redeliveries']} redelivered, "
            f"{ledger['received_after_complete']} received after completed"
            + ("" if ledger["drained"] else "; NOT drained (lost counts what was left)")
        )
        if figures.get("first_error"):
            lines.append(f"{name} first error: {figures['first_error']}")
    server = result.get("server") or {}
    if server.get("exit_code") not in (0, None):
        lines.append(f"server exited {server['exit_code']}")
    lines.append(
        f"note: the load generator (one Python process) and the server share this machine's "
        f"{result['machine']['cpus']} CPUs, and other processes may use them too (the 'other "
        "processes' row); end-to-end rates are lower bounds for a dedicated server. 'messages "
        "per server CPU-s' is what one server core could carry."
    )
    return "\n".join(lines)
