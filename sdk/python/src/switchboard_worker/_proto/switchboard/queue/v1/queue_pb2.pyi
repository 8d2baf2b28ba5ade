from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
TODO_STATE_CANCELLED: TodoState
TODO_STATE_COMPLETED: TodoState
TODO_STATE_DEAD: TodoState
TODO_STATE_PENDING: TodoState
TODO_STATE_RUNNING: TodoState
TODO_STATE_UNSPECIFIED: TodoState

class Todo(_message.Message):
    __slots__ = ["agent_id", "attempt", "attempted_at", "concurrency_key", "created_at", "dedupe_key", "errors", "event_id", "finished_at", "human_id", "id", "kind", "last_error", "lease_expires_at", "lease_expiries", "lease_owner", "lease_token", "max_attempts", "payload", "priority", "progress", "progress_at", "queue", "remove_on_complete", "result", "run_at", "state", "trace_parent"]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_KEY_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    HUMAN_ID_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRIES_FIELD_NUMBER: _ClassVar[int]
    LEASE_OWNER_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_AT_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TRACE_PARENT_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    attempt: int
    attempted_at: _timestamp_pb2.Timestamp
    concurrency_key: str
    created_at: _timestamp_pb2.Timestamp
    dedupe_key: str
    errors: _containers.RepeatedCompositeFieldContainer[TodoError]
    event_id: int
    finished_at: _timestamp_pb2.Timestamp
    human_id: str
    id: int
    kind: str
    last_error: str
    lease_expires_at: _timestamp_pb2.Timestamp
    lease_expiries: int
    lease_owner: str
    lease_token: int
    max_attempts: int
    payload: _struct_pb2.Struct
    priority: int
    progress: _struct_pb2.Struct
    progress_at: _timestamp_pb2.Timestamp
    queue: str
    remove_on_complete: bool
    result: _struct_pb2.Struct
    run_at: _timestamp_pb2.Timestamp
    state: TodoState
    trace_parent: str
    def __init__(self, id: _Optional[int] = ..., human_id: _Optional[str] = ..., queue: _Optional[str] = ..., agent_id: _Optional[str] = ..., event_id: _Optional[int] = ..., kind: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., priority: _Optional[int] = ..., state: _Optional[_Union[TodoState, str]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., run_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., lease_owner: _Optional[str] = ..., lease_expires_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., errors: _Optional[_Iterable[_Union[TodoError, _Mapping]]] = ..., dedupe_key: _Optional[str] = ..., created_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., attempted_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., result: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., lease_expiries: _Optional[int] = ..., lease_token: _Optional[int] = ..., trace_parent: _Optional[str] = ..., progress: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., progress_at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., concurrency_key: _Optional[str] = ..., remove_on_complete: bool = ...) -> None: ...

class TodoError(_message.Message):
    __slots__ = ["at", "attempt", "error"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    at: _timestamp_pb2.Timestamp
    attempt: int
    error: str
    def __init__(self, attempt: _Optional[int] = ..., at: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., error: _Optional[str] = ...) -> None: ...

class VacuumHealth(_message.Message):
    __slots__ = ["dead_tuples", "last_autovacuum", "last_vacuum", "live_tuples", "oldest_transaction_age_seconds"]
    DEAD_TUPLES_FIELD_NUMBER: _ClassVar[int]
    LAST_AUTOVACUUM_FIELD_NUMBER: _ClassVar[int]
    LAST_VACUUM_FIELD_NUMBER: _ClassVar[int]
    LIVE_TUPLES_FIELD_NUMBER: _ClassVar[int]
    OLDEST_TRANSACTION_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    dead_tuples: int
    last_autovacuum: _timestamp_pb2.Timestamp
    last_vacuum: _timestamp_pb2.Timestamp
    live_tuples: int
    oldest_transaction_age_seconds: float
    def __init__(self, live_tuples: _Optional[int] = ..., dead_tuples: _Optional[int] = ..., oldest_transaction_age_seconds: _Optional[float] = ..., last_autovacuum: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., last_vacuum: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TodoState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
