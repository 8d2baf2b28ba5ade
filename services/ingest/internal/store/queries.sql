-- The events table's statements (this package alone writes it). Every event is stored with its todo in one
-- transaction (Store.Ingest; the todo through the queue's writer); the edge answers 2xx only
-- after that commit.
--
-- Reads take the caller's tenant (human_id) and, for a credential that acts as an agent, caller_agent_id (NULL for
-- a human's credential). An agent reads the events for it, the events it published and the tenant's shared ones
-- (agent_id NULL: an endpoint or adapter without an agent, an unaddressed publish into a queue), as it may claim
-- the todos addressed to it or to no agent; another agent's event is indistinguishable from a missing one:
--     (caller_agent_id IS NULL OR agent_id IS NULL OR agent_id = caller_agent_id OR published_by = caller_agent_id)
-- Point reads use that rule as is; a listing takes EventListForAgent.

-- name: LockBodyHash :exec
-- Serialises concurrent deliveries of one body to one source for the rest of the transaction, so two replays
-- cannot both pass EventRecentByBody before either inserts.
SELECT pg_advisory_xact_lock(hashtextextended(sqlc.arg(source)::text || ':' || encode(sqlc.arg(body_sha256)::bytea, 'hex'), 0));

-- name: EventRecentByBody :one
-- An event of this tenant and source with the same body received within the dedup window: a replay of a body
-- whose delivery id is not signed.
SELECT e.id
FROM events AS e
WHERE e.human_id = sqlc.arg(human_id)
  AND e.source = sqlc.arg(source)
  AND e.body_sha256 = sqlc.arg(body_sha256)::bytea
  AND e.received_at > now() - make_interval(secs => sqlc.arg(window_seconds)::double precision)
LIMIT 1;

-- name: AgentOfHuman :one
-- 1 when the agent belongs to the human: a todo may only be addressed to the caller's own agents (another
-- tenant's agent must look unknown).
SELECT count(*)::integer AS found FROM agents AS a WHERE a.id = sqlc.arg(agent_id) AND a.human_id = sqlc.arg(human_id);

-- name: EventGet :one
-- One event of the tenant (for an agent: one it may read), payload included; pgx.ErrNoRows when missing or out of
-- reach.
SELECT id, human_id, source, endpoint_id, adapter_id, published_by, agent_id, topic, delivery_id, received_at,
       headers, content_type, payload, size_bytes, replay_count, last_replayed_at, payload_pruned_at
FROM events
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid
       OR published_by = sqlc.narg(caller_agent_id)::uuid);

-- name: EventByDelivery :one
-- The event a duplicate delivery id points at (what PublishEvent answers for a duplicate), if the caller may read
-- it.
SELECT id, human_id, source, endpoint_id, adapter_id, published_by, agent_id, topic, delivery_id, received_at,
       headers, content_type, payload, size_bytes, replay_count, last_replayed_at, payload_pruned_at
FROM events
WHERE human_id = sqlc.arg(human_id)
  AND source = sqlc.arg(source)
  AND delivery_id = sqlc.arg(delivery_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid
       OR published_by = sqlc.narg(caller_agent_id)::uuid);

-- name: EventList :many
-- A tenant's events newest first with optional filters (for a human's credential; an agent's lists with
-- EventListForAgent); keyset pagination on id (before_id = the last id seen). The payload is read only when asked
-- for (the rest of the row is small); its size always is. todo_state keeps the events whose todo is in that state.
SELECT e.id, e.human_id, e.source, e.endpoint_id, e.adapter_id, e.published_by, e.agent_id, e.topic, e.delivery_id,
       e.received_at, e.headers, e.content_type,
       CASE WHEN sqlc.arg(include_payload)::boolean THEN e.payload ELSE ''::bytea END AS payload,
       e.size_bytes, e.replay_count, e.last_replayed_at, e.payload_pruned_at
FROM events AS e
WHERE e.human_id = sqlc.arg(human_id)
  AND (sqlc.narg(source)::text IS NULL OR e.source = sqlc.narg(source)::text)
  AND (sqlc.narg(endpoint_id)::uuid IS NULL OR e.endpoint_id = sqlc.narg(endpoint_id)::uuid)
  AND (sqlc.narg(topic)::text IS NULL OR e.topic = sqlc.narg(topic)::text)
  AND (sqlc.narg(received_after)::timestamptz IS NULL OR e.received_at >= sqlc.narg(received_after)::timestamptz)
  AND (sqlc.narg(received_before)::timestamptz IS NULL OR e.received_at < sqlc.narg(received_before)::timestamptz)
  AND (sqlc.narg(before_id)::bigint IS NULL OR e.id < sqlc.narg(before_id)::bigint)
  AND (sqlc.narg(todo_state)::text IS NULL
       OR EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state = sqlc.narg(todo_state)::text))
ORDER BY e.id DESC
LIMIT sqlc.arg(page_size)::integer;

-- name: EventListForAgent :many
-- EventList for a credential that acts as an agent: the events for it, the tenant's shared ones and those it
-- published for another agent, each an ordered scan of its own index (idx_events_agent, idx_events_shared,
-- idx_events_published_by) merged by id, so a page reads about a page of rows however few of the tenant's events
-- the agent may read; one statement with the three as OR would walk the tenant's events under a generic plan. The
-- keyset bound is an index condition (coalesce, not "IS NULL OR") for the same reason.
SELECT v.id, v.human_id, v.source, v.endpoint_id, v.adapter_id, v.published_by, v.agent_id, v.topic, v.delivery_id,
       v.received_at, v.headers, v.content_type, v.payload, v.size_bytes, v.replay_count, v.last_replayed_at,
       v.payload_pruned_at
FROM (
    (SELECT e.id, e.human_id, e.source, e.endpoint_id, e.adapter_id, e.published_by, e.agent_id, e.topic,
            e.delivery_id, e.received_at, e.headers, e.content_type,
            CASE WHEN sqlc.arg(include_payload)::boolean THEN e.payload ELSE ''::bytea END AS payload, e.size_bytes,
            e.replay_count, e.last_replayed_at, e.payload_pruned_at
     FROM events AS e
     WHERE e.agent_id = sqlc.arg(caller_agent_id)::uuid
       AND e.human_id = sqlc.arg(human_id)
       AND e.id < coalesce(sqlc.narg(before_id)::bigint, 9223372036854775807)
       AND (sqlc.narg(source)::text IS NULL OR e.source = sqlc.narg(source)::text)
       AND (sqlc.narg(endpoint_id)::uuid IS NULL OR e.endpoint_id = sqlc.narg(endpoint_id)::uuid)
       AND (sqlc.narg(topic)::text IS NULL OR e.topic = sqlc.narg(topic)::text)
       AND (sqlc.narg(received_after)::timestamptz IS NULL OR e.received_at >= sqlc.narg(received_after)::timestamptz)
       AND (sqlc.narg(received_before)::timestamptz IS NULL OR e.received_at < sqlc.narg(received_before)::timestamptz)
       AND (sqlc.narg(todo_state)::text IS NULL
            OR EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state = sqlc.narg(todo_state)::text))
     ORDER BY e.id DESC
     LIMIT sqlc.arg(page_size)::integer)
    UNION ALL
    (SELECT e.id, e.human_id, e.source, e.endpoint_id, e.adapter_id, e.published_by, e.agent_id, e.topic,
            e.delivery_id, e.received_at, e.headers, e.content_type,
            CASE WHEN sqlc.arg(include_payload)::boolean THEN e.payload ELSE ''::bytea END AS payload, e.size_bytes,
            e.replay_count, e.last_replayed_at, e.payload_pruned_at
     FROM events AS e
     WHERE e.agent_id IS NULL
       AND e.human_id = sqlc.arg(human_id)
       AND e.id < coalesce(sqlc.narg(before_id)::bigint, 9223372036854775807)
       AND (sqlc.narg(source)::text IS NULL OR e.source = sqlc.narg(source)::text)
       AND (sqlc.narg(endpoint_id)::uuid IS NULL OR e.endpoint_id = sqlc.narg(endpoint_id)::uuid)
       AND (sqlc.narg(topic)::text IS NULL OR e.topic = sqlc.narg(topic)::text)
       AND (sqlc.narg(received_after)::timestamptz IS NULL OR e.received_at >= sqlc.narg(received_after)::timestamptz)
       AND (sqlc.narg(received_before)::timestamptz IS NULL OR e.received_at < sqlc.narg(received_before)::timestamptz)
       AND (sqlc.narg(todo_state)::text IS NULL
            OR EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state = sqlc.narg(todo_state)::text))
     ORDER BY e.id DESC
     LIMIT sqlc.arg(page_size)::integer)
    UNION ALL
    (SELECT e.id, e.human_id, e.source, e.endpoint_id, e.adapter_id, e.published_by, e.agent_id, e.topic,
            e.delivery_id, e.received_at, e.headers, e.content_type,
            CASE WHEN sqlc.arg(include_payload)::boolean THEN e.payload ELSE ''::bytea END AS payload, e.size_bytes,
            e.replay_count, e.last_replayed_at, e.payload_pruned_at
     FROM events AS e
     WHERE e.published_by = sqlc.arg(caller_agent_id)::uuid
       AND e.agent_id <> sqlc.arg(caller_agent_id)::uuid
       AND e.human_id = sqlc.arg(human_id)
       AND e.id < coalesce(sqlc.narg(before_id)::bigint, 9223372036854775807)
       AND (sqlc.narg(source)::text IS NULL OR e.source = sqlc.narg(source)::text)
       AND (sqlc.narg(endpoint_id)::uuid IS NULL OR e.endpoint_id = sqlc.narg(endpoint_id)::uuid)
       AND (sqlc.narg(topic)::text IS NULL OR e.topic = sqlc.narg(topic)::text)
       AND (sqlc.narg(received_after)::timestamptz IS NULL OR e.received_at >= sqlc.narg(received_after)::timestamptz)
       AND (sqlc.narg(received_before)::timestamptz IS NULL OR e.received_at < sqlc.narg(received_before)::timestamptz)
       AND (sqlc.narg(todo_state)::text IS NULL
            OR EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state = sqlc.narg(todo_state)::text))
     ORDER BY e.id DESC
     LIMIT sqlc.arg(page_size)::integer)
) AS v
ORDER BY v.id DESC
LIMIT sqlc.arg(page_size)::integer;

-- Event retention (pkg/settings.Pruner: age, then each tenant's row cap, then the table's safety net). Events are in
-- id order, which is arrival order. An event whose todo is still live (pending or running: its worker reads the
-- event) is counted but never deleted. A finished todo keeps its row with event_id set to NULL (ON DELETE SET NULL).
-- Their plans must not depend on the values (pooled sessions settle on generic plans; store/retention_plans_test.go
-- pins them):
--  - rows to delete are locked in an ARRAY sublink and deleted by primary key, so the DELETE never joins the
--    table against its candidates by hashing (a generic plan's guess of LIMIT $n is a tenth of the table);
--  - a tenant is named as human_id = ANY (ARRAY[$1]) and its events ordered by (human_id, id): with human_id = $1
--    the planner drops human_id from the order and may walk the primary key over every other tenant's events
--    instead of idx_events_human_id.

-- name: EventPruneByAge :many
-- Deletes up to batch_size events received more than max_age_seconds ago, oldest first (idx_events_received_at),
-- except those of live todos, and counts them per tenant. SKIP LOCKED lets every node prune at once.
WITH gone AS (
    DELETE FROM events
    WHERE id = ANY (ARRAY(
        SELECT e.id
        FROM events AS e
        WHERE e.received_at < now() - make_interval(secs => sqlc.arg(max_age_seconds)::double precision)
          AND NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state IN ('pending', 'running'))
        ORDER BY e.received_at
        LIMIT sqlc.arg(batch_size)::integer
        FOR UPDATE OF e SKIP LOCKED
    ))
    RETURNING human_id
)
SELECT g.human_id, count(*)::bigint AS deleted
FROM gone AS g
GROUP BY g.human_id;

-- name: EventMaxID :one
-- The newest event's id (0 when none).
SELECT coalesce(max(e.id), 0)::bigint AS max_id FROM events AS e;

-- name: EventRetentionWritten :many
-- Per tenant, its events after after_id: those up to mid_id and those beyond. Reads only these rows (primary key
-- range), so a pass costs what arrived since the last, not the size of the table.
SELECT e.human_id,
       count(*) FILTER (WHERE e.id <= sqlc.arg(mid_id)::bigint)::bigint AS before_mid,
       count(*) FILTER (WHERE e.id > sqlc.arg(mid_id)::bigint)::bigint  AS after_mid,
       max(e.id)::bigint                                                AS newest
FROM events AS e
WHERE e.id > sqlc.arg(after_id)::bigint
GROUP BY e.human_id;

-- name: EventRetentionTenants :many
-- Every tenant with events: a loose index scan of an index led by human_id, one probe per tenant.
WITH RECURSIVE t AS (
    (SELECT e.human_id FROM events AS e ORDER BY e.human_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.human_id FROM events AS e WHERE e.human_id > t.human_id ORDER BY e.human_id LIMIT 1)
    FROM t
    WHERE t.human_id IS NOT NULL
)
SELECT t.human_id::uuid AS human_id
FROM t
WHERE t.human_id IS NOT NULL;

-- name: EventRetentionWalk :one
-- The tenant's newest keep+1 events at most (idx_events_human_id, index only): how many, and the oldest of them,
-- which is the newest beyond keep when there are keep+1. Events of live todos count like any other.
SELECT count(*)::bigint AS found, coalesce(min(w.id), 0)::bigint AS oldest
FROM (
    SELECT e.id
    FROM events AS e
    WHERE e.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
    ORDER BY e.human_id DESC, e.id DESC
    LIMIT sqlc.arg(keep)::bigint + 1
) AS w;

-- name: EventRetentionTrim :execrows
-- Deletes up to batch_size of the tenant's events at or below cut_id, oldest first (idx_events_human_id), except
-- those of live todos, skipping rows another node or a replay holds.
DELETE FROM events
WHERE id = ANY (ARRAY(
    SELECT e.id
    FROM events AS e
    WHERE e.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND e.id <= sqlc.arg(cut_id)::bigint
      AND NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state IN ('pending', 'running'))
    ORDER BY e.human_id, e.id
    LIMIT sqlc.arg(batch_size)::integer
    FOR UPDATE OF e SKIP LOCKED
));

-- name: EventRetentionCount :one
-- How many of the tenant's events are at or below cut_id, those of live todos included, at most max_rows
-- (idx_events_human_id, index only). The order and the LIMIT (the caller's is never reached) keep a generic plan
-- on the tenant's index: without them it may filter a range of the primary key instead, every tenant's events.
SELECT count(*)::bigint AS held
FROM (
    SELECT 1
    FROM events AS e
    WHERE e.human_id = ANY (ARRAY[sqlc.arg(human_id)::uuid])
      AND e.id <= sqlc.arg(cut_id)::bigint
    ORDER BY e.human_id, e.id
    LIMIT sqlc.arg(max_rows)::bigint
) AS w;

-- name: EventInsertBatch :batchmany
-- Stores events of one source (and one publisher and agent: see events.agent_id) in ONE statement: a single event, the group commit of concurrent webhook requests,
-- or an adapter's batch. Their todos' insert (the queue's TodoInsertForEvents) follows in the same pipeline, so
-- both commit together in one round trip, each todo with its event's trace_parent. Arrays are parallel, one
-- element per event; '' (or an empty body_sha256) means none. Ids are drawn in item order (the MATERIALIZED CTE numbers the items first), so they
-- ascend in item order; the rows are then inserted in delivery_id order, the one order every batch takes its
-- keys in: inserting a delivery id waits on a concurrent transaction inserting the same one, and two batches
-- naming overlapping ids in different orders would otherwise deadlock. A delivery id stored before, or earlier
-- in the same batch, conflicts and is absent from the result (a duplicate, which writes nothing). size_bytes is the
-- payload's length (events_size_bytes_check), kept when payload retention empties the payload.
WITH input AS MATERIALIZED (
    SELECT v.*, nextval(pg_get_serial_sequence('events', 'id')) AS id
    FROM (
        SELECT unnest(sqlc.arg(delivery_ids)::text[])                           AS delivery_id,
               unnest(sqlc.arg(topics)::text[])                                 AS topic,
               unnest(sqlc.arg(headers)::text[])                                AS headers,
               unnest(sqlc.arg(content_types)::text[])                          AS content_type,
               unnest(sqlc.arg(payloads)::bytea[])                              AS payload,
               unnest(sqlc.arg(body_sha256s)::bytea[])                          AS body_sha256,
               unnest(sqlc.arg(verified_schemes)::text[])                       AS verified_scheme,
               unnest(sqlc.arg(source_ips)::text[])                             AS source_ip,
               unnest(sqlc.arg(trace_parents)::text[])                          AS trace_parent,
               generate_series(1, cardinality(sqlc.arg(topics)::text[]))::bigint AS ord
    ) AS v
    ORDER BY v.ord
)
INSERT INTO events (id, human_id, source, endpoint_id, adapter_id, published_by, agent_id, topic, delivery_id,
                    headers, content_type, payload, size_bytes, body_sha256, verified_scheme, source_ip, trace_parent)
OVERRIDING SYSTEM VALUE
SELECT i.id, sqlc.arg(human_id), sqlc.arg(source), sqlc.narg(endpoint_id), sqlc.narg(adapter_id), sqlc.narg(published_by),
       sqlc.narg(agent_id), i.topic, nullif(i.delivery_id, ''), i.headers::jsonb, i.content_type, i.payload,
       octet_length(i.payload), nullif(i.body_sha256, ''::bytea), i.verified_scheme, nullif(i.source_ip, '')::inet, nullif(i.trace_parent, '')
FROM input AS i
ORDER BY i.delivery_id COLLATE "C", i.ord
ON CONFLICT (human_id, source, delivery_id) WHERE delivery_id IS NOT NULL DO NOTHING
RETURNING id, received_at, coalesce(delivery_id, '')::text AS delivery_id;

-- name: EventForReplay :one
-- One event of the tenant that the caller may read (the read rule above), as a replay reads it before it locks
-- it (EventsLockForReplay); pgx.ErrNoRows when missing or out of reach.
SELECT id, human_id, source, endpoint_id, adapter_id, agent_id, topic, payload_pruned_at
FROM events
WHERE id = sqlc.arg(id)
  AND human_id = sqlc.arg(human_id)
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR agent_id IS NULL OR agent_id = sqlc.narg(caller_agent_id)::uuid
       OR published_by = sqlc.narg(caller_agent_id)::uuid);

-- name: EventsForReplay :many
-- The next chunk of a bulk replay: the tenant's events the caller may read (the read rule above) that match the
-- filters, after after_id, oldest first. An endpoint or adapter filter is its source scope ('endpoint:<uuid>'), so
-- it keeps the events of a deleted endpoint, and walks idx_events_human_source. Read without locks: the replay
-- resolves each event's targets (other connections' reads) before its transaction, then locks the rows
-- (EventsLockForReplay).
SELECT e.id, e.human_id, e.source, e.endpoint_id, e.adapter_id, e.agent_id, e.topic, e.payload_pruned_at
FROM events AS e
WHERE e.human_id = sqlc.arg(human_id)
  AND e.id > sqlc.arg(after_id)::bigint
  AND (sqlc.narg(caller_agent_id)::uuid IS NULL OR e.agent_id IS NULL OR e.agent_id = sqlc.narg(caller_agent_id)::uuid
       OR e.published_by = sqlc.narg(caller_agent_id)::uuid)
  AND (sqlc.narg(source)::text IS NULL OR e.source = sqlc.narg(source)::text)
  AND (sqlc.narg(topic)::text IS NULL OR e.topic = sqlc.narg(topic)::text)
  AND (sqlc.narg(received_after)::timestamptz IS NULL OR e.received_at >= sqlc.narg(received_after)::timestamptz)
  AND (sqlc.narg(received_before)::timestamptz IS NULL OR e.received_at < sqlc.narg(received_before)::timestamptz)
ORDER BY e.id
LIMIT sqlc.arg(chunk)::integer;

-- name: EventsLockForReplay :many
-- Locks the events a replay transaction creates todos for, in id order (the order every replay locks events in),
-- and returns those still stored with their pruned mark (retention may have removed one since it was read).
SELECT e.id, e.payload_pruned_at
FROM events AS e
WHERE e.human_id = sqlc.arg(human_id)
  AND e.id = ANY (sqlc.arg(ids)::bigint[])
ORDER BY e.id
FOR UPDATE;

-- name: EventMarkReplayed :exec
-- Records a replay on events this transaction locked (EventsLockForReplay) and created todos for.
UPDATE events
SET replay_count = replay_count + 1,
    last_replayed_at = now()
WHERE human_id = sqlc.arg(human_id)
  AND id = ANY (sqlc.arg(ids)::bigint[]);

-- name: EventOldestTodoTarget :one
-- Where a published event's work went: the queue and agent of its oldest todo still kept (PublishEvent keeps no
-- other record of its queue); pgx.ErrNoRows when it has none.
SELECT t.queue, t.agent_id
FROM todos AS t
WHERE t.event_id = sqlc.arg(event_id)::bigint
  AND t.human_id = sqlc.arg(human_id)
ORDER BY t.id
LIMIT 1;

-- name: EventPayloadsLockForPrune :many
-- The next batch of payload retention (EventPayloadsPrune, same transaction): up to batch_size of the oldest
-- events received more than max_age_seconds ago whose payload is still there (idx_events_payload_unpruned, which
-- holds no pruned row) and whose todo is not live, locked in id order. SKIP LOCKED: a row another node is pruning,
-- or a replay holds, is left for a later pass, so every node can run this at once and none waits. The ids are an
-- ARRAY so the rows are then fetched by primary key, whatever the number of unpruned events; EventPayloadsPrune
-- checks again, under the locks, that each is still due.
SELECT e.id
FROM events AS e
WHERE e.id = ANY (ARRAY(
    SELECT c.id
    FROM events AS c
    WHERE c.payload_pruned_at IS NULL
      AND c.received_at < now() - make_interval(secs => sqlc.arg(max_age_seconds)::double precision)
      AND NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = c.id AND t.state IN ('pending', 'running'))
    ORDER BY c.received_at
    LIMIT sqlc.arg(batch_size)::integer
))
ORDER BY e.id
FOR UPDATE OF e SKIP LOCKED;

-- name: EventPayloadsPrune :execrows
-- Empties the payloads of the events this transaction locked (EventPayloadsLockForPrune), keeping the row and
-- size_bytes. The todo check is repeated under the locks, in this statement's newer snapshot: a replay locks the
-- event before it inserts a todo, so one that committed before our lock is seen here, and one after it sees
-- payload_pruned_at and refuses.
UPDATE events AS e
SET payload = ''::bytea,
    payload_pruned_at = now()
WHERE e.id = ANY (sqlc.arg(ids)::bigint[])
  AND e.payload_pruned_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM todos AS t WHERE t.event_id = e.id AND t.state IN ('pending', 'running'));

-- name: DeliveriesRecord :execrows
-- Appends a batch of deliveries to their endpoints' rings (endpoint_deliveries, at most 100 rows per endpoint):
-- each endpoint's counter row goes up by its number of deliveries in the batch (the upsert locks it until the
-- commit, so two nodes' batches of one endpoint take disjoint numbers; rows come sorted by endpoint id, the lock
-- order), each delivery takes the next number and overwrites slot = number % 100. Only the last 100 of an
-- endpoint in one batch are written (one row may be written once per statement). Deliveries of an endpoint
-- deleted meanwhile are left out. event_id 0 means none.
WITH input AS MATERIALIZED (
    SELECT i.*
    FROM (
        -- Set-returning functions in one select list advance in lockstep (PostgreSQL ≥ 10): a zip of the arrays.
        SELECT unnest(sqlc.arg(endpoint_ids)::uuid[])                                AS endpoint_id,
               unnest(sqlc.arg(human_ids)::uuid[])                                   AS human_id,
               unnest(sqlc.arg(received_ats)::timestamptz[])                         AS received_at,
               unnest(sqlc.arg(outcomes)::text[])                                    AS outcome,
               unnest(sqlc.arg(http_statuses)::integer[])                            AS http_status,
               unnest(sqlc.arg(event_ids)::bigint[])                                 AS event_id,
               unnest(sqlc.arg(delivery_ids)::text[])                                AS delivery_id,
               unnest(sqlc.arg(topics)::text[])                                      AS topic,
               unnest(sqlc.arg(details)::text[])                                     AS detail,
               unnest(sqlc.arg(sizes)::bigint[])                                     AS size_bytes,
               unnest(sqlc.arg(dropped)::integer[])                                  AS dropped_before,
               generate_series(1, cardinality(sqlc.arg(outcomes)::text[]))::bigint AS ord
    ) AS i
    WHERE EXISTS (SELECT 1 FROM endpoints AS e WHERE e.id = i.endpoint_id)
),
counts AS MATERIALIZED (
    SELECT c.endpoint_id, count(*) AS n FROM input AS c GROUP BY c.endpoint_id
),
bumped AS (
    INSERT INTO endpoint_delivery_seqs AS s (endpoint_id, seq)
    SELECT c.endpoint_id, c.n FROM counts AS c ORDER BY c.endpoint_id
    ON CONFLICT (endpoint_id) DO UPDATE SET seq = s.seq + excluded.seq
    RETURNING s.endpoint_id, s.seq
),
numbered AS (
    SELECT i.*, b.seq AS last_seq,
           b.seq - c.n + row_number() OVER (PARTITION BY i.endpoint_id ORDER BY i.ord) AS seq
    FROM input AS i
    JOIN counts AS c ON c.endpoint_id = i.endpoint_id
    JOIN bumped AS b ON b.endpoint_id = i.endpoint_id
)
INSERT INTO endpoint_deliveries AS d (endpoint_id, slot, seq, human_id, received_at, outcome, http_status, event_id,
                                      delivery_id, topic, detail, size_bytes, dropped_before)
SELECT n.endpoint_id, (n.seq % 100)::smallint, n.seq, n.human_id, n.received_at, n.outcome, n.http_status,
       nullif(n.event_id, 0), n.delivery_id, n.topic, n.detail, n.size_bytes, n.dropped_before
FROM numbered AS n
WHERE n.seq > n.last_seq - 100
ON CONFLICT (endpoint_id, slot) DO UPDATE
SET seq            = excluded.seq,
    human_id       = excluded.human_id,
    received_at    = excluded.received_at,
    outcome        = excluded.outcome,
    http_status    = excluded.http_status,
    event_id       = excluded.event_id,
    delivery_id    = excluded.delivery_id,
    topic          = excluded.topic,
    detail         = excluded.detail,
    size_bytes     = excluded.size_bytes,
    dropped_before = excluded.dropped_before;

-- name: EndpointOfHuman :one
-- Whether the endpoint exists and is the tenant's (ListDeliveries answers NOT_FOUND otherwise).
SELECT EXISTS (SELECT 1 FROM endpoints AS e WHERE e.id = sqlc.arg(endpoint_id) AND e.human_id = sqlc.arg(human_id));

-- name: DeliveryList :many
-- An endpoint's ring, newest first (at most 100 rows: the primary key's range, then a sort).
SELECT d.received_at, d.outcome, d.http_status, d.event_id, d.delivery_id, d.topic, d.detail, d.size_bytes,
       d.dropped_before
FROM endpoint_deliveries AS d
WHERE d.endpoint_id = sqlc.arg(endpoint_id) AND d.human_id = sqlc.arg(human_id)
ORDER BY d.seq DESC
LIMIT sqlc.arg(page_size)::integer;
