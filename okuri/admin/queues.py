"""`okuri queues list|show|create|purge|delete|peek|redrive`: a running okuri's queues, through
its native API (okuri.client), as rabbitmqctl's list_queues/purge_queue/delete_queue or the
AWS console's queue pages and "poll for messages" would show them.

`peek` is the API's browse: it leases nothing and moves no count. `list` prints names unless
asked for `--stats`, because reading a queue's counts is a use of it for `expires_s` (a
monitoring loop listing with counts would keep every expiring queue alive).
"""

from __future__ import annotations

import argparse
import base64
from collections.abc import Callable
from datetime import datetime
from typing import Any

from okuri.admin import table
from okuri.admin.connect import (
    USAGE,
    Refused,
    add_arguments,
    explain,
    open_client,
    report,
)
from okuri.client import BrowsedItem, Client, OkuriClientError, Queue

peek_items_max = 1000  # one `peek` pages through the API's browse up to this many items
page_items_max = 100  # the API's browse page bound
peek_pages_max = 100  # pages one `peek` asks for (a page over finished slots may be empty)
ATTRIBUTES: dict[str, Callable[[str], Any]] = {
    "lease_timeout_s": int,
    "max_attempts": int,
    "dead_letter_queue": str,
    "retention_s": int,
    "delay_s": int,
    "content_based_dedup": lambda text: _flag(text),
    "expires_s": int,
}
NULLABLE = ("max_attempts", "dead_letter_queue", "expires_s")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="okuri queues",
        description="Look into and manage the queues of a running okuri, through its native API.",
    )
    add_arguments(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        add_arguments(sub, inner=True)
        return sub

    listing = command("list", "list queue names (with --stats: their counts)")
    listing.add_argument("--prefix", default="", help="only queues whose names start with this")
    listing.add_argument(
        "--stats",
        action="store_true",
        help="also each queue's counts (one request per queue; counts as a use for expires_s)",
    )
    command("show", "a queue's attributes and counts").add_argument("queue")
    create = command("create", "create a queue (again with the same attributes: no change)")
    create.add_argument("queue")
    create.add_argument("--fifo", action="store_true", help="a FIFO queue (its name ends .fifo)")
    create.add_argument(
        "--attr",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"an attribute ({', '.join(ATTRIBUTES)}); VALUE null resets {', '.join(NULLABLE)}",
    )
    command("purge", "delete every item of a queue").add_argument("queue")
    command("delete", "delete a queue and its items").add_argument("queue")
    peek = command("peek", "show a queue's items, oldest first, without leasing them")
    peek.add_argument("queue")
    peek.add_argument(
        "--limit", type=int, default=10, help=f"at most this many (1 to {peek_items_max})"
    )
    peek.add_argument("--after", help="go on from a previous peek's cursor")
    redrive = command("redrive", "move a dead-letter queue's items back")
    redrive.add_argument("queue", metavar="DLQ")
    redrive.add_argument("--to", help="this queue (default: each item to the queue it came from)")
    redrive.add_argument("--max", type=int, help="move at most this many (default 10000)")
    return parser


def cli_main(argv: list[str]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else USAGE
    what = f"queue {args.queue!r}" if getattr(args, "queue", None) else "the queues"
    try:
        with open_client(args) as client:
            RUNS[args.command](client, args)
    except Refused as err:
        report(str(err))
        return err.code
    except OkuriClientError as err:
        report(explain(err, args.resolved_url, what, args.dev_key))
        return 1
    return 0


# --- the commands ------------------------------------------------------------------------------


def _list(client: Client, args: argparse.Namespace) -> None:
    names = list(client.iter_queues(args.prefix))
    if not args.stats:
        if args.json:
            table.as_json([{"name": n, "fifo": n.endswith(".fifo")} for n in names])
        else:
            table.table(["NAME", "TYPE"], [(n, _kind(n.endswith(".fifo"))) for n in names])
        return
    queues = [client.get_queue(n) for n in names]
    if args.json:
        table.as_json([_queue_doc(q) for q in queues])
        return
    header = ["NAME", "TYPE", "VISIBLE", "LEASED", "DELAYED", "DEAD-LETTERED"]
    rows = [
        (
            q.name,
            _kind(q.fifo),
            q.stats.visible,
            q.stats.leased,
            q.stats.delayed,
            q.stats.dead_lettered,
        )
        for q in queues
    ]
    table.table(header, rows)


def _show(client: Client, args: argparse.Namespace) -> None:
    _print_queue(client.get_queue(args.queue), args.json)


def _create(client: Client, args: argparse.Namespace) -> None:
    if args.fifo and not args.queue.endswith(".fifo"):
        raise Refused(f"a FIFO queue's name ends in .fifo: {args.queue}.fifo, not {args.queue}")
    attrs = dict(_attribute(text) for text in args.attr)
    _print_queue(client.create_queue(args.queue, **attrs), args.json)


def _purge(client: Client, args: argparse.Namespace) -> None:
    client.purge_queue(args.queue)
    _done(args, {"queue": args.queue, "purged": True}, f"purged {args.queue}")


def _delete(client: Client, args: argparse.Namespace) -> None:
    client.delete_queue(args.queue)
    _done(args, {"queue": args.queue, "deleted": True}, f"deleted {args.queue}")


def _peek(client: Client, args: argparse.Namespace) -> None:
    if not 1 <= args.limit <= peek_items_max:
        raise Refused(f"--limit must be 1 to {peek_items_max}, not {args.limit}", USAGE)
    items: list[BrowsedItem] = []
    after: str | None = args.after
    for _ in range(peek_pages_max):
        page = client.browse(
            args.queue, limit=min(page_items_max, args.limit - len(items)), after=after
        )
        items.extend(page.items)
        after = page.next
        if after is None or len(items) >= args.limit:
            break
    if args.json:
        table.as_json({"items": [_item_doc(i) for i in items], "next": after})
        return
    sources = any(i.dead_letter_source for i in items)
    header = ["ID", "STATE", "UNTIL", "ATTEMPTS", "ENQUEUED", *(["FROM"] if sources else [])]
    rows = [
        (
            i.id,
            i.state,
            _time(i.until),
            i.attempts,
            _time(i.enqueued_at),
            *([i.dead_letter_source] if sources else []),
            _body(i),
        )
        for i in items
    ]
    table.table([*header, "BODY"], rows)
    if after is not None:
        print(f"(more: okuri queues peek {args.queue} --after {after})")


def _redrive(client: Client, args: argparse.Namespace) -> None:
    moved = client.redrive(args.queue, target=args.to, max_items=args.max)
    where = args.to or "the queues they came from"
    _done(
        args, {"queue": args.queue, "moved": moved}, f"moved {moved} from {args.queue} to {where}"
    )


RUNS: dict[str, Callable[[Client, argparse.Namespace], None]] = {
    "list": _list,
    "show": _show,
    "create": _create,
    "purge": _purge,
    "delete": _delete,
    "peek": _peek,
    "redrive": _redrive,
}


# --- rendering ---------------------------------------------------------------------------------


def _kind(fifo: bool) -> str:
    return "fifo" if fifo else "standard"


def _time(at: datetime | None) -> str:
    return "-" if at is None else at.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso(at: datetime | None) -> str | None:
    """RFC 3339 in UTC to the millisecond, as the server writes times."""
    if at is None:
        return None
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _body(item: BrowsedItem) -> str:
    try:
        return item.text
    except UnicodeDecodeError:
        return f"<{len(item.body)} bytes>"


def _queue_doc(q: Queue) -> dict[str, Any]:
    return {
        "name": q.name,
        "fifo": q.fifo,
        "created_at": _iso(q.created_at),
        "attributes": {k: getattr(q.attributes, k) for k in ATTRIBUTES},
        "stats": {
            "visible": q.stats.visible,
            "leased": q.stats.leased,
            "delayed": q.stats.delayed,
            "dead_lettered": q.stats.dead_lettered,
        },
    }


def _print_queue(q: Queue, as_json: bool) -> None:
    doc = _queue_doc(q)
    if as_json:
        table.as_json(doc)
        return
    rows: list[tuple[str, object]] = [
        ("name", q.name),
        ("type", _kind(q.fifo)),
        ("created", _time(q.created_at)),
    ]
    rows += [
        (k, v if v is not None else "null")
        for k, v in doc["attributes"].items()
        if q.fifo or k != "content_based_dedup"
    ]
    rows += list(doc["stats"].items())
    table.pairs(rows)


def _item_doc(i: BrowsedItem) -> dict[str, Any]:
    doc: dict[str, Any] = {"id": i.id, "state": i.state, "attempts": i.attempts}
    try:
        doc["body"] = i.text
    except UnicodeDecodeError:
        doc["body_base64"] = base64.b64encode(i.body).decode()
    for name in ("until", "enqueued_at", "first_leased_at"):
        at = getattr(i, name)
        doc[name] = _iso(at)
    doc["headers"] = dict(i.headers)
    for name in ("group", "sequence_number", "dead_letter_source"):
        doc[name] = getattr(i, name)
    return doc


def _done(args: argparse.Namespace, doc: dict[str, Any], line: str) -> None:
    if args.json:
        table.as_json(doc)
    else:
        print(line)


def _attribute(text: str) -> tuple[str, Any]:
    name, eq, value = text.partition("=")
    if not eq or name not in ATTRIBUTES:
        raise Refused(
            f"--attr takes NAME=VALUE with NAME one of {', '.join(ATTRIBUTES)}; not {text!r}",
            USAGE,
        )
    if value == "null" and name in NULLABLE:
        return name, None
    try:
        return name, ATTRIBUTES[name](value)
    except ValueError:
        raise Refused(f"--attr {name}: {value!r} is not a valid value", USAGE) from None


def _flag(text: str) -> bool:
    if text.lower() in ("true", "yes", "1"):
        return True
    if text.lower() in ("false", "no", "0"):
        return False
    raise ValueError(text)
