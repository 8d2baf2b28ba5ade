-- Realtime's statements (sqlc: services/realtime/internal/store/dbsqlc).

-- name: EventInsert :many
-- Stores durable events in ONE statement, and so one transaction and one commit: a lone Publish, or the group commit
-- of a node's concurrent ones (publisher.go). Arrays are parallel, one element per event. The MATERIALIZED CTE takes
-- the publishers' shared advisory lock BEFORE the identity's nextval runs (no row reaches the INSERT without l's
-- row), and the lock is held until the transaction ends: so an id that is allocated but not yet visible always
-- belongs to a transaction that holds this lock. The reader uses that to tell a hole in the ids that may still fill
-- from one that never will (store.PublishersInProgress; reader.go). Shared: publishers never wait for each other.
-- Rows go in array order, so ids ascend in array order: the caller maps the returned ids back sorted ascending.
WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared(21314, 21076) AS locked)
INSERT INTO realtime_events (human_id, channel, kind, payload, published_by)
SELECT u.human_id, u.channel, u.kind, u.payload, u.published_by
FROM l, (
    SELECT unnest(sqlc.arg(human_ids)::uuid[]) AS human_id,
           unnest(sqlc.arg(channels)::text[]) AS channel,
           unnest(sqlc.arg(kinds)::text[]) AS kind,
           unnest(sqlc.arg(payloads)::jsonb[]) AS payload,
           unnest(sqlc.arg(published_bys)::text[]) AS published_by,
           generate_series(1, cardinality(sqlc.arg(human_ids)::uuid[]))::bigint AS ord
) AS u
ORDER BY u.ord
RETURNING id, created_at;

-- name: EventsAfter :many
-- New durable events of every tenant after id, in id order.
SELECT e.id, e.human_id, e.channel, e.kind, e.payload, e.published_by, e.created_at
FROM realtime_events AS e
WHERE e.id > sqlc.arg(after_id)::bigint
ORDER BY e.id
LIMIT sqlc.arg(max_rows)::integer;

-- name: MaxEventID :one
-- The newest durable id, where a node's reader starts.
SELECT coalesce(max(e.id), 0)::bigint AS max_id FROM realtime_events AS e;

-- name: EventsReplay :many
-- A subscriber's replay: its tenant's events on its channels with after_id < id <= upto, in id order, one page.
SELECT e.id, e.channel, e.kind, e.payload, e.published_by, e.created_at
FROM realtime_events AS e
WHERE e.human_id = sqlc.arg(human_id)
  AND e.channel = ANY (sqlc.arg(channels)::text[])
  AND e.id > sqlc.arg(after_id)::bigint
  AND e.id <= sqlc.arg(upto)::bigint
ORDER BY e.id
LIMIT sqlc.arg(max_rows)::integer;


-- Retention (pkg/settings.Pruner: age, then each tenant's row cap, then the table's safety net). Rows are in id
-- order, which is publish order. Their plans must not depend on the values (pooled sessions settle on generic
-- plans; store/retention_plans_test.go pins them):
--  - rows to delete are locked in an ARRAY sublink and deleted by primary key, so the DELETE never joins the
--    table against its candidates by hashing (a generic plan's guess of LIMIT $n is a tenth of the table);
--  - a tenant is named as human_id = ANY (ARRAY[$1]) and its rows ordered by (human_id, id): with human_id = $1 the
--    planner drops human_id from the order and may walk the primary key over every other tenant's rows instead of
--    idx_realtime_events_tenant.

-- name: PruneByAge :many
-- Deletes up to batch_size durable events older than max_age_seconds, oldest first, and counts them per tenant.
-- There is no index on created_at: ids are in publish order, so the candidates are the batch_size lowest ids
-- (primary key), and a pass stops at the first batch that is not all old. Filtering the whole table on created_at
-- instead would read every row, every pass, whenever none is old. SKIP LOCKED lets every node prune at once.
WITH gone AS (
    DELETE FROM realtime_events
    WHERE id = ANY (ARRAY(
        SELECT o.id
        FROM realtime_events AS o
        WHERE o.id = ANY (ARRAY(
            SELECT c.id FROM realtime_events AS c ORDER BY c.id LIMIT sqlc.arg(batch_size)::integer
        ))
          AND o.created_at < now() - make_interval(secs => sqlc.arg(max_age_seconds)::double precision)
        ORDER BY o.id
        FOR UPDATE SKIP LOCKED
    ))
    RETURNING human_id
)
SELECT g.human_id, count(*)::bigint AS deleted
FROM gone AS g
GROUP BY g.human_id;

-- name: RetentionWritten :many
-- Per tenant, its events after after_id: those up to mid_id and those beyond. Reads only these rows (primary key
-- range), so a pass costs what was published since the last, not the size of the table.
SELECT e.human_id,
       count(*) FILTER (WHERE e.id <= sqlc.arg(mid_id)::bigint)::bigint AS before_mid,
       count(*) FILTER (WHERE e.id > sqlc.arg(mid_id)::bigint)::bigint  AS after_mid,
       max(e.id)::bigint                                                AS newest
FROM realtime_events AS e
WHERE e.id > sqlc.arg(after_id)::bigint
GROUP BY e.human_id;

-- name: RetentionTenants :many
-- Every tenant with durable events: a loose index scan of idx_realtime_events_tenant, one probe per tenant.
WITH RECURSIVE t AS (
    (SELECT e.human_id FROM realtime_events AS e ORDER BY e.human_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.human_id FROM realtime_events AS e WHERE e.human_id > t.human_id ORDER BY e.human_id LIMIT 1)
    FROM t
    WHERE t.human_id IS NOT NULL
)
SELECT t.human_id::uuid AS human_id
FROM t
WHERE t.human_id IS NOT NULL;

-- name: RetentionWalk :one
-- The tenant's newest keep+1 events at most (idx_realtime_events_tenant, backward, index only): how many, and the
-- oldest of them, which is the newest beyond keep when there are keep+1.
SELECT count(*)::bigint AS found, coalesce(min(w.id), 0)::bigint AS oldest
FROM (
    SELECT e.id
    FROM realtime_events AS e
    WHERE e.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
    ORDER BY e.human_id DESC, e.id DESC
    LIMIT sqlc.arg(keep)::bigint + 1
) AS w;

-- name: RetentionTrim :execrows
-- Deletes up to batch_size of the tenant's events at or below cut_id, oldest first (idx_realtime_events_tenant),
-- skipping rows another node holds.
DELETE FROM realtime_events
WHERE id = ANY (ARRAY(
    SELECT o.id
    FROM realtime_events AS o
    WHERE o.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND o.id <= sqlc.arg(cut_id)::bigint
    ORDER BY o.human_id, o.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE SKIP LOCKED
));

-- name: RetentionCount :one
-- How many of the tenant's events are at or below cut_id, at most max_rows (idx_realtime_events_tenant, index
-- only). The order and the LIMIT (the caller's is never reached) keep a generic plan on the tenant's index: without
-- them it may filter a range of the primary key instead, every tenant's rows.
SELECT count(*)::bigint AS held
FROM (
    SELECT 1
    FROM realtime_events AS e
    WHERE e.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND e.id <= sqlc.arg(cut_id)::bigint
    ORDER BY e.human_id, e.id
    LIMIT sqlc.arg(max_rows)::bigint
) AS w;

-- name: PresenceJoin :exec
-- A subscription's rows, one per channel (re-inserted as they are after a Postgres crash emptied the table).
INSERT INTO realtime_presence (subscription_id, channel, node_id, human_id, member, joined_at)
SELECT sqlc.arg(subscription_id), c, sqlc.arg(node_id), sqlc.arg(human_id), sqlc.arg(member), sqlc.arg(joined_at)
FROM unnest(sqlc.arg(channels)::text[]) AS c
ON CONFLICT (subscription_id, channel) DO NOTHING;

-- name: PresenceLeave :exec
DELETE FROM realtime_presence WHERE subscription_id = sqlc.arg(subscription_id);

-- name: PresenceCount :one
-- How many presence rows this node holds (a crash reset shows up as fewer than its live subscriptions).
SELECT count(*)::bigint FROM realtime_presence WHERE node_id = sqlc.arg(node_id);

-- name: PresenceList :many
-- Presence(channel): one row per member with its streams, nodes and first join.
SELECT p.member, count(*)::integer AS streams, array_agg(DISTINCT p.node_id ORDER BY p.node_id)::text[] AS node_ids,
       min(p.joined_at)::timestamptz AS joined_at
FROM realtime_presence AS p
WHERE p.human_id = sqlc.arg(human_id) AND p.channel = sqlc.arg(channel)
GROUP BY p.member
ORDER BY p.member;

-- name: PresenceSweep :many
-- Removes the rows of nodes that are no longer registered (swept or gone) and returns them, so exactly one node
-- sends each leave event. Safe on every node at once: a row is deleted, and returned, once.
DELETE FROM realtime_presence AS p
WHERE NOT EXISTS (SELECT 1 FROM node_registry AS n WHERE n.node_id = p.node_id)
RETURNING p.human_id, p.channel, p.member, p.node_id;

-- name: ListenedChannels :many
-- Every (tenant, channel) with a subscriber anywhere whose name starts with prefix: system lifecycle events are
-- only published where someone listens.
SELECT DISTINCT p.human_id, p.channel FROM realtime_presence AS p WHERE starts_with(p.channel, sqlc.arg(prefix)::text);

-- name: ChannelList :many
-- ListChannels: a tenant's channels with a subscriber, by name after after_channel (keyset), with their open
-- streams (one row per subscription and channel), distinct members and nodes. The scan walks
-- idx_realtime_presence_channel in channel order and stops at the LIMIT; the prefix is a filter on it
-- (starts_with: no LIKE pattern to escape, and the order does not depend on a collation's prefix rules).
SELECT p.channel, count(*)::integer AS subscribers, count(DISTINCT p.member)::integer AS members,
       array_agg(DISTINCT p.node_id ORDER BY p.node_id)::text[] AS node_ids
FROM realtime_presence AS p
WHERE p.human_id = sqlc.arg(human_id)
  AND starts_with(p.channel, sqlc.arg(prefix)::text)
  AND (sqlc.narg(after_channel)::text IS NULL OR p.channel > sqlc.narg(after_channel)::text)
GROUP BY p.channel
ORDER BY p.channel
LIMIT sqlc.arg(page_size)::integer;
