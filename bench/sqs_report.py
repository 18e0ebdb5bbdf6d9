"""The text `python -m bench sqs` prints: one column per node count and one for the peer emulator
(named: ministack or moto), then per node.

Why apart: the figures are a plain dict (also printed as JSON); how they are laid out for a
reader is a separate concern, and it stays testable on a hand-made dict. A figure that could not
be read prints as "-"; a counter the server does not export (manifest conflicts on engines that
do not count them) prints as "n/a", because "not counted" is not "none happened".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LABEL_CHARS = 28
CELL_CHARS = 11
STORE_CLASSES = ("put", "cas", "get", "list", "delete")  # okuri.store.counting.CLASSES


def _fifo_bound(figure: str) -> Callable[[dict[str, Any]], Any]:
    """A figure of a FIFO run's in-flight bound; None on a standard queue."""
    return lambda r: (r.get("fifo_group_bound") or {}).get(figure)


# The calls timed per call and node, with their rows' labels (a receive: one that got messages).
_CALL_ROWS = (
    ("SendMessageBatch", "SendMessageBatch p50 ms"),
    ("ReceiveMessage", "ReceiveMessage p50 ms (got)"),
    ("DeleteMessageBatch", "DeleteMessageBatch p50 ms"),
)


def _call_p50(action: str) -> Callable[[dict[str, Any]], Any]:
    """The median round trip of one call as the load's clients saw it (a receive: one that got
    messages); None where the run did not time calls."""
    return lambda r: (r.get("call_p50_ms") or {}).get(action)


ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Any], str], ...] = (
    ("messages/s end to end", lambda r: r["messages_per_s"], "{:.0f}"),
    ("messages/s sent", lambda r: r["sent_messages_per_s"], "{:.0f}"),
    ("SendMessageBatch req/s", lambda r: r["send_requests_per_s"], "{:.0f}"),
    ("ReceiveMessage req/s", lambda r: r["receive_requests_per_s"], "{:.0f}"),
    ("DeleteMessageBatch req/s", lambda r: r["delete_requests_per_s"], "{:.0f}"),
    ("empty receives", lambda r: r["empty_receives"], "{:d}"),
    *((label, _call_p50(action), "{:.1f}") for action, label in _CALL_ROWS),
    ("send->receive p50 ms", lambda r: r["latency_ms"]["p50"], "{:.1f}"),
    ("send->receive p99 ms", lambda r: r["latency_ms"]["p99"], "{:.1f}"),
    ("server CPU % (all nodes)", lambda r: r["cpu"]["server_percent"], "{:.0f}"),
    ("S3 server CPU %", lambda r: r["cpu"].get("store_percent"), "{:.0f}"),
    ("load generator CPU %", lambda r: r["cpu"]["client_percent"], "{:.0f}"),
    ("other processes' CPU %", lambda r: r["cpu"]["other_processes_percent"], "{:.0f}"),
    ("CPU stolen by the host %", lambda r: r["cpu"].get("stolen_percent"), "{:.0f}"),
    ("messages per server CPU-s", lambda r: r["cpu"]["server_messages_per_cpu_s"], "{:.0f}"),
    (
        "messages/s, a core per node",
        lambda r: r["cpu"].get("core_per_node_messages_per_s"),
        "{:.0f}",
    ),
    ("FIFO: receives holding, max", _fifo_bound("holders_max"), "{:d}"),
    ("FIFO: messages per receive", _fifo_bound("messages_per_receive"), "{:.1f}"),
    ("FIFO: held per receive ms", _fifo_bound("hold_ms"), "{:.1f}"),
    ("FIFO: in-flight bound msgs/s", _fifo_bound("messages_per_s"), "{:.0f}"),
    ("errors", lambda r: r["errors"], "{:d}"),
    ("left in queue after drain", lambda r: r["drain"]["left_in_queue"], "{:d}"),
)
# Rows left out when no column has them: not measured on this store or queue kind.
OPTIONAL_ROWS = frozenset(
    label for label, _, _ in ROWS if label == "S3 server CPU %" or label.startswith("FIFO: ")
)


def cell(fmt: str, value: Any) -> str:
    return "-" if value is None else fmt.format(value)


def _store_cell(cls: str) -> Callable[[dict[str, Any]], str]:
    return lambda node: cell("{:d}", (node.get("store_requests") or {}).get(cls))


def run_name(run: dict[str, Any]) -> str:
    """A run's column: its node count, and its round when the counts were measured in rounds."""
    if run.get("round"):
        return f"x{run['nodes']} #{run['round']}"
    return f"okuri x{run['nodes']}"


def _per_node_rows(run: dict[str, Any]) -> list[str]:
    nodes = run.get("per_node") or []
    if not nodes:
        return []
    head = f"{run_name(run)}, per node".ljust(LABEL_CHARS)
    lines = [head + "".join(f"node {n['node']}".rjust(CELL_CHARS) for n in nodes)]

    def row(label: str, get: Callable[[dict[str, Any]], str]) -> None:
        lines.append(label.ljust(LABEL_CHARS) + "".join(get(n).rjust(CELL_CHARS) for n in nodes))

    row("CPU %", lambda n: cell("{:.0f}", n.get("cpu_percent")))
    by_node = run.get("call_p50_ms_by_node") or {}
    for action, label in _CALL_ROWS:
        row(label, _node_call_cell(by_node.get(action) or []))
    row("manifest commits", lambda n: cell("{:d}", n.get("manifest_commits")))
    row(
        "manifest conflicts",
        lambda n: "n/a" if n.get("manifest_conflicts") is None else str(n["manifest_conflicts"]),
    )
    events = [n.get("engine_events") or {} for n in nodes]
    if any("manifest_forwards" in e or "peer_commit_ops" in e for e in events):
        row("commits sent to the leader", lambda n: _event(n, "manifest_forwards"))
        row("ops committed for others", lambda n: _event(n, "peer_commit_ops"))
    classes = [c for c in STORE_CLASSES if any(c in (n.get("store_requests") or {}) for n in nodes)]
    extra = sorted({c for n in nodes for c in n.get("store_requests") or {}} - set(classes))
    for cls in [*classes, *extra]:
        row(f"store {cls} requests", _store_cell(cls))
    return lines


def _round_lines(rounds: dict[str, Any] | None) -> list[str]:
    """Medians over the rounds, and each node count's rate over the first count's per round."""
    if not rounds:
        return []
    medians = rounds["median_messages_per_s"]
    base = rounds["base_nodes"]
    lines = [
        f"over {len(next(iter(rounds['messages_per_s'].values())))} rounds, median messages/s "
        "end to end: " + ", ".join(f"okuri x{c} {v:.0f}" for c, v in medians.items())
    ]
    for count, ratios in rounds["ratio_to_base"].items():
        each = ", ".join(cell("{:.2f}", r) for r in ratios)
        median = cell("{:.2f}", rounds["median_ratio_to_base"][count])
        lines.append(f"okuri x{count}/okuri x{base} round by round: {each}; median {median}")
    return [*lines, ""]


def _node_call_cell(per_node: list[Any]) -> Callable[[dict[str, Any]], str]:
    def get(node: dict[str, Any]) -> str:
        i = node["node"]
        return cell("{:.1f}", per_node[i] if 0 <= i < len(per_node) else None)

    return get


def _event(node: dict[str, Any], name: str) -> str:
    return str((node.get("engine_events") or {}).get(name, 0))


def render(result: dict[str, Any]) -> str:
    c = result["config"]
    linger = "server default" if c["linger_ms"] is None else f"{c['linger_ms']} ms"
    runs: list[dict[str, Any]] = result["okuri"]
    peer, peer_name = result.get("peer"), c.get("peer") or "peer"
    columns = [(run_name(r), r) for r in runs]
    if peer:
        columns.append((peer_name, peer))
    if c.get("sequential"):
        load = (
            f"{c['producers']} sequential client(s) x SendMessageBatch({c['batch_entries']}), "
            f"ReceiveMessage({c['batch_entries']}, wait {c['wait_s']} s), DeleteMessageBatch "
            "in turn"
        )
    else:
        load = (
            f"{c['producers']} producers x SendMessageBatch({c['batch_entries']}), "
            f"{c['consumers']} consumers x ReceiveMessage({c['batch_entries']}, wait "
            f"{c['wait_s']} s) + DeleteMessageBatch"
        )
    window = (
        f"{c['messages']} messages sent and deleted (at most {c['seconds']:g} s), from an "
        "empty queue"
        if c.get("messages")
        else f"{c['seconds']:g} s"
    )
    lines = [
        f"python -m bench sqs: {load}; {c['body_bytes']}-byte bodies; {c['client']} client"
        + (f"; FIFO queue, {c['fifo_groups']} message groups" if c.get("fifo_groups") else ""),
        f"warm-up {c['warmup_s']:g} s, window {window}, drain <= {c['drain_s']:g} s; "
        f"backlog cap {c['backlog_max'] or 'none'}; okuri linger {linger}; store: {c['store']}",
        "",
        "".ljust(LABEL_CHARS) + "".join(name.rjust(CELL_CHARS) for name, _ in columns),
    ]
    for label, get, fmt in ROWS:
        values = [get(figures) for _, figures in columns]
        if all(v is None for v in values) and label in OPTIONAL_ROWS:
            continue
        lines.append(
            label.ljust(LABEL_CHARS) + "".join(cell(fmt, v).rjust(CELL_CHARS) for v in values)
        )
    lines.append("")
    for run in runs:
        per_node = _per_node_rows(run)
        if per_node:
            lines += [*per_node, ""]
    lines += _round_lines(result.get("rounds"))
    if result.get("peer_skipped"):
        lines.append(f"peer {peer_name} skipped: {result['peer_skipped']}")
    for run in runs:
        if run.get("ratio_to_peer") is not None:
            lines.append(
                f"{run_name(run)}/{peer_name}, messages/s end to end: {run['ratio_to_peer']:.2f}x"
            )
    for name, figures in columns:
        if figures.get("first_error"):
            lines.append(f"{name} first error: {figures['first_error']}")
        server = figures.get("server") or {}
        if server.get("exit_code") not in (0, None):
            lines.append(f"{name} server exited {server['exit_code']}")
    lines.append(
        f"note: the load generator (one Python process) and the servers under test share this "
        f"machine's {result['machine']['cpus']} CPUs; end-to-end rates are lower bounds for "
        "dedicated servers. 'messages per server CPU-s' is what one server core could carry; "
        "'messages/s, a core per node' projects the rate with a core per node (the rate over "
        "the busiest node's CPU share)."
        + (
            " 'FIFO: in-flight bound' is what the rule that a message group goes to one receive "
            "at a time allows: the receives that may hold groups at once, times the messages a "
            "receive got, over how long a consumer held them (receive answered to delete answered)."
            if c.get("fifo_groups")
            else ""
        )
    )
    return "\n".join(lines)
