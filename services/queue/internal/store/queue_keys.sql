-- queue_keys: a limited queue's per-key counters, and the repair that recounts them (with the queue row's) from
-- the todos, in the numbered steps below, which run in this order in one transaction (Store.Repair). The
-- conventions every statement follows are in todos.sql's header.

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
