"""The one root error and the few coarse kinds every layer raises.

Each kind says whether retrying can help, so callers decide without string matching.
Adapters translate foreign errors (botocore, OSError) into these exactly once, `from` the original.
"""

from __future__ import annotations


class OkuriError(Exception):
    """Root of every error okuri raises on purpose."""

    retryable: bool = False


# --- object-store outcomes -------------------------------------------------------------------


class StoreError(OkuriError):
    """An object-store request did not do what was asked."""


class NotFound(StoreError):
    """The key does not exist (S3 404)."""


class PreconditionFailed(StoreError):
    """A conditional put lost: the key exists, or its etag differs (S3 412)."""


class Conflict(StoreError):
    """A concurrent conditional write was in progress (S3 409): re-read and retry."""

    retryable = True


class Transient(StoreError):
    """The request failed without effect (5xx, throttling, connection refused): retry later."""

    retryable = True


class Ambiguous(StoreError):
    """A write may or may not have landed (timeout, lost reply): re-read to find out."""

    retryable = True


class StoreMisconfigured(StoreError):
    """The store does not enforce conditional writes, or cannot be reached at all."""


# --- queue-level outcomes --------------------------------------------------------------------


class QueueError(OkuriError):
    """A request about a queue could not be honoured."""


class QueueDoesNotExist(QueueError):
    pass


class QueueAlreadyExists(QueueError):
    """A queue of that name exists with different attributes."""


class ExchangeDoesNotExist(QueueError):
    pass


class ExchangeAlreadyExists(QueueError):
    """An exchange of that name exists with another type."""


class InvalidArgument(QueueError):
    """The request is malformed or out of range; `field` names the offending input."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class MessageTooLong(InvalidArgument):
    pass


class ReceiptHandleInvalid(QueueError):
    """The receipt handle cannot be decoded or belongs to another queue incarnation."""


class MessageNotInflight(QueueError):
    """A visibility change named a message that is not currently leased by that receipt."""


class QuotaExceeded(QueueError):
    """The request would take a queue or the bucket past a bound the operator set (`quota`:
    "queues", "namespace_queues" or "queue_attributes_bytes"); retrying does not help until
    something is deleted or the bound is raised."""

    def __init__(self, message: str, quota: str) -> None:
        super().__init__(message)
        self.quota = quota


class Unavailable(QueueError):
    """The bucket could not be reached or kept conflicting within bounds; the outcome is unknown."""

    retryable = True


# --- node-level outcomes ---------------------------------------------------------------------


class Overloaded(OkuriError):
    """This node holds as much as it is bounded to (`bound`: requests, bytes or long polls), so
    the request was refused before it had any effect; it may succeed after `retry_after_s`."""

    retryable = True

    def __init__(self, message: str, bound: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.bound = bound
        self.retry_after_s = retry_after_s


class BodyUnread(OkuriError):
    """A request's body could not be read whole (okuri.engine.intake): `reason` is "too_large",
    "timed_out" (it paused, or dragged on, past its deadline) or "incomplete" (the client went
    away half-way). The client's doing, never a server fault; retrying may help a timed-out one."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.retryable = reason == "timed_out"
