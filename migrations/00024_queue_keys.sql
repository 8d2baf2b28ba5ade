-- Concurrency keys and limits (issue 17, docs/design/queue-flow-control.md
-- §3b, §3e): a todo may carry a concurrency_key, and a queue may cap how
-- many of its todos run at once, overall (queue_controls.max_running) and
-- per key (queue_controls.key_max_running). The limits are enforced by the
-- claim statement itself on every node: each limit is a counter in a row
-- the claim locks, so no two claimers can both see "one slot left".
--
-- todos.concurrency_key: NULL = none. No CHECK (a CHECK runs on every row
-- version: 00009); the server checks the length. Nullable without default:
-- adding it rewrites nothing, and it is in no index that a lease write
-- touches, so heartbeats stay HOT.
--
-- idx_todos_pending_key serves the keyed claim: per key (and for the keyless
-- todos of a limited queue, concurrency_key IS NULL) the most urgent due
-- todos, in the fast path's order. It holds every pending todo, keyed or
-- not: a partial "IS NOT NULL" index would leave the keyless todos of a
-- limited queue reachable only through idx_todos_pending, whose scan would
-- walk every keyed entry to find them.
--
-- queue_keys: one counter row per key of a limited queue. running is the
-- number of its todos RUNNING (claims add, every statement that ends a run
-- subtracts, in the same statement; the repair pass recounts); served_at is
-- the round-robin cursor (least recently served first); tat the key's GCRA
-- state. None of them is indexed: the walk sorts a queue's key rows.
-- max_running, rate_per_second, rate_burst are the key's own limits, from
-- the first of queue_controls.key_patterns it matches (resolved when the row
-- is created and on every limit change); NULL = the queue's key defaults.
-- key_patterns is a JSON array of {"like": <LIKE pattern>, "glob",
-- "max_running", "rate_per_second", "rate_burst"} written by SetQueueLimits. Rows exist only for
-- queues with a limit (queue_controls.max_running or key_max_running set):
-- enqueue creates them, SetQueueLimits creates them for the todos already
-- there. fillfactor 70: running changes on every claim and completion, and
-- is in no index (HOT).
--
-- queue_controls.running counts the queue's RUNNING todos while max_running
-- is set (then the claim waits for that row's lock: one counter per queue);
-- limits_at is when the limits were last set, repaired_at when the repair
-- pass last recounted the counters.
--
-- Rate limits (§3c), claims per second with a burst, per queue and (the
-- same for every key) per key: GCRA, one theoretical arrival time (tat) per
-- queue row and per key row, advanced by the claim that takes tokens, in the
-- row it locks. No refill job: the tokens available are computed from tat
-- and now(). limited (generated) says the queue has any limit: its claims
-- go through TodoClaimLimited and its keys have counter rows.
--
-- NO TRANSACTION: the index is built CONCURRENTLY (like 00008), so an
-- upgrade does not block enqueues and claims; every statement is idempotent.
-- Owner: services/queue/internal/store.

-- +goose NO TRANSACTION
-- +goose Up

ALTER TABLE todos ADD COLUMN IF NOT EXISTS concurrency_key text;

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_todos_pending_key
    ON todos (human_id, queue, concurrency_key, priority, run_at, id)
    WHERE state = 'pending';

ALTER TABLE queue_controls
    ADD COLUMN IF NOT EXISTS max_running     integer,
    ADD COLUMN IF NOT EXISTS key_max_running integer,
    ADD COLUMN IF NOT EXISTS running         integer NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS limits_at       timestamptz,
    ADD COLUMN IF NOT EXISTS repaired_at     timestamptz,
    ADD COLUMN IF NOT EXISTS rate_per_second     double precision,
    ADD COLUMN IF NOT EXISTS rate_burst          integer NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS tat                 timestamptz NOT NULL DEFAULT '-infinity',
    ADD COLUMN IF NOT EXISTS key_rate_per_second double precision,
    ADD COLUMN IF NOT EXISTS key_rate_burst      integer NOT NULL DEFAULT 1,
    ADD COLUMN IF NOT EXISTS key_patterns        jsonb NOT NULL DEFAULT '[]';

ALTER TABLE queue_controls ADD COLUMN IF NOT EXISTS limited boolean GENERATED ALWAYS AS (
    max_running IS NOT NULL OR key_max_running IS NOT NULL
    OR rate_per_second IS NOT NULL OR key_rate_per_second IS NOT NULL OR key_patterns <> '[]') STORED;

ALTER TABLE queue_controls DROP CONSTRAINT IF EXISTS queue_controls_limits_check;
ALTER TABLE queue_controls ADD CONSTRAINT queue_controls_limits_check
    CHECK (max_running BETWEEN 1 AND 1000000 AND key_max_running BETWEEN 1 AND 1000000
           AND rate_per_second > 0 AND rate_per_second <= 1000000
           AND key_rate_per_second > 0 AND key_rate_per_second <= 1000000
           AND rate_burst BETWEEN 1 AND 1000000 AND key_rate_burst BETWEEN 1 AND 1000000);

CREATE TABLE IF NOT EXISTS queue_keys (
    human_id  uuid        NOT NULL,
    queue     queue_name  NOT NULL,
    key       text        NOT NULL,
    running   integer     NOT NULL DEFAULT 0,
    served_at timestamptz NOT NULL DEFAULT '-infinity',
    tat       timestamptz NOT NULL DEFAULT '-infinity',
    max_running     integer,
    rate_per_second double precision,
    rate_burst      integer,
    PRIMARY KEY (human_id, queue, key),
    FOREIGN KEY (human_id, queue) REFERENCES queue_controls (human_id, queue) ON DELETE CASCADE
) WITH (fillfactor = 70);

-- +goose Down

DROP TABLE IF EXISTS queue_keys;
ALTER TABLE queue_controls
    DROP CONSTRAINT IF EXISTS queue_controls_limits_check,
    DROP COLUMN IF EXISTS limited,
    DROP COLUMN IF EXISTS key_patterns,
    DROP COLUMN IF EXISTS key_rate_burst,
    DROP COLUMN IF EXISTS key_rate_per_second,
    DROP COLUMN IF EXISTS tat,
    DROP COLUMN IF EXISTS rate_burst,
    DROP COLUMN IF EXISTS rate_per_second,
    DROP COLUMN IF EXISTS repaired_at,
    DROP COLUMN IF EXISTS limits_at,
    DROP COLUMN IF EXISTS running,
    DROP COLUMN IF EXISTS key_max_running,
    DROP COLUMN IF EXISTS max_running;
DROP INDEX CONCURRENTLY IF EXISTS idx_todos_pending_key;
ALTER TABLE todos DROP COLUMN IF EXISTS concurrency_key;
