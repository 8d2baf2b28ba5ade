"""The todo a handler works on, with what the handler may report back."""

from __future__ import annotations

import json
import threading
from typing import Any

from google.protobuf import json_format, struct_pb2

from switchboard_worker._proto.switchboard.queue.v1 import queue_pb2

# The server stores at most 1 KiB of progress per todo.
MAX_PROGRESS_BYTES = 1024


class Job:
    """One claimed todo, handed to the handler.

    ``todo`` is the claimed message (id, kind, payload, attempt, ...);
    ``payload`` is its payload as a dict. :meth:`progress` records how far
    the handler got; the latest value goes out with the todo's next lease
    renewal. ``lease_lost`` is set when the server said the lease is gone: an
    ``async`` handler is cancelled then, a plain function (running in a
    thread) should check it between steps and stop, since nothing it does
    from then on is acknowledged. ``trace_parent`` is the W3C trace context
    of the request that created the todo, when there was one.
    """

    def __init__(self, todo: queue_pb2.Todo) -> None:
        self.todo = todo
        self.lease_lost = threading.Event()
        self._progress: struct_pb2.Struct | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> int:
        return int(self.todo.id)

    @property
    def payload(self) -> dict[str, Any]:
        return _struct_to_dict(self.todo.payload)

    @property
    def attempt(self) -> int:
        return int(self.todo.attempt)

    @property
    def trace_parent(self) -> str:
        return str(self.todo.trace_parent)

    def progress(self, value: dict[str, Any]) -> None:
        """Records the handler's progress, a JSON object of at most 1 KiB,
        sent with the next lease renewal (stored as Todo.progress and
        published as a todo.progress event)."""
        if not isinstance(value, dict):
            raise TypeError("progress must be a dict (a JSON object)")
        encoded = json.dumps(value, separators=(",", ":"))
        if len(encoded.encode()) > MAX_PROGRESS_BYTES:
            raise ValueError(f"progress is {len(encoded.encode())} bytes as JSON, at most {MAX_PROGRESS_BYTES}")
        s = struct_pb2.Struct()
        s.update(json.loads(encoded))
        with self._lock:
            self._progress = s

    def take_progress(self) -> struct_pb2.Struct | None:
        """The progress recorded since the last call, once (the heartbeat
        sends it)."""
        with self._lock:
            p, self._progress = self._progress, None
            return p

    def restore_progress(self, p: struct_pb2.Struct) -> None:
        """Puts back progress a failed heartbeat did not deliver, unless the
        handler recorded newer progress meanwhile."""
        with self._lock:
            if self._progress is None:
                self._progress = p


def _struct_to_dict(s: struct_pb2.Struct) -> dict[str, Any]:
    return json_format.MessageToDict(s)
