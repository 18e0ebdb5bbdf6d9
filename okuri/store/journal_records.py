"""The journal store's record format: what one append holds, and how a reader takes it apart.

Why its own module: the format is the journal's contract with every process that shares the
directory (and with the next version of okuri), and parsing is pure, so it is tested apart from
files and locks.

A record is a 15-byte header, then the key, then the data:

    magic b"OKJ1" | kind (1 byte) | key length (2) | data length (4) | CRC-32 (4)

little-endian, the CRC over the kind byte, the key and the data. Kinds: PUT (the key now holds
the data), DELETE (the key is gone; no data) and MOVED (the journal continues in the generation
named by the key; written last, by a compaction). A reader stops at the first record that is not
whole or whose CRC does not match: past the end of a live writer's append, or a crash's torn
tail, which only a writer holding the journal's lock cuts off.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

MAGIC = b"OKJ1"
HEADER = struct.Struct("<4sBHII")
PUT, DELETE, MOVED = 1, 2, 3
KINDS = (PUT, DELETE, MOVED)
KEY_BYTES_MAX = 1024  # S3's limit on a key
DATA_BYTES_MAX = 2**32 - 1


@dataclass(frozen=True, slots=True)
class Record:
    kind: int
    key: str
    start: int  # where the record starts in the journal file
    data_at: int  # where its data starts
    data_len: int
    end: int  # where the next record starts


def encode(kind: int, key: str, data: bytes = b"") -> bytes:
    raw = key.encode("utf-8")
    if not raw or len(raw) > KEY_BYTES_MAX:
        raise ValueError(f"a key is 1 to {KEY_BYTES_MAX} bytes: {key[:80]!r}")
    if len(data) > DATA_BYTES_MAX:
        raise ValueError(f"an object is at most {DATA_BYTES_MAX} bytes")
    crc = zlib.crc32(data, zlib.crc32(raw, zlib.crc32(bytes((kind,)))))
    return HEADER.pack(MAGIC, kind, len(raw), len(data), crc) + raw + data


def parse(buf: bytes, at: int) -> tuple[list[Record], int]:
    """The whole, intact records in `buf`, which starts at offset `at` of the file, and how many
    bytes of `buf` they take; parsing stops at the first record that is not."""
    records: list[Record] = []
    pos = 0
    view = memoryview(buf)
    while pos + HEADER.size <= len(buf):
        magic, kind, key_len, data_len, crc = HEADER.unpack_from(buf, pos)
        start = pos + HEADER.size
        end = start + key_len + data_len
        if magic != MAGIC or kind not in KINDS or key_len == 0 or end > len(buf):
            break
        raw = view[start : start + key_len]
        data = view[start + key_len : end]
        if zlib.crc32(data, zlib.crc32(raw, zlib.crc32(bytes((kind,))))) != crc:
            break
        try:
            key = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            break
        records.append(Record(kind, key, at + pos, at + start + key_len, data_len, at + end))
        pos = end
    return records, pos
