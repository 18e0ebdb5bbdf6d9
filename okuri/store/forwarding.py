"""A store that hands every request to another: the base of wrappers that watch or bend one call.

Why: a wrapper that counts compare-and-swaps (bench/scaleout.py) or injects one fault or
one delay (the engine's tests) cares about one operation of the port (okuri/store/port.py) and
must pass the other five through unchanged. Written out in each wrapper, that is thirty lines
of forwarding to get subtly wrong; here it is written once, and a wrapper overrides only the
operation it is about.
"""

from __future__ import annotations

from okuri.store.port import Blob, ObjectStore


class ForwardingStore:
    """Forwards every operation to `inner`; subclasses override the ones they watch or bend."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner

    async def get(self, key: str) -> Blob:
        return await self.inner.get(key)

    async def put_if_absent(self, key: str, data: bytes) -> str:
        return await self.inner.put_if_absent(key, data)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        return await self.inner.put_if_match(key, data, etag)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        return await self.inner.list(prefix, start_after, limit)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)

    async def close(self) -> None:
        await self.inner.close()
