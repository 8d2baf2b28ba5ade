-- todo_dedupe_windows: the keys of WINDOW-scoped todos (an enqueue reserves them before it inserts its todos).
-- The conventions every statement follows are in todos.sql's header. (Not named dedupe_windows.sql: Go would build
-- its generated dedupe_windows.sql.go only on GOOS=windows.)

-- name: TodoDedupeWindowsReserve :many
-- Takes the WINDOW dedupe keys of one enqueue (distinct, in "C" order: the lock order, see todos.sql's header) for
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
