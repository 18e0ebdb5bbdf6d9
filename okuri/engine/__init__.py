"""The engine's public face: everything a surface (SQS, native) or a tool may use.

Surfaces import from here only, never from `okuri.core` or the engine's own modules
(import-linter holds them to it), so the engine's rooms can change behind this list.
"""

from okuri.core.browse import BrowsePage, MessageState, MessageView
from okuri.core.exchanges import (
    EXCHANGE_NAME as EXCHANGE_NAME_RULE,
)
from okuri.core.exchanges import (
    EXCHANGE_TYPES,
    Binding,
    ExchangeState,
    ExchangeType,
    validate_exchange_name,
    validate_routing_key,
    validate_type,
)
from okuri.core.fifo import (
    DEDUP_ID_ATTRIBUTE,
    FIFO_ID,
    FIFO_ID_RULE,
    FIFO_SETTINGS,
    content_dedup_id,
    dedup_key,
    fifo_setting,
    is_fifo_id,
)
from okuri.core.move_records import (
    ACTIVE as MOVE_TASK_ACTIVE,
)
from okuri.core.move_records import (
    FAILED as MOVE_TASK_FAILED,
)
from okuri.core.move_records import (
    RUNNING as MOVE_TASK_RUNNING,
)
from okuri.core.move_records import (
    DestinationDoesNotExist,
    MoveTask,
    MoveTaskActive,
    MoveTaskNotFound,
    NotADeadLetterQueue,
    dead_letter_target,
)
from okuri.core.names import QUEUE_NAME, is_fifo_name, validate_queue_name
from okuri.core.state import QueueAttrs
from okuri.core.transitions import AckResult, DeadLetterResult, VisibilityResult
from okuri.core.views import Counts, QueueView
from okuri.engine.admission import Admission, Bounds, Gate, Holding, Refused, Ticket
from okuri.engine.batching import caller
from okuri.engine.engine import Engine
from okuri.engine.exchanges import Routed
from okuri.engine.intake import BodyReader, read_body, sender_of
from okuri.engine.peering import PeerClient, PeerRequestInvalid, PeerUnreachable
from okuri.engine.quotas import Quotas
from okuri.engine.types import Delivery, SendRequest, SendResult

__all__ = [
    "DEDUP_ID_ATTRIBUTE",
    "EXCHANGE_NAME_RULE",
    "EXCHANGE_TYPES",
    "FIFO_ID",
    "FIFO_ID_RULE",
    "FIFO_SETTINGS",
    "MOVE_TASK_ACTIVE",
    "MOVE_TASK_FAILED",
    "MOVE_TASK_RUNNING",
    "QUEUE_NAME",
    "AckResult",
    "Admission",
    "Binding",
    "BodyReader",
    "Bounds",
    "BrowsePage",
    "Counts",
    "DeadLetterResult",
    "Delivery",
    "DestinationDoesNotExist",
    "Engine",
    "ExchangeState",
    "ExchangeType",
    "Gate",
    "Holding",
    "MessageState",
    "MessageView",
    "MoveTask",
    "MoveTaskActive",
    "MoveTaskNotFound",
    "NotADeadLetterQueue",
    "PeerClient",
    "PeerRequestInvalid",
    "PeerUnreachable",
    "QueueAttrs",
    "QueueView",
    "Quotas",
    "Refused",
    "Routed",
    "SendRequest",
    "SendResult",
    "Ticket",
    "VisibilityResult",
    "caller",
    "content_dedup_id",
    "dead_letter_target",
    "dedup_key",
    "fifo_setting",
    "is_fifo_id",
    "is_fifo_name",
    "read_body",
    "sender_of",
    "validate_exchange_name",
    "validate_queue_name",
    "validate_routing_key",
    "validate_type",
]
