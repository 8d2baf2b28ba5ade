-- The queue's SQL is this folder, one file per table (todos' in three: this one, todos_lease.sql and
-- todos_retention.sql); sqlc compiles it into ../dbsqlc. Conventions every statement of every file follows:
--
-- * Tenancy: every statement takes the caller's human_id and matches only that tenant's rows, so another
--   tenant's todo is indistinguishable from a missing one.
-- * Agents: caller_agent_id is the agent a credential acts as (NULL for a human's credential). An agent sees
--   and works only todos addressed to it or to no agent:
--     (caller_agent_id IS NULL OR agent_id IS NULL OR agent_id = caller_agent_id)
-- * Lease tokens: a random 63-bit lease_token drawn at each claim (gen_random_uuid is the server's strong random
--   source; TodoClaim draws once per statement and XORs each todo's id in), known only to the claimer. Every worker write matches (id, lease_token, a live lease),
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
-- An event must also be one the caller may read, by exactly GetEvent's rule (services/ingest's EventGet): a
-- credential acting as an agent reaches the events addressed to it, those it published and the tenant's shared
-- ones (agent_id NULL). Otherwise an agent could learn which of another agent's event ids exist and tie them to
-- its own work (a live todo keeps its event from retention; a published event's replay goes where its oldest todo
-- went), so "not yours" answers exactly as "missing". A todo may still be addressed to any agent of the tenant:
-- handing work to another agent is what agents do.
SELECT coalesce(min(u.ord), 0)::bigint AS first_bad
FROM (
    SELECT unnest(sqlc.arg(agent_ids)::text[])                                AS agent_id,
           unnest(sqlc.arg(event_ids)::bigint[])                              AS event_id,
           generate_series(1, cardinality(sqlc.arg(agent_ids)::text[]))::bigint AS ord
) AS u
WHERE (u.agent_id <> '' AND NOT EXISTS (
          SELECT 1 FROM agents AS a WHERE a.id = nullif(u.agent_id, '')::uuid AND a.human_id = sqlc.arg(human_id)))
   OR (u.event_id <> 0 AND NOT EXISTS (
          SELECT 1 FROM events AS e
          WHERE e.id = u.event_id AND e.human_id = sqlc.arg(human_id)
            AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR e.agent_id IS NULL
                 OR e.agent_id = sqlc.narg(caller_agent_id)::uuid OR e.published_by = sqlc.narg(caller_agent_id)::uuid)));

-- name: TodoInsertBatch :many
-- Enqueues a whole batch in one statement. Arrays are parallel, one element per todo; "none" is encoded as ''
-- (agent_id, dedupe_key, trace_parent, concurrency_key), 0 (event_id, max_attempts) or a time in the past
-- (run_at: "past means now"); dedupe_scope '' is RETENTION (stored as NULL), else 'live' or 'window' (whose
-- entries the caller has already reserved with TodoDedupeWindowsReserve, dropping the ones that lost).
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
               unnest(sqlc.arg(concurrency_keys)::text[])                         AS concurrency_key,
               unnest(sqlc.arg(remove_on_completes)::boolean[])                   AS remove_on_complete,
               generate_series(1, cardinality(sqlc.arg(kinds)::text[]))::bigint AS ord
    ) AS v
    ORDER BY v.ord
),
-- A limited queue (SetQueueLimits) counts running todos per key in queue_keys: the batch's new keys get their
-- counter row here, in key order (concurrent enqueues then wait on each other's new keys in one order). Only a
-- queue with a limit has rows; for any other queue (or a batch without keys) this inserts nothing. An existing
-- row is left alone (DO NOTHING takes no lock on it, so enqueues never wait for a claim holding it).
key_rows AS (
    INSERT INTO queue_keys (human_id, queue, key, max_running, rate_per_second, rate_burst)
    SELECT c.human_id, c.queue, k.key, m.max_running, m.rate_per_second, m.rate_burst
    FROM (SELECT DISTINCT u.concurrency_key AS key FROM u WHERE u.concurrency_key <> '') AS k
    JOIN queue_controls AS c ON c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text AND c.limited
    -- The key's own limits: the first of the queue's key_patterns it matches (none: NULLs, the defaults).
    LEFT JOIN LATERAL (
        SELECT (p.e ->> 'max_running')::integer AS max_running, (p.e ->> 'rate_per_second')::float8 AS rate_per_second,
               (p.e ->> 'rate_burst')::integer AS rate_burst
        FROM jsonb_array_elements(c.key_patterns) WITH ORDINALITY AS p (e, ord)
        WHERE k.key LIKE p.e ->> 'like'
        ORDER BY p.ord
        LIMIT 1
    ) AS m ON true
    ORDER BY k.key
    ON CONFLICT DO NOTHING
)
INSERT INTO todos (id, human_id, queue, agent_id, event_id, kind, payload, priority, max_attempts, run_at, dedupe_key,
                   trace_parent, dedupe_scope, concurrency_key, remove_on_complete)
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
       nullif(u.dedupe_scope, ''),
       nullif(u.concurrency_key, ''),
       u.remove_on_complete
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
-- A tenant's todos newest first, optionally filtered by queue, state, owner agent, kind and creation time; keyset
-- pagination on id (pass the last id seen as before_id) stays cheap at any depth, unlike OFFSET. Served by
-- idx_todos_list (or the primary key, backwards); kind and the creation times are filters on the rows that scan
-- reads, bounded by the LIMIT. A listing of one event's todos is TodoListByEvent.
SELECT *
FROM todos
WHERE human_id = sqlc.arg(human_id)
  AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue)::text)
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state)::text)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
  AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind)::text)
  AND (sqlc.narg(created_after)::timestamptz IS NULL OR created_at >= sqlc.narg(created_after)::timestamptz)
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at < sqlc.narg(created_before)::timestamptz)
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id)::bigint)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
ORDER BY id DESC
LIMIT sqlc.arg(page_size)::integer;

-- name: TodoListByEvent :many
-- TodoList for the todos of one event: its own statement, so that even a generic plan finds them through
-- idx_todos_event_id (partial on event_id IS NOT NULL, which event_id = $1 implies) rather than walking the
-- tenant's todos for an optional filter it cannot see is set. An event has few todos: the sort is cheap.
SELECT *
FROM todos
WHERE event_id = sqlc.arg(event_id)::bigint
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(queue)::text IS NULL OR queue = sqlc.narg(queue)::text)
  AND (sqlc.narg(state)::text IS NULL OR state = sqlc.narg(state)::text)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
  AND (sqlc.narg(kind)::text IS NULL OR kind = sqlc.narg(kind)::text)
  AND (sqlc.narg(created_after)::timestamptz IS NULL OR created_at >= sqlc.narg(created_after)::timestamptz)
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at < sqlc.narg(created_before)::timestamptz)
  AND (sqlc.narg(before_id)::bigint IS NULL OR id < sqlc.narg(before_id)::bigint)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
ORDER BY id DESC
LIMIT sqlc.arg(page_size)::integer;

-- name: TodoRetryNow :one
-- RetryTodo: a pending todo still waiting (run_at in the future: a retry's backoff, or scheduled) becomes due now.
-- pgx.ErrNoRows when the todo is missing, out of reach, not pending, or already due (TodoGet tells which). run_at
-- is in no index a lease write touches, but idx_todos_pending holds it: the new entry is what claims find.
UPDATE todos
SET run_at = now()
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND state = 'pending'
  AND run_at > now()
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING *;

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
