"""The text `python -m bench cluster` prints: the verdict first, then per node, then what went
wrong.

Why apart: the result is a plain dict (also printed as JSON); laying it out for a reader is a
separate concern, testable on a hand-made dict. Examples of failures are printed in full (as
JSON lines), because they are what whoever fixes the engine reads first.
"""

from __future__ import annotations

import json
from typing import Any

from bench.cluster_load import BACKLOG_POLL_S


def _ack_log_lines(setting: str, events: dict[str, int] | None) -> list[str]:
    if not events:
        return []
    label = f"ack logs ({setting})"
    return [
        f"{label:<26}{events['deletes_answered']} deletes answered from logs, "
        f"{events['closed_by_committers']} logs closed by a committer (since each node's last "
        "start)"
    ]


def render(r: dict[str, Any]) -> str:
    p = r["plan"]
    mark = {True: "PASS", False: "FAIL"}
    d = r["duration_s"]
    fifo = r.get("fifo")
    queue = f"FIFO queue, {fifo['groups']} groups" if fifo else "standard queue"
    if fifo and fifo.get("partitions"):
        queue += ", high-throughput (partitioned)"
    lines = [
        f"python -m bench cluster: {p['nodes']} nodes on {p['store']}, {queue}; "
        f"{p['fault_s']:g} s of faults "
        f"(SIGKILL a random node every {p['kill_every_s']:g} s{_restart(p)}); "
        f"{p['producers']} producers, "
        f"{p['consumers']} consumers; visibility {p['visibility_s']} s; seed {p['seed']}",
        *_client_lines(p),
        "",
        f"sends acknowledged        {r['sends_acknowledged']}",
        f"delivered                 {r['delivered']} messages in {r['deliveries']} deliveries "
        f"({r['redeliveries']} redeliveries)",
        f"deleted                   {r['deleted']}",
        f"lost                      {r['lost']}",
        f"deliveries after delete   {r['deliveries_after_delete']}{_kinds(r)}",
        *_other_messages(r),
        f"delivered, send unacked   {r['delivered_unacknowledged']}",
        *_backlog(r.get("backlog"), p.get("backlog_max")),
        *_fifo_lines(fifo),
        f"kills                     {r['kills']} (restart to ready: p50 "
        f"{_s(r['restart_s']['p50'])}, max {_s(r['restart_s']['max'])})",
        f"duration                  faults {d['fault_s']:.1f} s, restarts {d['restart_wait_s']:.1f}"
        f" s, drain {d['drain_s']:.1f} s; total {d['total_s']:.1f} s",
        *_ack_log_lines(p.get("ack_logs", "auto"), r.get("ack_logs")),
        f"client failovers          {r['errors']['failovers']} (5xx answers "
        f"{r['errors']['server_faults']}, calls given up {r['errors']['exhausted_calls']})",
        *_unanswered(r["errors"].get("unanswered_attempts")),
        "",
        "node  kills   req/s  sends/s  received/s  deleted/s  failovers",
    ]
    for n in r["nodes"]["per_node"]:
        lines.append(
            f"{n['node']:>4}  {n['kills']:>5}  {n['requests_per_s']:>6.0f}  "
            f"{n['acknowledged_per_s']:>7.0f}  {n['received_per_s']:>10.0f}  "
            f"{n['deleted_per_s']:>9.0f}  {n['failovers']:>9}"
        )
    lines.append("")
    kills = ", ".join(f"node {k['node']} at {k['at_s']:.1f} s" for k in r["kill_log"])
    lines.append(f"kills: {kills or 'none'}")
    for call in r.get("after_delete_calls", ()):
        lines.append(
            f"delete call {call['delete_call']} (answered by node {call['node']} at "
            f"{call['answered_at_s']:.3f} s): {call['came_back']} of its {call['messages']} "
            "messages delivered again after it"
        )
    for example in r["after_delete_examples"]:
        lines.append(f"after delete: {json.dumps(example)}")
    for example in r.get("other_message_examples", ()):
        lines.append(f"sent again, delivered after the first one's delete: {json.dumps(example)}")
    for example in (fifo or {}).get("order_examples", ()):
        lines.append(f"out of group order: {json.dumps(example)}")
    for example in (fifo or {}).get("dedup_examples", ()):
        lines.append(f"deduplication split: {json.dumps(example)}")
    if r["lost_examples"]:
        lines.append(f"lost, e.g.: {', '.join(r['lost_examples'])}")
    for why in r["nodes"]["restart_failures"]:
        lines.append(f"restart failed: {why}")
    for crash in r["errors"]["client_crashes"]:
        lines.append(f"client crashed: {crash}")
    for what in ("calls", "entries"):
        refused = r["errors"].get(f"refused_{what}")
        if refused:
            lines.append(f"refused {what} (4xx, by code): {refused}")
    if r["errors"]["first_error"]:
        lines.append(f"first client error: {r['errors']['first_error']}")
    lines.append(
        "checks: " + "; ".join(f"{name.replace('_', ' ')}: {mark[ok]}"
                               for name, ok in r["checks"].items())
    )  # fmt: skip
    return "\n".join(lines)


def _backlog(b: dict[str, int] | None, most: int | None) -> list[str]:
    if not b:
        return []
    pause_ms = BACKLOG_POLL_S * 1000
    return [f"backlog                   peak {b['peak']} acknowledged, not deleted (producers "
            f"pause at {most}: {b['producer_pauses']} pauses of {pause_ms:g} ms)"]  # fmt: skip


def _other_messages(r: dict[str, Any]) -> list[str]:
    n = r.get("other_message_after_delete") or 0
    if not n:
        return []
    return [f"  (and {n} deliveries of a body sent again under another MessageId after the "
            "first one's delete: at-least-once, not counted)"]  # fmt: skip


def _kinds(r: dict[str, Any]) -> str:
    kinds = r.get("after_delete_kinds") or {}
    if not kinds:
        return ""
    return " (" + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items())) + ")"


def _restart(p: dict[str, Any]) -> str:
    after = p.get("restart_after_s") or 0
    return f", started again {after:g} s after" if after else ""


def _client_lines(p: dict[str, Any]) -> list[str]:
    """How the clients reach nodes, when the plan says more than the defaults."""
    shape = p.get("shape", "default")
    parts = []
    if p.get("connect_timeout_s") is not None or p.get("read_timeout_s") is not None:
        parts.append(
            f"connect timeout {_s(p.get('connect_timeout_s'))}, read timeout "
            f"{_s(p.get('read_timeout_s'))}"
        )
    if p.get("blind_clients"):
        parts.append("any node, up or not")
    if p.get("delete_elsewhere"):
        parts.append("deletes first to another node than their receive")
    if shape == "default" and not parts:
        return []
    return [f"shape {shape}; clients: receive wait {p.get('wait_s', '-')} s"
            + "".join(f"; {part}" for part in parts)]  # fmt: skip


def _unanswered(by_action: dict[str, int] | None) -> list[str]:
    if not by_action:
        return []
    counts = ", ".join(f"{n} {action}" for action, n in sorted(by_action.items()))
    return [f"unanswered attempts       {counts} (each made again on another node)"]


def _fifo_lines(f: dict[str, Any] | None) -> list[str]:
    if not f:
        return []
    return [
        f"FIFO groups               {f['groups_delivered']} of {f['groups']} delivered "
        f"({f['messages_sequenced']} messages with a sequence number)",
        f"group order violations    {f['order_violations']}"
        + (f" ({f['deliveries_unsequenced']} deliveries without group or sequence number)"
           if f["deliveries_unsequenced"] else ""),
        f"dedup violations          {f['dedup_violations']} ({f['dedup_ids']} ids, "
        f"{f['duplicate_answers']} answers to resends"
        + (f", {f['dedup_unjudged']} not judged: resent after the window" if f["dedup_unjudged"]
           else "") + ")",
    ]  # fmt: skip


def _s(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} s"
