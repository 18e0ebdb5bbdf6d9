"""The rules of a FIFO send that every surface shares: what group and deduplication ids may
hold, the id content-based deduplication derives, the key duplicates match on, and the FIFO
settings a queue keeps (a changed DeduplicationScope is reported but, as on SQS, leaves the
queue deduplicating as before).

Pure, and here rather than in a surface so that the SQS and native surfaces cannot disagree: a
native item and an SQS message with the same deduplication id on the same FIFO queue are
duplicates of each other because both surfaces turn the id into a key with `dedup_key`, and
content-based deduplication derives the same id from the same bytes on both. The surfaces reach
these names through `okuri.engine`'s public face. A high-throughput FIFO queue's partitions are
fixed here too: how many, and which one a group lives in.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from okuri import limits
from okuri.errors import InvalidArgument

# A queue's FIFO settings, kept in `QueueAttrs.extra` under SQS's attribute names (so a queue
# made on either surface shows the same values on the other): name -> (allowed, default).
FIFO_SETTINGS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "ContentBasedDeduplication": (("true", "false"), "false"),
    "DeduplicationScope": (("queue", "messageGroup"), "queue"),
    "FifoThroughputLimit": (("perQueue", "perMessageGroupId"), "perQueue"),
}

# The deduplication scope a FIFO queue goes on deduplicating with once its DeduplicationScope
# was changed (absent while the two agree): the scope it had before the change. Kept in `extra`
# beside the settings; no surface shows it.
DEDUP_SCOPE_IN_FORCE = "okuri:dedup-scope"

# How many partitions a high-throughput FIFO queue spreads its message groups over
# (okuri/engine/partitions.py), fixed when it was created: a group's partition must never change
# while the queue lives, whatever its settings are changed to. Absent on every other queue.
PARTITIONS_IN_FORCE = "okuri:partitions"

# Where a FIFO message keeps its deduplication id as given (or derived from its body), so a
# receive can show it; the engine's key may carry the group too (`dedup_key`).
DEDUP_ID_ATTRIBUTE = "okuri.dedup"

# Group and deduplication ids (and SQS's ReceiveRequestAttemptId): 1 to 128 ASCII letters,
# digits and punctuation, SQS's rule (SQS bounds all three at the same 128).
FIFO_ID = re.compile(rf"[!-~]{{1,{limits.dedup_id_chars_max}}}")
FIFO_ID_RULE = f"1 to {limits.dedup_id_chars_max} ASCII letters, digits and punctuation (no spaces)"


def fifo_setting(extra: Mapping[str, str], name: str) -> str:
    """A FIFO setting's value, its default when never set."""
    return extra.get(name, FIFO_SETTINGS[name][1])


def is_fifo_id(value: object) -> bool:
    """Whether `value` may be a message group id or a deduplication id."""
    return isinstance(value, str) and FIFO_ID.fullmatch(value) is not None


def content_dedup_id(body: bytes) -> str:
    """The deduplication id of a send that gave none to a queue deduplicating by content: the
    hex SHA-256 of the body's bytes (for a text body, of its UTF-8, as SQS derives it)."""
    return hashlib.sha256(body).hexdigest()


def dedup_scope(extra: Mapping[str, str]) -> str:
    """The deduplication scope a queue with FIFO settings `extra` deduplicates with: the one
    it was given when created, whatever DeduplicationScope has been changed to since
    (`keep_dedup_scope`)."""
    return extra.get(DEDUP_SCOPE_IN_FORCE) or fifo_setting(extra, "DeduplicationScope")


def keep_dedup_scope(old: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """A FIFO queue's settings `new`, replacing `old`, with the deduplication scope in force
    kept as it was.

    SQS answers so (recorded): a queue changed from queue to messageGroup scope goes on
    treating an id as a duplicate in another group, ids first sent after the change included,
    and one changed the other way goes on letting an id out once per group. The new value is
    stored and reported all the same. Keeping the scope also keeps every deduplication key of
    the window comparable with the keys sent after the change."""
    in_force = dedup_scope(old)
    kept = {k: v for k, v in new.items() if k not in (DEDUP_SCOPE_IN_FORCE, PARTITIONS_IN_FORCE)}
    if fifo_setting(new, "DeduplicationScope") != in_force:
        kept[DEDUP_SCOPE_IN_FORCE] = in_force
    if PARTITIONS_IN_FORCE in old:
        kept[PARTITIONS_IN_FORCE] = old[PARTITIONS_IN_FORCE]
    return kept


def high_throughput(extra: Mapping[str, str]) -> bool:
    """Do a FIFO queue's settings ask for SQS's high-throughput mode? Both of them: groups
    deduplicated apart (so no key spans two groups) and a throughput limit per group."""
    return (
        fifo_setting(extra, "DeduplicationScope") == "messageGroup"
        and fifo_setting(extra, "FifoThroughputLimit") == "perMessageGroupId"
    )


def partitioned(extra: Mapping[str, str], partitions: int) -> dict[str, str]:
    """A new FIFO queue's settings `extra`, with `partitions` in force when they ask for high
    throughput (and `partitions` is above one)."""
    out = as_declared(extra)
    if partitions > 1 and high_throughput(extra):
        out[PARTITIONS_IN_FORCE] = str(partitions)
    return out


def partitions(extra: Mapping[str, str]) -> int:
    """How many partitions a queue's groups are spread over; 0 when it has none."""
    value = extra.get(PARTITIONS_IN_FORCE, "")
    return int(value) if value.isdigit() and 1 < int(value) <= limits.lanes_max else 0


def partition_of(group: str, count: int) -> int:
    """The partition group `group` lives in, of `count`: the same on every node, forever."""
    digest = hashlib.blake2b(group.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def dedup_key(extra: Mapping[str, str], group: str, dedup_id: str) -> str:
    """What a duplicate must match on a queue with FIFO settings `extra`: the id, within its
    group when the queue deduplicates by messageGroup (`dedup_scope`)."""
    if dedup_scope(extra) == "messageGroup":
        return f"{group}\n{dedup_id}"
    return dedup_id


def as_declared(extra: Mapping[str, str]) -> dict[str, str]:
    """A queue's settings as a CreateQueue declares them: without the partitions in force, which
    a FIFO queue made before partitions existed lacks (it keeps one log, and declaring it again
    must still match)."""
    return {k: v for k, v in extra.items() if k != PARTITIONS_IN_FORCE}


def check_expiry_allowed(extra: Mapping[str, str], expires_s: int | None) -> None:
    """Refuse an expiry on a partitioned queue: a lease in a partition's lane records no use
    of the queue (okuri/core/expiry.py), so it would expire while in use."""
    if expires_s is not None and partitions(extra):
        raise InvalidArgument(
            "a high-throughput FIFO queue (partitioned by message group) cannot expire",
            "expires_s",
        )
