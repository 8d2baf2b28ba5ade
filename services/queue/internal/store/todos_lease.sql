-- todos, a run's lease: claim (TodoClaim, TodoClaimLimited), heartbeat, and the end of a run (TodoSettle, the
-- one statement that ends runs and releases the limited queues' counters). The conventions every statement
-- follows are in todos.sql's header.

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
  AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see todos.sql's header)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
       OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
RETURNING t.id, t.lease_token::bigint AS lease_token, t.lease_expires_at::timestamptz AS lease_expires_at,
          t.queue, t.agent_id, t.progress_at;

-- name: TodoSettle :many
-- Ends runs: the one statement that completes, fails, releases, cancels or expires todos, any mix and any number,
-- so the counter release below and its lock order are written once. Arrays are parallel, one element per item, in
-- ascending id order (the caller sorts: the lock order). Per item:
--   action       complete | fail | release | cancel | expire
--   token        the lease token the item ends (cancel: ignored)
--   result       complete: the result, a JSON object, '' none
--   error        fail: the error (appended to errors, copied to last_error); cancel: the reason ('' none)
--   dead_letter  fail: dead-letter now, whatever the attempt
--   delay        fail: seconds before the retry, negative = the backoff below; release: seconds before it runs
--                again, 0 keeps its place (run_at)
--   jitter       fail: ∈ [0, 1), drawn by the caller
-- Which todo an item matches (fencing, so a worker whose lease expired and was re-claimed writes nothing):
--   complete, fail, release: the caller's (tenant, agent) with that token and a live lease (see todos.sql's header);
--   cancel: the caller's, pending or running (an admin's call: no token);
--   expire: any tenant's, with that token and an expired lease: the reaper's, which found and locked them in this
--   transaction (TodoLockExpired).
-- What each does:
--   complete: COMPLETED, with its result; a todo enqueued with remove_on_complete is deleted instead (removed): a
--     DELETE only marks the row version dead, where the UPDATE writes a new one into every index of todos.
--   fail: PENDING after the retry's wait, or DEAD at the attempt cap (decided here, race-free, from the row itself)
--     or with dead_letter. The wait is delay when given, else the backoff of the attempt that failed:
--         min(cap, base · 2^(attempt-1)) · (0.5 + jitter/2)
--     (base 1 s and cap 1 h by default: attempt 1 waits 0.5–1 s, attempt 5 8–16 s, from attempt 13 on 30–60 min).
--     The jitter spreads retries of todos that failed together, so a shared outage does not come back as a herd.
--   release: PENDING without penalty: attempt counts claims and never goes down, so max_attempts goes up by one.
--   cancel: CANCELLED; a worker holding it finds its lease gone on its next call.
--   expire: PENDING, or DEAD at the attempt cap or when its consecutive lease expiries reach max_expiries (a todo
--     that keeps crashing its workers). Complete, fail and release end the run of lease expiries (back to 0);
--     cancel leaves it.
-- A todo missing from RETURNING was not matched: TodoAckStates (or TodoGet) tells why. RETURNING carries what an
-- outcome, a lifecycle event and the claim-to-completion metric need, not the row: scanning whole rows back was
-- most of a node's cost of CompleteBatch (a caller that answers with the todo reads it in the same transaction).
-- run_seconds is a completion's claim-to-completion time (0 for the other actions).
-- Three writes: completions kept (completed), completions removed (removed) and the other actions (others), whose
-- every column is written per item by a CASE on its action (a column an action leaves alone is assigned its own
-- value).
-- Lock order, shared with TodoClaimLimited: todos, then queue_keys in key order, then queue_controls. The todos
-- are locked completed first, then others, then removed, each in id order: a todo's branch follows from its action
-- and its remove_on_complete (which never changes), and a statement of several items is one action throughout (a
-- CompleteBatch, or a reap whose rows are locked before), so every two statements lock the todos they share in
-- the same order.
WITH u AS MATERIALIZED (
    SELECT unnest(sqlc.arg(ids)::bigint[])           AS id,
           unnest(sqlc.arg(tokens)::bigint[])        AS token,
           unnest(sqlc.arg(actions)::text[])         AS action,
           unnest(sqlc.arg(results)::text[])         AS result,
           unnest(sqlc.arg(errors)::text[])          AS error,
           unnest(sqlc.arg(dead_letters)::boolean[]) AS dead_letter,
           unnest(sqlc.arg(delays)::float8[])        AS delay,
           unnest(sqlc.arg(jitters)::float8[])       AS jitter
),
completed AS (
    -- A completion, kept: its own UPDATE with only the columns a completion writes, so the hot path (CompleteBatch)
    -- costs what it did before the other actions shared this statement (one CASE over every column cost ~10% of
    -- its CPU). The fencing is the one of others below, for action complete.
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
      AND u.action = 'complete'
      AND NOT t.remove_on_complete
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = u.token
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see todos.sql's header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
           OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
    RETURNING t.id, t.lease_token::bigint AS lease_token, t.human_id, t.queue, t.agent_id, t.state,
              coalesce(extract(epoch FROM t.finished_at - t.attempted_at), 0)::float8 AS run_seconds,
              t.concurrency_key, false AS removed, t.finished_at, true AS ran
),
others AS (
    -- Every other action. "dies" (a failed or expired run that ends the todo) is written out where it is needed:
    -- an UPDATE's SET cannot name an expression over the row it writes. It reads attempt, max_attempts and
    -- lease_expiries, which the statement's row lock made current (a concurrent change re-evaluates it on the
    -- newest version).
    UPDATE todos AS t
    SET state            = CASE u.action
                               WHEN 'cancel' THEN 'cancelled'
                               WHEN 'release' THEN 'pending'
                               ELSE CASE WHEN t.attempt >= t.max_attempts
                                              OR (u.action = 'fail' AND u.dead_letter)
                                              OR (u.action = 'expire' AND t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer)
                                         THEN 'dead' ELSE 'pending' END
                           END,
        max_attempts     = CASE WHEN u.action = 'release' THEN t.max_attempts + 1 ELSE t.max_attempts END,
        run_at           = CASE
                               WHEN u.action = 'release' AND u.delay > 0 THEN now() + make_interval(secs => u.delay)
                               WHEN u.action = 'fail' AND NOT (u.dead_letter OR t.attempt >= t.max_attempts)
                                   THEN now() + make_interval(secs => CASE
                                       WHEN u.delay >= 0 THEN u.delay
                                       ELSE least(sqlc.arg(backoff_cap_seconds)::double precision,
                                                  sqlc.arg(backoff_base_seconds)::double precision
                                                      * power(2::double precision, least(greatest(t.attempt - 1, 0), 62)))
                                            * (0.5 + u.jitter / 2) END)
                               ELSE t.run_at
                           END,
        finished_at      = CASE
                               WHEN u.action = 'cancel' THEN now()
                               WHEN u.action = 'release' THEN t.finished_at
                               WHEN t.attempt >= t.max_attempts
                                    OR (u.action = 'fail' AND u.dead_letter)
                                    OR (u.action = 'expire' AND t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer)
                                   THEN now()
                           END,
        lease_owner      = NULL,
        lease_expires_at = NULL,
        lease_expiries   = CASE u.action WHEN 'cancel' THEN t.lease_expiries WHEN 'expire' THEN t.lease_expiries + 1 ELSE 0 END,
        lease_outcome    = CASE u.action
                               WHEN 'fail' THEN 'failed'
                               WHEN 'release' THEN 'released'
                               WHEN 'expire' THEN 'expired'
                               -- a pending todo had no lease to end: the last one's outcome stays
                               ELSE CASE WHEN t.state = 'running' THEN 'cancelled' ELSE t.lease_outcome END
                           END,
        last_error       = CASE u.action
                               WHEN 'fail' THEN u.error
                               WHEN 'cancel' THEN nullif(u.error, '')
                               WHEN 'expire' THEN CASE
                                   WHEN t.attempt >= t.max_attempts THEN 'lease expired on the last allowed attempt'
                                   WHEN t.lease_expiries + 1 >= sqlc.arg(max_expiries)::integer
                                       THEN format('dead-lettered: the lease expired %s times in a row (the todo may be crashing its workers)',
                                                   t.lease_expiries + 1)
                                   ELSE 'lease expired' END
                               ELSE t.last_error
                           END,
        errors           = CASE WHEN u.action IN ('fail', 'expire')
                               THEN t.errors || jsonb_build_array(jsonb_build_object(
                                   'attempt', t.attempt,
                                   'at', now(),
                                   'error', CASE WHEN u.action = 'fail' THEN u.error
                                                 ELSE format('lease expired (held by %s)', t.lease_owner) END))
                               ELSE t.errors
                           END
    FROM u
    WHERE t.id = u.id
      AND u.action <> 'complete'
      -- The token outside the CASE: a plain equality, which the planner estimates as selective, so the generic
      -- plan expects few rows here and keeps to nested loops over primary keys below (a CASE is guessed at half).
      AND (t.lease_token = u.token OR u.action = 'cancel')
      AND CASE u.action
              WHEN 'expire' THEN t.lease_owner IS NOT NULL AND t.lease_expires_at < now()
              ELSE t.human_id = sqlc.arg(human_id)
                   AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
                        OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
                   AND CASE WHEN u.action = 'cancel' THEN t.state IN ('pending', 'running')
                            -- a live lease (see todos.sql's header)
                            ELSE t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL
                       END
          END
    -- ran: the item ended a run (a cancelled pending todo had none): only runs hold a counter. The outcome tells,
    -- as this statement wrote it: a cancel writes 'cancelled' exactly when the todo was running (and no pending
    -- todo has it from before: cancelled is final).
    RETURNING t.id, coalesce(t.lease_token, 0)::bigint AS lease_token, t.human_id, t.queue, t.agent_id, t.state,
              0::float8 AS run_seconds, t.concurrency_key, false AS removed, t.finished_at,
              (u.action <> 'cancel' OR t.lease_outcome = 'cancelled') AS ran
),
removed AS (
    -- A completion of a todo enqueued with remove_on_complete.
    DELETE FROM todos AS t
    USING u
    WHERE t.id = u.id
      AND u.action = 'complete'
      AND t.remove_on_complete
      AND t.human_id = sqlc.arg(human_id)
      AND t.lease_token = u.token
      AND t.lease_expires_at IS NOT NULL AND t.lease_owner IS NOT NULL -- a live lease (see todos.sql's header)
      AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR t.agent_id IS NULL
           OR t.agent_id = sqlc.narg(caller_agent_id)::uuid)
    RETURNING t.id, t.lease_token::bigint AS lease_token, t.human_id, t.queue, t.agent_id, 'completed'::text AS state,
              coalesce(extract(epoch FROM now() - t.attempted_at), 0)::float8 AS run_seconds,
              t.concurrency_key, true AS removed, now() AS finished_at, true AS ran
),
done AS (
    SELECT c.id, c.lease_token, c.human_id, c.queue, c.agent_id, c.state, c.run_seconds, c.concurrency_key, c.removed,
           c.finished_at, c.ran
    FROM completed AS c
    UNION ALL
    SELECT o.id, o.lease_token, o.human_id, o.queue, o.agent_id, o.state, o.run_seconds, o.concurrency_key, o.removed,
           o.finished_at, o.ran
    FROM others AS o
    UNION ALL
    SELECT r.id, r.lease_token, r.human_id, r.queue, r.agent_id, r.state, r.run_seconds, r.concurrency_key, r.removed,
           r.finished_at, r.ran
    FROM removed AS r
),
ended AS MATERIALIZED (
    -- Runs ended by this statement, per key: the counters of limited queues go down in the same statement
    -- (TodoClaimLimited's lock order: todos, then queue_keys in key order, then queue_controls). For a queue
    -- without limits both lookups below find nothing: no lock, no write. A cancelled pending todo ended no run.
    SELECT d.human_id, d.queue, d.concurrency_key AS key, count(*)::integer AS n
    FROM done AS d
    WHERE d.ran
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
       -- freed: the item ended a run that held a slot of a limited queue, so a claim waiting on it may now get work.
       EXISTS (SELECT 1 FROM limited AS l WHERE d.ran AND l.human_id = d.human_id AND l.queue = d.queue) AS freed
FROM done AS d;

-- name: TodoLockExpired :many
-- The reaper's pick: up to batch_size running todos whose lease has expired, locked for this transaction, which
-- then ends them with TodoSettle (action expire). A bounded read of running rows only (idx_todos_running); SKIP
-- LOCKED lets every node reap at once, and the row lock re-checks lease_expires_at, so a lease a heartbeat just
-- extended is left alone. Any tenant's: the reaper works for all of them.
SELECT r.id, r.lease_token::bigint AS lease_token
FROM todos AS r
WHERE r.state = 'running'
  AND r.lease_expires_at < now()
LIMIT sqlc.arg(batch_size)::integer
FOR UPDATE SKIP LOCKED;
