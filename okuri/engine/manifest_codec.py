"""How a queue manifest is stored for `CasObject`: JSON, named invariants, commit tokens.

Apart from the manifest room so that expiry (which the manifest room calls) writes its
tombstone through a `CasObject` of the same codec, without an import circle.
"""

from __future__ import annotations

from okuri.core.invariants import check_state, check_step
from okuri.core.state import ManifestCorrupt, QueueState, decode_state, encode_state
from okuri.errors import Unavailable


class ManifestCodec:
    """Queue manifests for `CasObject`: JSON, named invariants, commit tokens."""

    def __init__(self, name: str) -> None:
        self.name = name

    def decode(self, data: bytes) -> QueueState:
        try:
            return decode_state(data)
        except ManifestCorrupt as err:
            raise Unavailable(f"manifest of {self.name!r} is unreadable: {err}") from err

    def encode(self, state: QueueState) -> bytes:
        return encode_state(state)

    def check(self, state: QueueState) -> None:
        check_state(state)

    def check_step(self, old: QueueState, new: QueueState) -> None:
        check_step(old, new)

    def version(self, state: QueueState) -> int:
        return state.version

    def lineage(self, state: QueueState) -> str:
        return state.incarnation

    def has_token(self, state: QueueState, token: str) -> bool:
        return token in state.commits

    def gone(self, state: QueueState) -> bool:
        return state.gone_ms != 0
