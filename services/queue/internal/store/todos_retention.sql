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
