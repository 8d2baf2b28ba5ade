-- Retention row caps per tenant (issue 31): each tenant keeps its newest
-- retention.*.max_rows_per_tenant rows, so the pass that enforces them reads
-- one tenant's rows newest first, and deletes them oldest first, along an
-- index that starts with the tenant (pkg/settings, tenantcap.go):
--
--  - realtime_events: (human_id, id). The resume index (human_id, channel,
--    id) orders by channel first, so it cannot give a tenant's newest rows
--    without reading and sorting all of them.
--  - todos: (human_id, finished_at, id) over finished todos only, the order
--    their cap counts in; like idx_todos_finished_at it holds no live work,
--    so claims and heartbeats never touch it (a todo enters it once, when it
--    finishes).
--  - events: idx_events_human_id (human_id, id DESC) already serves.
--
-- CONCURRENTLY (outside a transaction), so upgrading blocks neither
-- publishes nor completions while the indexes build.

-- +goose NO TRANSACTION
-- +goose Up

CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_realtime_events_tenant ON realtime_events (human_id, id);
CREATE INDEX CONCURRENTLY IF NOT EXISTS idx_todos_finished_tenant ON todos (human_id, finished_at, id)
    WHERE finished_at IS NOT NULL;

-- +goose Down

DROP INDEX CONCURRENTLY IF EXISTS idx_todos_finished_tenant;
DROP INDEX CONCURRENTLY IF EXISTS idx_realtime_events_tenant;
