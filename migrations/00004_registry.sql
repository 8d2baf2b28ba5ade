-- The cluster registry: one row per running Switchboard process (node).
-- Table definition copied verbatim from seeds/DESIGN-cluster-registry.md, so
-- it deliberately breaks this folder's conventions (nullable columns, no
-- created_at, IF NOT EXISTS, serial rather than identity).
--
-- UNLOGGED: a heartbeat UPDATE every few seconds from every node would
-- otherwise be a steady WAL stream for data that is worthless after a crash.
-- The price, which the registry code must handle: the table is emptied by
-- crash recovery and is not replicated to standbys (it is empty after a
-- failover). A node whose heartbeat finds its row gone must therefore tell
-- "the table was reset" (it is empty) from "a peer swept me", and re-register
-- in the first case instead of exiting.
-- Not TEMPORARY: temporary tables are invisible to other sessions.

-- +goose Up

CREATE UNLOGGED TABLE IF NOT EXISTS node_registry (
    node_id       TEXT PRIMARY KEY,
    endpoint      TEXT NOT NULL,
    seq           SERIAL,
    registered_at TIMESTAMPTZ DEFAULT now(),
    heartbeat     TIMESTAMPTZ DEFAULT now(),
    stats         JSONB DEFAULT '{}'
);

-- +goose Down

DROP TABLE node_registry;
