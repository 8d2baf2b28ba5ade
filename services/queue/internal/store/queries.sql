-- The queue's SQL. Conventions every statement follows:
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
      -- A paused queue hands out nothing (PauseQueue), and a limited one (SetQueueLimits) only through
      -- TodoClaimLimited. The subquery does not refer to p, so it runs once per statement (an InitPlan: one
      -- primary-key probe of queue_controls, which holds only controlled queues) as a one-time filter over the
      -- scan: such a queue's fast claim reads no todo at all.
      AND NOT EXISTS (SELECT 1 FROM queue_controls AS c
                      WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)
                        AND (c.paused OR c.limited))
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
    -- 63 random bits drawn once per statement (an InitPlan: the subquery refers to no row) XOR the todo's id,
    -- never 0. Drawing them per row cost ~1.7 µs a todo, an eighth of the claim; one draw is as unguessable to
    -- everyone but the claimer, and the claimer holds every token of its claim anyway (one statement, one caller).
    lease_token      = greatest(1, ((SELECT ('x' || left(md5(gen_random_uuid()::text), 16))::bit(64)::bigint) # t.id)
                                   & 9223372036854775807),
    lease_outcome    = NULL,
    attempted_at     = now(),
    -- progress is the current attempt's: a new attempt starts without one (in no index, still HOT).
    progress         = NULL,
    progress_at      = NULL
WHERE t.id = ANY (ARRAY(SELECT next.id FROM next))
RETURNING t.*;

-- name: TodoClaimLimited :many
-- TodoClaim for a queue with limits (SetQueueLimits): never leases a todo that would take a key past
-- key_max_running or the queue past max_running, however many claimers race on however many nodes, and serves
-- the keys round-robin. Every limit is a counter in a row this statement locks and bumps, so the count it decides
-- on cannot change under it (a count of running todos in the statement's snapshot could: another claim commits
-- after the snapshot was taken). Lock order, shared with every statement that ends a run: todos, then queue_keys
-- (key order), then the queue_controls row; a claim waits only for the queue row (taken first, in budget's
-- InitPlan, and only when max_running or a queue rate is set: that one counter serializes the queue's claims) and
-- skips every other row it finds locked, so it never waits while holding anything.
-- No stored value can make it fail: every rate is read clamped to [min_rate_per_second, 1000000] (a rate stored
-- before SetQueueLimits refused tiny ones, 1e-300, made the GCRA step n / rate overflow the interval and tat), every
-- burst and count to [1, 1000000], and token counts are clamped before they become integers (a tat far ahead,
-- left by a slow rate that was then raised, would overflow integer). With these bounds a tat is never more than
-- 1000000 · 86400 s (2,700 years) ahead of now, well inside timestamps and intervals.
-- * q: the queue's limits (no row = paused: budget is then empty and nothing is claimed).
-- * ql, budget: how many this claim may take: batch_size, cut to max_running - running and to the queue rate's
--   tokens (GCRA: floor((now - max(tat, now)) · rate) + burst) when those are set.
-- Each key's limits are its own (queue_keys.max_running/rate_*, from the key patterns) or the queue's defaults
-- (kl, the same expression in due_keys and walk).
-- * due_keys, walk: up to 32 keys with room and due work, least recently served first (served_at), locked SKIP
--   LOCKED: a key another claimer holds is served by that one. Each key gives at most its room and its share of the
--   budget, so a claim spreads over the keys instead of filling itself from the first.
-- * keyless: the queue's todos without a key (limited only by the overall budget), as one more "key".
-- * cut: the batch, round-robin over the keys (every key's first todo, then every key's second, …), cut to the
--   budget; rows locked beyond the cut are let go at commit.
-- The keyed and keyless lookups go through idx_todos_pending_key (concurrency_key = key, resp. IS NULL).
WITH q AS MATERIALIZED (
    SELECT c.max_running, c.rate_per_second, c.key_max_running,
           CASE WHEN c.key_rate_per_second IS NOT NULL
                THEN least(greatest(c.key_rate_per_second, sqlc.arg(min_rate_per_second)::float8), 1000000) END
               AS key_rate_per_second,
           least(greatest(c.key_rate_burst, 1), 1000000) AS key_rate_burst
    FROM queue_controls AS c
    WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue) AND NOT c.paused
),
ql AS MATERIALIZED (
    -- GCRA tokens available now: floor((now - max(tat, now)) · rate) + burst, never negative (§3c).
    SELECT least(coalesce(least(c.max_running, 1000000) - c.running, 1000000),
                 CASE WHEN r.rate IS NULL THEN 1000000
                      ELSE greatest(-1000000, floor(extract(epoch FROM now() - greatest(c.tat, now())) * r.rate + 1e-9))::integer
                           + least(greatest(c.rate_burst, 1), 1000000) END) AS room,
           r.rate
    FROM queue_controls AS c
    CROSS JOIN LATERAL (
        SELECT CASE WHEN c.rate_per_second IS NOT NULL
                    THEN least(greatest(c.rate_per_second, sqlc.arg(min_rate_per_second)::float8), 1000000) END AS rate
    ) AS r
    WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue) AND NOT c.paused
      AND (c.max_running IS NOT NULL OR c.rate_per_second IS NOT NULL)
    FOR NO KEY UPDATE OF c
),
budget AS MATERIALIZED (
    -- ql is the newest row version (a locking read waits and re-reads); q is the snapshot's. When q has a
    -- queue-wide limit but ql no row, the queue was paused meanwhile: 0.
    SELECT greatest(0, least(sqlc.arg(batch_size)::integer,
                             coalesce((SELECT ql.room FROM ql),
                                      CASE WHEN q.max_running IS NULL AND q.rate_per_second IS NULL
                                           THEN sqlc.arg(batch_size)::integer ELSE 0 END)))
               AS n
    FROM q
),
due_keys AS MATERIALIZED (
    -- The keys with room, a token and due work, least recently served first: walk's 32 and 8 more, for the keys
    -- other claims hold locked. The due-work probe sits in the select list of a subquery that OFFSET 0
    -- keeps apart, so PostgreSQL evaluates it after the sort, for each row as the LIMIT pulls it (it postpones
    -- expensive target expressions past a sort under a limit): ~32 probes a claim instead of one per key row of
    -- the queue (100 probes were 40% of a 200-todo claim over 100 keys). Nothing is locked here; walk re-checks
    -- room and token on the rows it locks.
    SELECT c.key
    FROM (
        SELECT k.key,
               -- a scalar subquery, not EXISTS, so it stays a per-key probe of idx_todos_pending_key (an EXISTS is
               -- pulled up into a semi-join, which a plan may run as a scan of the whole queue per key)
               (SELECT true FROM todos AS x
                WHERE x.state = 'pending' AND x.human_id = sqlc.arg(human_id) AND x.queue = sqlc.arg(queue)
                  AND x.concurrency_key = k.key AND x.run_at <= now()
                  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR x.agent_id IS NULL
                       OR x.agent_id = sqlc.narg(caller_agent_id)::uuid)
                LIMIT 1) AS due
        FROM queue_keys AS k
        CROSS JOIN LATERAL (
            SELECT least(coalesce(k.max_running, (SELECT q.key_max_running FROM q), 1000000), 1000000) AS max_running,
                   CASE WHEN coalesce(k.rate_per_second, (SELECT q.key_rate_per_second FROM q)) IS NOT NULL
                        THEN least(greatest(coalesce(k.rate_per_second, (SELECT q.key_rate_per_second FROM q)),
                                            sqlc.arg(min_rate_per_second)::float8), 1000000) END AS rate,
                   least(greatest(coalesce(k.rate_burst, (SELECT q.key_rate_burst FROM q)), 1), 1000000) AS burst
        ) AS kl
        WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)
          AND (SELECT b.n FROM budget AS b) > 0
          AND k.running < kl.max_running
          -- a token: tat ≤ now + (burst - 1) / rate
          AND (kl.rate IS NULL OR greatest(k.tat, now()) <= now() + make_interval(secs => (kl.burst - 1) / kl.rate))
        ORDER BY k.served_at, k.key
        OFFSET 0
    ) AS c
    WHERE c.due
    LIMIT least(sqlc.arg(batch_size)::integer, 32) + 8
),
walk AS MATERIALIZED (
    -- Each key's limits (kl): its own (resolved from the queue's key_patterns), else the queue's key defaults. Room
    -- and token are checked again on the row as locked (the newest version: a claim may have served it meanwhile).
    SELECT k.key, k.served_at, kl.rate,
           least(kl.max_running - k.running,
                 CASE WHEN kl.rate IS NULL THEN 1000000
                      ELSE greatest(-1000000, floor(extract(epoch FROM now() - greatest(k.tat, now())) * kl.rate + 1e-9))::integer
                           + kl.burst END) AS room
    FROM queue_keys AS k
    CROSS JOIN LATERAL (
        SELECT least(coalesce(k.max_running, (SELECT q.key_max_running FROM q), 1000000), 1000000) AS max_running,
               CASE WHEN coalesce(k.rate_per_second, (SELECT q.key_rate_per_second FROM q)) IS NOT NULL
                    THEN least(greatest(coalesce(k.rate_per_second, (SELECT q.key_rate_per_second FROM q)),
                                        sqlc.arg(min_rate_per_second)::float8), 1000000) END AS rate,
               least(greatest(coalesce(k.rate_burst, (SELECT q.key_rate_burst FROM q)), 1), 1000000) AS burst
    ) AS kl
    WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)
      AND k.key = ANY (ARRAY(SELECT d.key FROM due_keys AS d))
      AND k.running < kl.max_running
      AND (kl.rate IS NULL OR greatest(k.tat, now()) <= now() + make_interval(secs => (kl.burst - 1) / kl.rate))
    ORDER BY k.served_at, k.key
    -- At most 32 keys per claim: concurrent claims then hold different keys (a claim that locked every key would
    -- leave the others nothing and make every completion wait for it); the rest are served by the next claims.
    LIMIT least(sqlc.arg(batch_size)::integer, 32)
    FOR UPDATE OF k SKIP LOCKED
),
ranked AS MATERIALIZED (
    SELECT w.key, w.room, row_number() OVER (ORDER BY w.served_at, w.key) AS pos, count(*) OVER () AS nkeys
    FROM walk AS w
),
keyed AS MATERIALIZED (
    SELECT r.key, r.pos, p.id, p.priority, p.run_at
    FROM ranked AS r
    CROSS JOIN LATERAL (
        SELECT x.id, x.priority, x.run_at
        FROM todos AS x
        WHERE x.state = 'pending' AND x.human_id = sqlc.arg(human_id) AND x.queue = sqlc.arg(queue)
          AND x.concurrency_key = r.key AND x.run_at <= now()
          AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR x.agent_id IS NULL
               OR x.agent_id = sqlc.narg(caller_agent_id)::uuid)
        ORDER BY x.concurrency_key, x.priority, x.run_at, x.id
        LIMIT least(r.room, ((SELECT b.n FROM budget AS b) + r.nkeys - 1) / r.nkeys)
        FOR UPDATE OF x SKIP LOCKED
    ) AS p
),
keyless AS MATERIALIZED (
    SELECT x.id, x.priority, x.run_at
    FROM todos AS x
    WHERE x.state = 'pending' AND x.human_id = sqlc.arg(human_id) AND x.queue = sqlc.arg(queue)
      AND x.concurrency_key IS NULL AND x.run_at <= now()
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR x.agent_id IS NULL
           OR x.agent_id = sqlc.narg(caller_agent_id)::uuid)
      AND (SELECT b.n FROM budget AS b) > 0
    -- concurrency_key leads the ORDER BY (it is NULL in every row) so that the order is idx_todos_pending_key's and
    -- the scan starts at the keyless entries; ordered as idx_todos_pending it would walk every keyed one first.
    ORDER BY x.concurrency_key, x.priority, x.run_at, x.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE OF x SKIP LOCKED
),
cut AS MATERIALIZED (
    SELECT a.id, a.key
    FROM (
        SELECT k.id, k.key, k.pos, row_number() OVER (PARTITION BY k.pos ORDER BY k.priority, k.run_at, k.id) AS rn
        FROM keyed AS k
        UNION ALL
        SELECT l.id, NULL, 0, row_number() OVER (ORDER BY l.priority, l.run_at, l.id)
        FROM keyless AS l
    ) AS a
    ORDER BY a.rn, a.pos
    LIMIT (SELECT b.n FROM budget AS b)
),
cut_keys AS MATERIALIZED (
    SELECT cut.key, count(*)::integer AS n, (SELECT w.rate FROM walk AS w WHERE w.key = cut.key) AS rate
    FROM cut WHERE cut.key IS NOT NULL GROUP BY cut.key
),
key_bump AS (
    -- By primary key (= ANY), not joined to cut_keys: the generic plan must not hash the queue's keys. The rate is
    -- the one walk read (clamped), so the step n / rate stays small.
    UPDATE queue_keys AS k
    SET running   = k.running + (SELECT c.n FROM cut_keys AS c WHERE c.key = k.key),
        served_at = now(),
        tat       = coalesce(greatest(k.tat, now()) + (SELECT make_interval(secs => c.n / c.rate) FROM cut_keys AS c
                                                        WHERE c.key = k.key), k.tat)
    WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)
      AND k.key = ANY (ARRAY(SELECT c.key FROM cut_keys AS c))
),
queue_bump AS (
    UPDATE queue_controls AS c
    SET running = CASE WHEN c.max_running IS NULL THEN c.running ELSE c.running + (SELECT count(*) FROM cut)::integer END,
        tat     = coalesce(greatest(c.tat, now()) + (SELECT make_interval(secs => (SELECT count(*) FROM cut) / ql.rate) FROM ql),
                           c.tat)
    WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue) AND EXISTS (SELECT 1 FROM ql)
      AND EXISTS (SELECT 1 FROM cut)
)
UPDATE todos AS t
SET state            = 'running',
    attempt          = t.attempt + 1,
    lease_owner      = sqlc.arg(worker)::text,
    lease_expires_at = now() + make_interval(secs => least(3600, greatest(1, coalesce(
                           nullif(sqlc.arg(lease_seconds)::integer, 0),
                           (SELECT (s.value ->> 'lease_seconds')::integer FROM settings AS s WHERE s.key = 'queue.defaults'),
                           sqlc.arg(default_lease_seconds)::integer)))),
    -- One random draw per statement XOR the todo's id, as TodoClaim (its comment has why).
    lease_token      = greatest(1, ((SELECT ('x' || left(md5(gen_random_uuid()::text), 16))::bit(64)::bigint) # t.id)
                                   & 9223372036854775807),
    lease_outcome    = NULL,
    attempted_at     = now(),
    progress         = NULL,
    progress_at      = NULL
WHERE t.id = ANY (ARRAY(SELECT cut.id FROM cut))
RETURNING t.*;

-- name: QueueLimitedGet :one
-- Whether a queue's claims must go through TodoClaimLimited (it has a limit or a rate): the hint
-- Store.Claim keeps per queue is refreshed with this after an empty claim.
SELECT EXISTS (SELECT 1 FROM queue_controls AS c
               WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
                 AND c.limited) AS limited;

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
-- '' means none. A completion ends the run of lease expiries. Items come in ascending id order (the caller sorts).
-- RETURNING carries what an outcome and a lifecycle event and the claim-to-completion metric need, not the row:
-- scanning whole rows back was most of a node's cost of CompleteBatch (TodoGetMany fetches them for the single
-- Complete, whose answer is the todo). A todo enqueued with remove_on_complete is deleted instead (removed): a
-- DELETE only marks the row version dead, where the UPDATE writes a new one into every index of todos. Rows are
-- locked kept first, then removed, each in id order; remove_on_complete never changes, so every batch locks the
-- todos it shares with another in the same order.
WITH u AS MATERIALIZED (
    SELECT unnest(sqlc.arg(ids)::bigint[])     AS id,
           unnest(sqlc.arg(tokens)::bigint[])  AS token,
           unnest(sqlc.arg(results)::text[])   AS result
),
kept AS (
    UPDATE todos AS t
    SET state            = 'completed',
        lease_owner      = NULL,
        lease_expires_at = NULL,
        lease_expiries   = 0,
        lease_outcome    = 'completed',
        result           = nullif(u.result, '')::jsonb,
        finished_at      = now()
    FROM u
    WHERE t.id = u.id
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = u.token
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
           OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
      AND NOT t.remove_on_complete
    RETURNING t.id, t.lease_token::bigint AS lease_token, t.human_id, t.queue, t.agent_id, t.state,
              coalesce(extract(epoch FROM t.finished_at - t.attempted_at), 0)::float8 AS run_seconds,
              t.concurrency_key, false AS removed, t.finished_at::timestamptz AS finished_at
),
removed AS (
    DELETE FROM todos AS t
    USING u
    WHERE t.id = u.id
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = u.token
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
           OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
      AND t.remove_on_complete
    RETURNING t.id, t.lease_token::bigint AS lease_token, t.human_id, t.queue, t.agent_id, 'completed'::text AS state,
              coalesce(extract(epoch FROM now() - t.attempted_at), 0)::float8 AS run_seconds,
              t.concurrency_key, true AS removed, now() AS finished_at
),
done AS (
    SELECT k.id, k.lease_token, k.human_id, k.queue, k.agent_id, k.state, k.run_seconds, k.concurrency_key, k.removed,
           k.finished_at
    FROM kept AS k
    UNION ALL
    SELECT r.id, r.lease_token, r.human_id, r.queue, r.agent_id, r.state, r.run_seconds, r.concurrency_key, r.removed,
           r.finished_at
    FROM removed AS r
),
ended AS MATERIALIZED (
    -- Runs ended by this statement, per key: the counters of limited queues go down in the same statement
    -- (TodoClaimLimited's lock order: todos, then queue_keys in key order, then queue_controls). For a queue
    -- without limits both lookups below find nothing: no lock, no write.
    SELECT d.human_id, d.queue, d.concurrency_key AS key, count(*)::integer AS n
    FROM done AS d
    GROUP BY d.human_id, d.queue, d.concurrency_key
),
key_locks AS MATERIALIZED (
    SELECT k.human_id, k.queue, k.key
    FROM queue_keys AS k
    JOIN ended AS e ON k.human_id = e.human_id AND k.queue = e.queue AND k.key = e.key
    ORDER BY k.human_id, k.queue, k.key
    FOR UPDATE OF k
),
key_dec AS (
    -- The one-time filter reads key_locks to its end, so every key is locked (in order) before any is written.
    UPDATE queue_keys AS k
    SET running = greatest(0, k.running - e.n)
    FROM ended AS e
    WHERE k.human_id = e.human_id AND k.queue = e.queue AND k.key = e.key
      AND (SELECT count(*) FROM key_locks) >= 0
    RETURNING k.key
),
queue_dec AS (
    -- After the keys (the one-time filter waits for key_dec), so the queue row is the last lock taken.
    UPDATE queue_controls AS c
    SET running = greatest(0, c.running - e.n)
    FROM (SELECT ended.human_id, ended.queue, sum(ended.n)::integer AS n FROM ended GROUP BY 1, 2) AS e
    WHERE c.human_id = e.human_id AND c.queue = e.queue AND c.max_running IS NOT NULL
      AND (SELECT count(*) FROM key_dec) >= 0
),
limited AS MATERIALIZED (
    SELECT c.human_id, c.queue::text AS queue
    FROM (SELECT DISTINCT ended.human_id, ended.queue FROM ended) AS e
    JOIN queue_controls AS c ON c.human_id = e.human_id AND c.queue = e.queue
    WHERE c.max_running IS NOT NULL OR c.key_max_running IS NOT NULL
)
SELECT d.id, d.lease_token, d.human_id, d.queue, d.agent_id, d.state, d.run_seconds, d.removed, d.finished_at,
       -- freed: the run held a slot of a limited queue, so a claim waiting on it may now get work.
       EXISTS (SELECT 1 FROM limited AS l WHERE l.human_id = d.human_id AND l.queue = d.queue) AS freed
FROM done AS d;

-- name: TodoFail :one
-- Records a failed attempt (appended to errors, copied to last_error) and either schedules a retry or
-- dead-letters: at the attempt cap (decided here, race-free, from the row itself) or when dead_letter is set.
-- Token-fenced; RETURNING state says which happened. The retry waits retry_after_seconds when given, else the
-- backoff of the attempt that failed, computed here from the row's attempt:
--     min(cap, base · 2^(attempt-1)) · (0.5 + jitter/2),  jitter ∈ [0, 1) drawn by the caller
-- (base 1 s and cap 1 h by default: attempt 1 waits 0.5–1 s, attempt 5 8–16 s, from attempt 13 on 30–60 min).
-- The jitter spreads retries of todos that failed together, so a shared outage does not come back as a herd.
WITH target AS MATERIALIZED (
    -- The todo, locked first: then its key's and its queue's running counters go down (limited queues only),
    -- in TodoClaimLimited's lock order (todo, key, queue row); for a queue without limits nothing is found.
    SELECT t.id AS todo_id, t.human_id, t.queue, t.concurrency_key, t.state
    FROM todos AS t
    WHERE t.id = sqlc.arg(id)
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = sqlc.arg(token)::bigint
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
    FOR NO KEY UPDATE
),
key_dec AS (
    UPDATE queue_keys AS k
    SET running = greatest(0, k.running - 1)
    FROM target AS g
    WHERE k.human_id = g.human_id AND k.queue = g.queue AND k.key = g.concurrency_key
    RETURNING k.key
),
queue_dec AS (
    UPDATE queue_controls AS c
    SET running = greatest(0, c.running - 1)
    FROM target AS g
    WHERE c.human_id = g.human_id AND c.queue = g.queue AND c.max_running IS NOT NULL
      AND (SELECT count(*) FROM key_dec) >= 0
)
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
WHERE todos.id = sqlc.arg(id)
  AND todos.human_id = sqlc.arg(human_id)
  AND todos.lease_token = sqlc.arg(token)::bigint
  AND todos.lease_expires_at IS NOT NULL AND todos.lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR todos.agent_id IS NULL OR todos.agent_id = sqlc.narg(caller_agent_id)::uuid)
  AND todos.id IN (SELECT target.todo_id FROM target)
RETURNING *;

-- name: TodoRelease :one
-- Gives a leased todo back without penalty; token-fenced. It keeps its place (run_at) unless delay_seconds > 0.
-- attempt counts claims and never goes down, so "no penalty" raises max_attempts by one instead.
WITH target AS MATERIALIZED (
    -- The todo, locked first: then its key's and its queue's running counters go down (limited queues only),
    -- in TodoClaimLimited's lock order (todo, key, queue row); for a queue without limits nothing is found.
    SELECT t.id AS todo_id, t.human_id, t.queue, t.concurrency_key, t.state
    FROM todos AS t
    WHERE t.id = sqlc.arg(id)
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = sqlc.arg(token)::bigint
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see the header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
    FOR NO KEY UPDATE
),
key_dec AS (
    UPDATE queue_keys AS k
    SET running = greatest(0, k.running - 1)
    FROM target AS g
    WHERE k.human_id = g.human_id AND k.queue = g.queue AND k.key = g.concurrency_key
    RETURNING k.key
),
queue_dec AS (
    UPDATE queue_controls AS c
    SET running = greatest(0, c.running - 1)
    FROM target AS g
    WHERE c.human_id = g.human_id AND c.queue = g.queue AND c.max_running IS NOT NULL
      AND (SELECT count(*) FROM key_dec) >= 0
)
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
WHERE todos.id = sqlc.arg(id)
  AND todos.human_id = sqlc.arg(human_id)
  AND todos.lease_token = sqlc.arg(token)::bigint
  AND todos.lease_expires_at IS NOT NULL AND todos.lease_owner IS NOT NULL -- a live lease (see the header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR todos.agent_id IS NULL OR todos.agent_id = sqlc.narg(caller_agent_id)::uuid)
  AND todos.id IN (SELECT target.todo_id FROM target)
RETURNING *;

-- name: TodoCancel :one
-- Cancels a pending or running todo; a worker holding it then finds its lease gone on its next call.
-- pgx.ErrNoRows when the todo does not exist or has already finished (TodoGet tells which).
WITH target AS MATERIALIZED (
    -- The todo, locked first: then its key's and its queue's running counters go down (limited queues only),
    -- in TodoClaimLimited's lock order (todo, key, queue row); for a queue without limits nothing is found.
    SELECT t.id AS todo_id, t.human_id, t.queue, t.concurrency_key, t.state
    FROM todos AS t
    WHERE t.id = sqlc.arg(id)
      AND t.human_id = sqlc.arg(human_id)
      AND t.state IN ('pending', 'running')
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
    FOR NO KEY UPDATE
),
key_dec AS (
    UPDATE queue_keys AS k
    SET running = greatest(0, k.running - 1)
    FROM target AS g
    WHERE k.human_id = g.human_id AND k.queue = g.queue AND k.key = g.concurrency_key
      AND g.state = 'running'
    RETURNING k.key
),
queue_dec AS (
    UPDATE queue_controls AS c
    SET running = greatest(0, c.running - 1)
    FROM target AS g
    WHERE c.human_id = g.human_id AND c.queue = g.queue AND c.max_running IS NOT NULL
      AND g.state = 'running'
      AND (SELECT count(*) FROM key_dec) >= 0
)
UPDATE todos
SET state            = 'cancelled',
    lease_owner      = NULL,
    lease_expires_at = NULL,
    lease_outcome    = CASE WHEN state = 'running' THEN 'cancelled' ELSE lease_outcome END,
    last_error       = nullif(sqlc.arg(reason)::text, ''),
    finished_at      = now()
WHERE todos.id = sqlc.arg(id)
  AND todos.human_id = sqlc.arg(human_id)
  AND todos.state IN ('pending', 'running')
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR todos.agent_id IS NULL OR todos.agent_id = sqlc.narg(caller_agent_id)::uuid)
  AND todos.id IN (SELECT target.todo_id FROM target)
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
),
done AS (
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
    RETURNING t.id, t.human_id, t.queue, t.agent_id, t.state, t.concurrency_key
),
ended AS MATERIALIZED (
    -- Runs ended by this statement, per key: the counters of limited queues go down in the same statement
    -- (TodoClaimLimited's lock order: todos, then queue_keys in key order, then queue_controls). For a queue
    -- without limits both lookups below find nothing: no lock, no write.
    SELECT d.human_id, d.queue, d.concurrency_key AS key, count(*)::integer AS n
    FROM done AS d
    GROUP BY d.human_id, d.queue, d.concurrency_key
),
key_locks AS MATERIALIZED (
    SELECT k.human_id, k.queue, k.key
    FROM queue_keys AS k
    JOIN ended AS e ON k.human_id = e.human_id AND k.queue = e.queue AND k.key = e.key
    ORDER BY k.human_id, k.queue, k.key
    FOR UPDATE OF k
),
key_dec AS (
    -- The one-time filter reads key_locks to its end, so every key is locked (in order) before any is written.
    UPDATE queue_keys AS k
    SET running = greatest(0, k.running - e.n)
    FROM ended AS e
    WHERE k.human_id = e.human_id AND k.queue = e.queue AND k.key = e.key
      AND (SELECT count(*) FROM key_locks) >= 0
    RETURNING k.key
),
queue_dec AS (
    -- After the keys (the one-time filter waits for key_dec), so the queue row is the last lock taken.
    UPDATE queue_controls AS c
    SET running = greatest(0, c.running - e.n)
    FROM (SELECT ended.human_id, ended.queue, sum(ended.n)::integer AS n FROM ended GROUP BY 1, 2) AS e
    WHERE c.human_id = e.human_id AND c.queue = e.queue AND c.max_running IS NOT NULL
      AND (SELECT count(*) FROM key_dec) >= 0
)
SELECT d.id, d.human_id, d.queue, d.agent_id, d.state
FROM done AS d;

-- Todo retention (pkg/settings.Pruner: age, then each tenant's row cap, then the table's safety net) over finished
-- (completed, dead, cancelled) todos only, in (finished_at, id) order; live work is never a candidate. Their plans
-- must not depend on the values (pooled sessions settle on generic plans; store/retention_plans_test.go pins them):
--  - rows to delete are locked in an ARRAY sublink and deleted by primary key, so the DELETE never joins todos
--    against its candidates by hashing (a generic plan's guess of LIMIT $n is a tenth of the table);
--  - a tenant is named as human_id = ANY (ARRAY[$1]) and its todos ordered by (human_id, finished_at, id): with
--    human_id = $1 the planner drops human_id from the order and walks idx_todos_finished_at over every other
--    tenant's finished todos instead of idx_todos_finished_tenant;
--  - a cut (finished_at, id) is two conditions, not a row comparison, which PostgreSQL 15 applies to every index
--    entry of the tenant instead of stopping at it.

-- name: TodoPruneByAge :many
-- Deletes up to batch_size finished todos older than max_age_seconds, oldest first (idx_todos_finished_at), and
-- counts them per tenant. SKIP LOCKED lets every node prune at once.
WITH gone AS (
    DELETE FROM todos
    WHERE id = ANY (ARRAY(
        SELECT f.id
        FROM todos AS f
        WHERE f.finished_at IS NOT NULL
          AND f.finished_at < now() - make_interval(secs => sqlc.arg(max_age_seconds)::double precision)
        ORDER BY f.finished_at
        LIMIT sqlc.arg(batch_size)::integer
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING human_id
)
SELECT g.human_id, count(*)::bigint AS deleted
FROM gone AS g
GROUP BY g.human_id;

-- name: TodoFinishedNewest :one
-- When the most recently finished todo finished (idx_todos_finished_at); none: the year 1, Go's zero time.
SELECT coalesce(max(f.finished_at), '0001-01-01 00:00:00+00')::timestamptz AS newest
FROM todos AS f
WHERE f.finished_at IS NOT NULL;

-- name: TodoRetentionWritten :many
-- Per tenant, its todos that finished after after_at: up to mid_at and after it (idx_todos_finished_at). Reads only
-- these rows, so a pass costs what finished since the last, not the size of the table.
SELECT f.human_id,
       count(*) FILTER (WHERE f.finished_at <= sqlc.arg(mid_at)::timestamptz)::bigint AS before_mid,
       count(*) FILTER (WHERE f.finished_at > sqlc.arg(mid_at)::timestamptz)::bigint  AS after_mid,
       max(f.finished_at)::timestamptz                                                AS newest
FROM todos AS f
WHERE f.finished_at IS NOT NULL
  AND f.finished_at > sqlc.arg(after_at)::timestamptz
GROUP BY f.human_id;

-- name: TodoRetentionTenants :many
-- Every tenant with finished todos: a loose index scan of idx_todos_finished_tenant, one probe per tenant.
WITH RECURSIVE t AS (
    (SELECT f.human_id FROM todos AS f WHERE f.finished_at IS NOT NULL ORDER BY f.human_id LIMIT 1)
    UNION ALL
    SELECT (SELECT f.human_id FROM todos AS f
            WHERE f.finished_at IS NOT NULL AND f.human_id > t.human_id
            ORDER BY f.human_id LIMIT 1)
    FROM t
    WHERE t.human_id IS NOT NULL
)
SELECT t.human_id::uuid AS human_id
FROM t
WHERE t.human_id IS NOT NULL;

-- name: TodoRetentionCountNewest :one
-- How many of the tenant's newest keep+1 finished todos there are, at most keep+1 (idx_todos_finished_tenant,
-- backward, index only). TodoRetentionCutoff follows only when keep+1.
SELECT count(*)::bigint AS found
FROM (
    SELECT 1
    FROM todos AS f
    WHERE f.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND f.finished_at IS NOT NULL
    ORDER BY f.human_id DESC, f.finished_at DESC, f.id DESC
    LIMIT sqlc.arg(keep)::bigint + 1
) AS w;

-- name: TodoRetentionCutoff :one
-- The tenant's newest finished todo beyond its newest keep (idx_todos_finished_tenant, backward, index only).
SELECT f.finished_at::timestamptz AS finished_at, f.id
FROM todos AS f
WHERE f.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
  AND f.finished_at IS NOT NULL
ORDER BY f.human_id DESC, f.finished_at DESC, f.id DESC
OFFSET sqlc.arg(keep)::bigint
LIMIT 1;

-- name: TodoRetentionTrim :execrows
-- Deletes up to batch_size of the tenant's finished todos at or before (cut_at, cut_id), oldest first
-- (idx_todos_finished_tenant), skipping rows another node holds; a todo a redrive took back to live work meanwhile
-- fails the recheck under the lock and stays.
DELETE FROM todos
WHERE id = ANY (ARRAY(
    SELECT f.id
    FROM todos AS f
    WHERE f.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND f.finished_at IS NOT NULL
      AND f.finished_at <= sqlc.arg(cut_at)::timestamptz
      AND (f.finished_at < sqlc.arg(cut_at)::timestamptz OR f.id <= sqlc.arg(cut_id)::bigint)
    ORDER BY f.human_id, f.finished_at, f.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
));

-- name: TodoRetentionCount :one
-- How many of the tenant's finished todos are at or before (cut_at, cut_id), at most max_rows
-- (idx_todos_finished_tenant, index only). The order and the LIMIT (the caller's is never reached) keep a generic
-- plan on the tenant's index: without them it filters a range of idx_todos_finished_at instead, every tenant's
-- finished todos.
SELECT count(*)::bigint AS held
FROM (
    SELECT 1
    FROM todos AS f
    WHERE f.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND f.finished_at IS NOT NULL
      AND f.finished_at <= sqlc.arg(cut_at)::timestamptz
      AND (f.finished_at < sqlc.arg(cut_at)::timestamptz OR f.id <= sqlc.arg(cut_id)::bigint)
    ORDER BY f.human_id, f.finished_at, f.id
    LIMIT sqlc.arg(max_rows)::bigint
) AS w;

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
SELECT c.paused, c.paused_at, c.updated_at, c.max_running, c.key_max_running, c.running, c.limits_at,
       c.rate_per_second, c.rate_burst, c.key_rate_per_second, c.key_rate_burst, c.key_patterns
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
       c.max_running, c.key_max_running, coalesce(c.running, 0)::integer AS limit_running, c.limits_at,
       c.rate_per_second, coalesce(c.rate_burst, 1)::integer AS rate_burst, c.key_rate_per_second,
       coalesce(c.key_rate_burst, 1)::integer AS key_rate_burst, coalesce(c.key_patterns, '[]')::jsonb AS key_patterns,
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

-- name: ScheduleLockTenant :exec
-- Serializes a tenant's schedule creations (a transaction-level advisory lock), so that the count below and the
-- insert after it see every earlier creation: the cap on schedules per tenant holds under concurrent calls.
SELECT pg_advisory_xact_lock(hashtextextended('schedules:' || sqlc.arg(human_id)::uuid::text, 0));

-- name: ScheduleCount :one
SELECT count(*) FROM schedules WHERE human_id = sqlc.arg(human_id);

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
),
-- The template's fields, by their proto JSON names; a new EnqueueRequest field is one more column here.
f AS (
    SELECT m.id, m.human_id, m.queue, m.agent_id, m.last_todo_id,
           m.template ->> 'kind'                        AS kind,
           m.template -> 'payload'                      AS payload,
           (m.template ->> 'priority')::integer         AS priority,
           (m.template ->> 'max_attempts')::integer     AS max_attempts,
           coalesce(m.template ->> 'concurrency_key', '') AS concurrency_key,
           coalesce((m.template ->> 'remove_on_complete')::boolean, false) AS remove_on_complete
    FROM marked AS m
    WHERE sqlc.arg(fire)::boolean
),
-- A limited queue counts running todos per key: the todo's key gets its counter row with it, with its limits
-- from the queue's key_patterns, as TodoInsertBatch's key_rows does (else it waits for the repair pass).
key_rows AS (
    INSERT INTO queue_keys (human_id, queue, key, max_running, rate_per_second, rate_burst)
    SELECT c.human_id, c.queue, f.concurrency_key, m.max_running, m.rate_per_second, m.rate_burst
    FROM f
    JOIN queue_controls AS c ON c.human_id = f.human_id AND c.queue = f.queue AND c.limited
    LEFT JOIN LATERAL (
        SELECT (p.e ->> 'max_running')::integer AS max_running, (p.e ->> 'rate_per_second')::float8 AS rate_per_second,
               (p.e ->> 'rate_burst')::integer AS rate_burst
        FROM jsonb_array_elements(c.key_patterns) WITH ORDINALITY AS p (e, ord)
        WHERE f.concurrency_key LIKE p.e ->> 'like'
        ORDER BY p.ord
        LIMIT 1
    ) AS m ON true
    WHERE f.concurrency_key <> ''
    ON CONFLICT DO NOTHING
)
INSERT INTO todos (id, human_id, queue, agent_id, kind, payload, priority, max_attempts, dedupe_key, concurrency_key,
                   remove_on_complete)
OVERRIDING SYSTEM VALUE
SELECT f.last_todo_id,
       f.human_id,
       f.queue,
       f.agent_id,
       coalesce(f.kind, ''),
       coalesce(f.payload, '{}'::jsonb),
       coalesce(f.priority, 2)::smallint,
       coalesce(nullif(f.max_attempts, 0), (
           SELECT greatest(1, (st.value ->> 'max_attempts')::integer)
           FROM settings AS st
           WHERE st.key = 'queue.defaults'
       ), sqlc.arg(default_max_attempts)::integer),
       'schedule:' || f.id::text || ':' || floor(extract(epoch FROM sqlc.arg(tick)::timestamptz))::bigint::text,
       nullif(f.concurrency_key, ''),
       f.remove_on_complete
FROM f
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

-- name: QueueSetLimits :one
-- SetQueueLimits: sets (replaces) a queue's limits, creating its control row. NULL = no limit. The counters are
-- made right by the repair that follows (QueueKeysLock … QueueRecount) in its own transaction: this one commits
-- first, so that from then on every enqueue creates key rows and every claim goes through TodoClaimLimited.
INSERT INTO queue_controls AS q (human_id, queue, max_running, key_max_running, rate_per_second, rate_burst,
                                 key_rate_per_second, key_rate_burst, key_patterns, limits_at)
VALUES (sqlc.arg(human_id), sqlc.arg(queue)::text, sqlc.narg(max_running), sqlc.narg(key_max_running),
        sqlc.narg(rate_per_second), sqlc.arg(rate_burst), sqlc.narg(key_rate_per_second), sqlc.arg(key_rate_burst),
        sqlc.arg(key_patterns)::jsonb, now())
ON CONFLICT (human_id, queue) DO UPDATE
    SET max_running = excluded.max_running, key_max_running = excluded.key_max_running,
        rate_per_second = excluded.rate_per_second, rate_burst = excluded.rate_burst,
        key_rate_per_second = excluded.key_rate_per_second, key_rate_burst = excluded.key_rate_burst,
        key_patterns = excluded.key_patterns, limits_at = now()
RETURNING q.paused;

-- name: QueueRepairTryLock :one
-- The repair of one queue's counters runs on one node at a time (a transaction-level advisory lock, tried, never
-- waited for: another node is already doing it). It is taken before any row lock, so it adds no lock-order edge.
SELECT pg_try_advisory_xact_lock(hashtextextended('queue_keys:' || sqlc.arg(human_id)::uuid::text || ':'
                                                  || sqlc.arg(queue)::text, 0)) AS locked;

-- name: QueueKeysLock :exec
-- Repair, step 1: locks every key row of the queue in key order (the shared lock order: keys before the queue
-- row), so no claim and no completion of these keys can move a counter until the recount has committed.
SELECT k.key
FROM queue_keys AS k
WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text
ORDER BY k.key
FOR UPDATE;

-- name: QueueRowLock :exec
-- Repair, step 1b: locks the queue row, after the key rows (the shared lock order), in its own statement: the
-- recount's snapshot must be taken after every lock a counter write needs was granted. Taken inside the recount
-- instead, the row lock would wait for a keyless completion (which locks only its todo and this row) that then
-- commits, and the recount would write the count of a snapshot that still saw that todo running: a slot leaked
-- for good. Likewise a claim holding the row (TodoClaimLimited takes it first) commits before the snapshot.
SELECT c.queue
FROM queue_controls AS c
WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
FOR NO KEY UPDATE;

-- name: QueueKeysInsertMissing :exec
-- Repair, step 2: a counter row for every key of a live todo of a limited queue that has none (todos enqueued
-- before the limits were set, or by an enqueue whose snapshot predated them). For an unlimited queue: none.
-- The pending todos' keys come from a loose index scan of idx_todos_pending_key (one probe per key, not one row
-- per todo: the repair runs while claims wait for the key rows it holds); the running todos are few (bounded by
-- the limits).
WITH RECURSIVE pending_keys (key) AS (
    (SELECT t.concurrency_key
     FROM todos AS t
     WHERE t.state = 'pending' AND t.human_id = sqlc.arg(human_id) AND t.queue = sqlc.arg(queue)::text
       AND t.concurrency_key IS NOT NULL
     ORDER BY t.concurrency_key
     LIMIT 1)
    UNION ALL
    SELECT (SELECT t.concurrency_key
            FROM todos AS t
            WHERE t.state = 'pending' AND t.human_id = sqlc.arg(human_id) AND t.queue = sqlc.arg(queue)::text
              AND t.concurrency_key > p.key
            ORDER BY t.concurrency_key
            LIMIT 1)
    FROM pending_keys AS p
    WHERE p.key IS NOT NULL
)
INSERT INTO queue_keys (human_id, queue, key)
SELECT sqlc.arg(human_id), sqlc.arg(queue)::text, k.key
FROM (SELECT p.key FROM pending_keys AS p WHERE p.key IS NOT NULL
      UNION
      SELECT r.concurrency_key FROM todos AS r
      WHERE r.state = 'running' AND r.human_id = sqlc.arg(human_id) AND r.queue = sqlc.arg(queue)::text
        AND r.concurrency_key IS NOT NULL) AS k
WHERE EXISTS (SELECT 1 FROM queue_controls AS c
              WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text AND c.limited)
ORDER BY k.key
ON CONFLICT DO NOTHING;

-- name: QueueKeysResolve :exec
-- Repair, step 2b: every key row's own limits from the first of the queue's key_patterns it matches (none: NULL,
-- the queue's defaults), written only where they changed (the rows are locked by step 1).
UPDATE queue_keys AS k
SET max_running = r.max_running, rate_per_second = r.rate_per_second, rate_burst = r.rate_burst
FROM (
    SELECT k2.key, m.max_running, m.rate_per_second, m.rate_burst
    FROM queue_keys AS k2
    JOIN queue_controls AS c ON c.human_id = k2.human_id AND c.queue = k2.queue
    LEFT JOIN LATERAL (
        SELECT (p.e ->> 'max_running')::integer AS max_running, (p.e ->> 'rate_per_second')::float8 AS rate_per_second,
               (p.e ->> 'rate_burst')::integer AS rate_burst
        FROM jsonb_array_elements(c.key_patterns) WITH ORDINALITY AS p (e, ord)
        WHERE k2.key LIKE p.e ->> 'like'
        ORDER BY p.ord
        LIMIT 1
    ) AS m ON true
    WHERE k2.human_id = sqlc.arg(human_id) AND k2.queue = sqlc.arg(queue)::text
) AS r
WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text AND k.key = r.key
  AND (k.max_running, k.rate_per_second, k.rate_burst) IS DISTINCT FROM (r.max_running, r.rate_per_second, r.rate_burst);

-- name: QueueRecount :one
-- Repair, step 3 (its own statement, so its snapshot is taken after step 1's and 1b's locks were granted): sets
-- every counter to the count of RUNNING todos. A run that a completion ended but has not
-- committed yet is still counted here: that completion is waiting for a key row (or the queue row) this
-- transaction holds, and subtracts it after. A queue without limits loses its key rows (the queue is back on
-- the fast path, where nothing counts). Returns how many counters were wrong (0 unless something drifted,
-- e.g. a claim in flight while the limits changed), whether the queue is limited, and whether a stored rate (the
-- queue's, the key default's, a key pattern's) is outside [min_rate_per_second, 1000000]: one stored before
-- SetQueueLimits refused it, which claims read clamped (TodoClaimLimited) and the node reports.
WITH q AS MATERIALIZED (
    SELECT c.max_running, c.limited,
           coalesce(c.rate_per_second NOT BETWEEN sqlc.arg(min_rate_per_second)::float8 AND 1000000, false)
           OR coalesce(c.key_rate_per_second NOT BETWEEN sqlc.arg(min_rate_per_second)::float8 AND 1000000, false)
           OR EXISTS (SELECT 1 FROM jsonb_array_elements(c.key_patterns) AS p (e)
                      WHERE (p.e ->> 'rate_per_second')::float8 NOT BETWEEN sqlc.arg(min_rate_per_second)::float8 AND 1000000)
               AS out_of_range
    FROM queue_controls AS c
    WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
    FOR NO KEY UPDATE
),
counts AS MATERIALIZED (
    SELECT t.concurrency_key AS key, count(*)::integer AS n
    FROM todos AS t
    WHERE t.human_id = sqlc.arg(human_id) AND t.queue = sqlc.arg(queue)::text AND t.state = 'running'
    GROUP BY t.concurrency_key
),
keys_fixed AS (
    UPDATE queue_keys AS k
    SET running = coalesce((SELECT counts.n FROM counts WHERE counts.key = k.key), 0)
    WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text
      AND k.running <> coalesce((SELECT counts.n FROM counts WHERE counts.key = k.key), 0)
      AND (SELECT q.limited FROM q)
    RETURNING k.key
),
keys_dropped AS (
    DELETE FROM queue_keys AS k
    WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text
      AND NOT coalesce((SELECT q.limited FROM q), false)
    RETURNING k.key
),
queue_fixed AS (
    UPDATE queue_controls AS c
    SET running = CASE WHEN c.max_running IS NULL THEN 0 ELSE (SELECT coalesce(sum(counts.n), 0) FROM counts)::integer END
    WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
      AND c.running <> CASE WHEN c.max_running IS NULL THEN 0 ELSE (SELECT coalesce(sum(counts.n), 0) FROM counts)::integer END
      AND EXISTS (SELECT 1 FROM q)
    RETURNING c.queue
)
SELECT ((SELECT count(*) FROM keys_fixed) + (SELECT count(*) FROM queue_fixed))::bigint AS repaired,
       coalesce((SELECT q.limited FROM q), false)::boolean AS limited,
       coalesce((SELECT q.out_of_range FROM q), false)::boolean AS out_of_range;

-- name: QueueKeysPruneIdle :execrows
-- Repair, step 4: deletes the key rows of the queue that hold nothing: no RUNNING todo, no pending todo (due or
-- not), a full rate burst again (tat ≤ now: a new row starts with a full burst, so deleting it gives no key more
-- tokens than it had) and not served for idle_seconds. Every limited claim walks its keys least recently served
-- first and probes each for due work, so keys that stopped getting work (one per customer, say) would otherwise
-- be probed by every claim forever. The rows are locked by step 1. A key enqueued again gets its row back with
-- its todo (TodoInsertBatch's key_rows); an enqueue racing this delete (its DO NOTHING saw the row, this commits
-- after) leaves its todo without a row until the next repair recreates it (QueueKeysInsertMissing): a delay,
-- never a limit exceeded, since a key without a row is not claimed.
DELETE FROM queue_keys AS k
WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text
  AND k.running = 0
  AND k.tat <= now()
  AND k.served_at < now() - make_interval(secs => sqlc.arg(idle_seconds)::double precision)
  -- a scalar subquery, not NOT EXISTS: a per-key probe of idx_todos_pending_key (see TodoClaimLimited's walk)
  AND (SELECT true FROM todos AS x
       WHERE x.state = 'pending' AND x.human_id = k.human_id AND x.queue = k.queue AND x.concurrency_key = k.key
       LIMIT 1) IS NULL;

-- name: QueueRepairDue :many
-- The limited queues whose counters the repair pass (every node, on the reaper's tick) checks next: those not
-- repaired since 2 s after their limits last changed (an enqueue or claim in flight during the change may have
-- missed them; SetQueueLimits' own repair runs at once, this catches what committed just after it) and the others
-- every repair_every_seconds. Oldest repair first, at most row_limit.
SELECT c.human_id, c.queue::text AS queue
FROM queue_controls AS c
WHERE c.limited
  AND (c.repaired_at IS NULL
       OR c.repaired_at < c.limits_at + interval '2 seconds'
       OR c.repaired_at < now() - make_interval(secs => sqlc.arg(repair_every_seconds)::double precision))
ORDER BY c.repaired_at NULLS FIRST
LIMIT sqlc.arg(row_limit)::integer;

-- name: QueueRepaired :exec
-- Stamps a queue's repair (after its transaction committed, so it takes no lock the repair's order forbids).
UPDATE queue_controls AS c
SET repaired_at = now()
WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text;

-- name: QueueClaimHint :one
-- After a limited queue's claim came back empty: in how many seconds the queue's rate (queue_wait) and the keys'
-- rates (key_wait: the soonest over keys with due work and room) next give a token, so a waiting claim sleeps
-- until the later of the two instead of polling; 0 where no rate applies or a token is there. Read only. Rates and
-- bursts are read clamped as TodoClaimLimited reads them.
SELECT coalesce((
           SELECT extract(epoch FROM greatest(c.tat, now()) - now())
                  - (least(greatest(c.rate_burst, 1), 1000000) - 1)
                    / least(greatest(c.rate_per_second, sqlc.arg(min_rate_per_second)::float8), 1000000)
           FROM queue_controls AS c
           WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
             AND c.rate_per_second IS NOT NULL), 0)::float8 AS queue_wait,
       coalesce((
           SELECT min(extract(epoch FROM greatest(k.tat, now()) - now())
                      - (least(greatest(coalesce(k.rate_burst, c.key_rate_burst), 1), 1000000) - 1)
                        / least(greatest(coalesce(k.rate_per_second, c.key_rate_per_second),
                                         sqlc.arg(min_rate_per_second)::float8), 1000000))
           FROM queue_keys AS k
           JOIN queue_controls AS c ON c.human_id = k.human_id AND c.queue = k.queue
           WHERE k.human_id = sqlc.arg(human_id) AND k.queue = sqlc.arg(queue)::text
             AND coalesce(k.rate_per_second, c.key_rate_per_second) IS NOT NULL
             AND k.running < coalesce(k.max_running, c.key_max_running, 1000000)
             AND (SELECT true FROM todos AS x
                  WHERE x.state = 'pending' AND x.human_id = k.human_id AND x.queue = k.queue
                    AND x.concurrency_key = k.key AND x.run_at <= now()
                  LIMIT 1)), 0)::float8 AS key_wait;
