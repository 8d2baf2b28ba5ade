-- Queue controls (issue 17, docs/design/queue-flow-control.md): one row per
-- queue a tenant has put under control. This first increment holds only
-- pause; the later limits (max_running, rates, fairness) come with their own
-- migrations, so a queue that never had a control has no row and its claims
-- stay on the fast path.
--
-- TodoClaim probes this table once per statement (an InitPlan over the
-- primary key): a paused queue hands out nothing, on every node, because the
-- predicate is in the claim's SQL rather than in a node's memory.
--
-- paused is the flag the claim reads; paused_at is when the current pause
-- began (NULL while running); updated_at is the last Pause or Resume. A
-- resumed queue keeps its row (paused = false): ListQueues shows it, and the
-- row is where later controls will live. Owner: services/queue/internal/store.

-- +goose Up

CREATE TABLE queue_controls (
    human_id   uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    queue      queue_name  NOT NULL,
    paused     boolean     NOT NULL DEFAULT false,
    paused_at  timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (human_id, queue),
    CONSTRAINT queue_controls_paused_at_check CHECK (paused = (paused_at IS NOT NULL))
);

-- +goose Down

DROP TABLE queue_controls;
