"""How a handler says what became of its todo, and which RPC errors are
worth retrying.

A handler that returns completes its todo (what it returned, a dict, is the
result). An exception fails it: the server schedules the next attempt with
its backoff, or dead-letters it after its last. :class:`RetryAfter` fails it
with an explicit delay before the next attempt, :class:`Permanent`
dead-letters it at once.
"""

from __future__ import annotations

import grpc


class RetryAfter(Exception):
    """Fail the todo and run it again no sooner than ``seconds`` from now."""

    def __init__(self, seconds: float, message: str = "") -> None:
        super().__init__(message or f"retry after {seconds} s")
        self.seconds = seconds


class Permanent(Exception):
    """Fail the todo for good: it goes to the dead letters, not retried."""



# Codes after which an acknowledgement is sent again: the node or the
# database was restarting (UNAVAILABLE), a deadlock or serialization
# failure (ABORTED), one attempt's deadline, overload, or a broken
# connection (UNKNOWN). Acks are idempotent on the server: one retried after
# it committed is answered ALREADY.
TRANSIENT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNKNOWN,
    }
)

# Codes that mean the lease is gone.
LEASE_GONE = frozenset({grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND})


def code_of(err: BaseException) -> grpc.StatusCode | None:
    """The gRPC status code of err, or None when it is no RPC error."""
    if isinstance(err, grpc.aio.AioRpcError):
        return err.code()
    return None


def is_transient(err: BaseException) -> bool:
    code = code_of(err)
    if code is None:  # a broken connection below gRPC
        return isinstance(err, (ConnectionError, OSError))
    return code in TRANSIENT
