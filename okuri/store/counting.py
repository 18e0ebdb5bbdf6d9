"""Counts every object-store request by price class, so cost is measured rather than estimated."""

from __future__ import annotations

from dataclasses import dataclass, field

from okuri.store.port import Blob, ObjectStore

# Price classes as S3 bills them: PUT, COPY, POST, LIST at one rate; GET and others at another.
CLASSES = ("put", "cas", "get", "list", "delete")


@dataclass
class RequestCounts:
    by_class: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CLASSES, 0))

    def add(self, cls: str, n: int = 1) -> None:
        self.by_class[cls] += n

    def snapshot(self) -> dict[str, int]:
        return dict(self.by_class)

    def __getitem__(self, cls: str) -> int:
        return self.by_class[cls]


class CountingStore:
    """Wraps a store; a request counts whether it succeeds or fails, since both are billed."""

    def __init__(self, inner: ObjectStore, counts: RequestCounts | None = None) -> None:
        self.inner = inner
        self.counts = counts if counts is not None else RequestCounts()

    async def get(self, key: str) -> Blob:
        self.counts.add("get")
        return await self.inner.get(key)

    async def put_if_absent(self, key: str, data: bytes) -> str:
        self.counts.add("put")
        return await self.inner.put_if_absent(key, data)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        self.counts.add("cas")
        return await self.inner.put_if_match(key, data, etag)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        self.counts.add("list")
        return await self.inner.list(prefix, start_after, limit)

    async def delete(self, key: str) -> None:
        self.counts.add("delete")
        await self.inner.delete(key)

    async def close(self) -> None:
        await self.inner.close()
