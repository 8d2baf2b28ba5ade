-- The durable work queue. State transitions:
--
--   pending           --claim-->                              running
--   running           --complete-->                           completed
--   running           --fail / release / lease expired-->     pending (retry)
--   running           --fail or lease expired at the cap-->   dead
--   dead              --redrive-->                            pending
--   pending | running --cancel-->                             cancelled
--
-- The claim's attempt number is the lease token: every worker write matches
-- (id, attempt, state = 'running'), so a worker whose lease expired and was
-- re-claimed by someone else updates 0 rows instead of clobbering the new run.

-- +goose Up

CREATE TABLE todos (
    id               bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    human_id         uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    queue            text        NOT NULL,
    -- Owner agent. SET NULL: deleting a persona must not destroy queued work.
    agent_id         uuid        REFERENCES agents (id) ON DELETE SET NULL,
    -- The event this todo was made from. SET NULL so event retention can
    -- prune history without touching the queue.
    event_id         bigint      REFERENCES events (id) ON DELETE SET NULL,
    kind             text        NOT NULL DEFAULT '',
    payload          jsonb       NOT NULL DEFAULT '{}',
    -- 0 = most urgent; claims take the lowest first.
    priority         smallint    NOT NULL DEFAULT 2,
    state            text        NOT NULL DEFAULT 'pending',
    -- Incremented by every claim; doubles as the lease token.
    attempt          integer     NOT NULL DEFAULT 0,
    max_attempts     integer     NOT NULL DEFAULT 25,
    run_at           timestamptz NOT NULL DEFAULT now(),
    -- The lease. These two columns change on every heartbeat, so they are in
    -- no index (nor in any index predicate): that keeps heartbeats HOT
    -- updates, which rewrite no index entries and can be pruned in-page.
    lease_owner      text,
    lease_expires_at timestamptz,
    last_error       text,
    -- One object per failed attempt: {"attempt": n, "at": ts, "error": msg}.
    errors           jsonb       NOT NULL DEFAULT '[]',
    dedupe_key       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    attempted_at     timestamptz,
    finished_at      timestamptz,

    CONSTRAINT todos_queue_check CHECK (queue ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    CONSTRAINT todos_priority_check CHECK (priority BETWEEN 0 AND 4),
    CONSTRAINT todos_state_check CHECK (state IN ('pending', 'running', 'completed', 'dead', 'cancelled')),
    CONSTRAINT todos_attempt_check CHECK (attempt >= 0),
    CONSTRAINT todos_max_attempts_check CHECK (max_attempts > 0),
    CONSTRAINT todos_attempt_max_check CHECK (attempt <= max_attempts),
    -- A running todo always has a complete lease and nothing else has one, so
    -- the reaper can trust lease_expires_at and a stale lease cannot linger.
    CONSTRAINT todos_lease_check CHECK (
        (state = 'running') = (lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL)
    ),
    CONSTRAINT todos_finished_at_check CHECK (
        (finished_at IS NOT NULL) = (state IN ('completed', 'dead', 'cancelled'))
    ),
    CONSTRAINT todos_dedupe_key_check CHECK (char_length(dedupe_key) <= 255)
)
-- Leave 20% of every heap page free so the new version written by an UPDATE
-- (claim, heartbeat, complete) usually fits in the same page. Same-page is a
-- precondition for HOT updates, and it keeps queue churn from spreading rows.
WITH (fillfactor = 80);

-- The claim scan. Partial on state = 'pending' so it holds live work only:
-- its size, and the cost of a claim, do not grow with the number of
-- completed/dead/cancelled rows. Column order matches the claim's
-- WHERE human_id = $h AND queue = $q ... ORDER BY priority, run_at, id (queues
-- belong to a tenant), so the claim is an
-- ordered index range scan that stops after LIMIT rows.
CREATE INDEX idx_todos_pending ON todos (human_id, queue, priority, run_at, id)
    WHERE state = 'pending';

-- The reaper looks for expired leases among running todos only. Deliberately
-- not on lease_expires_at: that column changes on every heartbeat and would
-- make heartbeats non-HOT. Running todos are few (bounded by worker count),
-- so filtering lease_expires_at on the heap rows is cheap.
CREATE INDEX idx_todos_running ON todos (queue)
    WHERE state = 'running';

-- Idempotent enqueue: INSERT ... ON CONFLICT (human_id, queue, dedupe_key)
-- WHERE dedupe_key IS NOT NULL DO NOTHING. Partial so todos without a key are
-- never deduped. The key stays reserved after the todo finishes, until
-- retention deletes the row.
CREATE UNIQUE INDEX todos_dedup ON todos (human_id, queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL;

-- ListTodos (per human, optional queue/state filter, keyset on id); also the
-- FK index for human deletes.
CREATE INDEX idx_todos_list ON todos (human_id, queue, state, id);

-- Retention prunes terminal todos by finished_at. Partial: live work is never
-- a retention candidate, and it keeps the index to terminal rows only.
CREATE INDEX idx_todos_finished_at ON todos (finished_at)
    WHERE finished_at IS NOT NULL;

-- FK index: event retention deletes events, and ON DELETE SET NULL must find
-- the referencing todos without a sequential scan.
CREATE INDEX idx_todos_event_id ON todos (event_id);

-- +goose Down

DROP TABLE todos;
