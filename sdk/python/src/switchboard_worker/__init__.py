"""Worker SDK for Switchboard queues, for Python agents.

A worker claims todos from a queue over gRPC, runs a handler over each,
keeps each lease alive while the handler runs, and ends it with Complete,
Fail or Release, presenting the lease token it was given. This package is
the Python counterpart of the Go SDK (pkg/worker) and follows the same
contract (sdk/conformance lists the scenarios all three SDKs pass).

This module exposes the connection to a set of nodes (:class:`Nodes`) and
the generated QueueService messages and stub (``queue_pb2``,
``queue_service_pb2``, ``queue_service_pb2_grpc``).
"""

from switchboard_worker._proto.switchboard.queue.v1 import (
    queue_pb2,
    queue_service_pb2,
    queue_service_pb2_grpc,
)
from switchboard_worker.nodes import Nodes

__all__ = ["Nodes", "queue_pb2", "queue_service_pb2", "queue_service_pb2_grpc"]
