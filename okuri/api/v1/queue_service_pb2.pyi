import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueueAttributes(_message.Message):
    __slots__ = ("lease_timeout_s", "max_attempts", "dead_letter_queue", "retention_s", "delay_s", "content_based_dedup", "expires_s")
    LEASE_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_QUEUE_FIELD_NUMBER: _ClassVar[int]
    RETENTION_S_FIELD_NUMBER: _ClassVar[int]
    DELAY_S_FIELD_NUMBER: _ClassVar[int]
    CONTENT_BASED_DEDUP_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_S_FIELD_NUMBER: _ClassVar[int]
    lease_timeout_s: int
    max_attempts: int
    dead_letter_queue: str
    retention_s: int
    delay_s: int
    content_based_dedup: bool
    expires_s: int
    def __init__(self, lease_timeout_s: _Optional[int] = ..., max_attempts: _Optional[int] = ..., dead_letter_queue: _Optional[str] = ..., retention_s: _Optional[int] = ..., delay_s: _Optional[int] = ..., content_based_dedup: _Optional[bool] = ..., expires_s: _Optional[int] = ...) -> None: ...

class QueueStats(_message.Message):
    __slots__ = ("visible", "leased", "delayed", "dead_lettered")
    VISIBLE_FIELD_NUMBER: _ClassVar[int]
    LEASED_FIELD_NUMBER: _ClassVar[int]
    DELAYED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    visible: int
    leased: int
    delayed: int
    dead_lettered: int
    def __init__(self, visible: _Optional[int] = ..., leased: _Optional[int] = ..., delayed: _Optional[int] = ..., dead_lettered: _Optional[int] = ...) -> None: ...

class Queue(_message.Message):
    __slots__ = ("name", "fifo", "attributes", "stats", "created_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    fifo: bool
    attributes: QueueAttributes
    stats: QueueStats
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., fifo: _Optional[bool] = ..., attributes: _Optional[_Union[QueueAttributes, _Mapping]] = ..., stats: _Optional[_Union[QueueStats, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateQueueRequest(_message.Message):
    __slots__ = ("name", "attributes", "fifo")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    FIFO_FIELD_NUMBER: _ClassVar[int]
    name: str
    attributes: QueueAttributes
    fifo: bool
    def __init__(self, name: _Optional[str] = ..., attributes: _Optional[_Union[QueueAttributes, _Mapping]] = ..., fifo: _Optional[bool] = ...) -> None: ...

class GetQueueRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class UpdateQueueRequest(_message.Message):
    __slots__ = ("queue", "attributes", "reset_attributes")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    RESET_ATTRIBUTES_FIELD_NUMBER: _ClassVar[int]
    queue: str
    attributes: QueueAttributes
    reset_attributes: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queue: _Optional[str] = ..., attributes: _Optional[_Union[QueueAttributes, _Mapping]] = ..., reset_attributes: _Optional[_Iterable[str]] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ("prefix", "limit", "after")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    limit: int
    after: str
    def __init__(self, prefix: _Optional[str] = ..., limit: _Optional[int] = ..., after: _Optional[str] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ("queues", "next")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedScalarFieldContainer[str]
    next: str
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., next: _Optional[str] = ...) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PurgeQueueRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PurgeQueueResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ProduceItem(_message.Message):
    __slots__ = ("payload", "headers", "dedup_id", "enqueue_at", "group")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    DEDUP_ID_FIELD_NUMBER: _ClassVar[int]
    ENQUEUE_AT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    dedup_id: str
    enqueue_at: _timestamp_pb2.Timestamp
    group: str
    def __init__(self, payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., dedup_id: _Optional[str] = ..., enqueue_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., group: _Optional[str] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ("queue", "items")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    items: _containers.RepeatedCompositeFieldContainer[ProduceItem]
    def __init__(self, queue: _Optional[str] = ..., items: _Optional[_Iterable[_Union[ProduceItem, _Mapping]]] = ...) -> None: ...

class ProduceError(_message.Message):
    __slots__ = ("index", "code", "message")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    index: int
    code: str
    message: str
    def __init__(self, index: _Optional[int] = ..., code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ("ids", "errors", "sequence_numbers", "duplicates")
    IDS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBERS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    errors: _containers.RepeatedCompositeFieldContainer[ProduceError]
    sequence_numbers: _containers.RepeatedScalarFieldContainer[str]
    duplicates: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., errors: _Optional[_Iterable[_Union[ProduceError, _Mapping]]] = ..., sequence_numbers: _Optional[_Iterable[str]] = ..., duplicates: _Optional[_Iterable[int]] = ...) -> None: ...

class LeaseRequest(_message.Message):
    __slots__ = ("queue", "max_items", "lease_s", "request_timeout_s")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    REQUEST_TIMEOUT_S_FIELD_NUMBER: _ClassVar[int]
    queue: str
    max_items: int
    lease_s: int
    request_timeout_s: int
    def __init__(self, queue: _Optional[str] = ..., max_items: _Optional[int] = ..., lease_s: _Optional[int] = ..., request_timeout_s: _Optional[int] = ...) -> None: ...

class LeasedItem(_message.Message):
    __slots__ = ("id", "handle", "attempts", "lease_deadline", "enqueued_at", "payload", "headers", "group", "sequence_number")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    id: str
    handle: str
    attempts: int
    lease_deadline: _timestamp_pb2.Timestamp
    enqueued_at: _timestamp_pb2.Timestamp
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    group: str
    sequence_number: str
    def __init__(self, id: _Optional[str] = ..., handle: _Optional[str] = ..., attempts: _Optional[int] = ..., lease_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., enqueued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., group: _Optional[str] = ..., sequence_number: _Optional[str] = ...) -> None: ...

class LeaseResponse(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[LeasedItem]
    def __init__(self, items: _Optional[_Iterable[_Union[LeasedItem, _Mapping]]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ("queue", "handles")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    HANDLES_FIELD_NUMBER: _ClassVar[int]
    queue: str
    handles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, queue: _Optional[str] = ..., handles: _Optional[_Iterable[str]] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, results: _Optional[_Iterable[str]] = ...) -> None: ...

class RetryItem(_message.Message):
    __slots__ = ("handle", "retry_at", "dead")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AT_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    handle: str
    retry_at: _timestamp_pb2.Timestamp
    dead: bool
    def __init__(self, handle: _Optional[str] = ..., retry_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., dead: _Optional[bool] = ...) -> None: ...

class RetryRequest(_message.Message):
    __slots__ = ("queue", "items")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    items: _containers.RepeatedCompositeFieldContainer[RetryItem]
    def __init__(self, queue: _Optional[str] = ..., items: _Optional[_Iterable[_Union[RetryItem, _Mapping]]] = ...) -> None: ...

class RetryResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, results: _Optional[_Iterable[str]] = ...) -> None: ...

class ExtendRequest(_message.Message):
    __slots__ = ("queue", "handles", "lease_s")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    HANDLES_FIELD_NUMBER: _ClassVar[int]
    LEASE_S_FIELD_NUMBER: _ClassVar[int]
    queue: str
    handles: _containers.RepeatedScalarFieldContainer[str]
    lease_s: int
    def __init__(self, queue: _Optional[str] = ..., handles: _Optional[_Iterable[str]] = ..., lease_s: _Optional[int] = ...) -> None: ...

class ExtendResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, results: _Optional[_Iterable[str]] = ...) -> None: ...

class RedriveRequest(_message.Message):
    __slots__ = ("queue", "target", "max_items")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    MAX_ITEMS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    target: str
    max_items: int
    def __init__(self, queue: _Optional[str] = ..., target: _Optional[str] = ..., max_items: _Optional[int] = ...) -> None: ...

class RedriveResponse(_message.Message):
    __slots__ = ("moved",)
    MOVED_FIELD_NUMBER: _ClassVar[int]
    moved: int
    def __init__(self, moved: _Optional[int] = ...) -> None: ...

class BrowseRequest(_message.Message):
    __slots__ = ("queue", "limit", "after")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    queue: str
    limit: int
    after: str
    def __init__(self, queue: _Optional[str] = ..., limit: _Optional[int] = ..., after: _Optional[str] = ...) -> None: ...

class BrowsedItem(_message.Message):
    __slots__ = ("id", "state", "until", "attempts", "enqueued_at", "first_leased_at", "payload", "headers", "group", "sequence_number", "dead_letter_source")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    FIRST_LEASED_AT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_SOURCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    state: str
    until: _timestamp_pb2.Timestamp
    attempts: int
    enqueued_at: _timestamp_pb2.Timestamp
    first_leased_at: _timestamp_pb2.Timestamp
    payload: bytes
    headers: _containers.ScalarMap[str, str]
    group: str
    sequence_number: str
    dead_letter_source: str
    def __init__(self, id: _Optional[str] = ..., state: _Optional[str] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempts: _Optional[int] = ..., enqueued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., first_leased_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Mapping[str, str]] = ..., group: _Optional[str] = ..., sequence_number: _Optional[str] = ..., dead_letter_source: _Optional[str] = ...) -> None: ...

class BrowseResponse(_message.Message):
    __slots__ = ("items", "next")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[BrowsedItem]
    next: str
    def __init__(self, items: _Optional[_Iterable[_Union[BrowsedItem, _Mapping]]] = ..., next: _Optional[str] = ...) -> None: ...

class Binding(_message.Message):
    __slots__ = ("queue", "routing_key")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    queue: str
    routing_key: str
    def __init__(self, queue: _Optional[str] = ..., routing_key: _Optional[str] = ...) -> None: ...

class Exchange(_message.Message):
    __slots__ = ("name", "type", "bindings", "created_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    BINDINGS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    bindings: _containers.RepeatedCompositeFieldContainer[Binding]
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., bindings: _Optional[_Iterable[_Union[Binding, _Mapping]]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateExchangeRequest(_message.Message):
    __slots__ = ("name", "type")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ...) -> None: ...

class GetExchangeRequest(_message.Message):
    __slots__ = ("exchange",)
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    exchange: str
    def __init__(self, exchange: _Optional[str] = ...) -> None: ...

class ListExchangesRequest(_message.Message):
    __slots__ = ("prefix", "limit", "after")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    limit: int
    after: str
    def __init__(self, prefix: _Optional[str] = ..., limit: _Optional[int] = ..., after: _Optional[str] = ...) -> None: ...

class ListExchangesResponse(_message.Message):
    __slots__ = ("exchanges", "next")
    EXCHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIELD_NUMBER: _ClassVar[int]
    exchanges: _containers.RepeatedScalarFieldContainer[str]
    next: str
    def __init__(self, exchanges: _Optional[_Iterable[str]] = ..., next: _Optional[str] = ...) -> None: ...

class DeleteExchangeRequest(_message.Message):
    __slots__ = ("exchange",)
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    exchange: str
    def __init__(self, exchange: _Optional[str] = ...) -> None: ...

class DeleteExchangeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BindingRequest(_message.Message):
    __slots__ = ("exchange", "queue", "routing_key")
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    exchange: str
    queue: str
    routing_key: str
    def __init__(self, exchange: _Optional[str] = ..., queue: _Optional[str] = ..., routing_key: _Optional[str] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("exchange", "routing_key", "items")
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    exchange: str
    routing_key: str
    items: _containers.RepeatedCompositeFieldContainer[ProduceItem]
    def __init__(self, exchange: _Optional[str] = ..., routing_key: _Optional[str] = ..., items: _Optional[_Iterable[_Union[ProduceItem, _Mapping]]] = ...) -> None: ...

class RoutedQueue(_message.Message):
    __slots__ = ("queue", "produced")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    PRODUCED_FIELD_NUMBER: _ClassVar[int]
    queue: str
    produced: ProduceResponse
    def __init__(self, queue: _Optional[str] = ..., produced: _Optional[_Union[ProduceResponse, _Mapping]] = ...) -> None: ...

class PublishResponse(_message.Message):
    __slots__ = ("routed",)
    ROUTED_FIELD_NUMBER: _ClassVar[int]
    routed: _containers.RepeatedCompositeFieldContainer[RoutedQueue]
    def __init__(self, routed: _Optional[_Iterable[_Union[RoutedQueue, _Mapping]]] = ...) -> None: ...
