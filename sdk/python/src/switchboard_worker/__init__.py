"""Worker SDK for Switchboard queues, for Python agents.

A worker claims todos from a queue over gRPC, runs a handler over each,
keeps each lease alive while the handler runs, and ends it with Complete,
Fail or Release, presenting the lease token it was given. This package is
the Python counterpart of the Go SDK (pkg/worker) and follows the same
contract (sdk/conformance lists the scenarios all three SDKs pass).

:class:`Worker` drains a queue with a handler (``async def`` or a plain
function, run in a thread pool); :class:`Nodes` connects to one or several
nodes with failover; the generated QueueService messages and stub are
``queue_pb2``, ``queue_service_pb2`` and ``queue_service_pb2_grpc``.
"""

from switchboard_worker._proto.switchboard.queue.v1 import (
    queue_pb2,
    queue_service_pb2,
    queue_service_pb2_grpc,
)
from switchboard_worker.errors import Permanent, RetryAfter
from switchboard_worker.job import Job
from switchboard_worker.nodes import Nodes
from switchboard_worker.outcome import Outcome
from switchboard_worker.worker import Stats, Worker

__all__ = [
    "Job",
    "Nodes",
    "Outcome",
    "Permanent",
    "RetryAfter",
    "Stats",
    "Worker",
    "queue_pb2",
    "queue_service_pb2",
    "queue_service_pb2_grpc",
]
