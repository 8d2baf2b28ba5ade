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
