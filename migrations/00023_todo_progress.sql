-- A running todo's latest progress, as its worker last reported it with
-- Heartbeat (issue 17, docs/design/queue-flow-control.md §3h).
--
-- progress is a JSON object of at most 1 KiB (checked by the server, not by
-- a CHECK: a CHECK runs on every row version, which 00009 measured at 4 % of
-- the database's CPU); progress_at is when it was stored (database clock).
-- Both are in no index, like the lease columns, so a heartbeat that carries
-- progress is still a HOT update; 1 KiB stays far below the TOAST threshold,
-- so the new row version fits the page's fillfactor slack (todos is at 80).
-- Nullable without a default: adding them rewrites nothing.

-- +goose Up

ALTER TABLE todos
    ADD COLUMN progress    jsonb,
    ADD COLUMN progress_at timestamptz;

-- +goose Down

ALTER TABLE todos
    DROP COLUMN progress_at,
    DROP COLUMN progress;
