"""A store seen through a key prefix: one bucket holding several independent keyspaces.

Why: queues of another region live beside the home region's in the same bucket (okuri serves
every region from one endpoint), each region's engine seeing only its own keys. The prefix is
added on the way in and taken off what LIST returns.
"""

from __future__ import annotations

from okuri.store.forwarding import ForwardingStore
from okuri.store.port import Blob, ObjectStore


class PrefixedStore(ForwardingStore):
    def __init__(self, inner: ObjectStore, prefix: str) -> None:
        super().__init__(inner)
        self.prefix = prefix

    async def get(self, key: str) -> Blob:
        return await self.inner.get(self.prefix + key)

    async def put_if_absent(self, key: str, data: bytes) -> str:
        return await self.inner.put_if_absent(self.prefix + key, data)

    async def put_if_match(self, key: str, data: bytes, etag: str) -> str:
        return await self.inner.put_if_match(self.prefix + key, data, etag)

    async def list(self, prefix: str, start_after: str = "", limit: int = 1000) -> list[str]:
        after = self.prefix + start_after if start_after else ""
        keys = await self.inner.list(self.prefix + prefix, after, limit)
        return [k[len(self.prefix) :] for k in keys]

    async def delete(self, key: str) -> None:
        await self.inner.delete(self.prefix + key)

    async def close(self) -> None:
        return None  # the inner store is shared; its owner closes it
