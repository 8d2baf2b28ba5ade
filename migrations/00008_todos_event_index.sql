-- Queue churn: index only the todos that came from an event.
--
-- Claim and Complete change state, so PostgreSQL cannot update todos in
-- place (HOT): every claim and every completion writes a new entry into
-- each index whose predicate the new row version satisfies. The foreign-key
-- index on event_id held every todo, including the many with no event
-- (a NULL entry per row version); partial on event_id IS NOT NULL it serves
-- the same lookup (ON DELETE SET NULL searches event_id = $1, which implies
-- the predicate) and costs nothing for todos enqueued directly.
--
-- CONCURRENTLY, so upgrading a node does not block enqueues and claims while
-- the new index builds; that cannot run inside a transaction.

-- +goose NO TRANSACTION
-- +goose Up

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_todos_event_id_partial ON todos (event_id)
    WHERE event_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS idx_todos_event_id;
ALTER INDEX idx_todos_event_id_partial RENAME TO idx_todos_event_id;

-- +goose Down

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_todos_event_id_full ON todos (event_id);
DROP INDEX CONCURRENTLY IF EXISTS idx_todos_event_id;
ALTER INDEX idx_todos_event_id_full RENAME TO idx_todos_event_id;
