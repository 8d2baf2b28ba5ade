-- Uniqueness windows for dedupe_key (issue 17,
-- docs/design/queue-flow-control.md §3g): how long a key refuses duplicates.
--
-- todos.dedupe_scope: NULL = RETENTION (the key is held until retention
-- deletes the todo, as before), 'live' (held while pending or running),
-- 'window' (held by a todo_dedupe_windows row, not by the todo). No CHECK:
-- a CHECK runs on every row version (00009); the server writes only these
-- values. Nullable without a default: adding it rewrites nothing.
--
-- todos_dedup is rebuilt with a predicate that holds RETENTION keys always
-- and LIVE keys only while pending or running: a LIVE todo's finishing
-- UPDATE writes a row version outside the index, so its key frees itself
-- with no extra write. Both scopes stay in one index so that the insert has
-- one arbiter (ON CONFLICT with a target): an insert without a target would
-- also probe the primary key for every row, keyless ones included. Keyless
-- rows fail the predicate's first term, as before. The new index holds
-- exactly the rows of the old one (every existing row has scope NULL).
--
-- todo_dedupe_windows: one row per WINDOW key, upserted in key order by
-- the enqueue that takes the key (taken over once expires_at has passed or
-- the holder todo is gone); expired rows are deleted by queue retention.
-- todo_id is NULL only inside the enqueue transaction that takes the key.
--
-- CONCURRENTLY, so the rebuild does not block enqueues and claims; that
-- cannot run inside a transaction. Every statement is idempotent, so a
-- migration interrupted between them can simply run again.
--
-- Down: RETENTION keeps the only uniqueness the old index can express, so
-- LIVE and WINDOW todos lose their keys (they may repeat one).

-- +goose NO TRANSACTION
-- +goose Up

ALTER TABLE todos ADD COLUMN IF NOT EXISTS dedupe_scope text;

CREATE TABLE IF NOT EXISTS todo_dedupe_windows (
    human_id   uuid        NOT NULL REFERENCES humans (id) ON DELETE CASCADE,
    queue      queue_name  NOT NULL,
    key        text        NOT NULL,
    todo_id    bigint,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (human_id, queue, key)
);

-- Retention finds expired rows oldest first.
CREATE INDEX IF NOT EXISTS idx_todo_dedupe_windows_expires_at ON todo_dedupe_windows (expires_at);

CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS todos_dedup_scoped ON todos (human_id, queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND (dedupe_scope IS NULL OR (dedupe_scope = 'live' AND state IN ('pending', 'running')));
DROP INDEX CONCURRENTLY IF EXISTS todos_dedup;
ALTER INDEX IF EXISTS todos_dedup_scoped RENAME TO todos_dedup;

-- +goose Down

UPDATE todos SET dedupe_key = NULL WHERE dedupe_scope IS NOT NULL;
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS todos_dedup_any ON todos (human_id, queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS todos_dedup;
ALTER INDEX IF EXISTS todos_dedup_any RENAME TO todos_dedup;
DROP TABLE IF EXISTS todo_dedupe_windows;
ALTER TABLE todos DROP COLUMN IF EXISTS dedupe_scope;
