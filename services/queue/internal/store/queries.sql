-- name: TodoInsert :one
-- Enqueues one todo; with a dedupe_key already used in this queue nothing is written and pgx.ErrNoRows comes back
-- (then TodoGetByDedupeKey). run_at NULL = now() on the database clock; the caller resolves priority and
-- max_attempts defaults (settings queue.defaults).
INSERT INTO todos (human_id, queue, agent_id, event_id, kind, payload, priority, max_attempts, run_at, dedupe_key)
VALUES (
    sqlc.arg(human_id),
    sqlc.arg(queue),
    sqlc.narg(agent_id),
    sqlc.narg(event_id),
    sqlc.arg(kind),
    sqlc.arg(payload),
    sqlc.arg(priority),
    sqlc.arg(max_attempts),
    coalesce(sqlc.narg(run_at)::timestamptz, now()),
    sqlc.narg(dedupe_key)
)
ON CONFLICT (human_id, queue, dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
RETURNING *;

-- name: TodoGetByDedupeKey :one
-- The todo that already holds a dedupe key: what Enqueue returns when TodoInsert found a duplicate.
SELECT *
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND queue = sqlc.arg(queue)
  AND dedupe_key = sqlc.arg(dedupe_key)::text;

-- name: TodoClaim :many
-- Leases up to batch_size due todos, most urgent first. MATERIALIZED makes the locking SELECT run exactly once
-- (never re-run as a join's inner side, claiming more than batch_size); SKIP LOCKED lets concurrent claimers take
-- different rows instead of waiting on each other. Queue names are per human, so human_id scopes the claim to the
-- caller's tenant. The scan walks idx_todos_pending in ORDER BY order and stops after batch_size rows.
WITH next AS MATERIALIZED (
    SELECT p.id
    FROM todos AS p
    WHERE p.state = 'pending'
      AND p.queue = sqlc.arg(queue)
      AND p.human_id = sqlc.arg(human_id)
      AND p.run_at <= now()
    ORDER BY p.priority, p.run_at, p.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state            = 'running',
    attempt          = t.attempt + 1,
    lease_owner      = sqlc.arg(worker)::text,
    lease_expires_at = now() + make_interval(secs => sqlc.arg(lease_seconds)::integer),
    attempted_at     = now()
FROM next
WHERE t.id = next.id
RETURNING t.*;

-- name: TodoHeartbeat :one
-- Extends a lease from the database's now(); fenced by the lease token (attempt), so pgx.ErrNoRows = lease lost.
-- Touches only lease_expires_at, which is in no index: a HOT update.
UPDATE todos
SET lease_expires_at = now() + make_interval(secs => sqlc.arg(lease_seconds)::integer)
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND attempt = sqlc.arg(attempt)
  AND state = 'running'
RETURNING lease_expires_at::timestamptz;

-- name: TodoComplete :one
-- Marks a leased todo done; token-fenced, so a worker whose lease expired gets pgx.ErrNoRows, not a completion.
UPDATE todos
SET state            = 'completed',
    lease_owner      = NULL,
    lease_expires_at = NULL,
    finished_at      = now()
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND attempt = sqlc.arg(attempt)
  AND state = 'running'
RETURNING *;

-- name: TodoFailRetry :one
-- Records a failed attempt and schedules a retry after backoff, or dead-letters when this was the last allowed
-- attempt (decided here, race-free, from the row itself); token-fenced. RETURNING state says which happened.
UPDATE todos
SET state            = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'pending' END,
    run_at           = CASE
                           WHEN attempt >= max_attempts THEN run_at
                           ELSE now() + make_interval(secs => sqlc.arg(backoff_seconds)::double precision)
                       END,
    finished_at      = CASE WHEN attempt >= max_attempts THEN now() END,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    last_error       = sqlc.arg(error)::text,
    errors           = errors || jsonb_build_array(jsonb_build_object(
                           'attempt', attempt,
                           'at', now(),
                           'error', sqlc.arg(error)::text
                       ))
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND attempt = sqlc.arg(attempt)
  AND state = 'running'
RETURNING *;

-- name: TodoFailDead :one
-- Records a failed attempt and dead-letters the todo now (non-retryable error); token-fenced.
UPDATE todos
SET state            = 'dead',
    finished_at      = now(),
    lease_owner      = NULL,
    lease_expires_at = NULL,
    last_error       = sqlc.arg(error)::text,
    errors           = errors || jsonb_build_array(jsonb_build_object(
                           'attempt', attempt,
                           'at', now(),
                           'error', sqlc.arg(error)::text
                       ))
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND attempt = sqlc.arg(attempt)
  AND state = 'running'
RETURNING *;

-- name: TodoRelease :one
-- Gives a leased todo back without penalty, keeping its place (run_at) in the queue; token-fenced. attempt is
-- the lease token and must never go down (the next claim would hand out a number a stale worker still holds),
-- so "no penalty" raises max_attempts by one instead.
UPDATE todos
SET state            = 'pending',
    max_attempts     = max_attempts + 1,
    lease_owner      = NULL,
    lease_expires_at = NULL
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND attempt = sqlc.arg(attempt)
  AND state = 'running'
RETURNING *;

-- name: TodoCancel :one
-- Cancels a pending or running todo; a worker holding it then finds its lease gone on the next heartbeat.
-- pgx.ErrNoRows when the todo does not exist or has already finished.
UPDATE todos
SET state            = 'cancelled',
    lease_owner      = NULL,
    lease_expires_at = NULL,
    finished_at      = now()
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND state IN ('pending', 'running')
RETURNING *;

-- name: TodoGet :one
-- One todo of this tenant; pgx.ErrNoRows when it does not exist or belongs to someone else.
SELECT *
FROM todos
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id);

-- name: TodoList :many
-- A tenant's todos newest first, optionally filtered by queue and state; keyset pagination on id (pass the last
-- id seen as before_id) stays cheap at any depth, unlike OFFSET. Served by idx_todos_list.
SELECT *
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue)::text)
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state)::text)
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id)::bigint)
ORDER BY id DESC
LIMIT sqlc.arg(page_size)::integer;

-- name: TodoRedriveByIDs :many
-- Sends chosen dead todos back to pending with a fresh budget of `attempts` more tries; errors are kept as
-- history. attempt (the lease token) keeps counting up, so no earlier worker's token can match again. Returns
-- the ids actually redriven (ids that are missing, not dead or someone else's are skipped).
UPDATE todos
SET state        = 'pending',
    max_attempts = attempt + sqlc.arg(attempts)::integer,
    run_at       = now(),
    finished_at  = NULL
WHERE human_id = sqlc.arg(human_id)
  AND id = ANY (sqlc.arg(ids)::bigint[])
  AND state = 'dead'
RETURNING id;

-- name: TodoRedriveQueue :execrows
-- Sends up to batch_size dead todos of a queue back to pending with `attempts` more tries, like
-- TodoRedriveByIDs (call until it returns 0): bounded so a large
-- dead-letter backlog is redriven in short transactions. SKIP LOCKED keeps it off rows another redrive holds.
WITH batch AS MATERIALIZED (
    SELECT d.id
    FROM todos AS d
    WHERE d.human_id = sqlc.arg(human_id)
      AND d.queue = sqlc.arg(queue)
      AND d.state = 'dead'
    ORDER BY d.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state        = 'pending',
    max_attempts = t.attempt + sqlc.arg(attempts)::integer,
    run_at       = now(),
    finished_at  = NULL
FROM batch
WHERE t.id = batch.id;

-- name: TodoReapExpired :many
-- Returns up to batch_size todos whose lease expired to pending, or dead-letters them at the attempt cap: one
-- bounded UPDATE over running rows only (idx_todos_running). SKIP LOCKED lets every node reap concurrently, and
-- the row lock re-checks lease_expires_at, so a lease a heartbeat just extended is left alone.
WITH expired AS MATERIALIZED (
    SELECT r.id
    FROM todos AS r
    WHERE r.state = 'running'
      AND r.lease_expires_at < now()
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state            = CASE WHEN t.attempt >= t.max_attempts THEN 'dead' ELSE 'pending' END,
    finished_at      = CASE WHEN t.attempt >= t.max_attempts THEN now() END,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    last_error       = 'lease expired',
    errors           = t.errors || jsonb_build_array(jsonb_build_object(
                           'attempt', t.attempt,
                           'at', now(),
                           'error', format('lease expired (held by %s)', t.lease_owner)
                       ))
FROM expired
WHERE t.id = expired.id
RETURNING t.id, t.state;

-- name: TodoStatsByState :one
-- Queue depth by state plus the age of the oldest due pending todo (0 when none), for QueueStats and metrics.
-- One pass over idx_todos_list; age is measured from run_at because a todo scheduled for later is not waiting.
SELECT count(*) FILTER (WHERE state = 'pending')   AS pending,
       count(*) FILTER (WHERE state = 'running')   AS running,
       count(*) FILTER (WHERE state = 'completed') AS completed,
       count(*) FILTER (WHERE state = 'dead')      AS dead,
       count(*) FILTER (WHERE state = 'cancelled') AS cancelled,
       coalesce(
           extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'pending' AND run_at <= now())),
           0
       )::double precision                         AS oldest_pending_age_seconds
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND queue = sqlc.arg(queue);

-- name: TodoVacuumHealth :one
-- Bloat signals for the queue table: dead tuples and vacuum times, plus the oldest open transaction in this
-- database, whose snapshot stops vacuum from removing them. (Other roles' sessions only show with
-- pg_read_all_stats.)
SELECT coalesce(s.n_live_tup, 0)::bigint AS n_live_tup,
       coalesce(s.n_dead_tup, 0)::bigint AS n_dead_tup,
       s.last_vacuum,
       s.last_autovacuum,
       coalesce((
           SELECT extract(epoch FROM now() - min(a.xact_start))
           FROM pg_catalog.pg_stat_activity AS a
           WHERE a.datname = current_database()
             AND a.xact_start IS NOT NULL
       ), 0)::double precision AS oldest_xact_age_seconds
FROM pg_catalog.pg_stat_user_tables AS s
WHERE s.relid = 'todos'::regclass;
