-- queue_controls: a queue's pause, limits and running counter (one row per controlled queue; none = a plain
-- queue). The conventions every statement follows are in todos.sql's header.

-- name: QueueLimitedGet :one
-- Whether a queue's claims must go through TodoClaimLimited (it has a limit or a rate): the hint
-- Store.Claim keeps per queue is refreshed with this after an empty claim.
SELECT EXISTS (SELECT 1 FROM queue_controls AS c
               WHERE c.human_id = sqlc.arg(human_id) AND c.queue = sqlc.arg(queue)::text
                 AND c.limited) AS limited;

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
