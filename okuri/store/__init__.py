"""Object-store port and adapters. Knows bytes and etags, never queues."""

from okuri.store.port import Blob, ObjectStore

__all__ = ["Blob", "ObjectStore"]
