-- The queue's SQL. Conventions every statement follows:
--
-- * Tenancy: every statement takes the caller's human_id and matches only that tenant's rows, so another
--   tenant's todo is indistinguishable from a missing one.
-- * Agents: caller_agent_id is the agent a credential acts as (NULL for a human's credential). An agent sees
--   and works only todos addressed to it or to no agent:
--     (caller_agent_id IS NULL OR agent_id IS NULL OR agent_id = caller_agent_id)
-- * Lease tokens: a random 63-bit lease_token drawn at each claim (TodoClaim: gen_random_uuid is the server's
--   strong random source), known only to the claimer. Every worker write matches (id, lease_token, a live lease),
--   so a worker whose lease expired and was re-claimed updates 0 rows instead of clobbering the new run, and a
--   guess matches nothing. lease_token and lease_outcome (how that lease ended) outlive the lease, so an ack
--   retried after its first answer was lost is recognised (TodoAckStates) and answered "already".
-- * "A live lease" is written lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL, which todos_lease_check
--   makes equivalent to state = 'running'. Not state = 'running' itself: that lets the planner answer the
--   worker writes from idx_todos_running, whose entries for finished runs stay until vacuum, so under churn
--   every Complete walked thousands of dead entries (35 ms per batch at 4k jobs/s). Written this way the
--   partial index's predicate is not implied and the writes go by primary key. attempt
--   never decreases: Release raises max_attempts by one, Redrive sets max_attempts = attempt + N.
-- * Lease and heartbeat columns (lease_owner, lease_expires_at, lease_expiries, lease_token, lease_outcome, progress,
--   progress_at) are in no index, so heartbeats are HOT updates.
-- * Lock order: every multi-row write locks its rows in one canonical order (ascending id; dedupe_key for
--   inserts that can conflict), so concurrent batches wait on each other instead of deadlocking. An enqueue with
--   WINDOW keys takes its todo_dedupe_windows rows (key order) before its todos keys, and nothing takes them after.
-- * Dedupe keys: todos_dedup holds a RETENTION key (dedupe_scope NULL) always and a LIVE key while pending or
--   running; the inserts name it with exactly its predicate (ON CONFLICT infers an arbiter only when the clause
--   implies the index's predicate). WINDOW todos are in no unique index: todo_dedupe_windows holds their keys.
-- * Defaults (max_attempts, lease seconds) come from the setting queue.defaults, read inside the statement, so
--   there is no cache to go stale; default_max_attempts and default_lease_seconds (pkg/settings' defaults) apply
--   only when an operator deleted the row.

-- name: TodoCheckRefs :one
-- The 1-based position of the first batch entry whose agent_id or event_id is not the caller's (0 = all good):
-- an agent or event of another tenant must look unknown (NOT_FOUND), which a foreign key alone would not give.
SELECT coalesce(min(u.ord), 0)::bigint AS first_bad
FROM (
    SELECT unnest(sqlc.arg(agent_ids)::text[])                                AS agent_id,
           unnest(sqlc.arg(event_ids)::bigint[])                              AS event_id,
           generate_series(1, cardinality(sqlc.arg(agent_ids)::text[]))::bigint AS ord
) AS u
WHERE (u.agent_id <> '' AND NOT EXISTS (
          SELECT 1 FROM agents AS a WHERE a.id = nullif(u.agent_id, '')::uuid AND a.human_id = sqlc.arg(human_id)))
   OR (u.event_id <> 0 AND NOT EXISTS (
          SELECT 1 FROM events AS e WHERE e.id = u.event_id AND e.human_id = sqlc.arg(human_id)));

-- name: TodoInsertBatch :many
-- Enqueues a whole batch in one statement. Arrays are parallel, one element per todo; "none" is encoded as ''
-- (agent_id, dedupe_key, trace_parent), 0 (event_id, max_attempts) or a time in the past (run_at: "past means
-- now"); dedupe_scope '' is RETENTION (stored as NULL), else 'live' or 'window' (whose entries the caller has
-- already reserved with TodoDedupeWindowsReserve, dropping the ones that lost).
-- ON CONFLICT DO NOTHING writes no tuple for a duplicate dedupe key (also within the batch: the first entry
-- wins), so duplicates are simply absent from RETURNING; the caller looks them up with TodoGetByDedupeKeys.
-- Ids are drawn in request order (the MATERIALIZED CTE numbers the entries before anything is inserted), so
-- they ascend in request order; the rows are then inserted in dedupe_key order, because inserting a key waits
-- on a concurrent transaction inserting the same one: two batches naming overlapping keys in different orders
-- would each hold a key the other waits for (a deadlock), while in one order the later one simply waits.
WITH u AS MATERIALIZED (
    SELECT v.*, nextval(pg_get_serial_sequence('todos', 'id')) AS id
    FROM (
        -- Set-returning functions in one select list advance in lockstep (PostgreSQL ≥ 10): a zip of the arrays.
        SELECT unnest(sqlc.arg(agent_ids)::text[])                                AS agent_id,
               unnest(sqlc.arg(event_ids)::bigint[])                              AS event_id,
               unnest(sqlc.arg(kinds)::text[])                                    AS kind,
               unnest(sqlc.arg(payloads)::text[])                                 AS payload,
               unnest(sqlc.arg(priorities)::integer[])                            AS priority,
               unnest(sqlc.arg(max_attempts)::integer[])                          AS max_attempts,
               unnest(sqlc.arg(run_ats)::timestamptz[])                           AS run_at,
               unnest(sqlc.arg(dedupe_keys)::text[])                              AS dedupe_key,
               unnest(sqlc.arg(trace_parents)::text[])                            AS trace_parent,
               unnest(sqlc.arg(dedupe_scopes)::text[])                            AS dedupe_scope,
               generate_series(1, cardinality(sqlc.arg(kinds)::text[]))::bigint AS ord
    ) AS v
    ORDER BY v.ord
)
INSERT INTO todos (id, human_id, queue, agent_id, event_id, kind, payload, priority, max_attempts, run_at, dedupe_key,
                   trace_parent, dedupe_scope)
OVERRIDING SYSTEM VALUE
SELECT u.id,
       sqlc.arg(human_id),
       sqlc.arg(queue),
       nullif(u.agent_id, '')::uuid,
       nullif(u.event_id, 0),
       u.kind,
       u.payload::jsonb,
       u.priority::smallint,
       coalesce(nullif(u.max_attempts, 0), (
           SELECT greatest(1, (s.value ->> 'max_attempts')::integer)
           FROM settings AS s
           WHERE s.key = 'queue.defaults'
       ), sqlc.arg(default_max_attempts)::integer),
       greatest(u.run_at, now()),
       nullif(u.dedupe_key, ''),
       nullif(u.trace_parent, ''),
       nullif(u.dedupe_scope, '')
FROM u
ORDER BY u.dedupe_key COLLATE "C", u.ord
ON CONFLICT (human_id, queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND (dedupe_scope IS NULL OR (dedupe_scope = 'live' AND state IN ('pending', 'running')))
DO NOTHING
RETURNING *;

-- name: TodoInsertForEvents :batchmany
-- The todos of the events of one source that this transaction stored (ingest's writes: the events' insert and
-- this go in one pipeline, so event and todo commit together in one round trip). The statement finds the events
-- itself: stamped with this transaction's start (received_at = now()) and inserted by it (xmin), so a duplicate
-- delivery that stored nothing gets no todo. The MATERIALIZED CTE is planned on its own, so it always walks
-- idx_events_received_at to the few rows this transaction stamped, never idx_events_human_source through every
-- event of a busy source (which a generic plan made before the table's first ANALYZE would). payload NULL is a
-- reference to the event. Ids ascend in event order. Each todo carries its event's trace context. RETURNING carries
-- what the announcement needs, not the row. With kind_from_topic each todo's kind is its event's topic (kind where
-- that is empty), so events of several topics share the statement.
WITH mine AS MATERIALIZED (
    SELECT e.id, e.human_id, e.source, e.topic, e.content_type, e.delivery_id, e.trace_parent
    FROM events AS e
    WHERE e.received_at = now()
      AND e.xmin = pg_current_xact_id()::xid
)
INSERT INTO todos (human_id, queue, agent_id, event_id, kind, payload, max_attempts, trace_parent)
SELECT m.human_id,
       sqlc.arg(queue),
       sqlc.narg(agent_id),
       m.id,
       CASE WHEN sqlc.arg(kind_from_topic)::boolean AND m.topic <> '' THEN m.topic ELSE sqlc.arg(kind)::text END,
       coalesce(sqlc.narg(payload)::jsonb,
                jsonb_strip_nulls(jsonb_build_object('event_id', m.id, 'source', m.source, 'topic', nullif(m.topic, ''),
                                                     'content_type', nullif(m.content_type, ''),
                                                     'delivery_id', m.delivery_id))),
       coalesce((SELECT greatest(1, (s.value ->> 'max_attempts')::integer) FROM settings AS s WHERE s.key = 'queue.defaults'),
                sqlc.arg(default_max_attempts)::integer),
       m.trace_parent
FROM mine AS m
WHERE m.human_id = sqlc.arg(human_id)::uuid
  AND m.source = sqlc.arg(source)::text
ORDER BY m.id
RETURNING id, event_id, agent_id, state;

-- name: TodoGetByDedupeKeys :many
-- The todos that hold some RETENTION/LIVE dedupe keys of a queue (todos_dedup's rows, at most one per key): what
-- Enqueue returns for duplicates.
SELECT *
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND queue = sqlc.arg(queue)
  AND dedupe_key = ANY (sqlc.arg(dedupe_keys)::text[])
  AND dedupe_key IS NOT NULL AND (dedupe_scope IS NULL OR (dedupe_scope = 'live' AND state IN ('pending', 'running')));

-- name: TodoClaim :many
-- Leases up to batch_size due todos, most urgent first. MATERIALIZED makes the locking SELECT run exactly once
-- (never re-run as a join's inner side, claiming more than batch_size); SKIP LOCKED lets concurrent claimers take
-- different rows instead of waiting on each other. The scan walks idx_todos_pending in ORDER BY order and stops
-- after batch_size rows. lease_seconds 0 means queue.defaults.lease_seconds, clamped to 1..3600.
-- The UPDATE finds the rows with id = ANY (ARRAY(...)), not by joining the CTE: its generic plan (the hot pool
-- runs generic plans only) must not depend on batch_size, and a join's does (with batch_size unknown the planner
-- expects thousands of rows and hashes the whole table), while this is a primary-key lookup at any size.
WITH next AS MATERIALIZED (
    SELECT p.id
    FROM todos AS p
    WHERE p.state = 'pending'
      AND p.human_id = sqlc.arg(human_id)
      AND p.queue = sqlc.arg(queue)
      AND p.run_at <= now()
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR p.agent_id IS NULL
           OR p.agent_id = sqlc.narg(caller_agent_id)::uuid)
      -- A paused queue hands out nothing (PauseQueue). The subquery does not refer to p, so it runs once per
      -- statement (an InitPlan: one primary-key probe of queue_controls, which holds only controlled queues) as
      -- a one-time filter over the scan: a paused queue's claim reads no todo at all.
      AND NOT EXISTS (SELECT 1 FROM queue_controls AS c
                      WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue) AND c.paused)
    ORDER BY p.priority, p.run_at, p.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state            = 'running',
    attempt          = t.attempt + 1,
    lease_owner      = sqlc.arg(worker)::text,
    lease_expires_at = now() + make_interval(secs => least(3600, greatest(1, coalesce(
                           nullif(sqlc.arg(lease_seconds)::integer, 0),
                           (SELECT (s.value ->> 'lease_seconds')::integer FROM settings AS s WHERE s.key = 'queue.defaults'),
                           sqlc.arg(default_lease_seconds)::integer)))),
    -- 63 random bits per row (gen_random_uuid is volatile: evaluated for each row), never 0.
    lease_token      = greatest(1, ('x' || left(md5(gen_random_uuid()::text), 16))::bit(64)::bigint
                                   & 9223372036854775807),
    lease_outcome    = NULL,
    attempted_at     = now(),
    -- progress is the current attempt's: a new attempt starts without one (in no index, still HOT).
    progress         = NULL,
    progress_at      = NULL
WHERE t.id = ANY (ARRAY(SELECT next.id FROM next))
RETURNING t.*;

-- name: TodoHeartbeatBatch :many
-- Extends leases from the database's now(), one statement for any number of items; token-fenced, so an item
-- missing from RETURNING lost its lease (or never existed: TodoAckStates tells which), and a stale item writes no
-- progress either. Touches only lease_expires_at and, for items that carry one, progress and progress_at, none of
-- which is in an index: a HOT update. progress '' means none: the stored progress stays. lease_seconds 0 = the
-- queue.defaults value. RETURNING carries the attempt so a batch that names one todo twice (with different tokens)
-- maps each item exactly, and what a todo.progress lifecycle event needs.
UPDATE todos AS t
SET lease_expires_at = now() + make_interval(secs => least(3600, greatest(1, coalesce(
                           nullif(u.lease_seconds, 0),
                           (SELECT (s.value ->> 'lease_seconds')::integer FROM settings AS s WHERE s.key = 'queue.defaults'),
                           sqlc.arg(default_lease_seconds)::integer)))),
    progress         = CASE WHEN u.progress = '' THEN t.progress ELSE u.progress::jsonb END,
    progress_at      = CASE WHEN u.progress = '' THEN t.progress_at ELSE now() END
FROM (
    SELECT unnest(sqlc.arg(ids)::bigint[])            AS id,
           unnest(sqlc.arg(tokens)::bigint[])         AS token,
           unnest(sqlc.arg(lease_seconds)::integer[]) AS lease_seconds,
           unnest(sqlc.arg(progress)::text[])         AS progress
) AS u
WHERE t.id = u.id
  AND t.human_id = sqlc.arg(human_id)
  AND t.lease_token = u.token
  AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
       OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING t.id, t.lease_token::bigint AS lease_token, t.lease_expires_at::timestamptz AS lease_expires_at,
          t.queue, t.agent_id, t.progress_at;

-- name: TodoCompleteBatch :many
-- Completes leased todos, one statement for any number of items; token-fenced like TodoHeartbeatBatch. result
-- '' means none. A completion ends the run of lease expiries. Items come in ascending id order (the caller sorts). RETURNING carries what an outcome and a lifecycle
-- event and the claim-to-completion metric need, not the row: scanning whole rows back was most of a node's cost of CompleteBatch (TodoGetMany
-- fetches them for the single Complete, whose answer is the todo).
UPDATE todos AS t
SET state            = 'completed',
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_expiries   = 0,
    lease_outcome    = 'completed',
    result           = nullif(u.result, '')::jsonb,
    finished_at      = now()
FROM (
    SELECT unnest(sqlc.arg(ids)::bigint[])     AS id,
           unnest(sqlc.arg(tokens)::bigint[])  AS token,
           unnest(sqlc.arg(results)::text[])   AS result
) AS u
WHERE t.id = u.id
  AND t.human_id = sqlc.arg(human_id)
  AND t.lease_token = u.token
  AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
       OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING t.id, t.lease_token::bigint AS lease_token, t.human_id, t.queue, t.agent_id, t.state,
          coalesce(extract(epoch FROM t.finished_at - t.attempted_at), 0)::float8 AS run_seconds;

-- name: TodoFail :one
-- Records a failed attempt (appended to errors, copied to last_error) and either schedules a retry or
-- dead-letters: at the attempt cap (decided here, race-free, from the row itself) or when dead_letter is set.
-- Token-fenced; RETURNING state says which happened. The retry waits retry_after_seconds when given, else the
-- backoff of the attempt that failed, computed here from the row's attempt:
--     min(cap, base · 2^(attempt-1)) · (0.5 + jitter/2),  jitter ∈ [0, 1) drawn by the caller
-- (base 1 s and cap 1 h by default: attempt 1 waits 0.5–1 s, attempt 5 8–16 s, from attempt 13 on 30–60 min).
-- The jitter spreads retries of todos that failed together, so a shared outage does not come back as a herd.
UPDATE todos
SET state            = CASE WHEN sqlc.arg(dead_letter)::boolean OR attempt >= max_attempts THEN 'dead' ELSE 'pending' END,
    run_at           = CASE
                           WHEN sqlc.arg(dead_letter)::boolean OR attempt >= max_attempts THEN run_at
                           ELSE now() + make_interval(secs => coalesce(
                               sqlc.narg(retry_after_seconds)::double precision,
                               least(sqlc.arg(backoff_cap_seconds)::double precision,
                                     sqlc.arg(backoff_base_seconds)::double precision
                                         * power(2::double precision, least(greatest(attempt - 1, 0), 62)))
                                   * (0.5 + sqlc.arg(jitter)::double precision / 2)))
                       END,
    finished_at      = CASE WHEN sqlc.arg(dead_letter)::boolean OR attempt >= max_attempts THEN now() END,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_expiries   = 0,
    lease_outcome    = 'failed',
    last_error       = sqlc.arg(error)::text,
    errors           = errors || jsonb_build_array(jsonb_build_object(
                           'attempt', attempt,
                           'at', now(),
                           'error', sqlc.arg(error)::text
                       ))
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND lease_token = sqlc.arg(token)::bigint
  AND lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING *;

-- name: TodoRelease :one
-- Gives a leased todo back without penalty; token-fenced. It keeps its place (run_at) unless delay_seconds > 0.
-- attempt counts claims and never goes down, so "no penalty" raises max_attempts by one instead.
UPDATE todos
SET state            = 'pending',
    max_attempts     = max_attempts + 1,
    run_at           = CASE
                           WHEN sqlc.arg(delay_seconds)::double precision > 0
                               THEN now() + make_interval(secs => sqlc.arg(delay_seconds)::double precision)
                           ELSE run_at
                       END,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_expiries   = 0,
    lease_outcome    = 'released'
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND lease_token = sqlc.arg(token)::bigint
  AND lease_expires_at IS NOT NULL AND lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING *;

-- name: TodoCancel :one
-- Cancels a pending or running todo; a worker holding it then finds its lease gone on its next call.
-- pgx.ErrNoRows when the todo does not exist or has already finished (TodoGet tells which).
UPDATE todos
SET state            = 'cancelled',
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_outcome    = CASE WHEN state = 'running' THEN 'cancelled' ELSE lease_outcome END,
    last_error       = nullif(sqlc.arg(reason)::text, ''),
    finished_at      = now()
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND state IN ('pending', 'running')
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING *;

-- name: TodoGet :one
-- One todo the caller may see; pgx.ErrNoRows when it does not exist or is out of reach.
SELECT *
FROM todos
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid);

-- name: TodoGetMany :many
-- The todos of ids the caller may see, in any order; missing ones are left out.
SELECT *
FROM todos
WHERE id = ANY (sqlc.arg(ids)::bigint[])
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid);

-- name: TodoAckStates :many
-- Which of ids exist for the caller, with how their latest lease ended: after a fenced batch write, an item that
-- did not match is NOT_FOUND when its id is missing here, "already" when its token names the latest lease and that
-- lease ended with the item's own outcome (a retried ack), and a stale lease otherwise.
SELECT id, coalesce(lease_token, 0)::bigint AS lease_token, coalesce(lease_outcome, '')::text AS lease_outcome
FROM todos
WHERE id = ANY (sqlc.arg(ids)::bigint[])
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid);

-- name: TodoList :many
-- A tenant's todos newest first, optionally filtered by queue, state and owner agent; keyset pagination on id
-- (pass the last id seen as before_id) stays cheap at any depth, unlike OFFSET. Served by idx_todos_list.
SELECT *
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue)::text)
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state)::text)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id)::bigint)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
ORDER BY id DESC
LIMIT sqlc.arg(page_size)::integer;

-- name: TodoRedriveByIDs :many
-- Sends chosen dead todos of a queue back to pending, runnable now, with a fresh budget of max_attempts more
-- claims (max_attempts = attempt + max_attempts: attempt, the lease token, keeps counting up so no earlier
-- worker's token can match again); errors are kept as history. Returns the ids actually redriven (ids that are missing, not dead, of
-- another queue or someone else's are skipped).
UPDATE todos
SET state          = 'pending',
    max_attempts   = attempt + max_attempts,
    run_at         = now(),
    lease_expiries = 0,
    finished_at    = NULL
WHERE human_id = sqlc.arg(human_id)
  AND queue = sqlc.arg(queue)
  AND id = ANY (sqlc.arg(ids)::bigint[])
  AND state = 'dead'
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING id;

-- name: TodoRedriveQueue :execrows
-- Sends up to batch_size dead todos of a queue (oldest first) back to pending like TodoRedriveByIDs; the caller
-- repeats until it returns 0 or its limit is reached, so a large backlog is redriven in short transactions.
-- SKIP LOCKED keeps it off rows another redrive holds.
WITH batch AS MATERIALIZED (
    SELECT d.id
    FROM todos AS d
    WHERE d.human_id = sqlc.arg(human_id)
      AND d.queue = sqlc.arg(queue)
      AND d.state = 'dead'
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR d.agent_id IS NULL
           OR d.agent_id = sqlc.narg(caller_agent_id)::uuid)
    ORDER BY d.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state          = 'pending',
    max_attempts   = t.attempt + t.max_attempts,
    run_at         = now(),
    lease_expiries = 0,
    finished_at    = NULL
FROM batch
WHERE t.id = batch.id;

-- name: TodoReapExpired :many
-- Ends up to batch_size expired leases in one bounded UPDATE over running rows only (idx_todos_running). Each
-- goes back to pending, or to dead at the attempt cap or when its consecutive lease expiries reach
-- max_expiries (a todo that keeps crashing its workers). SKIP LOCKED lets every node reap at once; the row
-- lock re-checks lease_expires_at, so a lease a heartbeat just extended is left alone.
WITH expired AS MATERIALIZED (
    SELECT r.id
    FROM todos AS r
    WHERE r.state = 'running'
      AND r.lease_expires_at < now()
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
)
UPDATE todos AS t
SET state            = CASE
                           WHEN t.attempt >= t.max_attempts OR t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer
                               THEN 'dead'
                           ELSE 'pending'
                       END,
    finished_at      = CASE
                           WHEN t.attempt >= t.max_attempts OR t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer
                               THEN now()
                       END,
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_expiries   = t.lease_expiries + 1,
    lease_outcome    = 'expired',
    last_error       = CASE
                           WHEN t.attempt >= t.max_attempts THEN 'lease expired on the last allowed attempt'
                           WHEN t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer
                               THEN format('dead-lettered: the lease expired %s times in a row (the todo may be crashing its workers)',
                                           t.lease_expiries + 1)
                           ELSE 'lease expired'
                       END,
    errors           = t.errors || jsonb_build_array(jsonb_build_object(
                           'attempt', t.attempt,
                           'at', now(),
                           'error', format('lease expired (held by %s)', t.lease_owner)
                       ))
FROM expired
WHERE t.id = expired.id
RETURNING t.id, t.human_id, t.queue, t.agent_id, t.state;

-- name: TodoPruneByAge :execrows
-- Deletes up to batch_size finished (completed, dead, cancelled) todos older than max_age_seconds, oldest
-- first (idx_todos_finished_at); live work is never a candidate. SKIP LOCKED lets every node prune at once.
DELETE FROM todos
WHERE id IN (
    SELECT f.id
    FROM todos AS f
    WHERE f.finished_at IS NOT NULL
      AND f.finished_at < now() - make_interval(secs => sqlc.arg(max_age_seconds)::double precision)
    ORDER BY f.finished_at
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
);

-- name: TodoPruneOverCap :execrows
-- Deletes up to batch_size of the oldest finished todos beyond the newest max_rows. The cutoff row is found
-- without locks (a locking OFFSET would lock every row it skips), then only rows at or before it are locked.
WITH cutoff AS (
    SELECT c.finished_at, c.id
    FROM todos AS c
    WHERE c.finished_at IS NOT NULL
    ORDER BY c.finished_at DESC, c.id DESC
    OFFSET sqlc.arg(max_rows)::bigint
    LIMIT 1
)
DELETE FROM todos
WHERE id IN (
    SELECT f.id
    FROM todos AS f, cutoff
    WHERE f.finished_at IS NOT NULL
      AND f.finished_at <= cutoff.finished_at
      AND (f.finished_at < cutoff.finished_at OR f.id <= cutoff.id)
    ORDER BY f.finished_at, f.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE OF f SKIP LOCKED
);

-- name: TodoStatsByState :one
-- Queue depth by state plus the age of the oldest due pending todo (0 when none), for QueueStats. One pass over
-- idx_todos_list; age is measured from run_at because a todo scheduled for later is not waiting.
SELECT count(*) FILTER (WHERE state = 'pending' AND run_at <= now()) AS pending_ready,
       count(*) FILTER (WHERE state = 'pending' AND run_at > now())  AS pending_scheduled,
       count(*) FILTER (WHERE state = 'running')                      AS running,
       count(*) FILTER (WHERE state = 'completed')                    AS completed,
       count(*) FILTER (WHERE state = 'dead')                         AS dead,
       count(*) FILTER (WHERE state = 'cancelled')                    AS cancelled,
       coalesce(
           extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'pending' AND run_at <= now())),
           0
       )::double precision                                            AS oldest_pending_age_seconds
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

-- name: TodoDepths :many
-- The metrics' periodic look at the queues (every 15 s on each queue node): live todos per tenant, queue and
-- state, and per pending group the age of its oldest due todo. Pending and running come from their partial
-- indexes, dead from idx_todos_list; the biggest groups first, at most row_limit rows.
SELECT human_id, queue, state, count(*)::bigint AS todos,
       coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'pending' AND run_at <= now())), 0)::float8
           AS oldest_pending_seconds
FROM todos
WHERE state IN ('pending', 'running', 'dead')
GROUP BY human_id, queue, state
ORDER BY count(*) DESC
LIMIT sqlc.arg(row_limit);

-- name: TodoInsertForReplay :many
-- The todos of a replay of stored events (ingest's ReplayEvent/ReplayEvents, inside its transaction that records
-- the replay on the events). Arrays are parallel, one element per todo: an event may get several (one per target
-- queue). payload '' is a reference to the event, built as TodoInsertForEvents builds it; agent_id and dedupe_key
-- '' mean none. The join keeps only the tenant's events, so an id of another tenant inserts nothing. A dedupe key
-- already held in its queue inserts nothing (a retried replay; the caller reads those with TodoGetReplayed). Ids
-- are drawn in entry order; rows are inserted in (queue, dedupe_key) order, the one order concurrent replays take
-- their keys in (see TodoInsertBatch).
WITH u AS MATERIALIZED (
    SELECT v.*, nextval(pg_get_serial_sequence('todos', 'id')) AS id
    FROM (
        SELECT unnest(sqlc.arg(event_ids)::bigint[])                              AS event_id,
               unnest(sqlc.arg(queues)::text[])                                   AS queue,
               unnest(sqlc.arg(agent_ids)::text[])                                AS agent_id,
               unnest(sqlc.arg(kinds)::text[])                                    AS kind,
               unnest(sqlc.arg(payloads)::text[])                                 AS payload,
               unnest(sqlc.arg(dedupe_keys)::text[])                              AS dedupe_key,
               generate_series(1, cardinality(sqlc.arg(kinds)::text[]))::bigint AS ord
    ) AS v
    ORDER BY v.ord
)
INSERT INTO todos (id, human_id, queue, agent_id, event_id, kind, payload, max_attempts, dedupe_key, trace_parent)
OVERRIDING SYSTEM VALUE
SELECT u.id,
       e.human_id,
       u.queue,
       nullif(u.agent_id, '')::uuid,
       e.id,
       u.kind,
       coalesce(nullif(u.payload, '')::jsonb,
                jsonb_strip_nulls(jsonb_build_object('event_id', e.id, 'source', e.source, 'topic', nullif(e.topic, ''),
                                                     'content_type', nullif(e.content_type, ''),
                                                     'delivery_id', e.delivery_id))),
       coalesce((SELECT greatest(1, (s.value ->> 'max_attempts')::integer) FROM settings AS s WHERE s.key = 'queue.defaults'),
                sqlc.arg(default_max_attempts)::integer),
       nullif(u.dedupe_key, ''),
       e.trace_parent
FROM u
JOIN events AS e ON e.id = u.event_id AND e.human_id = sqlc.arg(human_id)::uuid
ORDER BY u.queue COLLATE "C", u.dedupe_key COLLATE "C", u.ord
ON CONFLICT (human_id, queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND (dedupe_scope IS NULL OR (dedupe_scope = 'live' AND state IN ('pending', 'running')))
DO NOTHING
RETURNING id, event_id, queue, agent_id, state, coalesce(dedupe_key, '')::text AS dedupe_key;

-- name: TodoGetReplayed :many
-- The todos that already hold some (queue, dedupe_key) pairs of the tenant: what a retried replay answers. A
-- statement of its own (not part of the insert) so that, under READ COMMITTED, it sees a concurrent replay's todo
-- that committed while the insert waited on its key. Only the holders (todos_dedup's rows): a finished LIVE todo
-- or a WINDOW todo with the same key holds nothing.
SELECT t.id, t.event_id, t.queue, t.agent_id, t.state, coalesce(t.dedupe_key, '')::text AS dedupe_key
FROM todos AS t
JOIN (SELECT unnest(sqlc.arg(queues)::text[]) AS queue, unnest(sqlc.arg(dedupe_keys)::text[]) AS dedupe_key) AS k
  ON t.queue = k.queue AND t.dedupe_key = k.dedupe_key
WHERE t.human_id = sqlc.arg(human_id)::uuid
  AND t.dedupe_key IS NOT NULL AND (t.dedupe_scope IS NULL OR (t.dedupe_scope = 'live' AND t.state IN ('pending', 'running')));

-- name: QueuePause :many
-- Pauses a queue (PauseQueue): creates its control row, or sets paused on a running one. The row comes back only
-- when this call paused the queue (so its lifecycle event is emitted once per pause, however many callers race);
-- pausing a paused queue writes nothing and keeps the original paused_at, and the caller reads the state with
-- QueueControlGet. Claims see the pause as soon as this commits (TodoClaim's probe); a claim already running
-- finishes with what it took.
INSERT INTO queue_controls AS q (human_id, queue, paused, paused_at, updated_at)
VALUES (sqlc.arg(human_id), sqlc.arg(queue)::text, true, now(), now())
ON CONFLICT (human_id, queue) DO UPDATE
    SET paused = true, paused_at = now(), updated_at = now()
    WHERE NOT q.paused
RETURNING q.paused, q.paused_at, q.updated_at;

-- name: QueueResume :many
-- Resumes a queue (ResumeQueue). The row comes back only when this call resumed it (then the caller wakes the
-- queue's waiting claims and emits queue.resumed); resuming a running queue, or one with no control row, writes
-- nothing and creates no row.
UPDATE queue_controls AS q
SET paused = false, paused_at = NULL, updated_at = now()
WHERE q.human_id = sqlc.arg(human_id) AND q.queue = sqlc.arg(queue)::text AND q.paused
RETURNING q.paused, q.paused_at, q.updated_at;

-- name: QueueControlGet :many
-- A queue's control state (at most one row); no row = running, never controlled.
SELECT c.paused, c.paused_at, c.updated_at
FROM queue_controls AS c
WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text;

-- name: QueueList :many
-- ListQueues: one page of the tenant's queues (every queue that has a todo in any state or a control row), by
-- name after sqlc.arg(after), with depth by state and the pause flag. The names come from a loose index scan of
-- idx_todos_list (human_id, queue, …): each step jumps to the next queue name with one index probe, so the cost
-- is per queue, not per todo; queues with only a control row are merged in from queue_controls' primary key.
-- Then each queue on the page is counted over idx_todos_list (the TodoStatsByState shape).
WITH RECURSIVE names (queue) AS (
    (SELECT t.queue::text FROM todos AS t
     WHERE t.human_id = sqlc.arg(human_id) AND t.queue > sqlc.arg(after)::text
     ORDER BY t.queue LIMIT 1)
    UNION ALL
    SELECT (SELECT t.queue::text FROM todos AS t
            WHERE t.human_id = sqlc.arg(human_id) AND t.queue > n.queue
            ORDER BY t.queue LIMIT 1)
    FROM names AS n
    WHERE n.queue IS NOT NULL
),
page AS (
    SELECT q.queue FROM (
        (SELECT n.queue FROM names AS n WHERE n.queue IS NOT NULL LIMIT sqlc.arg(page_size)::integer)
        UNION
        (SELECT c.queue::text FROM queue_controls AS c
         WHERE c.human_id = sqlc.arg(human_id) AND c.queue > sqlc.arg(after)::text
         ORDER BY c.queue LIMIT sqlc.arg(page_size)::integer)
    ) AS q
    ORDER BY q.queue
    LIMIT sqlc.arg(page_size)::integer
)
SELECT p.queue::text AS queue,
       coalesce(c.paused, false) AS paused,
       s.pending_ready, s.pending_scheduled, s.running, s.completed, s.dead, s.cancelled,
       s.oldest_pending_age_seconds
FROM page AS p
LEFT JOIN queue_controls AS c ON c.human_id = sqlc.arg(human_id) AND c.queue = p.queue
CROSS JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.state = 'pending' AND t.run_at <= now()) AS pending_ready,
           count(*) FILTER (WHERE t.state = 'pending' AND t.run_at > now())  AS pending_scheduled,
           count(*) FILTER (WHERE t.state = 'running')                      AS running,
           count(*) FILTER (WHERE t.state = 'completed')                    AS completed,
           count(*) FILTER (WHERE t.state = 'dead')                         AS dead,
           count(*) FILTER (WHERE t.state = 'cancelled')                    AS cancelled,
           coalesce(extract(epoch FROM now() - min(t.run_at) FILTER (WHERE t.state = 'pending' AND t.run_at <= now())),
                    0)::double precision                                    AS oldest_pending_age_seconds
    FROM todos AS t
    WHERE t.human_id = sqlc.arg(human_id) AND t.queue = p.queue
) AS s
ORDER BY p.queue;

-- Schedules (docs/design/queue-flow-control.md §3f). Every statement but the tickers' takes the caller's human.

-- name: ScheduleNow :one
-- The database clock, which every schedule computation starts from (never a node's clock).
SELECT now()::timestamptz AS now;

-- name: ScheduleInsert :many
-- Creates a schedule. No row comes back when agent_id is not one of the tenant's agents (NOT_FOUND for the
-- caller); a taken name is the unique violation schedules_human_name_key.
INSERT INTO schedules (human_id, name, queue, agent_id, cron, time_zone, template, misfire, paused_at, next_run_at)
SELECT sqlc.arg(human_id),
       sqlc.arg(name),
       sqlc.arg(queue),
       sqlc.narg(agent_id)::uuid,
       sqlc.arg(cron),
       sqlc.arg(time_zone),
       sqlc.arg(template)::jsonb,
       sqlc.arg(misfire),
       CASE WHEN sqlc.arg(paused)::boolean THEN now() END,
       sqlc.narg(next_run_at)::timestamptz
WHERE sqlc.narg(agent_id)::uuid IS NULL
   OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = sqlc.narg(agent_id)::uuid AND a.human_id = sqlc.arg(human_id))
RETURNING *;

-- name: ScheduleGet :one
SELECT * FROM schedules WHERE id = sqlc.arg(id) AND human_id = sqlc.arg(human_id);

-- name: ScheduleGetForUpdate :one
-- The row an UpdateSchedule merges into, locked until its transaction ends (a tick waits, then re-checks the
-- next_run_at it expected, which the update may have moved).
SELECT * FROM schedules WHERE id = sqlc.arg(id) AND human_id = sqlc.arg(human_id) FOR UPDATE;

-- name: ScheduleList :many
-- One page of the tenant's schedules by name, after the previous page's last name.
SELECT * FROM schedules
WHERE human_id = sqlc.arg(human_id) AND name > sqlc.arg(after)::text
ORDER BY name
LIMIT sqlc.arg(page_size);

-- name: ScheduleUpdate :many
-- Writes an UpdateSchedule's merged row. No row comes back when agent_id is not one of the tenant's agents.
-- paused_at keeps the first pause's time.
UPDATE schedules AS s
SET name        = sqlc.arg(name),
    queue       = sqlc.arg(queue),
    agent_id    = sqlc.narg(agent_id)::uuid,
    cron        = sqlc.arg(cron),
    time_zone   = sqlc.arg(time_zone),
    template    = sqlc.arg(template)::jsonb,
    misfire     = sqlc.arg(misfire),
    paused_at   = CASE WHEN sqlc.arg(paused)::boolean THEN coalesce(s.paused_at, now()) END,
    next_run_at = sqlc.narg(next_run_at)::timestamptz,
    updated_at  = now()
WHERE s.id = sqlc.arg(id)
  AND s.human_id = sqlc.arg(human_id)
  AND (sqlc.narg(agent_id)::uuid IS NULL
       OR EXISTS (SELECT 1 FROM agents AS a WHERE a.id = sqlc.narg(agent_id)::uuid AND a.human_id = sqlc.arg(human_id)))
RETURNING *;

-- name: ScheduleDelete :execrows
DELETE FROM schedules WHERE id = sqlc.arg(id) AND human_id = sqlc.arg(human_id);

-- name: ScheduleDue :many
-- The tickers' read, across tenants like the reaper: the schedules whose tick is due, oldest first, with the
-- database's now for the Go side's computation. No lock: the fire statement's conditional mark decides.
SELECT id, cron, time_zone, misfire, next_run_at::timestamptz AS next_run_at, now()::timestamptz AS now
FROM schedules
WHERE next_run_at <= now() AND paused_at IS NULL
ORDER BY next_run_at
LIMIT sqlc.arg(max_rows);

-- name: ScheduleFire :many
-- Fires one tick of one schedule, first-to-mark-wins: the UPDATE moves next_run_at only if it still holds the
-- value this ticker read (a concurrent ticker's UPDATE waits on the row lock, then re-checks the condition against
-- the winner's new row and matches nothing), and the INSERT makes the tick's todo from the UPDATE's RETURNING, in
-- the same statement, so the mark and the todo commit together or not at all. The todo's id is drawn in the mark
-- (last_todo_id) and its dedupe key names the tick ('schedule:<id>:<unix seconds>'): a second fence, so a tick
-- can never be inserted twice. fire = false (a skipped misfire) only moves next_run_at. Returns the new todo.
WITH marked AS (
    UPDATE schedules AS s
    SET next_run_at  = sqlc.narg(next_run_at)::timestamptz,
        last_run_at  = CASE WHEN sqlc.arg(fire)::boolean THEN sqlc.arg(tick)::timestamptz ELSE s.last_run_at END,
        last_todo_id = CASE WHEN sqlc.arg(fire)::boolean
                            THEN nextval(pg_get_serial_sequence('todos', 'id')) ELSE s.last_todo_id END,
        updated_at   = now()
    WHERE s.id = sqlc.arg(id) AND s.next_run_at = sqlc.arg(expected)::timestamptz AND s.paused_at IS NULL
    RETURNING s.id, s.human_id, s.queue, s.agent_id, s.template, s.last_todo_id
)
INSERT INTO todos (id, human_id, queue, agent_id, kind, payload, priority, max_attempts, dedupe_key)
OVERRIDING SYSTEM VALUE
SELECT m.last_todo_id,
       m.human_id,
       m.queue,
       m.agent_id,
       coalesce(t.kind, ''),
       coalesce(t.payload, '{}'::jsonb),
       coalesce(t.priority, 2)::smallint,
       coalesce(nullif(t.max_attempts, 0), (
           SELECT greatest(1, (st.value ->> 'max_attempts')::integer)
           FROM settings AS st
           WHERE st.key = 'queue.defaults'
       ), sqlc.arg(default_max_attempts)::integer),
       'schedule:' || m.id::text || ':' || floor(extract(epoch FROM sqlc.arg(tick)::timestamptz))::bigint::text
-- The template's fields, by their proto JSON names; a new EnqueueRequest field is one more column here.
FROM marked AS m
CROSS JOIN LATERAL jsonb_to_record(m.template) AS t(kind text, payload jsonb, priority integer, max_attempts integer)
WHERE sqlc.arg(fire)::boolean
ON CONFLICT DO NOTHING
RETURNING *;
-- name: TodoDedupeWindowsReserve :many
-- Takes the WINDOW dedupe keys of one enqueue (distinct, in "C" order: the lock order, see the header) for
-- window_seconds from now, and returns the keys it took: new ones and expired ones. A concurrent enqueue of the
-- same key waits here for this transaction, then sees its window. A key that is not taken stays locked (ON
-- CONFLICT DO UPDATE locks the row even when its WHERE refuses), so the caller's next statements see its holder
-- as committed and stable. The holder's existence is not tested here: a subquery would read this statement's
-- snapshot, taken before a concurrent holder committed (TodoDedupeWindowsTakeOver tests it afterwards).
-- todo_id is set by TodoDedupeWindowsLink once the todos exist.
INSERT INTO todo_dedupe_windows AS w (human_id, queue, key, todo_id, expires_at)
SELECT sqlc.arg(human_id), sqlc.arg(queue), k.key, NULL, now() + make_interval(secs => k.seconds)
FROM (SELECT unnest(sqlc.arg(keys)::text[])                       AS key,
             unnest(sqlc.arg(window_seconds)::double precision[]) AS seconds) AS k
ORDER BY k.key COLLATE "C"
ON CONFLICT (human_id, queue, key) DO UPDATE
SET todo_id = NULL, expires_at = excluded.expires_at
WHERE w.expires_at <= now()
RETURNING w.key;

-- name: TodoDedupeWindowsTakeOver :many
-- Takes over windows whose todo retention deleted before they expired (the window ends with its todo), among
-- keys TodoDedupeWindowsReserve left locked to this transaction; returns the keys taken.
UPDATE todo_dedupe_windows AS w
SET todo_id = NULL, expires_at = now() + make_interval(secs => k.seconds)
FROM (SELECT unnest(sqlc.arg(keys)::text[])                       AS key,
             unnest(sqlc.arg(window_seconds)::double precision[]) AS seconds) AS k
WHERE w.human_id = sqlc.arg(human_id)
  AND w.queue = sqlc.arg(queue)
  AND w.key = k.key
  AND NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.id = w.todo_id AND t.human_id = w.human_id)
RETURNING w.key;

-- name: TodoDedupeWindowsLink :exec
-- Points the windows this transaction took (TodoDedupeWindowsReserve, rows it already locks) at their todos.
UPDATE todo_dedupe_windows AS w
SET todo_id = l.todo_id
FROM (SELECT unnest(sqlc.arg(keys)::text[]) AS key, unnest(sqlc.arg(todo_ids)::bigint[]) AS todo_id) AS l
WHERE w.human_id = sqlc.arg(human_id)
  AND w.queue = sqlc.arg(queue)
  AND w.key = l.key;

-- name: TodoGetByDedupeWindows :many
-- The todos that hold some WINDOW dedupe keys of a queue: what Enqueue returns for WINDOW duplicates.
SELECT t.*
FROM todos AS t
WHERE t.human_id = sqlc.arg(human_id)
  AND t.id IN (SELECT w.todo_id
               FROM todo_dedupe_windows AS w
               WHERE w.human_id = sqlc.arg(human_id)
                 AND w.queue = sqlc.arg(queue)
                 AND w.key = ANY (sqlc.arg(keys)::text[]));

-- name: TodoDedupeWindowsPrune :execrows
-- Deletes up to batch_size expired WINDOW reservations (queue retention; every node at once, SKIP LOCKED). An
-- expired row that stays is harmless: the next enqueue of its key takes it over.
DELETE FROM todo_dedupe_windows AS w
WHERE (w.human_id, w.queue, w.key) IN (
    SELECT e.human_id, e.queue, e.key
    FROM todo_dedupe_windows AS e
    WHERE e.expires_at <= now()
    ORDER BY e.expires_at
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
);
