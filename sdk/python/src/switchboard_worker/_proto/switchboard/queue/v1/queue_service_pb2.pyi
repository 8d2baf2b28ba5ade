from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from switchboard_worker._proto.switchboard.queue.v1 import queue_pb2 as _queue_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BATCH_OUTCOME_ALREADY: BatchOutcome
BATCH_OUTCOME_NOT_FOUND: BatchOutcome
BATCH_OUTCOME_OK: BatchOutcome
BATCH_OUTCOME_STALE_LEASE: BatchOutcome
BATCH_OUTCOME_UNSPECIFIED: BatchOutcome
DEDUPE_SCOPE_LIVE: DedupeScope
DEDUPE_SCOPE_RETENTION: DedupeScope
DEDUPE_SCOPE_UNSPECIFIED: DedupeScope
DEDUPE_SCOPE_WINDOW: DedupeScope
DESCRIPTOR: _descriptor.FileDescriptor
MISFIRE_RUN_ONCE: Misfire
MISFIRE_SKIP: Misfire
MISFIRE_UNSPECIFIED: Misfire

class CancelRequest(_message.Message):
    __slots__ = ["id", "reason"]
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: int
    reason: str
    def __init__(self, id: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ["todo"]
    TODO_FIELD_NUMBER: _ClassVar[int]
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ...) -> None: ...

class ClaimRequest(_message.Message):
    __slots__ = ["lease_seconds", "max_todos", "queue", "wait", "worker_id"]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_TODOS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lease_seconds: int
    max_todos: int
    queue: str
    wait: _duration_pb2.Duration
    worker_id: str
    def __init__(self, queue: _Optional[str] = ..., worker_id: _Optional[str] = ..., max_todos: _Optional[int] = ..., lease_seconds: _Optional[int] = ..., wait: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ClaimResponse(_message.Message):
    __slots__ = ["todos"]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    todos: _containers.RepeatedCompositeFieldContainer[_queue_pb2.Todo]
    def __init__(self, todos: _Optional[_Iterable[_Union[_queue_pb2.Todo, _Mapping]]] = ...) -> None: ...

class CompleteBatchRequest(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[CompleteRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[CompleteRequest, _Mapping]]] = ...) -> None: ...

class CompleteBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[CompleteBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[CompleteBatchResult, _Mapping]]] = ...) -> None: ...

class CompleteBatchResult(_message.Message):
    __slots__ = ["id", "outcome"]
    ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    id: int
    outcome: BatchOutcome
    def __init__(self, id: _Optional[int] = ..., outcome: _Optional[_Union[BatchOutcome, str]] = ...) -> None: ...

class CompleteRequest(_message.Message):
    __slots__ = ["id", "lease_token", "result"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    id: int
    lease_token: int
    result: _struct_pb2.Struct
    def __init__(self, id: _Optional[int] = ..., lease_token: _Optional[int] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class CompleteResponse(_message.Message):
    __slots__ = ["already", "todo"]
    ALREADY_FIELD_NUMBER: _ClassVar[int]
    TODO_FIELD_NUMBER: _ClassVar[int]
    already: bool
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ..., already: bool = ...) -> None: ...

class CreateScheduleRequest(_message.Message):
    __slots__ = ["cron", "misfire", "name", "paused", "template", "time_zone"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    cron: str
    misfire: Misfire
    name: str
    paused: bool
    template: EnqueueRequest
    time_zone: str
    def __init__(self, name: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., template: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., misfire: _Optional[_Union[Misfire, str]] = ..., paused: bool = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ["queue", "requests"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    requests: _containers.RepeatedCompositeFieldContainer[EnqueueRequest]
    def __init__(self, queue: _Optional[str] = ..., requests: _Optional[_Iterable[_Union[EnqueueRequest, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ["responses"]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[EnqueueResponse]
    def __init__(self, responses: _Optional[_Iterable[_Union[EnqueueResponse, _Mapping]]] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ["agent_id", "concurrency_key", "dedupe_key", "dedupe_scope", "dedupe_window", "event_id", "kind", "max_attempts", "payload", "priority", "queue", "remove_on_complete", "run_at"]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_KEY_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_SCOPE_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_WINDOW_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    concurrency_key: str
    dedupe_key: str
    dedupe_scope: DedupeScope
    dedupe_window: _duration_pb2.Duration
    event_id: int
    kind: str
    max_attempts: int
    payload: _struct_pb2.Struct
    priority: int
    queue: str
    remove_on_complete: bool
    run_at: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., agent_id: _Optional[str] = ..., event_id: _Optional[int] = ..., kind: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., priority: _Optional[int] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., max_attempts: _Optional[int] = ..., dedupe_key: _Optional[str] = ..., dedupe_scope: _Optional[_Union[DedupeScope, str]] = ..., dedupe_window: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., concurrency_key: _Optional[str] = ..., remove_on_complete: bool = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ["duplicate", "todo"]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    TODO_FIELD_NUMBER: _ClassVar[int]
    duplicate: bool
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ..., duplicate: bool = ...) -> None: ...

class FailRequest(_message.Message):
    __slots__ = ["dead_letter", "error", "id", "lease_token", "retry_after"]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_FIELD_NUMBER: _ClassVar[int]
    dead_letter: bool
    error: str
    id: int
    lease_token: int
    retry_after: _duration_pb2.Duration
    def __init__(self, id: _Optional[int] = ..., lease_token: _Optional[int] = ..., error: _Optional[str] = ..., retry_after: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ..., dead_letter: bool = ...) -> None: ...

class FailResponse(_message.Message):
    __slots__ = ["already", "todo"]
    ALREADY_FIELD_NUMBER: _ClassVar[int]
    TODO_FIELD_NUMBER: _ClassVar[int]
    already: bool
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ..., already: bool = ...) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class GetTodoRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class GetTodoResponse(_message.Message):
    __slots__ = ["todo"]
    TODO_FIELD_NUMBER: _ClassVar[int]
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ...) -> None: ...

class HeartbeatBatchRequest(_message.Message):
    __slots__ = ["items"]
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[HeartbeatRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[HeartbeatRequest, _Mapping]]] = ...) -> None: ...

class HeartbeatBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[HeartbeatBatchResult]
    def __init__(self, results: _Optional[_Iterable[_Union[HeartbeatBatchResult, _Mapping]]] = ...) -> None: ...

class HeartbeatBatchResult(_message.Message):
    __slots__ = ["id", "lease_expires_at", "outcome"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    id: int
    lease_expires_at: _timestamp_pb2.Timestamp
    outcome: BatchOutcome
    def __init__(self, id: _Optional[int] = ..., outcome: _Optional[_Union[BatchOutcome, str]] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ["id", "lease_seconds", "lease_token", "progress"]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    id: int
    lease_seconds: int
    lease_token: int
    progress: _struct_pb2.Struct
    def __init__(self, id: _Optional[int] = ..., lease_token: _Optional[int] = ..., lease_seconds: _Optional[int] = ..., progress: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ["lease_expires_at"]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    lease_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class KeyPattern(_message.Message):
    __slots__ = ["max_running", "pattern", "rate_burst", "rate_per_second"]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    max_running: int
    pattern: str
    rate_burst: int
    rate_per_second: float
    def __init__(self, pattern: _Optional[str] = ..., max_running: _Optional[int] = ..., rate_per_second: _Optional[float] = ..., rate_burst: _Optional[int] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ["next_page_token", "queues"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    queues: _containers.RepeatedCompositeFieldContainer[QueueSummary]
    def __init__(self, queues: _Optional[_Iterable[_Union[QueueSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ["next_page_token", "schedules"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTodosRequest(_message.Message):
    __slots__ = ["agent_id", "created_after", "created_before", "event_id", "kind", "page_size", "page_token", "queue", "state"]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AFTER_FIELD_NUMBER: _ClassVar[int]
    CREATED_BEFORE_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    created_after: _timestamp_pb2.Timestamp
    created_before: _timestamp_pb2.Timestamp
    event_id: int
    kind: str
    page_size: int
    page_token: str
    queue: str
    state: _queue_pb2.TodoState
    def __init__(self, queue: _Optional[str] = ..., state: _Optional[_Union[_queue_pb2.TodoState, str]] = ..., agent_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., kind: _Optional[str] = ..., event_id: _Optional[int] = ..., created_after: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., created_before: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListTodosResponse(_message.Message):
    __slots__ = ["next_page_token", "todos"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TODOS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    todos: _containers.RepeatedCompositeFieldContainer[_queue_pb2.Todo]
    def __init__(self, todos: _Optional[_Iterable[_Union[_queue_pb2.Todo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = ["control"]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    control: QueueControl
    def __init__(self, control: _Optional[_Union[QueueControl, _Mapping]] = ...) -> None: ...

class QueueControl(_message.Message):
    __slots__ = ["limits", "paused", "paused_at", "queue", "updated_at"]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_AT_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    limits: QueueLimits
    paused: bool
    paused_at: _timestamp_pb2.Timestamp
    queue: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., paused: bool = ..., paused_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., limits: _Optional[_Union[QueueLimits, _Mapping]] = ...) -> None: ...

class QueueLimits(_message.Message):
    __slots__ = ["key_max_running", "key_patterns", "key_rate_burst", "key_rate_per_second", "max_running", "rate_burst", "rate_per_second", "running", "updated_at"]
    KEY_MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    KEY_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    key_max_running: int
    key_patterns: _containers.RepeatedCompositeFieldContainer[KeyPattern]
    key_rate_burst: int
    key_rate_per_second: float
    max_running: int
    rate_burst: int
    rate_per_second: float
    running: int
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, max_running: _Optional[int] = ..., key_max_running: _Optional[int] = ..., running: _Optional[int] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., rate_per_second: _Optional[float] = ..., rate_burst: _Optional[int] = ..., key_rate_per_second: _Optional[float] = ..., key_rate_burst: _Optional[int] = ..., key_patterns: _Optional[_Iterable[_Union[KeyPattern, _Mapping]]] = ...) -> None: ...

class QueueStatsRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class QueueStatsResponse(_message.Message):
    __slots__ = ["cancelled", "completed", "dead", "limits", "oldest_pending_age_seconds", "paused", "paused_at", "pending_ready", "pending_scheduled", "queue", "running", "vacuum"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_PENDING_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_AT_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PENDING_READY_FIELD_NUMBER: _ClassVar[int]
    PENDING_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    VACUUM_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    completed: int
    dead: int
    limits: QueueLimits
    oldest_pending_age_seconds: float
    paused: bool
    paused_at: _timestamp_pb2.Timestamp
    pending_ready: int
    pending_scheduled: int
    queue: str
    running: int
    vacuum: _queue_pb2.VacuumHealth
    def __init__(self, queue: _Optional[str] = ..., pending_ready: _Optional[int] = ..., pending_scheduled: _Optional[int] = ..., running: _Optional[int] = ..., completed: _Optional[int] = ..., dead: _Optional[int] = ..., cancelled: _Optional[int] = ..., oldest_pending_age_seconds: _Optional[float] = ..., vacuum: _Optional[_Union[_queue_pb2.VacuumHealth, _Mapping]] = ..., paused: bool = ..., paused_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., limits: _Optional[_Union[QueueLimits, _Mapping]] = ...) -> None: ...

class QueueSummary(_message.Message):
    __slots__ = ["cancelled", "completed", "dead", "limits", "oldest_pending_age_seconds", "paused", "pending_ready", "pending_scheduled", "queue", "running"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_PENDING_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    PENDING_READY_FIELD_NUMBER: _ClassVar[int]
    PENDING_SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    completed: int
    dead: int
    limits: QueueLimits
    oldest_pending_age_seconds: float
    paused: bool
    pending_ready: int
    pending_scheduled: int
    queue: str
    running: int
    def __init__(self, queue: _Optional[str] = ..., paused: bool = ..., pending_ready: _Optional[int] = ..., pending_scheduled: _Optional[int] = ..., running: _Optional[int] = ..., completed: _Optional[int] = ..., dead: _Optional[int] = ..., cancelled: _Optional[int] = ..., oldest_pending_age_seconds: _Optional[float] = ..., limits: _Optional[_Union[QueueLimits, _Mapping]] = ...) -> None: ...

class RedriveRequest(_message.Message):
    __slots__ = ["ids", "limit", "queue"]
    IDS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[int]
    limit: int
    queue: str
    def __init__(self, queue: _Optional[str] = ..., ids: _Optional[_Iterable[int]] = ..., limit: _Optional[int] = ...) -> None: ...

class RedriveResponse(_message.Message):
    __slots__ = ["redriven_count"]
    REDRIVEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    redriven_count: int
    def __init__(self, redriven_count: _Optional[int] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ["delay", "id", "lease_token"]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    delay: _duration_pb2.Duration
    id: int
    lease_token: int
    def __init__(self, id: _Optional[int] = ..., lease_token: _Optional[int] = ..., delay: _Optional[_Union[_duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class ReleaseResponse(_message.Message):
    __slots__ = ["already", "todo"]
    ALREADY_FIELD_NUMBER: _ClassVar[int]
    TODO_FIELD_NUMBER: _ClassVar[int]
    already: bool
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ..., already: bool = ...) -> None: ...

class ResumeQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = ["control"]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    control: QueueControl
    def __init__(self, control: _Optional[_Union[QueueControl, _Mapping]] = ...) -> None: ...

class RetryTodoRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    def __init__(self, id: _Optional[int] = ...) -> None: ...

class RetryTodoResponse(_message.Message):
    __slots__ = ["todo"]
    TODO_FIELD_NUMBER: _ClassVar[int]
    todo: _queue_pb2.Todo
    def __init__(self, todo: _Optional[_Union[_queue_pb2.Todo, _Mapping]] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ["created_at", "cron", "id", "last_run_at", "last_todo_id", "misfire", "name", "next_runs", "paused", "template", "time_zone", "updated_at"]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_TODO_ID_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUNS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    created_at: _timestamp_pb2.Timestamp
    cron: str
    id: str
    last_run_at: _timestamp_pb2.Timestamp
    last_todo_id: int
    misfire: Misfire
    name: str
    next_runs: _containers.RepeatedCompositeFieldContainer[_timestamp_pb2.Timestamp]
    paused: bool
    template: EnqueueRequest
    time_zone: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., template: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., misfire: _Optional[_Union[Misfire, str]] = ..., paused: bool = ..., next_runs: _Optional[_Iterable[_Union[_timestamp_pb2.Timestamp, _Mapping]]] = ..., last_run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_todo_id: _Optional[int] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SetQueueLimitsRequest(_message.Message):
    __slots__ = ["key_max_running", "key_patterns", "key_rate_burst", "key_rate_per_second", "max_running", "queue", "rate_burst", "rate_per_second"]
    KEY_MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    KEY_PATTERNS_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    KEY_RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    MAX_RUNNING_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RATE_BURST_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    key_max_running: int
    key_patterns: _containers.RepeatedCompositeFieldContainer[KeyPattern]
    key_rate_burst: int
    key_rate_per_second: float
    max_running: int
    queue: str
    rate_burst: int
    rate_per_second: float
    def __init__(self, queue: _Optional[str] = ..., max_running: _Optional[int] = ..., key_max_running: _Optional[int] = ..., rate_per_second: _Optional[float] = ..., rate_burst: _Optional[int] = ..., key_rate_per_second: _Optional[float] = ..., key_rate_burst: _Optional[int] = ..., key_patterns: _Optional[_Iterable[_Union[KeyPattern, _Mapping]]] = ...) -> None: ...

class SetQueueLimitsResponse(_message.Message):
    __slots__ = ["control"]
    CONTROL_FIELD_NUMBER: _ClassVar[int]
    control: QueueControl
    def __init__(self, control: _Optional[_Union[QueueControl, _Mapping]] = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ["cron", "id", "misfire", "name", "paused", "template", "time_zone"]
    CRON_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    cron: str
    id: str
    misfire: Misfire
    name: str
    paused: bool
    template: EnqueueRequest
    time_zone: str
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., cron: _Optional[str] = ..., time_zone: _Optional[str] = ..., template: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., misfire: _Optional[_Union[Misfire, str]] = ..., paused: bool = ...) -> None: ...

class UpdateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class BatchOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class Misfire(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DedupeScope(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
