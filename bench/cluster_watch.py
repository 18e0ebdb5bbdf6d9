"""The manifest's history during an `python -m bench cluster` run, and a late message's story in it.

Why: a delivery after delete is a fact about the manifest's history (was the message finished
and then unfinished again? never finished? leased again under a log?), but the store keeps only
the latest manifest. With `--keep DIR`, a thread of the bench reads the queue's manifest every
few milliseconds (a file read on a local directory, a GET on S3) and appends every version it
has not seen to DIR/manifests.jsonl.gz: one JSON line `{"t": s since the run's start, "m": the
manifest as stored}`, after a first line naming the run's clocks. A version that came and went
between two reads is missed; the versions around it show the gap (`v` grows by one per write),
and its commit token stays in the next one's `commits`.

`python -m bench.cluster_watch DIR` then tells, for each message the run delivered after
its delete (DIR/after_delete.json), every change of its state across the versions seen: its
lease (epoch, until, relative to the run's start), whether it is finished, the ack logs that
list it, the commit tokens that wrote the versions between, and the node that led. A finished
message seen unfinished again, or an epoch seen going back, is marked. Node ids (random per
start of a node) are matched to the bench's node numbers through the lead's URL, the only place
a manifest names where a node listens.

Bounded: the watch reads at most every WATCH_S_MIN, and the story of at most STORIES_MAX
messages is told.

The one white-box module of the bench: a manifest's history is okuri's inside, so this reads
the manifest's key (okuri.core.keys) and what a receipt handle names (okuri.core.receipts:
its slot, index and lease epoch), which the rest of the bench treats as opaque. The import
contract "the bench uses okuri as a client does" names these two imports as its only
exceptions. A local store's file is read through okuri.store.local's own key encoding.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from bench.servers import botocore_client
from okuri.core import keys
from okuri.core.receipts import Receipt
from okuri.errors import ReceiptHandleInvalid, StoreError
from okuri.store.journal import JournalStore, holds_journal
from okuri.store.local import DIR_SUFFIX, encode_segment

MANIFESTS_FILE = "manifests.jsonl.gz"
AFTER_DELETE_FILE = "after_delete.json"
NODES_FILE = "nodes.json"
WATCH_S_MIN = 0.005
STORIES_MAX = 50

Reader = Callable[[], bytes | None]


# --- what a receipt names ---------------------------------------------------------------------


def receipt_place(handle: str) -> tuple[int, int, int] | None:
    """(slot, index, epoch) of an okuri receipt handle; None if unreadable."""
    try:
        r = Receipt.decode(handle)
    except ReceiptHandleInvalid:
        return None
    return r.seq, r.idx, r.epoch


def copy_kind(delivered: str, deleted: str) -> str:
    """What a receipt delivered after a delete names, next to the deleted one: another copy of
    the message (another slot or index: written twice), or the same copy leased again (a later
    epoch), under the same lease (the same epoch), or under an earlier one."""
    got, gone = receipt_place(delivered), receipt_place(deleted)
    if got is None or gone is None:
        return "receipt unreadable"
    if got[:2] != gone[:2]:
        return "another copy"
    if got[2] > gone[2]:
        return "same copy, later epoch"
    if got[2] == gone[2]:
        return "same copy, same epoch"
    return "same copy, earlier epoch"


# --- watching ---------------------------------------------------------------------------------


def local_reader(data_dir: Path, queue: str) -> Reader:
    """Reads the queue's manifest in a local store, in whichever layout the nodes gave the
    directory (okuri/store/directory.py): from the journal, or its file."""
    key = keys.manifest(queue)
    *dirs, name = key.split("/")
    path = data_dir.joinpath(*(encode_segment(d) + DIR_SUFFIX for d in dirs), encode_segment(name))
    journal: list[JournalStore] = []

    def read() -> bytes | None:
        try:
            if not journal and holds_journal(str(data_dir)):
                journal.append(JournalStore(data_dir))
            return journal[0].get_blocking(key).data if journal else path.read_bytes()
        except (OSError, StoreError):
            return None

    return read


def s3_reader(
    endpoint: str, bucket: str, key_id: str, secret: str, region: str, queue: str
) -> Reader:
    """GETs the queue's manifest from an S3-compatible endpoint (botocore, blocking)."""
    from botocore.exceptions import BotoCoreError, ClientError

    client = botocore_client("s3", endpoint, key_id, secret, region, 2, 5, attempts=1)
    key = keys.manifest(queue)

    def read() -> bytes | None:
        try:
            return bytes(client.get_object(Bucket=bucket, Key=key)["Body"].read())
        except (BotoCoreError, ClientError, OSError):
            return None

    return read


class ManifestWatch(threading.Thread):
    """Appends every manifest version it reads and has not seen to `path` until stopped."""

    def __init__(self, read: Reader, path: Path, start_s: float, every_s: float) -> None:
        super().__init__(name="okuri-bench-manifest-watch", daemon=True)
        self.read = read
        self.path = path
        self.start_s = start_s
        self.every_s = max(WATCH_S_MIN, every_s)
        self.versions = 0
        self.reads = 0
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        last = b""
        with gzip.open(self.path, "wt", encoding="utf-8", compresslevel=1) as out:
            header = {"start_wall_s": time.time() - (time.monotonic() - self.start_s)}
            out.write(json.dumps(header) + "\n")
            while not self._halt.is_set():
                data = self.read()
                self.reads += 1
                if data is not None and data != last:
                    last = data
                    self.versions += 1
                    t = round(time.monotonic() - self.start_s, 4)
                    out.write(f'{{"t": {t}, "m": {data.decode("utf-8", "replace")}}}\n')
                self._halt.wait(self.every_s)


# --- reading the history back -------------------------------------------------------------------


@dataclass(frozen=True)
class Version:
    t: float  # s since the run's start, when the watch read it
    m: dict[str, Any]  # the manifest as stored (okuri.core.state's JSON)

    @property
    def v(self) -> int:
        return int(self.m["v"])


def load_history(path: Path) -> tuple[float, list[Version]]:
    """(the run's start on the wall clock, in s; the versions seen, in order)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        start_wall_s = float(json.loads(f.readline())["start_wall_s"])
        versions = []
        for line in f:
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue  # a line cut by the end of the run
            versions.append(Version(float(d["t"]), d["m"]))
    return start_wall_s, versions


def node_names(versions: list[Version], ports: dict[int, int]) -> dict[str, str]:
    """Node id (per start of a node) -> "node N", from the leads the manifests name."""
    by_port = {port: index for index, port in ports.items()}
    out: dict[str, str] = {}
    for ver in versions:
        lead = ver.m.get("lead")
        if not lead:
            continue
        node_id, url = str(lead[0]), str(lead[1])
        port = int(url.rsplit(":", 1)[-1]) if url.rsplit(":", 1)[-1].isdigit() else -1
        if port in by_port:
            out.setdefault(node_id, f"node {by_port[port]}")
    return out


def message_state(m: dict[str, Any], slot: int, index: int, start_wall_s: float) -> dict[str, Any]:
    """What one manifest says of message (slot, index): finished, leased, visible, not adopted."""
    for seq, _sid, count, _sent, done_hex, leases, *_ in m["segs"]:
        if seq != slot:
            continue
        if index >= count:
            return {"state": "no such index"}
        if int(done_hex, 16) >> index & 1:
            return {"state": "finished"}
        logs = sorted(log for log, places in m.get("logs", {}).items() if [slot, index] in places)
        for i, epoch, until_ms, first_ms in leases:
            if i == index:
                state = "leased" if until_ms else "released"
                return {
                    "state": state,
                    "epoch": epoch,
                    "until_s": round(until_ms / 1000 - start_wall_s, 3) if until_ms else 0,
                    "first_s": round(first_ms / 1000 - start_wall_s, 3) if first_ms else 0,
                    **({"logs": logs} if logs else {}),
                }
        return {"state": "visible, never received", **({"logs": logs} if logs else {})}
    if slot < int(m["next"]):
        return {"state": "finished (segment dropped)"}
    return {"state": "not adopted yet"}


def _name(token: str, names: dict[str, str]) -> str:
    node_id = token.split(".", 1)[0].split("-", 1)[0]
    return f"{token} ({names[node_id]})" if node_id in names else token


def story(
    versions: list[Version],
    slot: int,
    index: int,
    start_wall_s: float,
    names: dict[str, str],
) -> Iterator[dict[str, Any]]:
    """Each version seen in which message (slot, index) changed, with what wrote it."""
    before: dict[str, Any] | None = None
    prev: Version | None = None
    for ver in versions:
        state = message_state(ver.m, slot, index, start_wall_s)
        if state != before:
            commits = [str(c) for c in ver.m.get("commits", [])]
            if prev is not None:
                seen = set(prev.m.get("commits", []))
                commits = [c for c in commits if c not in seen]
            lead = ver.m.get("lead")
            entry: dict[str, Any] = {
                "t": ver.t,
                "v": ver.v,
                "missed_versions": 0 if prev is None else max(0, ver.v - prev.v - 1),
                **state,
                "written_by": [_name(c, names) for c in commits[-4:]],
                "lead": None if not lead else _name(str(lead[0]), names),
            }
            if before is not None and _went_back(before, state):
                entry["went_back"] = True
            yield entry
            before = state
        prev = ver


def _went_back(before: dict[str, Any], after: dict[str, Any]) -> bool:
    """A finished message unfinished again, or an epoch that decreased other than by a release."""
    if before["state"].startswith("finished") and not after["state"].startswith("finished"):
        return True
    if "epoch" in before and "epoch" in after and after["state"] != "released":
        return bool(after["epoch"] < before["epoch"])
    return False


def tell(directory: Path, out: IO[str]) -> int:
    """Print the stories of the messages delivered after their delete; how many told."""
    late = json.loads((directory / AFTER_DELETE_FILE).read_text())
    nodes_path = directory / NODES_FILE
    nodes = json.loads(nodes_path.read_text()) if nodes_path.exists() else {}
    start_wall_s, versions = load_history(directory / MANIFESTS_FILE)
    ports = {int(k): int(v["port"]) for k, v in nodes.get("nodes", {}).items()}
    names = node_names(versions, ports)
    out.write(
        f"{len(versions)} manifest versions seen (v{versions[0].v if versions else '-'}"
        f"..v{versions[-1].v if versions else '-'}); {len(late)} messages delivered after delete\n"
        f"node ids: {json.dumps(names)}\n"
    )
    for example in late[:STORIES_MAX]:
        out.write("\n" + json.dumps(example) + "\n")
        deleted = str(example["deleted"]["receipt"])
        for d in example["deliveries"]:
            if d.get("after_delete"):
                place = receipt_place(str(d["receipt"]))
                out.write(f"  delivered after delete: {copy_kind(str(d['receipt']), deleted)}")
                out.write(f" (epoch {place[2]})\n" if place else "\n")
        for slot, index in places(example):
            out.write(f"  slot {slot} index {index}:\n")
            for entry in story(versions, slot, index, start_wall_s, names):
                out.write("    " + json.dumps(entry) + "\n")
    return min(len(late), STORIES_MAX)


def places(example: dict[str, Any]) -> list[tuple[int, int]]:
    """The (slot, index) of every receipt of a late message: one, or one per copy of it."""
    seen: list[tuple[int, int]] = []
    for event in [example["deleted"], *example["deliveries"]]:
        place = receipt_place(str(event.get("receipt", "")))
        if place is not None and place[:2] not in seen:
            seen.append(place[:2])
    return seen


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.cluster_watch",
        description="Tell the manifest history of each message an `python -m bench cluster --keep "
        "DIR` run delivered after its delete.",
    )
    p.add_argument("directory", type=Path)
    args = p.parse_args(argv)
    try:
        tell(args.directory, sys.stdout)
    except (OSError, ValueError, KeyError) as err:
        print(f"cluster_watch: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
