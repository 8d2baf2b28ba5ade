-- name: NodeRegister :one
-- Registers this node on boot with the seed's idempotent upsert: a restart under the same id reuses its row.
-- The first stats (services, version) go in at once, so peers see what the node runs before its first tick.
-- Also returns when this Postgres server started: a later 0-row heartbeat with a different start time means
-- the server restarted or failed over and emptied the UNLOGGED table, not that a peer swept this node.
WITH registered AS (
    INSERT INTO node_registry (node_id, endpoint, stats)
    VALUES (sqlc.arg(node_id), sqlc.arg(endpoint), sqlc.arg(stats))
    ON CONFLICT (node_id) DO UPDATE
    SET endpoint      = EXCLUDED.endpoint,
        registered_at = now(),
        heartbeat     = now(),
        stats         = EXCLUDED.stats
    RETURNING node_registry.seq
)
SELECT registered.seq::integer                  AS seq,
       pg_postmaster_start_time()::timestamptz AS server_started_at
FROM registered;

-- name: NodeHeartbeat :execrows
-- Refreshes this node's heartbeat (database clock) and stats; 0 rows = the row is gone (swept, or table reset).
UPDATE node_registry
SET heartbeat = now(),
    stats     = sqlc.arg(stats)
WHERE node_id = sqlc.arg(node_id);

-- name: NodeSweep :many
-- Evicts nodes whose heartbeat is older than the threshold (ms, so no interval type crosses the wire); every
-- node runs it each tick and concurrent sweeps are harmless. The seed's heartbeat is nullable: NULL is stale.
-- The caller never sweeps itself: its own heartbeat just succeeded.
DELETE FROM node_registry
WHERE node_id <> sqlc.arg(self)
  AND (heartbeat IS NULL
   OR heartbeat < now() - sqlc.arg(stale_after_ms)::bigint * interval '1 millisecond')
RETURNING node_id;

-- name: NodeList :many
-- Every registered node in registration order: GET /api/admin/cluster, /health peers, gateway discovery.
SELECT *
FROM node_registry
ORDER BY seq;

-- name: NodeGet :one
-- One node by id; pgx.ErrNoRows when it is not registered.
SELECT *
FROM node_registry
WHERE node_id = sqlc.arg(node_id);

-- name: NodeDeregister :execrows
-- Removes this node on graceful shutdown so peers drop it now, not after the stale threshold.
DELETE FROM node_registry
WHERE node_id = sqlc.arg(node_id);

-- name: NodeClock :one
-- Database clock and this node's heartbeat age, both measured on the database (immune to node clock skew);
-- always one row. A changed server_started_at after a 0-row heartbeat means Postgres restarted or failed over
-- and emptied the UNLOGGED table (re-register), not that a peer swept this node (exit).
SELECT now()::timestamptz                                                            AS db_now,
       pg_postmaster_start_time()::timestamptz                                       AS server_started_at,
       (n.node_id IS NOT NULL)::boolean                                              AS registered,
       coalesce((extract(epoch FROM now() - n.heartbeat) * 1000)::bigint, 0)::bigint AS heartbeat_age_ms
FROM (SELECT sqlc.arg(node_id)::text AS node_id) AS self
LEFT JOIN node_registry AS n ON n.node_id = self.node_id;
