"""What finally became of a claimed todo, told once per todo to on_ack."""

from __future__ import annotations

import enum


class Outcome(enum.Enum):
    """The final outcome of a claimed todo.

    COMPLETED, FAILED, DEAD_LETTERED and RELEASED were confirmed by the
    server. LEASE_LOST: the server said the lease is gone, so the todo will
    run again elsewhere. UNCONFIRMED: the SDK gave up retrying the ack; the
    server may or may not have recorded it. Tie exactly-once side effects
    to COMPLETED.
    """

    COMPLETED = "completed"
    FAILED = "failed"
    DEAD_LETTERED = "dead_lettered"
    RELEASED = "released"
    LEASE_LOST = "lease_lost"
    UNCONFIRMED = "unconfirmed"
