"""The object-store port: the five operations the engine needs, and nothing about queues.

Every adapter raises only `okuri.errors` store kinds:
- `get`: NotFound, Transient.
- `put_if_absent` (If-None-Match: *): PreconditionFailed when the key exists (S3 412; a 409 from
  a racing create is Conflict), Transient, Ambiguous.
- `put_if_match` (If-Match: etag): PreconditionFailed when the etag differs, NotFound *or*
  PreconditionFailed when the key is missing (stores disagree), Conflict, Transient, Ambiguous.
- `list`: one page of keys under a prefix, sorted, after `start_after`. Transient.
- `delete`: idempotent. Transient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Blob:
    data: bytes
    etag: str


class ObjectStore(Protocol):
    async def get(self, key: str) -> Blob: ...

    async def put_if_absent(self, key: str, data: bytes) -> str: ...

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str: ...

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]: ...

    async def delete(self, key: str) -> None: ...

    async def close(self) -> None: ...
