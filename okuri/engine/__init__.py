"""The async shell around the pure core: batching, group commit, long polling, retries."""

from okuri.engine.engine import Engine
from okuri.engine.types import Delivery, SendRequest, SendResult

__all__ = ["Delivery", "Engine", "SendRequest", "SendResult"]
